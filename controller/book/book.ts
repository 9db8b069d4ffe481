// The node book: everything the controller remembers of each node, one record per node (its decision memory,
// the parts of its deadline, what its latest decision contributes to the metrics, the breaker and the
// roll-up, when this leader put its runtime taint on), and the cluster-wide views derived from those records
// (breaker counts, node states, roll-up pairs, rollout windows). One reset per leadership term: a new term
// inherits nothing (nodes may have come, gone or recovered while another replica led). The reconciler writes
// it; the roll-up, the evictor, the metrics and the work queue's re-arm read it.

import type { ParsedSystemExtension } from '../../api/index.ts';
import { ControllerReason, EventReason } from '../../api/reasons.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/log.ts';
import type { CachedNode, ClusterCache } from '../cache/index.ts';
import {
  BREAKER_DEFAULTS,
  BreakerCounts,
  RolloutWindows,
  type BreakerContribution,
  type DeadlineParts,
  type NodeDecision,
  type NodeEvent,
  type NodeMemory,
  type NodeState,
} from '../decide/index.ts';
import type { ControllerMetrics } from '../metrics.ts';
import { RollupTally, type SourcedPair } from '../rollup/index.ts';
import {
  clusterEventRecorder,
  eventNotRecorded,
  type ClusterEventRecorder,
  type Fence,
} from '../writes/index.ts';
import {
  contributionOf,
  countContribution,
  rollupChanged,
  type Contribution,
  type ContributionMetrics,
} from './contribution.ts';
import { observeTaintDurations } from './taint-durations.ts';

const NOTHING: BreakerContribution = new Map();

/** What the book remembers of one node. */
interface NodeRecord {
  /** The memory of its last decision that was carried out (or that the node already showed). */
  memory?: NodeMemory;
  /** What that decision's deadline was made of, until the node is decided again. */
  deadlines?: DeadlineParts;
  /** What its latest decision contributes (recorded even when not carried out yet). */
  contribution?: Contribution;
  /** When this leader added its runtime taint (monotonic clock). */
  runtimeTaintedAtMs?: number;
}

export interface NodeBookDeps {
  clock: Pick<Clock, 'now' | 'monotonic'>;
  log: Logger;
  metrics: ContributionMetrics &
    Pick<
      ControllerMetrics,
      | 'breakerTripped'
      | 'events'
      | 'deadlineRearms'
      | 'bootstrapDuration'
      | 'runtimeTaintDuration'
      | 'countExtensionNodes'
    >;
  clusterEvents: ClusterEventRecorder;
  maxUnhealthyFraction: number;
  /** Each lease's expiry (the re-arm reads it) and the SystemExtensions declared (the metrics), as cached. */
  cache: Pick<ClusterCache, 'leaseExpiresAtMs' | 'systemExtensionList'>;
  /** The breaker's set of tripped extensions changed: every node must be decided again. */
  onBreakerChange?(): void;
  /** What a node contributes to the roll-up (its extensions' states and reasons) changed. */
  onRollupChange?(): void;
}

export class NodeBook {
  private readonly deps: NodeBookDeps;
  private readonly records = new Map<string, NodeRecord>();
  private readonly breaker: BreakerCounts;
  /** Every (node, extension) pair as last decided, counted for the roll-up (swapped in record()). */
  readonly tally = new RollupTally();
  /** When each SystemExtension's rollout window started (the roll-up records it in its status). */
  private readonly rollouts = new RolloutWindows();
  /** The SystemExtensions every node was last decided on at once (requirementsKey). */
  private requirements = '';
  /** The objects that key was last checked on: the same ones again need no key (requirementsChanged). */
  private requirementsSeen: readonly ParsedSystemExtension[] = [];

  constructor(deps: NodeBookDeps) {
    this.deps = deps;
    const { maxUnhealthyFraction } = deps;
    this.breaker = new BreakerCounts({ maxUnhealthyFraction, minFailing: BREAKER_DEFAULTS.minFailing });
    deps.metrics.countExtensionNodes(
      () => this.extensionPairs(),
      () => new Set([...deps.cache.systemExtensionList()].map((sx) => sx.name)),
    );
  }

  /** Forgets every node, the breaker's counts and the metrics they feed: the start of a leadership term. */
  reset(systemExtensions: readonly ParsedSystemExtension[]): void {
    const { metrics } = this.deps;
    this.records.clear();
    this.breaker.reset();
    metrics.nodes.reset();
    metrics.breakerTripped.reset();
    metrics.nodeConditions.reset();
    metrics.suspendedNodes.reset();
    metrics.releasedNodes.reset();
    this.tally.clear();
    this.requirements = requirementsKey(systemExtensions);
    this.requirementsSeen = systemExtensions;
    this.rollouts.retain(systemExtensions);
  }

  /**
   * True (once) when the SystemExtensions differ from those every node was last decided on: every node must
   * be decided on them at once (Reconciler). The rollout windows of those that are gone are forgotten.
   */
  requirementsChanged(systemExtensions: readonly ParsedSystemExtension[]): boolean {
    // Asked on every reconcile: the cache holds the same objects until a watch event replaces one, and the key
    // (a sorted JSON of every SystemExtension) is built only then.
    const seen = this.requirementsSeen;
    if (seen.length === systemExtensions.length && seen.every((sx, i) => sx === systemExtensions[i]))
      return false;
    this.requirementsSeen = systemExtensions;
    const key = requirementsKey(systemExtensions);
    if (key === this.requirements) return false;
    this.requirements = key;
    this.rollouts.retain(systemExtensions);
    return true;
  }

  // What one node's decision reads.

  memory(name: string): NodeMemory | undefined {
    return this.records.get(name)?.memory;
  }

  /** The extensions whose correlated failure holds back runtime taints. */
  get tripped(): ReadonlySet<string> {
    return this.breaker.tripped;
  }

  /** When a SystemExtension's current rollout window started (as the decisions use it). */
  rolloutStartMs(sx: ParsedSystemExtension, nowMs = this.deps.clock.now()): number {
    return this.rollouts.startMs(sx, nowMs);
  }

  // What a reconcile writes.

  /**
   * Records a node's latest decision (undefined: the node is gone, and so is its record), keeping the state
   * metrics and the breaker's counts up to date. True when what it contributes to the roll-up changed.
   */
  record(name: string, decision: NodeDecision | undefined): boolean {
    const { metrics } = this.deps;
    const record = this.records.get(name);
    const old = record?.contribution;
    const next = decision && contributionOf(decision);
    if (old) countContribution(metrics, old, -1);
    if (next) countContribution(metrics, next, 1);
    this.breaker.swap(old?.breaker ?? NOTHING, next?.breaker ?? NOTHING);
    if (!next) this.records.delete(name);
    else if (record) record.contribution = next;
    else this.records.set(name, { contribution: next });
    // Every time, not only when rollupChanged: the tally holds the pairs exactly as rollupPairs() lists them.
    if (old) for (const pair of pairsOf(name, old)) this.tally.remove(pair);
    if (next) for (const pair of pairsOf(name, next)) this.tally.add(pair);
    return rollupChanged(old, next);
  }

  /** record(), then the roll-up told of a change and the breaker judged. */
  contribute(name: string, decision: NodeDecision | undefined): void {
    if (this.record(name, decision)) this.deps.onRollupChange?.();
    this.judgeBreaker();
  }

  /** Records of every node at once (their SystemExtensions changed); the roll-up told once of any change. */
  recordAll(decisions: Iterable<[string, NodeDecision | undefined]>): void {
    let changed = false;
    for (const [name, decision] of decisions) if (this.record(name, decision)) changed = true;
    if (changed) this.deps.onRollupChange?.();
  }

  /** The node's decision was carried out (or the node shows it): its memory and deadline are kept. */
  settle(name: string, decision: NodeDecision): void {
    const record = this.records.get(name) ?? {};
    record.memory = decision.memory;
    if (decision.nextDeadlineMs === undefined) delete record.deadlines;
    else record.deadlines = decision.deadlines;
    this.records.set(name, record);
  }

  /**
   * A decision carried out on `node`: the taint durations of what its writes changed (on the memory before
   * it), a change of state logged, then its memory, deadline and contribution kept.
   */
  commit(node: CachedNode, decision: NodeDecision, taintEvents: readonly NodeEvent[], log: Logger): void {
    this.observeTaints(node, taintEvents);
    const previous = this.state(node.name);
    if (previous !== decision.state) {
      const { reason } = decision.condition;
      log.info({ from: previous, to: decision.state, reason }, 'Node state changed');
    }
    this.settle(node.name, decision);
    this.contribute(node.name, decision);
  }

  /** The node is being decided again: until that is carried out, it has no deadline to re-arm. */
  unsettle(name: string, memory: 'keep' | 'forget' = 'keep'): void {
    const record = this.records.get(name);
    if (!record) return;
    delete record.deadlines;
    if (memory === 'forget') delete record.memory;
  }

  /** Observes the taint changes a write to `node` made (taint durations), before settle(). */
  private observeTaints(node: CachedNode, taintEvents: readonly NodeEvent[]): void {
    if (taintEvents.length === 0) return;
    const record = this.records.get(node.name) ?? {};
    const { clock, metrics } = this.deps;
    const at = { wallMs: clock.now(), monotonicMs: clock.monotonic() };
    observeTaintDurations(metrics, record, node, taintEvents, at);
    this.records.set(node.name, record);
  }

  /** Judges the breaker on the current counts and reports its transitions; true when the set changed. */
  evaluateBreaker(): boolean {
    const { metrics, log, clusterEvents, clock } = this.deps;
    const { transitions } = this.breaker.evaluate(clock.now());
    for (const { extension, tripped, count } of transitions) {
      if (!tripped) {
        metrics.breakerTripped.remove({ extension });
        log.info({ extension, ...count }, 'Correlated failure over: breaker reset');
        continue;
      }
      metrics.breakerTripped.set({ extension }, 1);
      const message = `Extension ${extension} fails on ${count.failing} of ${count.requiring} nodes at once: treating it as a faulty rollout, not faulty nodes; holding back runtime taints for it.`;
      log.warn({ extension, ...count }, 'Correlated failure: breaker tripped');
      metrics.events.inc({ reason: EventReason.CorrelatedFailure });
      clusterEvents
        .clusterEvent({ type: 'Warning', reason: EventReason.CorrelatedFailure, message })
        .catch((err: unknown) => eventNotRecorded(log, err, { reason: EventReason.CorrelatedFailure }));
    }
    return transitions.length > 0;
  }

  /** evaluateBreaker(), and every node decided again when the set changed. */
  judgeBreaker(): void {
    if (this.evaluateBreaker()) this.deps.onBreakerChange?.();
  }

  /**
   * The node's deadline came and nothing but lease renewals arrived since its last decision. A renewal of a
   * live lease changes nothing a decision reads but that lease's expiry (LeaseIndex.updated does not even
   * enqueue the node for it), so when no deadline has really passed (every lease among them was renewed
   * and no fixed deadline such as a grace end, the bootstrap timeout or a rollout window's end came), the
   * decision now would be the last one with a later deadline: requeue at that deadline without deciding.
   * Returns the delay to that deadline; undefined when the node must be decided. The work queue asks this
   * itself, without a reconcile, when a node's deadline comes (WorkQueueOptions.rearm).
   */
  readonly rearm = (name: string): number | undefined => {
    const { cache, clock, metrics } = this.deps;
    const parts = this.records.get(name)?.deadlines;
    if (!parts) return undefined;
    const now = clock.monotonic();
    let next = parts.fixedMs ?? Number.POSITIVE_INFINITY;
    if (next <= now) return undefined;
    for (const lease of parts.leases) {
      const expiresAtMs = cache.leaseExpiresAtMs(lease, name);
      if (expiresAtMs === undefined || expiresAtMs <= now) return undefined;
      next = Math.min(next, expiresAtMs);
    }
    if (!Number.isFinite(next)) return undefined;
    // The breaker is judged at each node's deadline, as when it was decided (on the wall clock: rollout windows
    // end at persisted wall times, docs/adr/0020).
    this.judgeBreaker();
    metrics.deadlineRearms.inc();
    return next - now;
  };

  // The cluster-wide views.

  /** The node's latest decided state. */
  state(name: string): NodeState | undefined {
    return this.records.get(name)?.contribution?.state;
  }

  /** Each node's latest decided state. */
  nodeStates(): Map<string, NodeState> {
    const states = new Map<string, NodeState>();
    for (const [name, r] of this.records) if (r.contribution) states.set(name, r.contribution.state);
    return states;
  }

  /** Whether a suspension holds the node's taint changes (and its evictions), as last decided. */
  suspended(name: string): boolean {
    return this.records.get(name)?.contribution?.suspended === true;
  }

  /** Every required (node, extension) pair's extension name and state, as last decided. */
  *extensionPairs(): Generator<{ extension: string; state: string }> {
    for (const { contribution } of this.records.values())
      for (const e of contribution?.extensions ?? []) yield { extension: e.name, state: e.state };
  }

  /** Every (node, extension) pair as last decided: what the roll-up evaluates (as `tally` counts them). */
  *rollupPairs(): Generator<SourcedPair> {
    for (const [node, { contribution }] of this.records) if (contribution) yield* pairsOf(node, contribution);
  }
}

/** The (node, extension) pairs a node's contribution brings to the roll-up. */
function* pairsOf(node: string, c: Contribution): Generator<SourcedPair> {
  for (const e of c.extensions)
    yield {
      node,
      extension: e.name,
      conditionType: e.conditionType,
      state: e.state,
      reason: e.reason,
      ...(e.source ? { source: e.source } : {}),
      ...(c.notReady ? { nodeNotReady: c.notReady } : {}),
      ...(c.maintenance ? { maintenance: c.maintenance } : {}),
      ...(c.maintenancePlanned ? { maintenancePlanned: true } : {}),
      ...(c.agentNotReporting && e.reason === ControllerReason.AgentNotReporting
        ? { agentNotReporting: c.agentNotReporting }
        : {}),
    };
}

/**
 * Which SystemExtensions there are, each in its current spec: a generation (or a recreated object, a new
 * creationTimestamp) changes it. Status writes do not.
 */
function requirementsKey(systemExtensions: Iterable<ParsedSystemExtension>): string {
  return JSON.stringify(
    [...systemExtensions].map((sx) => [sx.name, sx.uid, sx.generation, sx.createdMs]).sort(),
  );
}

/** A node book whose correlated failures are recorded as cluster events (regarding ClusterHealth). */
export function bookOf(
  deps: Omit<NodeBookDeps, 'clusterEvents' | 'maxUnhealthyFraction'> & {
    api: Parameters<typeof clusterEventRecorder>[0];
    fence: Fence;
    config: { identity: string; maxUnhealthyFraction: number };
  },
): NodeBook {
  const { api, config, clock, fence } = deps;
  const clusterEvents = clusterEventRecorder(api, config.identity, clock, fence);
  return new NodeBook({ ...deps, clusterEvents, maxUnhealthyFraction: config.maxUnhealthyFraction });
}
