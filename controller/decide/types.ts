// The plain data the decision core reads and returns (docs/conventions.md 1). The reconciler fills these from its
// caches, calls decideNode, diffs the answer against the node and writes only the difference.

import type { ExtensionPolicy } from '../../api/extension.ts';
import type { ObservedLease } from '../../api/lease.ts';
import type { RegistrationConflict, RegistrationSource } from '../../api/registration.ts';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY,
  DEFAULT_RUNTIME_TAINT_KEY,
  type ExtensionState,
  type NODE_CONDITION_TYPE,
  type NodeStatusLabelValue,
} from '../../api/names.ts';
import type { ConditionReason, EventReason } from '../../api/reasons.ts';
import type { NodeMaintenance, PlannedMaintenance } from './maintenance-cause.ts';
import type { NodeState } from './node-state.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface NodeTaint {
  key: string;
  value?: string;
  effect: string;
}

/** A node condition as it is on the node now (any status string the API returned). */
export interface ObservedCondition {
  status: string;
  reason: string;
  message: string;
}

/**
 * The kubelet's own `Ready` node condition, kept only while it is not True. A node whose Ready is True and a
 * node with no Ready condition at all (a plain Node object no kubelet posts for) are both decided as before:
 * only a kubelet that says "not Ready" (or whose silence the node lifecycle controller turned into Unknown)
 * makes the node NotReady. Reason and message are capped and made inert on ingest (controller/ingest.ts).
 */
export interface KubeletNotReady {
  /** `Unknown` or `False` (any status other than True). */
  status: string;
  reason: string;
  message: string;
  /** lastTransitionTime as the API returned it ('' when absent). */
  since: string;
}

/** The fields of a Node the decision reads, as currently observed. */
export interface ObservedNode {
  name: string;
  uid: string;
  creationTimestampMs: number;
  /** status.nodeInfo.bootID ('' when the node reports none). */
  bootId: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  taints: readonly NodeTaint[];
  /** The `ExtensionsReady` condition currently on the node, if any. */
  extensionsReadyCondition?: ObservedCondition;
  /** Set while the kubelet's `Ready` condition exists and is not True. */
  kubeletNotReady?: KubeletNotReady;
  /** Set while the node is in maintenance (maintenance.ts maintenanceOf: the strongest signal). */
  maintenance?: NodeMaintenance;
  /** Set while its MaintenancePlanned condition is True: shown, never acted on. */
  maintenancePlanned?: PlannedMaintenance;
}

/**
 * A SystemExtension's rollout on a node that completed bootstrap and carries no runtime taint (docs/extensions.md,
 * "Rolling out a new requirement"): Grace until `endsMs`, or Observe until the admin says Enforce. Absent: enforced.
 */
export type ExtensionRollout = { mode: 'Grace'; endsMs: number } | { mode: 'Observe' };

/** A SystemExtension that may select this node once labels it reads arrive (the input of a decision). */
export interface LabelWait {
  /** The SystemExtension (and extension) name. */
  name: string;
  /** The label keys the node lacks for its nodeSelector, sorted. */
  missingKeys: readonly string[];
  waitSeconds: number;
  /** Critical and enforced: the wait holds the node (a DryRun one is only reported). */
  holds: boolean;
}

/** A wait in force on a node being decided now. */
export interface ActiveLabelWait extends LabelWait {
  /** The bootstrap start plus waitSeconds, capped at the bootstrap timeout. */
  endsMs: number;
  /** waitSeconds, or the bootstrap timeout when that is shorter. */
  waitedSeconds: number;
}

/** One required extension, as api/registration.ts resolveRegistrations returns it (a Registration fits). */
export interface RequiredExtension {
  name: string;
  /** Where the node's registration came from (the roll-up counts SystemExtension ones per object). */
  source?: RegistrationSource;
  policy: ExtensionPolicy;
  valid: boolean;
  problems?: readonly string[];
  /** Its SystemExtension's rollout policy, when not Enforce. */
  rollout?: ExtensionRollout;
}

/** A Lease with the controller's own clock reading of when its renewTime last changed. */
export interface SeenLease {
  lease: ObservedLease;
  /**
   * Controller monotonic clock when renewTime was seen to change, or when this controller started/became
   * leader (docs/adr/0020): its age is `monotonicNow - observedAtMs`, which no wall clock step moves.
   */
  observedAtMs: number;
}

export interface DecisionPolicy {
  bootstrapTaintKey: string;
  runtimeTaintKey: string;
  bootstrapTimeoutSeconds: number;
  /** How long a lease (or the agent heartbeat) may be absent before it counts as Unknown, not Progressing. */
  missingLeaseGraceSeconds: number;
  /** Extensions the correlated-failure breaker has tripped: they cause no runtime taint. */
  trippedExtensions: ReadonlySet<string>;
}

export const DECISION_DEFAULTS = {
  bootstrapTaintKey: DEFAULT_BOOTSTRAP_TAINT_KEY,
  runtimeTaintKey: DEFAULT_RUNTIME_TAINT_KEY,
  /** The cluster autoscaler's default max node startup time. */
  bootstrapTimeoutSeconds: 900,
  missingLeaseGraceSeconds: 120,
} as const satisfies Omit<DecisionPolicy, 'trippedExtensions'>;

/** An extension's health in the controller's view. */
export interface EffectiveState {
  state: ExtensionState;
  reason: string;
  message: string;
}

/**
 * What the controller remembers about a node between decisions. Losing it (restart, leader change) is
 * safe: the bootstrap state lives on the node (annotation + taint, see docs/adr/0002), and the rest only
 * delays deadlines (fresh graces) and suppresses repeated events.
 */
export interface NodeMemory {
  /** The boot the timings below refer to. */
  bootId: string;
  /** When this controller first saw this boot (anchor of the agent's grace), monotonic clock. */
  bootSeenMs: number;
  /**
   * Start of the current bootstrap (for the timeout), wall clock: the node's creationTimestamp or a reboot's
   * first sight; undefined when the node is not bootstrapping.
   */
  bootstrapStartedMs: number | undefined;
  /** The BootstrapTimeout event was emitted for this boot. */
  timeoutReported: boolean;
  /** When this controller first saw each extension required (anchor of the missing-lease grace), monotonic clock. */
  requiredSinceMs: ReadonlyMap<string, number>;
  /** The last decided state of each required extension (events fire on transitions only). */
  extensionStates: ReadonlyMap<string, EffectiveState>;
  /** Extensions whose registration conflict was reported (one event per conflict, not per decision). */
  conflicts: ReadonlySet<string>;
  /** The NodeNotReady event was emitted for the current spell of the kubelet not being Ready. */
  notReadyReported: boolean;
  /**
   * When this controller first saw the agent report on this boot (its heartbeat's observedAtMs then, as wall
   * time), for the bootstrap record; undefined until it has.
   */
  agentReportedMs?: number | undefined;
  /** The MaintenanceStarted event was emitted for the current maintenance (MaintenanceEnded follows it). */
  maintenanceReported?: boolean;
  /** The held taint changes last reported by TaintChangeSuspended ('' or absent: none). */
  suspendedReported?: string;
  /** The label waits whose end was reported by LabelWaitEnded on this bootstrap (one event each). */
  labelWaitsEnded?: ReadonlySet<string>;
  /** The release override value last reported, with its verdict (`active|…`, `ended|…`, `invalid|…`). */
  releaseReported?: string;
}

export interface DecisionInput {
  node: ObservedNode;
  required: readonly RequiredExtension[];
  /** Extension leases of this node, keyed by extension name. */
  leases: ReadonlyMap<string, SeenLease>;
  /** The agent's heartbeat lease (role agent). */
  agent: SeenLease | undefined;
  /** Annotations ignored because a SystemExtension of the same name is in force (api/registration.ts). */
  conflicts: readonly RegistrationConflict[];
  /** The memory returned by the last decision for this node; undefined on first sight. */
  previous: NodeMemory | undefined;
  policy: DecisionPolicy;
  /**
   * Controller wall clock, milliseconds since the epoch: compared only with timestamps from objects (creation,
   * a rollout window's persisted start) and used for timestamps written (docs/adr/0020).
   */
  now: number;
  /**
   * Controller monotonic clock (Clock.monotonic), read with `now`: every duration the controller measures
   * itself (lease age, the missing-lease grace) and every deadline returned (nextDeadlineMs, deadlines) is on it.
   */
  monotonicNow: number;
  /**
   * The suspensions whose scope holds this node (`SystemExtension gpu-plugin`, `--suspend`): its taint changes are
   * held (suspend.ts). Empty or absent: none.
   */
  suspendedBy?: readonly string[];
  /**
   * SystemExtensions with spec.labelWait that could select this node once labels it lacks are set
   * (label-wait.ts labelWaitsOf). Absent or empty: none.
   */
  labelWaits?: readonly LabelWait[];
  /**
   * DaemonSets that select this node but do not tolerate the nodecare taint on it, so the DaemonSet
   * controller places no pod of theirs here, one sentence each, sorted (api/scheduling.ts keptOffByTaints).
   * The condition message names them while the node is held. Absent or empty: none.
   */
  keptOff?: readonly string[];
}

export interface ExtensionVerdict extends EffectiveState {
  name: string;
  critical: boolean;
  /** Critical, enforced and not held back by the breaker or a rollout: its failure puts the runtime taint on. */
  blocking: boolean;
  /** Set while its SystemExtension's rollout holds it back on this node (not enforced, not counted by the breaker). */
  rollout?: ExtensionRollout;
  conditionType: string;
  source?: RegistrationSource;
}

export interface DesiredCondition {
  type: typeof NODE_CONDITION_TYPE;
  status: ConditionStatus;
  reason: ConditionReason;
  message: string;
}

export interface NodeEvent {
  type: 'Normal' | 'Warning';
  reason: EventReason;
  message: string;
  /** Written on the Event's metadata (BootstrapTaintRemoved carries the bootstrap record, bootstrap-record.ts). */
  annotations?: Readonly<Record<string, string>>;
}

export interface DeadlineParts {
  leases: readonly string[];
  fixedMs: number | undefined;
}

export interface NodeDecision {
  state: NodeState;
  /** Whether each nodecare taint (key from the policy, effect NoSchedule) should be on the node. */
  desiredTaints: { bootstrap: boolean; runtime: boolean };
  condition: DesiredCondition;
  label: NodeStatusLabelValue;
  /** undefined fields are left as they are on the node. */
  desiredAnnotations: {
    bootstrappedBootId?: string;
    /** The maintenance marker (NodeAnnotation.maintenance): its value, or null to remove it. */
    maintenance?: string | null;
  };
  /** Transitions between the node as observed (and the memory) and this decision; emit after writing. */
  events: NodeEvent[];
  /**
   * The earliest future time at which the same inputs could give another answer, on the monotonic clock (a
   * deadline from a wall timestamp, such as the bootstrap timeout, is converted at decision time).
   */
  nextDeadlineMs: number | undefined;
  /**
   * What nextDeadlineMs is made of (docs/adr/0009): `leases`, the Leases whose expiry is one of the
   * deadlines (a renewal moves it later), and `fixedMs`, the earliest deadline no renewal moves (a grace end,
   * the bootstrap timeout, a rollout window's end).
   */
  deadlines: DeadlineParts;
  /** Names of Leases judged expired that this decision acts on: re-read them live before writing. */
  staleLeases: string[];
  /** Every required extension, sorted by name (while NotReady each is Unknown / NodeNotReady). */
  extensions: ExtensionVerdict[];
  /** What the kubelet says, when it made the node NotReady (the roll-up names it). */
  kubeletNotReady?: KubeletNotReady;
  /**
   * Set while the node's agent is not reporting: `since` is its heartbeat's last renewTime as written ('' when
   * it never reported on this boot). The roll-up names the node once for all its extensions.
   */
  agentNotReporting?: { since: string };
  /** Set while the node is in maintenance: the decision is the MAINTENANCE table's (maintenance.ts). */
  maintenance?: NodeMaintenance;
  /** The node's MaintenancePlanned, carried for explain and the roll-up. */
  maintenancePlanned?: PlannedMaintenance;
  /** Set while the node is in a suspension's scope: by whom, and the taint changes held (suspend.ts). */
  suspended?: { by: string[]; wouldChange: string[] };
  /** The label waits in force on the node's first bootstrap now, sorted by name (label-wait.ts). */
  labelWaits?: ActiveLabelWait[];
  /** The node's release override (nodecare.io/release-until), when it carries one (override.ts). */
  release?: NodeRelease;
  /** Commit as `previous` for the next decision once the writes succeeded. */
  memory: NodeMemory;
}

/** A release override as the controller judged it (controller/decide/override.ts). */
export interface NodeRelease {
  /** `active`: the controller lifts its taints until `until`; `expired` and `invalid` are ignored. */
  verdict: 'active' | 'expired' | 'invalid';
  /** The annotation's value as written (capped). */
  until: string;
  reason: string;
  /** Why an invalid one is ignored. */
  problem?: string;
  /** The taint changes the override makes (active), in words. */
  lifted: string[];
}
