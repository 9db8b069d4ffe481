// controller/decide/: the controller's pure decision core. It owns a node's state machine, each extension's
// effective state, the condition, the taints wanted and the breaker; `kubectl nodecare` decides with it too.
// No I/O (eslint.config.js, LAYERING): the reconciler reads the caches, calls decideNode and writes the answer.

export { decideNode, hasTaint, OWN_TAINT_EFFECT } from './decide.ts';
export { decisionInput, registrationsOf, type DecisionSettings, type NodeInputView } from './input.ts';
export { sameCondition } from './condition.ts';
export {
  BOOTSTRAP_RECORD_ANNOTATION,
  decodeBootstrapRecord,
  encodeBootstrapRecord,
  type BootstrapRecord,
} from './bootstrap-record.ts';
export {
  BREAKER_DEFAULTS,
  BreakerCounts,
  BreakerState,
  breakerContribution,
  trippedOver,
  type BreakerContribution,
} from './breaker.ts';
export {
  describeMaintenance,
  describePlanned,
  LifecycleCondition,
  MaintenanceCause,
  maintenanceOf,
  type NodeMaintenance,
  type PlannedMaintenance,
} from './maintenance.ts';
export { NodeState, NODE_STATES, type RecordedState } from './node-state.ts';
export { describeRelease, judgeRelease } from './override.ts';
export {
  CONDITION_REASONS,
  labelFor,
  nodeStatus,
  STATE_REASONS,
  stateOnNode,
  stateText,
  type NodeStatusSummary,
} from './node-status.ts';
export { labelWaitsOf } from './label-wait.ts';
export { extensionRollout, RolloutWindows } from './rollout.ts';
export { CONTROLLER_SUSPEND, taintChanges } from './suspend.ts';
export { DECISION_DEFAULTS } from './types.ts';
export type {
  ActiveLabelWait,
  DeadlineParts,
  DecisionInput,
  DecisionPolicy,
  DesiredCondition,
  EffectiveState,
  ExtensionRollout,
  ExtensionVerdict,
  NodeDecision,
  NodeEvent,
  NodeMemory,
  NodeRelease,
  KubeletNotReady,
  LabelWait,
  NodeTaint,
  ObservedCondition,
  ObservedNode,
  RequiredExtension,
  SeenLease,
} from './types.ts';
