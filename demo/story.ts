// The demo's story as data: its phases (what each proves), the output it talks to, its timing, and what the
// autoscaler was seen doing. The scenario (scenario.ts) plays it; its scene and acts read it.

export const PHASES = {
  'pod-pending': "the GPU workload's pod was Pending: no node offered nvidia.com/gpu",
  'node-launched': 'Karpenter launched a NodeClaim of the GPU instance type and KWOK brought its node up',
  'bootstrap-taint':
    'nodecare held the node with the bootstrap taint while the kubelet counted no healthy GPU (none allocatable); NodeClaim not Initialized',
  'health-progressing': 'ClusterHealth EveryNodeReady was Progressing while the node booted',
  'node-ready':
    'the GPU turned healthy (allocatable, as the kubelet counts it): bootstrap taint removed, NodeClaim Initialized',
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

/**
 * The phases `npm start -- --kubeconfig` plays on a user's cluster: no autoscaler there, so no workload and no
 * NodeClaim; the demo creates its node itself. ClusterHealth counts only the nodes the controller's
 * --node-selector selects, the demo's one, so its phases hold on any cluster.
 */
export const EXISTING_CLUSTER_PHASES: Partial<Record<PhaseId, string>> = {
  'bootstrap-taint':
    'nodecare held the demo node with the bootstrap taint while the kubelet counted no healthy GPU (none allocatable)',
  'health-progressing': PHASES['health-progressing'],
  'node-ready': 'the GPU turned healthy (allocatable, as the kubelet counts it): bootstrap taint removed',
  'health-true': PHASES['health-true'],
  'runtime-taint': PHASES['runtime-taint'],
  'health-failing': PHASES['health-failing'],
  recovered: PHASES.recovered,
  'health-recovered': PHASES['health-recovered'],
  'agent-not-reporting': PHASES['agent-not-reporting'],
  'agent-back': PHASES['agent-back'],
};

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
   * its GPUs Unhealthy, so the kubelet counts them in capacity, none allocatable). A window in which to watch
   * Karpenter launch no second node: longer than its batching (1 s idle, 10 s at most) plus a provisioning
   * round.
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
