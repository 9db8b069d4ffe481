// What `kubectl nodecare` knows about the cluster, computed with the controller's own decision core
// (controller/decide): the state, taints, condition and next deadline of every node come from decideNode over
// the same inputs the controller reads, never from a re-implementation. Pure: the snapshot and `now` in, the
// reports out (docs/conventions.md 1).
//
// The controller judges lease staleness from when it saw renewTime change, by its own clock; the plugin has
// only the API, so it takes renewTime itself as that moment (a node clock ahead of this machine's is capped at
// now). The controller's per-node memory is reconstructed from the node (first seen at creation).

import {
  parseSystemExtension,
  resolveRegistrations,
  restrictConditionType,
  type LeaseObject,
  type Registration,
  type RegistrationConflict,
  type SystemExtensionObject,
} from '../api/index.ts';
import { ExtensionState, LeaseRole, NODE_STATUS_LABEL, NodeAnnotation } from '../api/names.ts';
import { ConditionReason, EventReason } from '../api/reasons.ts';
import {
  toCachedLease,
  toCachedNode,
  type CachedLease,
  type CachedNode,
  type NodeObject as ControllerNodeObject,
} from '../controller/ingest.ts';
import {
  BOOTSTRAP_RECORD_ANNOTATION,
  BREAKER_DEFAULTS,
  BreakerState,
  CONTROLLER_SUSPEND,
  extensionRollout,
  labelWaitsOf,
  RolloutWindows,
  DECISION_DEFAULTS,
  decideNode,
  decodeBootstrapRecord,
  hasTaint,
  NodeState,
  stateText,
  taintChanges,
  type DecisionInput,
  type DecisionPolicy,
  type NodeDecision,
  type NodeMemory,
  type SeenLease,
} from '../controller/decide/index.ts';

/** A Node as the API returns it: what the controller reads (controller/cache.ts), plus `spec.unschedulable`. */
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
  /** policy: what the leader publishes of its settings (api/policy.ts), read field by field. */
  status?: { observedAt?: string; conditions?: ClusterHealthCondition[]; policy?: unknown };
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

function decisionPolicy(policy: CliPolicy, tripped: ReadonlySet<string>): DecisionPolicy {
  return {
    bootstrapTaintKey: policy.bootstrapTaintKey,
    runtimeTaintKey: policy.runtimeTaintKey,
    bootstrapTimeoutSeconds: policy.bootstrapTimeoutSeconds,
    missingLeaseGraceSeconds: policy.missingLeaseGraceSeconds,
    trippedExtensions: tripped,
  };
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

/** Decides every node of the snapshot with the controller's decision core. */
export function analyze(snapshot: ClusterSnapshot, policy: CliPolicy, now: number): Analysis {
  const sxs = snapshot.systemExtensions.map(parseSystemExtension);
  const leasesByNode = new Map<string, CachedLease[]>();
  for (const raw of snapshot.leases) {
    const lease = toCachedLease(raw);
    if (!lease) continue;
    const list = leasesByNode.get(lease.node) ?? [];
    list.push(lease);
    leasesByNode.set(lease.node, list);
  }

  // The rollout windows as the controller keeps them: from the SystemExtensions' status (or creation).
  const sxByName = new Map(sxs.map((sx) => [sx.name, sx]));
  const rollouts = new RolloutWindows();
  const prepared = snapshot.nodes.map((raw) => {
    const node = toCachedNode(raw);
    const resolved = resolveRegistrations(node, sxs);
    const { conflicts } = resolved;
    // As the controller judges them: an annotation's condition type is restricted (api/registration.ts).
    const byName = new Map(
      [...resolved.byName].map(([name, r]) => [
        name,
        restrictConditionType(r, policy.annotationConditionTypes),
      ]),
    );
    const leases = new Map<string, CachedLease>();
    let agentLease: CachedLease | undefined;
    const ignoredLeases: CachedLease[] = [];
    for (const lease of leasesByNode.get(node.name) ?? []) {
      const foreign = lease.ownerUid !== undefined && node.uid !== '' && lease.ownerUid !== node.uid;
      if (lease.problem !== undefined || foreign) ignoredLeases.push(lease);
      else if (lease.role === LeaseRole.agent) agentLease = lease;
      else if (lease.extension) leases.set(lease.extension, lease);
    }
    const required = [...byName.values()].map((r) => {
      const sx = r.source === 'systemExtension' ? sxByName.get(r.name) : undefined;
      const rollout = sx && extensionRollout(sx.rollout, rollouts.startMs(sx, now));
      return {
        name: r.name,
        source: r.source,
        policy: r.policy,
        valid: r.valid,
        ...(r.valid ? {} : { problems: r.problems }),
        ...(rollout ? { rollout } : {}),
      };
    });
    const input: DecisionInput = {
      node,
      required,
      leases: new Map([...leases].map(([name, lease]) => [name, seen(lease, now)])),
      agent: agentLease ? seen(agentLease, now) : undefined,
      conflicts,
      previous: reconstructedMemory(node, [...byName.keys()]),
      policy: decisionPolicy(policy, new Set()),
      now,
      // One look, no history (seen() estimates from renewTime): the CLI's one timeline is the wall clock.
      monotonicNow: now,
      suspendedBy: [
        ...(policy.suspend ? [CONTROLLER_SUSPEND] : []),
        ...resolved.suspendedBy.map((name) => `SystemExtension ${name}`),
      ],
      labelWaits: labelWaitsOf(node.labels, sxs),
    };
    return { raw, node, byName, conflicts, leases, agentLease, ignoredLeases, input };
  });

  // The breaker is judged over every node's decision, then every node is decided with its verdict.
  const breaker = new BreakerState({
    maxUnhealthyFraction: policy.maxUnhealthyFraction,
    minFailing: BREAKER_DEFAULTS.minFailing,
  });
  for (const p of prepared) breaker.apply(p.node.name, decideNode(p.input));
  const tripped = new Set(breaker.evaluate(now).tripped);

  const nodes = prepared.map((p): NodeReport => {
    const input = { ...p.input, policy: decisionPolicy(policy, tripped) };
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
  });
  return { nodes, tripped, policy, now };
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

/** What the controller will do by itself if nothing else changes: the first future decision that differs. */
export interface NextAction {
  atMs: number;
  /** The node's state as shown now and then (stateText: `Degraded (AgentNotReporting)`). */
  from: string;
  to: string;
  /** What the controller writes then, as verb phrases (`add the runtime taint …`, `set ExtensionsReady …`). */
  changes: string[];
  /** The extension verdicts that change with it. */
  because: string[];
  /** What would prevent it. */
  unless: string;
}

/** What the controller writes differently between two decisions (taints, condition, label), as verb phrases. */
function decisionChanges(from: NodeDecision, to: NodeDecision, policy: DecisionPolicy): string[] {
  const changes: string[] = [];
  changes.push(...taintChanges(to.desiredTaints, from.desiredTaints, policy));
  if (from.condition.status !== to.condition.status || from.condition.reason !== to.condition.reason) {
    changes.push(`set ExtensionsReady=${to.condition.status} (${to.condition.reason})`);
  }
  if (from.label !== to.label) changes.push(`label it ${NODE_STATUS_LABEL}=${to.label}`);
  return changes;
}

/** The decision input at `at`, with every Lease renewed just then (the agent keeps reporting what it reports now). */
function renewedAt(input: DecisionInput, at: number): DecisionInput {
  const renew = (s: SeenLease): SeenLease => ({ ...s, observedAtMs: Math.max(s.observedAtMs, at) });
  return {
    ...input,
    leases: new Map([...input.leases].map(([name, s]) => [name, renew(s)])),
    agent: input.agent ? renew(input.agent) : undefined,
    now: at,
    monotonicNow: at,
  };
}

/**
 * Steps the decision core through its own deadlines (nextDeadlineMs), as the controller's work queue requeues
 * the node, until the outcome changes: that is what the controller will do next, and when. `renewed`: the
 * agent keeps renewing its Leases with what they say now (the normal case: grace ends, the bootstrap
 * deadline); `stopped`: nothing is renewed any more (the agent dies now). Undefined when nothing is due.
 */
export function nextAction(
  report: NodeReport,
  mode: 'renewed' | 'stopped' = 'renewed',
  maxSteps = 512,
): NextAction | undefined {
  const first = report.decision;
  let current = first;
  for (let step = 0; step < maxSteps; step++) {
    const at = current.nextDeadlineMs;
    if (at === undefined) return undefined;
    const input =
      mode === 'renewed' ? renewedAt(report.input, at) : { ...report.input, now: at, monotonicNow: at };
    const next = decideNode({ ...input, previous: current.memory });
    const changes = decisionChanges(first, next, report.input.policy);
    const from = stateText(first.state, first.condition.reason);
    const to = stateText(next.state, next.condition.reason);
    if (changes.length > 0 || from !== to) {
      // The extensions that change the same way are one line: `a and b go from Healthy to Unknown (…)`.
      const before = new Map(first.extensions.map((e) => [e.name, e]));
      const byChange = new Map<string, string[]>();
      for (const e of next.extensions) {
        const was = before.get(e.name);
        if (was && was.state === e.state && was.reason === e.reason) continue;
        const change = `${was ? `from ${was.state} to ` : ''}${e.state}${e.reason ? ` (${e.reason})` : ''}`;
        byChange.set(change, [...(byChange.get(change) ?? []), e.name]);
      }
      const because = [...byChange].map(([change, names]) => {
        const who = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
        const verb = change.startsWith('from ')
          ? names.length === 1
            ? 'goes'
            : 'go'
          : names.length === 1
            ? 'is'
            : 'are';
        return `${who} ${verb} ${change}`;
      });
      const timeout = next.state === NodeState.BootstrapTimeout;
      return {
        atMs: at,
        from,
        to,
        changes,
        because,
        unless: timeout
          ? 'unless the agent has reported and every critical extension is Healthy before then'
          : mode === 'stopped'
            ? 'if the agent stops renewing its Leases now'
            : 'unless an agent reports a change before then',
      };
    }
    current = next;
  }
  return undefined;
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

/** One thing a bootstrapping node waited for, in the order they happened. */
export interface BootstrapStep {
  /** `agent`: its first report; `extension`: `name` turned Healthy; `controller`: it removed the taint. */
  kind: 'agent' | 'extension' | 'controller';
  name: string;
  atMs: number;
  /** How long the node waited for this after the step before (the waits add up to the time held). */
  waitedMs: number;
}

export interface BootstrapBreakdown {
  startedMs: number;
  /** When the bootstrap taint was removed, if still known. */
  completedMs: number | undefined;
  steps: BootstrapStep[];
  /** Critical extensions whose time to Healthy is not known (reconstructed from Leases that moved on since). */
  unknown: string[];
  /**
   * `record`: the controller's record on the BootstrapTaintRemoved Event (correct whatever happened since);
   * `leases`: reconstructed from the Leases as they are now (an older controller, no record).
   */
  source: 'record' | 'leases';
}

/** When an event last happened (a series' last observation, else its own time). */
export function eventTimeMs(e: EventObject): number {
  const t =
    e.series?.lastObservedTime ??
    e.eventTime ??
    e.lastTimestamp ??
    e.firstTimestamp ??
    e.metadata?.creationTimestamp;
  return t ? Date.parse(t) : Number.NaN;
}

/** Steps in time order, each clamped into [start, end] and after the one before, with their waits. */
function steps(
  startedMs: number,
  completedMs: number | undefined,
  milestones: ReadonlyArray<Omit<BootstrapStep, 'waitedMs'>>,
): BootstrapStep[] {
  const end = completedMs ?? Infinity;
  const sorted = milestones
    .map((m) => ({ ...m, atMs: Math.min(end, Math.max(startedMs, m.atMs)) }))
    .sort((a, b) => a.atMs - b.atMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let mark = startedMs;
  const out = sorted.map((m) => {
    const step = { ...m, waitedMs: m.atMs - mark };
    mark = m.atMs;
    return step;
  });
  if (completedMs !== undefined) {
    out.push({ kind: 'controller', name: 'controller', atMs: completedMs, waitedMs: completedMs - mark });
  }
  return out;
}

/**
 * Time to schedulable as nodecare saw it, for a node that finished bootstrapping on this boot: from the start
 * (creation, or the reboot) to the removal of the bootstrap taint, split by what the node waited for — the
 * agent's first report, each critical extension turning Healthy, the controller. From the controller's record
 * on the BootstrapTaintRemoved Event when there is one (correct after any later change); else reconstructed
 * from the Leases as they are now (extensions that changed state since are not counted). Undefined for a node
 * still bootstrapping.
 */
export function bootstrapBreakdown(
  report: NodeReport,
  events: readonly EventObject[],
): BootstrapBreakdown | undefined {
  const { node, decision } = report;
  if (decision.state === NodeState.Bootstrapping || decision.state === NodeState.BootstrapTimeout) {
    return undefined;
  }
  if (node.annotations[NodeAnnotation.bootstrappedBootId] !== node.bootId) return undefined;
  const removals = events
    .filter((e) => e.reason === EventReason.BootstrapTaintRemoved)
    .sort((a, b) => eventTimeMs(b) - eventTimeMs(a));
  const record = removals
    .map((e) => decodeBootstrapRecord(e.metadata?.annotations?.[BOOTSTRAP_RECORD_ANNOTATION]))
    .find((r) => r?.bootId === node.bootId);
  if (record) {
    return {
      startedMs: record.startedMs,
      completedMs: record.completedMs,
      steps: steps(record.startedMs, record.completedMs, [
        ...(record.agentReportedMs !== undefined
          ? [{ kind: 'agent' as const, name: 'agent', atMs: record.agentReportedMs }]
          : []),
        ...record.extensions.flatMap((e) =>
          e.healthyMs === undefined ? [] : [{ kind: 'extension' as const, name: e.name, atMs: e.healthyMs }],
        ),
      ]),
      unknown: record.extensions.filter((e) => e.healthyMs === undefined).map((e) => e.name),
      source: 'record',
    };
  }
  const startedMs = report.createdMs;
  const completedMs = removals
    .map(eventTimeMs)
    .filter((t) => Number.isFinite(t) && t >= startedMs)
    .sort((a, b) => a - b)[0];
  const known: Array<Omit<BootstrapStep, 'waitedMs'>> = [];
  const unknown: string[] = [];
  for (const e of decision.extensions.filter((v) => v.critical)) {
    const lease = report.leases.get(e.name);
    const since = lease?.state === ExtensionState.Healthy ? Date.parse(lease.since) : Number.NaN;
    if (Number.isFinite(since) && (completedMs === undefined || since <= completedMs + 1000)) {
      known.push({ kind: 'extension', name: e.name, atMs: since });
    } else unknown.push(e.name);
  }
  return { startedMs, completedMs, steps: steps(startedMs, completedMs, known), unknown, source: 'leases' };
}
