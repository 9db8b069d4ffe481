// The demo's story, step by step: a workload asks for a GPU; Karpenter launches a GPU node for it; nodecare
// holds the node with the bootstrap taint (listed in the NodePool's startupTaints) until its GPUs are healthy
// as the kubelet counts them (the demo plays that part of the kubelet: kubelet.ts), so Karpenter keeps the
// NodeClaim not initialized and launches nothing else;
// then the pod lands. Later an extension fails on the Ready node (runtime taint) and recovers, and the node's
// agent is lost (Degraded (AgentNotReporting)) and comes back. Each act (acts.ts) says what will happen, then waits
// until the view shows it: a phase not reached in time, or reached the wrong way, fails the run with its name.

import { failAndRecover, heldUntilHealthy, loseAgent, nodeLaunched, podPending, podRuns } from './acts.ts';
import type { DemoCluster } from './cluster.ts';
import type { ClusterObserver } from './observer.ts';
import { Scene, sleep } from './scene.ts';
import type { AutoscalerRecord, ScenarioOutput, ScenarioTiming } from './story.ts';

export {
  DEFAULT_TIMING,
  PHASES,
  newAutoscalerRecord,
  type AutoscalerRecord,
  type PhaseId,
  type ScenarioOutput,
  type ScenarioTiming,
} from './story.ts';

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
