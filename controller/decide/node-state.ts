// The node state machine (docs/design.md section 5, docs/conventions.md 4): one transition function, exhaustive over the states.

export const NodeState = {
  Bootstrapping: 'Bootstrapping',
  Ready: 'Ready',
  Degraded: 'Degraded',
  BootstrapTimeout: 'BootstrapTimeout',
  /**
   * The kubelet's own `Ready` condition is not True. Decided over the other four (the `NOT_READY` table in
   * decide.ts), never recorded: the node's taints keep the state it returns to once the kubelet is Ready.
   */
  NotReady: 'NotReady',
  /**
   * The node is in maintenance: cordoned, draining, drained, shutting down or being deleted. Decided over the
   * others (the MAINTENANCE table in maintenance.ts), never recorded: taints are added as in service and none
   * removed, so the node returns to the state its taints record.
   */
  Maintenance: 'Maintenance',
} as const;
export type NodeState = (typeof NodeState)[keyof typeof NodeState];
export const NODE_STATES: readonly NodeState[] = Object.values(NodeState);

/** The states the taints and the bootstrap annotation record, and the state machine moves between. */
export type RecordedState = Exclude<NodeState, typeof NodeState.NotReady | typeof NodeState.Maintenance>;
export const RECORDED_STATES: readonly RecordedState[] = NODE_STATES.filter(
  (s): s is RecordedState => s !== NodeState.NotReady && s !== NodeState.Maintenance,
);

/** What the transition reads, all judged for the node's current boot at one instant. */
export interface NodeObservation {
  /** The node is not marked bootstrapped for this boot (docs/adr/0002). */
  bootstrapPending: boolean;
  /** The agent reported on this boot and every critical enforced extension is Healthy on it. */
  bootstrapComplete: boolean;
  /** bootstrapTimeoutSeconds have passed since the bootstrap started. */
  bootstrapTimedOut: boolean;
  /**
   * A blocking extension has a confirmed fault: Unhealthy, or Unknown because its lease or the agent's
   * heartbeat expired. Any other Unknown neither degrades a Ready node nor lets a Degraded one recover
   * (docs/adr/0004).
   */
  blockingFailing: boolean;
  /** Every blocking extension is Healthy (vacuously true when there is none). */
  blockingAllHealthy: boolean;
}

/**
 * The state the node is in before this decision, read from what survives a controller restart: the
 * bootstrap annotation and taint, the runtime taint, and (same boot only) whether the timeout was reported.
 */
export function recordedNodeState(facts: {
  bootstrapPending: boolean;
  runtimeTainted: boolean;
  timeoutReported: boolean;
}): RecordedState {
  if (facts.bootstrapPending)
    return facts.timeoutReported ? NodeState.BootstrapTimeout : NodeState.Bootstrapping;
  return facts.runtimeTainted ? NodeState.Degraded : NodeState.Ready;
}

/**
 * Ready degrades only on a failure (a Progressing extension does not degrade it); Degraded recovers only
 * when every blocking extension is Healthy (a Progressing one keeps the taint, so a controller restart or
 * a re-registration never lifts a taint before the extension proved healthy). A reboot sends either back
 * to Bootstrapping; a completed bootstrap settles at once in the same decision.
 */
export function nextNodeState(from: RecordedState, o: NodeObservation): RecordedState {
  switch (from) {
    case NodeState.Bootstrapping:
      if (!o.bootstrapPending || o.bootstrapComplete) return settle(o);
      return o.bootstrapTimedOut ? NodeState.BootstrapTimeout : NodeState.Bootstrapping;
    case NodeState.BootstrapTimeout:
      if (!o.bootstrapPending || o.bootstrapComplete) return settle(o);
      return NodeState.BootstrapTimeout;
    case NodeState.Ready:
      if (o.bootstrapPending) return nextNodeState(NodeState.Bootstrapping, o);
      return o.blockingFailing ? NodeState.Degraded : NodeState.Ready;
    case NodeState.Degraded:
      if (o.bootstrapPending) return nextNodeState(NodeState.Bootstrapping, o);
      return o.blockingAllHealthy ? NodeState.Ready : NodeState.Degraded;
    default: {
      const unreachable: never = from;
      throw new Error(`unknown node state ${String(unreachable)}`);
    }
  }
}

/** Leaving bootstrap: the first post-bootstrap state. */
function settle(o: NodeObservation): RecordedState {
  return o.blockingFailing ? NodeState.Degraded : NodeState.Ready;
}

export function isBootstrapState(state: NodeState): boolean {
  return state === NodeState.Bootstrapping || state === NodeState.BootstrapTimeout;
}
