// What `kubectl nodecare` knows about the cluster, computed with the controller's own decision core
// (controller/decide): the state, taints, condition and next deadline of every node come from decideNode over
// the same inputs the controller reads, never from a re-implementation. Pure: the snapshot and `now` in, the
// reports out (docs/conventions.md 1).
//
// The controller judges lease staleness from when it saw renewTime change, by its own clock; the plugin has
// only the API, so it takes renewTime itself as that moment (a node clock ahead of this machine's is capped at
// now). The controller's per-node memory is reconstructed from the node (first seen at creation).
//
// What a report leads to lives beside it: the controller's next action (next-action.ts) and the time to
// schedulable (bootstrap.ts); what explain reads for one node, node-read.ts.

import {
  parseSystemExtension,
  type LeaseObject,
  type ParsedSystemExtension as SystemExtension,
  type Registration,
  type RegistrationConflict,
  type ResolvedRegistrations,
  type SystemExtensionObject,
} from '../api/index.ts';
import { ExtensionState, LeaseRole } from '../api/names.ts';
import { ConditionReason } from '../api/reasons.ts';
import {
  ownedByAnotherNode,
  toCachedLease,
  toCachedNode,
  type CachedLease,
  type CachedNode,
  type NodeObject as ControllerNodeObject,
} from '../controller/ingest.ts';
import {
  BREAKER_DEFAULTS,
  RolloutWindows,
  DECISION_DEFAULTS,
  decideNode,
  decisionInput,
  hasTaint,
  NodeState,
  registrationsOf as decisionRegistrationsOf,
  trippedOver,
  type DecisionInput,
  type NodeDecision,
  type NodeMemory,
  type SeenLease,
} from '../controller/decide/index.ts';

/** A Node as the API returns it: what the controller reads (controller/ingest.ts), plus `spec.unschedulable`. */
export type NodeObject = Omit<ControllerNodeObject, 'spec'> & {
  spec?: NonNullable<ControllerNodeObject['spec']> & { unschedulable?: boolean };
};

export interface ClusterHealthCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
  codes?: string[];
}

export interface ClusterHealthObject {
  metadata?: { name?: string };
  /**
   * policy: what the leader publishes of its settings (api/policy.ts), read field by field; extensions: the
   * roll-up's per-extension counts (docs/rollup.md), read by cli/node-read.ts.
   */
  status?: {
    observedAt?: string;
    conditions?: ClusterHealthCondition[];
    policy?: unknown;
    extensions?: unknown;
  };
}

/** A core/v1 view of an Event regarding a node (events.k8s.io events included). */
export interface EventObject {
  type?: string;
  reason?: string;
  message?: string;
  note?: string;
  eventTime?: string | null;
  lastTimestamp?: string | null;
  firstTimestamp?: string | null;
  count?: number;
  series?: { count?: number; lastObservedTime?: string };
  metadata?: { creationTimestamp?: string; annotations?: Record<string, string> };
}

export interface ClusterSnapshot {
  nodes: NodeObject[];
  leases: LeaseObject[];
  systemExtensions: SystemExtensionObject[];
  clusterHealth: ClusterHealthObject | undefined;
}

/** What the plugin assumes of the controller's configuration (its flags; the defaults unless told). */
export interface CliPolicy {
  bootstrapTaintKey: string;
  runtimeTaintKey: string;
  bootstrapTimeoutSeconds: number;
  missingLeaseGraceSeconds: number;
  maxUnhealthyFraction: number;
  /** Custom condition types node annotations may feed (the controller's --annotation-condition-type). */
  annotationConditionTypes: readonly string[];
  /** The controller's --suspend. */
  suspend: boolean;
}

export const CLI_POLICY_DEFAULTS: CliPolicy = {
  bootstrapTaintKey: DECISION_DEFAULTS.bootstrapTaintKey,
  runtimeTaintKey: DECISION_DEFAULTS.runtimeTaintKey,
  bootstrapTimeoutSeconds: DECISION_DEFAULTS.bootstrapTimeoutSeconds,
  missingLeaseGraceSeconds: DECISION_DEFAULTS.missingLeaseGraceSeconds,
  maxUnhealthyFraction: BREAKER_DEFAULTS.maxUnhealthyFraction,
  annotationConditionTypes: [],
  suspend: false,
};

export interface NodeReport {
  name: string;
  raw: NodeObject;
  node: CachedNode;
  createdMs: number;
  /** Every registration in force on the node (SystemExtensions and annotations), by name. */
  registrations: Map<string, Registration>;
  conflicts: RegistrationConflict[];
  /** The node's believed extension Leases by extension name, and its agent heartbeat. */
  leases: Map<string, CachedLease>;
  agentLease: CachedLease | undefined;
  /** Leases that claim this node but are not believed (wrong name or owner). */
  ignoredLeases: CachedLease[];
  input: DecisionInput;
  decision: NodeDecision;
  /** Taints on the node now that keep pods off it (NoSchedule or NoExecute), and a cordon. */
  unschedulable: boolean;
}

export interface Analysis {
  nodes: NodeReport[];
  /** Extensions the correlated-failure breaker holds back (judged over every node, as the controller does). */
  tripped: ReadonlySet<string>;
  policy: CliPolicy;
  now: number;
}

function seen(lease: CachedLease, now: number): SeenLease {
  const renewed = Date.parse(lease.renewTime);
  return { lease, observedAtMs: Number.isFinite(renewed) ? Math.min(renewed, now) : now };
}

/**
 * The memory a controller that has watched the node since its creation would hold: the boot seen at
 * creation, each extension required since then. Only timings read it (grace ends); events are not used here.
 */
function reconstructedMemory(node: CachedNode, required: readonly string[]): NodeMemory {
  return {
    bootId: node.bootId,
    bootSeenMs: node.creationTimestampMs,
    bootstrapStartedMs: undefined,
    timeoutReported: node.extensionsReadyCondition?.reason === ConditionReason.BootstrapTimeout,
    requiredSinceMs: new Map(required.map((name) => [name, node.creationTimestampMs])),
    extensionStates: new Map(),
    conflicts: new Set(),
    notReadyReported: node.extensionsReadyCondition?.reason === ConditionReason.NodeNotReady,
  };
}

/** What analyze works out of one node before the breaker is judged. */
interface PreparedNode {
  raw: NodeObject;
  node: CachedNode;
  byName: Map<string, Registration>;
  conflicts: RegistrationConflict[];
  leases: Map<string, CachedLease>;
  agentLease: CachedLease | undefined;
  ignoredLeases: CachedLease[];
  input: DecisionInput;
}

/** The node's Leases sorted as the controller believes them: by extension, its heartbeat, and the ignored. */
function believedLeases(
  node: CachedNode,
  claimed: readonly CachedLease[],
): Pick<PreparedNode, 'leases' | 'agentLease' | 'ignoredLeases'> {
  const leases = new Map<string, CachedLease>();
  let agentLease: CachedLease | undefined;
  const ignoredLeases: CachedLease[] = [];
  for (const lease of claimed) {
    if (lease.problem !== undefined || ownedByAnotherNode(lease, node.uid)) ignoredLeases.push(lease);
    else if (lease.role === LeaseRole.agent) agentLease = lease;
    else if (lease.extension) leases.set(lease.extension, lease);
  }
  return { leases, agentLease, ignoredLeases };
}

/**
 * Every registration in force on the node, by name, as the controller judges them (controller/decide
 * registrationsOf), with the plugin's policy.
 */
export function registrationsOf(
  node: CachedNode,
  sxs: readonly SystemExtension[],
  policy: Pick<CliPolicy, 'annotationConditionTypes'>,
): ResolvedRegistrations {
  return decisionRegistrationsOf(node, sxs, policy.annotationConditionTypes);
}

/** What the cluster tells every node's decision alike. */
interface Context {
  sxs: SystemExtension[];
  sxByName: Map<string, SystemExtension>;
  rollouts: RolloutWindows;
  policy: CliPolicy;
  now: number;
}

/**
 * One node's registrations, Leases and decision input (the controller's decisionInput), before the breaker is
 * judged: the Leases seen at their renewTime, the memory reconstructed from the node.
 */
function prepare(raw: NodeObject, claimed: ReadonlyMap<string, CachedLease[]>, ctx: Context): PreparedNode {
  const { policy, now } = ctx;
  const node = toCachedNode(raw);
  const believed = believedLeases(node, claimed.get(node.name) ?? []);
  const { input, registrations } = decisionInput({
    node,
    systemExtensions: ctx.sxByName,
    leases: new Map([...believed.leases].map(([name, lease]) => [name, seen(lease, now)])),
    agent: believed.agentLease ? seen(believed.agentLease, now) : undefined,
    previous: (resolved) => reconstructedMemory(node, [...resolved.byName.keys()]),
    settings: policy,
    tripped: new Set(),
    rolloutStartMs: (sx) => ctx.rollouts.startMs(sx, now),
    now,
    // One look, no history (seen() estimates from renewTime): the CLI's one timeline is the wall clock.
    monotonicNow: now,
  });
  const { byName, conflicts } = registrations;
  return { raw, node, byName, conflicts, ...believed, input };
}

/** The node decided with the breaker's verdict. */
function reportOf(p: PreparedNode, tripped: ReadonlySet<string>): NodeReport {
  const input = { ...p.input, policy: { ...p.input.policy, trippedExtensions: tripped } };
  const taints = p.raw.spec?.taints ?? [];
  return {
    name: p.node.name,
    raw: p.raw,
    node: p.node,
    createdMs: p.node.creationTimestampMs,
    registrations: p.byName,
    conflicts: p.conflicts,
    leases: p.leases,
    agentLease: p.agentLease,
    ignoredLeases: p.ignoredLeases,
    input,
    decision: decideNode(input),
    unschedulable:
      p.raw.spec?.unschedulable === true ||
      taints.some((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute'),
  };
}

/** The snapshot's Leases that name a node (ours, decoded and compact), by that node. */
function leasesByNode(leases: readonly LeaseObject[]): Map<string, CachedLease[]> {
  const byNode = new Map<string, CachedLease[]>();
  for (const raw of leases) {
    const lease = toCachedLease(raw);
    if (!lease) continue;
    const list = byNode.get(lease.node) ?? [];
    list.push(lease);
    byNode.set(lease.node, list);
  }
  return byNode;
}

/** Decides every node of the snapshot with the controller's decision core. */
export function analyze(snapshot: ClusterSnapshot, policy: CliPolicy, now: number): Analysis {
  const sxs = snapshot.systemExtensions.map(parseSystemExtension);
  const claimed = leasesByNode(snapshot.leases);
  // The rollout windows as the controller keeps them: from the SystemExtensions' status (or creation).
  const ctx: Context = {
    sxs,
    sxByName: new Map(sxs.map((sx) => [sx.name, sx])),
    rollouts: new RolloutWindows(),
    policy,
    now,
  };
  const prepared = snapshot.nodes.map((raw) => prepare(raw, claimed, ctx));

  // The breaker is judged over every node's decision, then every node is decided with its verdict.
  const tripped = trippedOver(
    prepared.map((p) => [p.node.name, decideNode(p.input)] as const),
    { maxUnhealthyFraction: policy.maxUnhealthyFraction, minFailing: BREAKER_DEFAULTS.minFailing },
    now,
  );
  return { nodes: prepared.map((p) => reportOf(p, tripped)), tripped, policy, now };
}

/**
 * Worst first: a stuck bootstrap, then a degraded node, then one nodecare cannot see (its agent gone, its kubelet
 * NotReady), then booting, then Ready.
 */
export function severity(report: NodeReport): number {
  const { state, condition } = report.decision;
  if (state === NodeState.BootstrapTimeout) return 0;
  if (state === NodeState.Degraded) return 1;
  if (condition.status === 'Unknown') return 2;
  if (state === NodeState.Bootstrapping) return 3;
  if (condition.status !== 'True') return 4;
  return 5;
}

export function failingCount(report: NodeReport): number {
  return report.decision.extensions.filter((e) => e.state !== ExtensionState.Healthy).length;
}

export function sortWorstFirst(reports: readonly NodeReport[]): NodeReport[] {
  return [...reports].sort(
    (a, b) =>
      severity(a) - severity(b) ||
      failingCount(b) - failingCount(a) ||
      (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/** Healthy as far as nodecare is concerned: Ready, condition True, every required extension Healthy. */
export function isHealthy(report: NodeReport): boolean {
  return severity(report) === 5 && failingCount(report) === 0;
}

/** The controller has not yet written what it decided (it may be about to, or not be running). */
export function pendingWrites(report: NodeReport): string[] {
  const { decision, node, input } = report;
  const pending: string[] = [];
  const keys = { bootstrap: input.policy.bootstrapTaintKey, runtime: input.policy.runtimeTaintKey };
  for (const kind of ['bootstrap', 'runtime'] as const) {
    const on = hasTaint(node.taints, keys[kind]);
    if (decision.desiredTaints[kind] && !on) pending.push(`add the ${kind} taint`);
    if (!decision.desiredTaints[kind] && on) pending.push(`remove the ${kind} taint`);
  }
  const c = node.extensionsReadyCondition;
  if (!c || c.status !== decision.condition.status || c.reason !== decision.condition.reason) {
    pending.push(`set ExtensionsReady=${decision.condition.status} (${decision.condition.reason})`);
  }
  return pending;
}
