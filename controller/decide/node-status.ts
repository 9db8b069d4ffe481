// A node's state and how it is shown, defined once (docs/design.md section 5, "One name for a node's state"):
// which condition reasons each state can have, the ExtensionsReady status and the `nodecare.io/status` label
// each reason means, and the one way the state is written for people — the state with the condition's reason
// beside it (`Degraded (AgentNotReporting)`). The controller writes the condition and label from it
// (condition.ts); `kubectl nodecare` (cli/) and the demo's live view (demo/view.ts) show the state from it.
// Pure, no I/O.

import { NodeStatusLabelValue } from '../../api/names.ts';
import { ConditionReason } from '../../api/reasons.ts';
import { NodeState, recordedNodeState } from './node-state.ts';
import type { ConditionStatus } from './types.ts';

/**
 * What each `ExtensionsReady` reason means: the condition's status and the node label. The status and the
 * label follow the reason, never the other way round, so they cannot disagree.
 */
export const CONDITION_REASONS = {
  AllExtensionsHealthy: { status: 'True', label: NodeStatusLabelValue.healthy },
  ExtensionsProgressing: { status: 'False', label: NodeStatusLabelValue.progressing },
  ExtensionsUnhealthy: { status: 'False', label: NodeStatusLabelValue.unhealthy },
  BootstrapTimeout: { status: 'False', label: NodeStatusLabelValue.unhealthy },
  AgentNotReporting: { status: 'Unknown', label: NodeStatusLabelValue.unknown },
  ExtensionsUnknown: { status: 'Unknown', label: NodeStatusLabelValue.unknown },
  NodeNotReady: { status: 'Unknown', label: NodeStatusLabelValue.unknown },
  InMaintenance: { status: 'False', label: NodeStatusLabelValue.maintenance },
} as const satisfies Record<ConditionReason, { status: ConditionStatus; label: NodeStatusLabelValue }>;

/**
 * The condition reasons a node in each state can have (decideNode never gives another pair; a test holds it).
 * The first is the state's usual reason.
 */
export const STATE_REASONS = {
  Bootstrapping: [
    ConditionReason.ExtensionsProgressing,
    ConditionReason.ExtensionsUnhealthy,
    ConditionReason.ExtensionsUnknown,
    ConditionReason.AgentNotReporting,
  ],
  // A Ready node with a reason other than AllExtensionsHealthy: a non-blocking extension fails or starts, an
  // extension could not be determined, or the agent of a node without blocking extensions stopped.
  Ready: [
    ConditionReason.AllExtensionsHealthy,
    ConditionReason.ExtensionsUnhealthy,
    ConditionReason.ExtensionsProgressing,
    ConditionReason.ExtensionsUnknown,
    ConditionReason.AgentNotReporting,
  ],
  // Degraded stays until every blocking extension is Healthy: a failed one restarting is Progressing.
  Degraded: [
    ConditionReason.ExtensionsUnhealthy,
    ConditionReason.AgentNotReporting,
    ConditionReason.ExtensionsUnknown,
    ConditionReason.ExtensionsProgressing,
  ],
  BootstrapTimeout: [ConditionReason.BootstrapTimeout],
  NotReady: [ConditionReason.NodeNotReady],
  // Every extension Healthy says so; anything else says the node is maintained (maintenance.ts).
  Maintenance: [ConditionReason.InMaintenance, ConditionReason.AllExtensionsHealthy],
} as const satisfies Record<NodeState, readonly ConditionReason[]>;

/** The reason that goes without saying for a state: `Ready`, not `Ready (AllExtensionsHealthy)`. */
const SELF_EXPLAINING: Partial<Record<NodeState, ConditionReason>> = {
  Ready: ConditionReason.AllExtensionsHealthy,
  BootstrapTimeout: ConditionReason.BootstrapTimeout,
  NotReady: ConditionReason.NodeNotReady,
  Maintenance: ConditionReason.InMaintenance,
};

export function conditionStatusFor(reason: ConditionReason): ConditionStatus {
  return CONDITION_REASONS[reason].status;
}

/** The status label follows the condition's reason (BootstrapTimeout reads as unhealthy, NodeNotReady as unknown). */
export function labelFor(reason: ConditionReason): NodeStatusLabelValue {
  return CONDITION_REASONS[reason].label;
}

/** A node's status as every view shows it. */
export interface NodeStatusSummary {
  state: NodeState;
  reason: ConditionReason;
  condition: ConditionStatus;
  label: NodeStatusLabelValue;
  /** `Degraded (AgentNotReporting)`, `Ready`: the state with the reason beside it unless it says nothing more. */
  text: string;
}

/**
 * The one mapping from (state, condition reason) to what is shown: the condition's status, the label and the
 * text.
 */
export function nodeStatus(state: NodeState, reason: ConditionReason): NodeStatusSummary {
  return {
    state,
    reason,
    condition: conditionStatusFor(reason),
    label: labelFor(reason),
    text: stateText(state, reason),
  };
}

/** `Degraded (AgentNotReporting)`; `Ready` alone when its reason is AllExtensionsHealthy; the state alone without a reason. */
export function stateText(state: NodeState, reason: string | undefined): string {
  if (!reason || SELF_EXPLAINING[state] === reason) return state;
  return `${state} (${reason})`;
}

/**
 * The state the controller recorded on a node, read back from the node alone (what the demo's live view shows):
 * the bootstrap taint is Bootstrapping (BootstrapTimeout once the condition says so), the runtime taint
 * Degraded, neither Ready, the condition NodeNotReady NotReady and InMaintenance (or a maintenance signal on
 * the node) Maintenance (both decided over the others). Undefined while
 * the node has no ExtensionsReady condition: the controller has not decided it yet.
 */
export function stateOnNode(facts: {
  bootstrapTainted: boolean;
  runtimeTainted: boolean;
  conditionReason: string | undefined;
  /** The node shows a maintenance signal (maintenanceOf): maintained with every extension Healthy. */
  maintained?: boolean;
}): NodeState | undefined {
  const reason = facts.conditionReason;
  if (reason === undefined) return undefined;
  if (reason === ConditionReason.NodeNotReady) return NodeState.NotReady;
  if (reason === ConditionReason.InMaintenance || facts.maintained === true) return NodeState.Maintenance;
  return recordedNodeState({
    bootstrapPending: facts.bootstrapTainted,
    runtimeTainted: facts.runtimeTainted,
    timeoutReported: reason === ConditionReason.BootstrapTimeout,
  });
}
