// The demo's story, step by step: a workload asks for a GPU; Karpenter launches a GPU node for it; nodecare
// holds the node with the bootstrap taint (listed in the NodePool's startupTaints) until the node's device
// plugin reports healthy GPUs, so Karpenter keeps the NodeClaim not initialized and launches nothing else;
// then the pod lands. Later an extension fails on the Ready node (runtime taint) and recovers, and the node's
// agent is lost (Degraded (AgentNotReporting)) and comes back. Each act (acts.ts) says what will happen, then waits
// until the view shows it: a phase not reached in time, or reached the wrong way, fails the run with its name.

import { failAndRecover, heldUntilHealthy, loseAgent, nodeLaunched, podPending, podRuns } from './acts.ts';
import type { DemoCluster } from './cluster.ts';
import type { ClusterObserver } from './observer.ts';
import { Scene, sleep } from './scene.ts';

export const PHASES = {
  'pod-pending': "the GPU workload's pod was Pending: no node offered nvidia.com/gpu",
  'node-launched': 'Karpenter launched a NodeClaim of the GPU instance type and KWOK brought its node up',
  'bootstrap-taint':
    'nodecare held the node with the bootstrap taint while its GPUs were not healthy; NodeClaim not Initialized',
  'health-progressing': 'ClusterHealth EveryNodeReady was Progressing while the node booted',
  'node-ready': 'the device plugin reported healthy GPUs: bootstrap taint removed, NodeClaim Initialized',
  'pod-running':
    'the pod ran on the new node, bound only after the bootstrap taint went; Karpenter launched no second node',
  'health-true': 'ClusterHealth EveryNodeReady turned True',
  'runtime-taint': 'a failing extension put the runtime taint on a Ready node',
  'health-failing': 'ClusterHealth EveryNodeReady reported the failure (HealthCheckUnsuccessful)',
  recovered: 'the extension recovered and the runtime taint was removed',
  'health-recovered': 'ClusterHealth EveryNodeReady was True again',
  'agent-not-reporting': 'a lost agent made its node Degraded (AgentNotReporting) with the runtime taint',
  'agent-back': 'the restarted agent reported again and the node turned Ready',
} as const;
export type PhaseId = keyof typeof PHASES;

export interface ScenarioOutput {
  say(line: string): void;
  phase(id: PhaseId, detail: string): void;
}

export interface ScenarioTiming {
  /** After the node appears, when kube-proxy starts. */
  kubeProxyDelayMs: number;
  /** After the node appears, when the logging agent starts. */
  logAgentDelayMs: number;
  /**
   * After the node appears, when the device plugin's GPUs turn healthy (the plugin serves from the start,
   * its GPUs Unhealthy). A window in which to watch Karpenter launch no second node: longer than its
   * batching (1 s idle, 10 s at most) plus a provisioning round.
   */
  gpuHealthyAfterMs: number;
  /** How long a state stays on screen before the next step. */
  holdMs: number;
  /** Multiplies every phase timeout (a loaded machine). */
  timeoutFactor: number;
}

export const DEFAULT_TIMING: ScenarioTiming = {
  kubeProxyDelayMs: 3_000,
  logAgentDelayMs: 5_000,
  gpuHealthyAfterMs: 25_000,
  holdMs: 6_000,
  timeoutFactor: 1,
};

/** What the autoscaler did, recorded from every snapshot (the scenario's checks and the summary read it). */
export interface AutoscalerRecord {
  /** The names of every NodeClaim seen. */
  nodeClaims: Set<string>;
  /** The pod was seen Pending, not bound, while a node carried the bootstrap taint. */
  podPendingWhileHeld: boolean;
  /** The pod was seen bound to a node that carried the bootstrap taint (nodecare failed if so). */
  podBoundWhileHeld: boolean;
  /** From the bootstrap-taint phase until node-ready. */
  heldMs?: number;
}

export function newAutoscalerRecord(): AutoscalerRecord {
  return { nodeClaims: new Set(), podPendingWhileHeld: false, podBoundWhileHeld: false };
}

export async function runScenario(
  cluster: DemoCluster,
  observer: ClusterObserver,
  out: ScenarioOutput,
  timing: ScenarioTiming,
  autoscaler: AutoscalerRecord,
  signal: AbortSignal,
): Promise<void> {
  const scene = new Scene(cluster, observer, out, timing, autoscaler, signal);
  scene.follow();
  await podPending(scene);
  const gpuNodeName = await nodeLaunched(scene);
  await heldUntilHealthy(scene, gpuNodeName);
  await podRuns(scene, gpuNodeName);
  await sleep(timing.holdMs / 2, signal);
  await Promise.all(scene.starts);
  const gpuNode = cluster.nodes.find((n) => n.name === gpuNodeName);
  if (!gpuNode) throw new Error(`no agent for ${gpuNodeName}`);
  await failAndRecover(scene, gpuNode);
  await loseAgent(scene, gpuNode);
}
