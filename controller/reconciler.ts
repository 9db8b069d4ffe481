// Reconciles one node (docs/conventions.md 1 and 3): read the caches, call the pure decision core, re-read any lease
// whose staleness the decision acts on, write only the differences, record events after the writes
// succeeded, and return the next deadline. Also keeps the cluster-wide state the per-node decision needs:
// the correlated-failure breaker, updated incrementally as decisions change.

import {
  LEASE_NAMESPACE,
  resolveRegistrations,
  restrictConditionType,
  type RegistrationSource,
} from '../api/index.ts';
import { NodeAnnotation, type ExtensionState } from '../api/names.ts';
import { ControllerReason, EventReason } from '../api/reasons.ts';
import type { Clock } from '../lib/clock.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import type { Logger } from '../lib/log.ts';
import { toCachedLease, toCachedNode, type CachedNode, type ClusterCache, type NodeObject } from './cache.ts';
import { clusterEventRecorder, type ClusterEventRecorder } from './cluster-events.ts';
import type { ControllerConfig } from './config.ts';
import {
  BREAKER_DEFAULTS,
  BreakerState,
  type NodeState,
  decideNode,
  type DecisionPolicy,
  type NodeDecision,
  type NodeEvent,
  type NodeMemory,
  type RequiredExtension,
} from './decide/index.ts';
import { sameCondition } from './decide/condition.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { AgentNotReportingFact, NodeNotReadyFact } from './rollup/evaluate.ts';
import type { SourcedPair } from './rollup/writer.ts';
import type { ReconcileResult } from './workqueue.ts';
import {
  conditionPatch,
  isTaintEvent,
  nodeChange,
  nodePatch,
  writtenTaintEvents,
  type EventRecorder,
  type Fence,
  type NodeApi,
  type TaintKeys,
} from './writes.ts';

/** Writes decided on a node that keeps changing under them are retried this often, then the queue backs off. */
const MAX_CONFLICT_RETRIES = 5;

/** What the reconciler reads from the caches (ClusterCache; FakeCache in unit tests). */
export type ReconcilerCache = Pick<
  ClusterCache,
  'node' | 'nodeNames' | 'leasesOf' | 'observeLive' | 'systemExtensionList' | 'noteWritten'
>;

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

interface ContributedExtension {
  name: string;
  state: ExtensionState;
  reason: string;
  conditionType: string;
  source: RegistrationSource | undefined;
}

/** What a node's latest decision contributes to the state metrics, the breaker and the roll-up. */
interface Contribution {
  state: NodeState;
  condition: { status: string; reason: string };
  extensions: ContributedExtension[];
  /** While NotReady: what the kubelet says (the roll-up names it for every pair of the node). */
  notReady: NodeNotReadyFact | undefined;
  /** While the agent is not reporting: since when (the roll-up names it once for the node). */
  agentNotReporting: AgentNotReportingFact | undefined;
}

function sameExtensions(a: readonly ContributedExtension[], b: readonly ContributedExtension[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (x, i) =>
        x.name === b[i]!.name &&
        x.state === b[i]!.state &&
        x.reason === b[i]!.reason &&
        x.conditionType === b[i]!.conditionType &&
        x.source === b[i]!.source,
    )
  );
}

export class Reconciler {
  private readonly deps: ReconcilerDeps;
  private readonly keys: TaintKeys;
  private memory = new Map<string, NodeMemory>();
  private readonly contributions = new Map<string, Contribution>();
  private readonly breaker: BreakerState;
  private readonly clusterEvents: ClusterEventRecorder;
  /** When this leader added the runtime taint to each node (for the time-held metric). */
  private readonly runtimeTaintedAtMs = new Map<string, number>();

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.keys = { bootstrap: deps.config.bootstrapTaintKey, runtime: deps.config.runtimeTaintKey };
    this.breaker = new BreakerState({
      maxUnhealthyFraction: deps.config.maxUnhealthyFraction,
      minFailing: BREAKER_DEFAULTS.minFailing,
    });
    deps.metrics.countExtensionNodes(
      () => this.extensionPairs(),
      () => new Set([...deps.cache.systemExtensionList()].map((sx) => sx.name)),
    );
    // A correlated failure is the cluster's, not one node's: it is recorded regarding ClusterHealth.
    this.clusterEvents = clusterEventRecorder(deps.api, deps.config.identity, deps.clock, deps.fence);
  }

  get trippedExtensions(): ReadonlySet<string> {
    return this.breaker.tripped;
  }

  /** Each node's latest decided state. */
  nodeStates(): Map<string, NodeState> {
    return new Map([...this.contributions].map(([name, c]) => [name, c.state]));
  }

  /** Every required (node, extension) pair's extension name and state, as last decided. */
  private *extensionPairs(): Generator<{ extension: string; state: string }> {
    for (const c of this.contributions.values())
      for (const e of c.extensions) yield { extension: e.name, state: e.state };
  }

  /** Every (node, extension) pair as last decided: what the roll-up evaluates. */
  *rollupPairs(): Generator<SourcedPair> {
    for (const [node, c] of this.contributions) {
      for (const e of c.extensions)
        yield {
          node,
          extension: e.name,
          conditionType: e.conditionType,
          state: e.state,
          reason: e.reason,
          ...(e.source ? { source: e.source } : {}),
          ...(c.notReady ? { nodeNotReady: c.notReady } : {}),
          ...(c.agentNotReporting && e.reason === ControllerReason.AgentNotReporting
            ? { agentNotReporting: c.agentNotReporting }
            : {}),
        };
    }
  }

  /**
   * Starts a leadership term, before the work queue runs (on synced caches, after every lease got a fresh
   * duration). Forgets everything an earlier term knew: per-node memory (fresh graces, no inherited event
   * history), node states and breaker counts (nodes may have come, gone or recovered while another replica
   * led). Then decides every node, without writing, and judges the breaker once over all of them, as the
   * node lifecycle controller computes every node's state before its zone state: the first write already
   * sees the whole cluster, never the first few nodes' partial counts.
   */
  reset(): void {
    const { cache, metrics } = this.deps;
    this.memory = new Map();
    this.contributions.clear();
    this.breaker.reset();
    metrics.nodes.reset();
    metrics.breakerTripped.reset();
    metrics.nodeConditions.reset();
    this.runtimeTaintedAtMs.clear();
    for (const name of cache.nodeNames()) this.record(name, this.decide(name));
    this.evaluateBreaker();
  }

  private policy(): DecisionPolicy {
    const { config } = this.deps;
    return {
      bootstrapTaintKey: config.bootstrapTaintKey,
      runtimeTaintKey: config.runtimeTaintKey,
      bootstrapTimeoutSeconds: config.bootstrapTimeoutSeconds,
      missingLeaseGraceSeconds: config.missingLeaseGraceSeconds,
      trippedExtensions: this.breaker.tripped,
    };
  }

  private decide(name: string, node = this.deps.cache.node(name)): NodeDecision | undefined {
    const { cache, clock } = this.deps;
    if (!node) return undefined;
    const { byName, conflicts } = resolveRegistrations(node, cache.systemExtensionList());
    const allowedTypes = this.deps.config.annotationConditionTypes;
    const required: RequiredExtension[] = [...byName.values()].map((registration) => {
      const r = restrictConditionType(registration, allowedTypes);
      return {
        name: r.name,
        source: r.source,
        policy: r.policy,
        valid: r.valid,
        ...(r.valid ? {} : { problems: r.problems }),
      };
    });
    const { extensions, agent } = cache.leasesOf(name);
    return decideNode({
      node,
      required,
      leases: extensions,
      agent,
      conflicts,
      previous: this.memory.get(name),
      policy: this.policy(),
      now: clock.now(),
    });
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const { cache, clock, log, metrics, events } = this.deps;
    const started = performance.now();
    let node = cache.node(name);
    let decision = this.decide(name, node);
    if (!decision || !node) {
      this.memory.delete(name);
      this.runtimeTaintedAtMs.delete(name);
      this.contribute(name, undefined);
      return {};
    }

    // Staleness is judged by our clock; before acting on it, make sure the lease really was not renewed.
    // A renewal found live can uncover another stale lease (an expired heartbeat hides its extensions'
    // leases): re-read until the decision acts on no lease that was not read live.
    const readLive = new Set<string>();
    for (;;) {
      const unread = decision.staleLeases.filter((lease) => !readLive.has(lease));
      if (unread.length === 0 || !this.wouldWrite(node, decision)) break;
      for (const lease of unread) readLive.add(lease);
      if (!(await this.renewedMeanwhile(unread))) break;
      decision = this.decide(name, node) ?? decision;
    }

    const nodeLog = log.child({ node: name });
    // Events about extensions and timeouts are transitions of the decision's memory: the first decision's.
    // Taint events are what the node patch really changed, so a write that found its change already made
    // (a duplicate reconcile on a lagging cache, a 409 rebase) records nothing.
    const memoryEvents = decision.events.filter((e) => !isTaintEvent(e));
    // Taint events of every attempt: a taint patch that went through before the condition patch met a 409
    // is not made again by the retry, but it happened.
    const taintEvents: NodeEvent[] = [];
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          await this.write(node, decision, nodeLog, taintEvents);
          break;
        } catch (err) {
          if (!isKubeError(err, KubeErrorCode.Conflict) || attempt >= MAX_CONFLICT_RETRIES) throw err;
          // Decided on a node that changed meanwhile: read it live and decide again.
          node = toCachedNode(await this.deps.api.getNode(name));
          decision = this.decide(name, node) ?? decision;
        }
      }
    } catch (err) {
      if (isKubeError(err, KubeErrorCode.NotFound)) return {}; // deleted: its watch event reconciles it
      throw err;
    }

    this.observeTaintTimes(node, taintEvents);
    for (const event of [...taintEvents, ...memoryEvents]) {
      metrics.events.inc({ reason: event.reason });
      events
        .nodeEvent(node, event)
        .catch((err: unknown) => nodeLog.warn({ err, reason: event.reason }, 'Failed to record event'));
    }
    const previousState = this.contributions.get(name)?.state;
    if (previousState !== decision.state)
      nodeLog.info(
        { from: previousState, to: decision.state, reason: decision.condition.reason },
        'Node state changed',
      );
    this.memory.set(name, decision.memory);
    this.contribute(name, decision);
    metrics.reconcileDuration.observe((performance.now() - started) / 1000);
    return decision.nextDeadlineMs === undefined
      ? {}
      : { requeueAfterMs: Math.max(0, decision.nextDeadlineMs - clock.now()) };
  }

  /**
   * Feeds the bootstrap-duration and runtime-taint-duration histograms from the taint changes a write really
   * made. A bootstrap's start is the memory's (or, on a first boot, the node's creation); a runtime taint's
   * start is known only when this leader added it.
   */
  private observeTaintTimes(node: CachedNode, taintEvents: readonly NodeEvent[]): void {
    const { clock, metrics } = this.deps;
    const now = clock.now();
    for (const event of taintEvents) {
      if (event.reason === EventReason.BootstrapTaintRemoved) {
        const firstBoot = node.annotations[NodeAnnotation.bootstrappedBootId] === undefined;
        const started =
          this.memory.get(node.name)?.bootstrapStartedMs ??
          (firstBoot ? node.creationTimestampMs : undefined);
        if (started !== undefined && now >= started)
          metrics.bootstrapDuration.observe((now - started) / 1000);
      } else if (event.reason === EventReason.RuntimeTaintAdded) {
        this.runtimeTaintedAtMs.set(node.name, now);
      } else if (event.reason === EventReason.RuntimeTaintRemoved) {
        const added = this.runtimeTaintedAtMs.get(node.name);
        this.runtimeTaintedAtMs.delete(node.name);
        if (added !== undefined) metrics.runtimeTaintDuration.observe((now - added) / 1000);
      }
    }
  }

  /** Re-reads the leases judged stale; true when one was renewed after all (decide again). */
  private async renewedMeanwhile(leaseNames: readonly string[]): Promise<boolean> {
    const { api, cache } = this.deps;
    let renewed = false;
    for (const leaseName of leaseNames) {
      try {
        const live = toCachedLease(await api.getLease(LEASE_NAMESPACE, leaseName));
        if (live && cache.observeLive(live)) renewed = true;
      } catch (err) {
        if (!isKubeError(err, KubeErrorCode.NotFound)) throw err;
      }
    }
    return renewed;
  }

  /**
   * Writes taints, label and annotation, then the condition, each only against the node it was computed on
   * (resourceVersion precondition: 409 when it changed). The taints first: they are what the scheduler and
   * the autoscaler act on, so a change waits for one write, not two (docs/adr/0008); the condition follows
   * on the node the taint patch returned. Adds the taint events the patch made to `taintEvents`.
   */
  private async write(
    node: CachedNode,
    decision: NodeDecision,
    nodeLog: Logger,
    taintEvents: NodeEvent[],
  ): Promise<void> {
    const { api, clock, config } = this.deps;
    let current = node;
    const change = nodeChange(current, decision, this.keys, !config.dryRun);
    if (change) {
      if (change.taintSummary.length > 0) {
        nodeLog.info(
          { state: decision.state, taints: change.taintSummary, dryRun: config.dryRun },
          config.dryRun ? 'Would change taints (dry run)' : 'Changing taints',
        );
      }
      const before = current;
      current = await this.send('node', () => api.patchNode(before.name, nodePatch(before, change)));
      taintEvents.push(...writtenTaintEvents(before, current, decision.events, this.keys));
    }
    // Computed on the node the taint patch returned: its resourceVersion and its condition belong together.
    const status = conditionPatch(current, decision.condition, clock.now());
    if (status) await this.send('condition', () => api.patchNodeStatus(node.name, status));
  }

  /** One write, sent only while this replica leads, counted by outcome. */
  private async send(kind: 'condition' | 'node', write: () => Promise<NodeObject>): Promise<CachedNode> {
    const { fence, metrics } = this.deps;
    fence();
    try {
      const written = toCachedNode(await write());
      metrics.nodeWrites.inc({ kind, result: 'ok' });
      // The next decision reads what this write made, not the watch's older copy (no 409 on our own write).
      this.deps.cache.noteWritten(written);
      return written;
    } catch (err) {
      const result = isKubeError(err, KubeErrorCode.NotFound)
        ? 'gone'
        : isKubeError(err, KubeErrorCode.Conflict)
          ? 'conflict'
          : 'error';
      metrics.nodeWrites.inc({ kind, result });
      throw err;
    }
  }

  private wouldWrite(node: CachedNode, decision: NodeDecision): boolean {
    return (
      !sameCondition(node.extensionsReadyCondition, decision.condition) ||
      nodeChange(node, decision, this.keys, true) !== undefined
    );
  }

  /** Records a node's latest decision (undefined: the node is gone) and re-judges the breaker. */
  private contribute(name: string, decision: NodeDecision | undefined): void {
    if (this.record(name, decision)) this.deps.onRollupChange?.();
    if (this.evaluateBreaker()) this.deps.onBreakerChange();
  }

  /**
   * Keeps the state metrics and the breaker's counts up to date, one node at a time. True when what the node
   * contributes to the roll-up changed.
   */
  private record(name: string, decision: NodeDecision | undefined): boolean {
    const { metrics } = this.deps;
    const old = this.contributions.get(name);
    const apply = (c: Contribution, sign: 1 | -1): void => {
      metrics.nodes.inc({ state: c.state }, sign);
      metrics.nodeConditions.inc(c.condition, sign);
    };
    if (old) apply(old, -1);
    let changed: boolean;
    if (decision) {
      const next: Contribution = {
        state: decision.state,
        condition: { status: decision.condition.status, reason: decision.condition.reason },
        extensions: decision.extensions.map((e) => ({
          name: e.name,
          state: e.state,
          reason: e.reason,
          conditionType: e.conditionType,
          source: e.source,
        })),
        notReady: decision.kubeletNotReady
          ? { reason: decision.kubeletNotReady.reason, since: decision.kubeletNotReady.since }
          : undefined,
        agentNotReporting: decision.agentNotReporting ? { ...decision.agentNotReporting } : undefined,
      };
      apply(next, 1);
      this.contributions.set(name, next);
      changed =
        !old ||
        !sameExtensions(old.extensions, next.extensions) ||
        old.notReady?.reason !== next.notReady?.reason ||
        old.notReady?.since !== next.notReady?.since ||
        old.agentNotReporting?.since !== next.agentNotReporting?.since;
    } else {
      this.contributions.delete(name);
      changed = old !== undefined && old.extensions.length > 0;
    }
    this.breaker.apply(name, decision);
    return changed;
  }

  /** Judges the breaker on the current counts and reports its transitions; true when the set changed. */
  private evaluateBreaker(): boolean {
    const { metrics, log } = this.deps;
    const { transitions } = this.breaker.evaluate();
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
      this.clusterEvents
        .clusterEvent({ type: 'Warning', reason: EventReason.CorrelatedFailure, message })
        .catch((err: unknown) =>
          log.warn({ err, reason: EventReason.CorrelatedFailure }, 'Failed to record event'),
        );
    }
    return transitions.length > 0;
  }
}
