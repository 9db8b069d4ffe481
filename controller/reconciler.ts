// Reconciles one node (docs/conventions.md 1 and 3): take its name, read the view and decide (node-decider.ts),
// hand the decision to the writer (writes/), record events for the changes the writes really made, keep the
// ledger (ledger.ts: states, roll-up pairs, the breaker) and return the next deadline to requeue at. A deadline
// that comes when only lease renewals arrived since the decision is re-armed at the renewed expiry instead
// (docs/adr/0009): the decision would be the same but for its deadline.

import type { ParsedSystemExtension } from '../api/index.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import type { ClusterCache } from './cache/index.ts';
import type { ControllerConfig } from './config.ts';
import type { DeadlineParts, NodeDecision, NodeState } from './decide/index.ts';
import { DecisionLedger } from './ledger.ts';
import type { ControllerMetrics } from './metrics.ts';
import { NodeDecider } from './node-decider.ts';
import type { SourcedPair } from './rollup/index.ts';
import { TaintDurations } from './taint-durations.ts';
import type { ReconcileCause, ReconcileResult } from './workqueue.ts';
import {
  clusterEventRecorder,
  eventNotRecorded,
  isTaintEvent,
  NodeWriter,
  type EventRecorder,
} from './writes/index.ts';
import type { Fence, NodeApi } from './writes/index.ts';

/** What the reconciler reads from the caches (ClusterCache; FakeCache in unit tests). */
export type ReconcilerCache = Pick<
  ClusterCache,
  | 'node'
  | 'nodeNames'
  | 'leasesOf'
  | 'leaseExpiresAtMs'
  | 'observeLive'
  | 'systemExtensionList'
  | 'noteWritten'
> &
  Partial<Pick<ClusterCache, 'daemonSetList'>>;

export interface ReconcilerDeps {
  cache: ReconcilerCache;
  api: NodeApi;
  /** Checked just before every write: throws when this replica no longer leads. */
  fence: Fence;
  clock: Clock;
  log: Logger;
  metrics: ControllerMetrics;
  events: EventRecorder;
  config: ControllerConfig;
  /** Called when the breaker's set of tripped extensions changes: every node must be re-decided. */
  onBreakerChange(): void;
  /** Called when what a node contributes to the roll-up (its extensions' states and reasons) changed. */
  onRollupChange?(): void;
}

/** What a term starts with (Reconciler.reset). */
export interface TermStart {
  /** The nodes to reconcile first: their decision is not on them yet, or it has events to record. */
  pressing: string[];
  /** Every other node with a deadline: the delay in ms until it must be decided again. */
  settled: Map<string, number>;
  /**
   * The nodes to decide again after the pressing ones: every settled one when the breaker the pass judged is
   * tripped (the pass decided them on an untripped breaker); empty otherwise.
   */
  sweep: string[];
}

export class Reconciler {
  private readonly deps: ReconcilerDeps;
  private readonly ledger: DecisionLedger;
  private readonly decider: NodeDecider;
  private readonly writer: NodeWriter;
  private readonly durations: TaintDurations;
  /** What each node's last decision's deadline was made of, until the node is decided again. */
  private readonly deadlines = new Map<string, DeadlineParts>();
  /** The SystemExtensions every node was last decided on at once (requirementsKey). */
  private requirements = '';

  constructor(deps: ReconcilerDeps) {
    const { cache, api, fence, clock, log, metrics, config } = deps;
    this.deps = deps;
    // A correlated failure is the cluster's, not one node's: it is recorded regarding ClusterHealth.
    const clusterEvents = clusterEventRecorder(api, config.identity, clock, fence);
    const { maxUnhealthyFraction } = config;
    this.ledger = new DecisionLedger({ metrics, log, clusterEvents, maxUnhealthyFraction });
    this.decider = new NodeDecider({ cache, api, clock, config, tripped: () => this.ledger.tripped });
    const keys = { bootstrap: config.bootstrapTaintKey, runtime: config.runtimeTaintKey };
    const noteWritten = cache.noteWritten.bind(cache);
    this.writer = new NodeWriter({ api, fence, clock, metrics, keys, dryRun: config.dryRun, noteWritten });
    this.durations = new TaintDurations(metrics);
    metrics.countExtensionNodes(
      () => this.ledger.extensionPairs(),
      () => new Set([...cache.systemExtensionList()].map((sx) => sx.name)),
    );
  }

  get trippedExtensions(): ReadonlySet<string> {
    return this.ledger.tripped;
  }

  /** Each node's latest decided state. */
  nodeStates(): Map<string, NodeState> {
    return this.ledger.nodeStates();
  }

  /** When a SystemExtension's current rollout window started (as the decisions use it). */
  rolloutStartMs(sx: ParsedSystemExtension): number {
    return this.decider.rollouts.startMs(sx, this.deps.clock.now());
  }

  /** Whether a suspension holds the node's taint changes (and its evictions). */
  suspended(name: string): boolean {
    return this.ledger.suspended(name);
  }

  /** Every (node, extension) pair as last decided: what the roll-up evaluates. */
  rollupPairs(): Generator<SourcedPair> {
    return this.ledger.rollupPairs();
  }

  /**
   * Starts a leadership term, before the work queue runs (on synced caches, after every lease got a fresh
   * duration). Forgets everything an earlier term knew: per-node memory, node states and breaker counts
   * (nodes may have come, gone or recovered while another replica led). Then decides every node, without
   * writing, and judges the breaker once over all of them, as the node lifecycle controller computes every
   * node's state before its zone state: the first write already sees the whole cluster.
   *
   * That one pass is the term's sweep. `pressing`: the nodes whose decision they do not show yet (what changed
   * while no replica led, or in the hand-off) or that have an event to record, for the term to reconcile
   * first. Every other node is `settled`: the node already shows its decision, so the decision is kept as if
   * carried out (its memory and deadline parts) and the node only has to be decided again at its deadline,
   * the delay given here (unless the breaker trips: `sweep`). Deciding those thousands of nodes a second
   * time through the work queue (as a sweep did until 2026-11-28) took the controller's CPU while the pressing
   * nodes' writes were in flight, and returned nothing this pass does not know.
   */
  reset(): TermStart {
    this.decider.reset();
    this.ledger.reset();
    this.durations.reset();
    this.deadlines.clear();
    this.requirements = requirementsKey(this.deps.cache.systemExtensionList());
    this.decider.rollouts.retain(this.deps.cache.systemExtensionList());
    const pressing: string[] = [];
    const settled = new Map<string, number>();
    const calm: string[] = [];
    const now = this.deps.clock.monotonic();
    for (const name of this.deps.cache.nodeNames()) {
      const cached = this.deps.cache.node(name);
      const decision = this.decider.decide(name, cached);
      this.ledger.record(name, decision);
      if (!cached || !decision) continue;
      if (decision.events.length > 0 || this.writer.wouldWrite(cached, decision)) {
        pressing.push(name);
        continue;
      }
      calm.push(name);
      this.decider.remember(name, decision.memory);
      const deadline = decision.nextDeadlineMs;
      if (deadline === undefined) continue;
      this.deadlines.set(name, decision.deadlines);
      settled.set(name, Math.max(0, deadline - now));
    }
    this.ledger.evaluateBreaker(this.deps.clock.now());
    if (this.ledger.tripped.size === 0) return { pressing, settled, sweep: [] };
    // The pass decided on an untripped breaker, and the breaker it judged is tripped: what the settled nodes
    // would be decided now may differ. They are swept (decided again through the queue), as before any was.
    for (const name of calm) {
      this.deadlines.delete(name);
      this.decider.forget(name);
    }
    return { pressing, settled: new Map(), sweep: calm };
  }

  /**
   * `cause` 'deadline': only the deadline this node's last reconcile returned came since (the work queue
   * knows); the node may be re-armed instead of decided.
   */
  async reconcile(name: string, cause: ReconcileCause = 'change'): Promise<ReconcileResult> {
    const { cache, clock, log, metrics, events } = this.deps;
    if (cause === 'deadline') {
      const delayMs = this.rearm(name);
      if (delayMs !== undefined) return { requeueAfterMs: delayMs };
    }
    // Until this decision is carried out, the node has no deadline to re-arm: a failure decides it again.
    this.deadlines.delete(name);
    const started = performance.now();
    this.decideAllOnNewRequirements();
    // A rollout window that ended is judged by the breaker before any node is decided as enforced.
    if (this.ledger.evaluateBreaker(clock.now())) this.deps.onBreakerChange();
    const cached = cache.node(name);
    const first = this.decider.decide(name, cached);
    if (!first || !cached) {
      this.decider.forget(name);
      this.durations.forget(name);
      this.contribute(name, undefined);
      return {};
    }
    const confirmed = await this.decider.confirmed(cached, first, (d) => this.writer.wouldWrite(cached, d));

    const nodeLog = log.child({ node: name });
    let written;
    try {
      written = await this.writer.write(cached, confirmed, (n) => this.decider.decide(name, n), nodeLog);
    } catch (err) {
      if (isKubeError(err, KubeErrorCode.NotFound)) return {}; // deleted: its watch event reconciles it
      throw err;
    }
    const { node, decision, taintEvents } = written;
    const at = { wallMs: clock.now(), monotonicMs: clock.monotonic() };
    this.durations.observe(node, taintEvents, at, this.decider.bootstrapStartedMs(name));
    // Events about extensions and timeouts are transitions of the decision's memory: the first decision's.
    // Taint events are what the node patches really changed, so a write that found its change already made
    // (a duplicate reconcile on a lagging cache, a 409 rebase) records nothing.
    for (const event of [...taintEvents, ...confirmed.events.filter((e) => !isTaintEvent(e))]) {
      metrics.events.inc({ reason: event.reason });
      events
        .nodeEvent(node, event)
        .catch((err: unknown) => eventNotRecorded(nodeLog, err, { reason: event.reason }));
    }
    const previousState = this.ledger.state(name);
    if (previousState !== decision.state)
      nodeLog.info(
        { from: previousState, to: decision.state, reason: decision.condition.reason },
        'Node state changed',
      );
    this.decider.remember(name, decision.memory);
    this.contribute(name, decision);
    metrics.reconcileDuration.observe((performance.now() - started) / 1000);
    const deadline = decision.nextDeadlineMs;
    if (deadline === undefined) return {};
    this.deadlines.set(name, decision.deadlines);
    return { requeueAfterMs: Math.max(0, deadline - clock.monotonic()) };
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
  rearm(name: string): number | undefined {
    const { cache, clock, metrics } = this.deps;
    const parts = this.deadlines.get(name);
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
    if (this.ledger.evaluateBreaker(clock.now())) this.deps.onBreakerChange();
    metrics.deadlineRearms.inc();
    return next - now;
  }

  /**
   * A SystemExtension created, deleted or changed (a wider nodeSelector, critical false → true, Observe →
   * Enforce) adds or takes away a pair on every node it selects. Recorded one node at a time as each is
   * reconciled, the breaker would judge the first nodes decided alone: three failing of three trip it, it
   * lifts their taints, and it resets as the healthy nodes fill in, so their taints flap (issue 50 item 3).
   * So the first reconcile that sees other SystemExtensions decides every node on them first, without
   * writing, and records those decisions, as the term start does (reset): the breaker judges an extension
   * only on every node decided for its new requirement. The nodes are reconciled through the queue as usual
   * (the change enqueued them all).
   */
  private decideAllOnNewRequirements(): void {
    const { cache } = this.deps;
    const key = requirementsKey(cache.systemExtensionList());
    if (key === this.requirements) return;
    this.requirements = key;
    // The rollout windows of SystemExtensions that are gone are forgotten.
    this.decider.rollouts.retain(cache.systemExtensionList());
    let rollupChanged = false;
    for (const name of cache.nodeNames())
      if (this.ledger.record(name, this.decider.decide(name, cache.node(name)))) rollupChanged = true;
    if (rollupChanged) this.deps.onRollupChange?.();
  }

  /** Records a node's latest decision (undefined: the node is gone) and re-judges the breaker. */
  private contribute(name: string, decision: NodeDecision | undefined): void {
    if (this.ledger.record(name, decision)) this.deps.onRollupChange?.();
    if (this.ledger.evaluateBreaker(this.deps.clock.now())) this.deps.onBreakerChange();
  }
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
