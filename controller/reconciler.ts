// Reconciles one node (STYLE.md 1 and 3): read the caches, call the pure decision core, re-read any lease
// whose staleness the decision acts on, write only the differences, record events after the writes
// succeeded, and return the next deadline. Also keeps the cluster-wide state the per-node decision needs:
// the correlated-failure breaker, updated incrementally as decisions change.

import { LEASE_NAMESPACE, decodeLease, resolveRegistrations, type LeaseObject } from '../api/index.ts';
import { EventReason } from '../api/reasons.ts';
import type { Clock } from '../lib/clock.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import type { Logger } from '../lib/log.ts';
import type { ClusterCache } from './cache.ts';
import type { ControllerConfig } from './config.ts';
import {
  NodeState,
  decideNode,
  evaluateBreaker,
  type DecisionPolicy,
  type ExtensionFailureCount,
  type NodeDecision,
  type NodeMemory,
  type RequiredExtension,
} from './decide/index.ts';
import { isFailing, sameCondition } from './decide/condition.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { ReconcileResult } from './workqueue.ts';
import { applyNodeChange, nodeChange, writeCondition, type EventRecorder, type TaintKeys } from './writes.ts';

const TAINT_EVENTS: ReadonlySet<string> = new Set([
  EventReason.BootstrapTaintAdded,
  EventReason.BootstrapTaintRemoved,
  EventReason.RuntimeTaintAdded,
  EventReason.RuntimeTaintRemoved,
]);

export interface ReconcilerDeps {
  cache: ClusterCache;
  client: KubeClient;
  clock: Clock;
  log: Logger;
  metrics: ControllerMetrics;
  events: EventRecorder;
  config: ControllerConfig;
  /** Called when the breaker's set of tripped extensions changes: every node must be re-decided. */
  onBreakerChange(): void;
}

interface Contribution {
  state: NodeState;
  extensions: Array<{ name: string; state: string; failing: boolean }>;
}

export class Reconciler {
  private readonly deps: ReconcilerDeps;
  private readonly keys: TaintKeys;
  private memory = new Map<string, NodeMemory>();
  private readonly contributions = new Map<string, Contribution>();
  private readonly counts = new Map<string, ExtensionFailureCount>();
  private tripped: ReadonlySet<string> = new Set();

  constructor(deps: ReconcilerDeps) {
    this.deps = deps;
    this.keys = { bootstrap: deps.config.bootstrapTaintKey, runtime: deps.config.runtimeTaintKey };
  }

  get trippedExtensions(): ReadonlySet<string> {
    return this.tripped;
  }

  /** Each node's latest decided state. */
  nodeStates(): Map<string, NodeState> {
    return new Map([...this.contributions].map(([name, c]) => [name, c.state]));
  }

  /** Forgets per-node memory (on becoming leader: fresh graces, no inherited event history). */
  reset(): void {
    this.memory = new Map();
  }

  private policy(): DecisionPolicy {
    const { config } = this.deps;
    return {
      bootstrapTaintKey: config.bootstrapTaintKey,
      runtimeTaintKey: config.runtimeTaintKey,
      bootstrapTimeoutSeconds: config.bootstrapTimeoutSeconds,
      missingLeaseGraceSeconds: config.missingLeaseGraceSeconds,
      trippedExtensions: this.tripped,
    };
  }

  private decide(name: string): NodeDecision | undefined {
    const { cache, clock } = this.deps;
    const node = cache.node(name);
    if (!node) return undefined;
    const { byName } = resolveRegistrations(node, cache.systemExtensions.store.values());
    const required: RequiredExtension[] = [...byName.values()].map((r) => ({
      name: r.name,
      policy: r.policy,
      valid: r.valid,
      ...(r.valid ? {} : { problems: r.problems }),
    }));
    const { extensions, agent } = cache.leasesOf(name);
    return decideNode({
      node,
      required,
      leases: extensions,
      agent,
      previous: this.memory.get(name),
      policy: this.policy(),
      now: clock.now(),
    });
  }

  async reconcile(name: string): Promise<ReconcileResult> {
    const { cache, client, clock, log, metrics, config, events } = this.deps;
    const started = performance.now();
    let decision = this.decide(name);
    const node = cache.node(name);
    if (!decision || !node) {
      this.memory.delete(name);
      this.contribute(name, undefined);
      return {};
    }
    const writer = { client, timeoutMs: config.requestTimeoutMs };

    // Staleness is judged by our clock; before acting on it, make sure the lease really was not renewed.
    if (decision.staleLeases.length > 0 && this.wouldWrite(node, decision)) {
      let renewed = false;
      for (const leaseName of decision.staleLeases) {
        try {
          const live = decodeLease(
            await client.get<LeaseObject>(
              `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases/${leaseName}`,
              {
                timeoutMs: config.requestTimeoutMs,
              },
            ),
          );
          if (live && cache.observeLive(live)) renewed = true;
        } catch (err) {
          if (!isKubeError(err, KubeErrorCode.NotFound)) throw err;
        }
      }
      if (renewed) decision = this.decide(name) ?? decision;
    }

    const nodeLog = log.child({ node: name });
    const taintSummary = nodeChange(node, decision, this.keys, false)?.taintSummary ?? [];
    if (taintSummary.length > 0) {
      nodeLog.info(
        { state: decision.state, taints: taintSummary, dryRun: config.dryRun },
        config.dryRun ? 'Would change taints (dry run)' : 'Changing taints',
      );
    }
    // The condition first: whoever sees a taint change can already read why.
    let current = node;
    try {
      const written = await writeCondition(writer, node, decision.condition, clock.now());
      if (written) {
        metrics.nodeWrites.inc({ kind: 'condition', result: 'ok' });
        current = written;
      }
    } catch (err) {
      metrics.nodeWrites.inc({ kind: 'condition', result: 'error' });
      if (isKubeError(err, KubeErrorCode.NotFound)) return {};
      throw err;
    }
    // Recomputed from the node the status write returned: its resourceVersion and its taints belong together.
    const nodeDiff = nodeChange(current, decision, this.keys, !config.dryRun);
    if (nodeDiff) {
      try {
        await applyNodeChange(writer, current, nodeDiff, (live) =>
          nodeChange(live, decision, this.keys, !config.dryRun),
        );
        metrics.nodeWrites.inc({ kind: 'node', result: 'ok' });
      } catch (err) {
        metrics.nodeWrites.inc({
          kind: 'node',
          result: isKubeError(err, KubeErrorCode.NotFound) ? 'gone' : 'error',
        });
        if (isKubeError(err, KubeErrorCode.NotFound)) return {};
        throw err;
      }
    }

    for (const event of decision.events) {
      if (config.dryRun && TAINT_EVENTS.has(event.reason)) continue; // no taint changed: nothing happened
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

  private wouldWrite(node: NonNullable<ReturnType<ClusterCache['node']>>, decision: NodeDecision): boolean {
    return (
      !sameCondition(node.extensionsReadyCondition, decision.condition) ||
      nodeChange(node, decision, this.keys, true) !== undefined
    );
  }

  /** Keeps per-extension counts (for the breaker) and the state metrics up to date, one node at a time. */
  private contribute(name: string, decision: NodeDecision | undefined): void {
    const { metrics } = this.deps;
    const old = this.contributions.get(name);
    const next: Contribution | undefined = decision && {
      state: decision.state,
      extensions: decision.extensions.map((e) => ({
        name: e.name,
        state: e.state,
        failing: isFailing(e.state),
      })),
    };
    const touched = new Set<string>();
    const apply = (c: Contribution, sign: 1 | -1): void => {
      metrics.nodes.inc({ state: c.state }, sign);
      const counted = c.state === NodeState.Ready || c.state === NodeState.Degraded;
      for (const e of c.extensions) {
        metrics.extensionNodes.inc({ extension: e.name, state: e.state }, sign);
        if (!counted) continue;
        const count = this.counts.get(e.name) ?? { requiring: 0, failing: 0 };
        count.requiring += sign;
        if (e.failing) count.failing += sign;
        if (count.requiring === 0) this.counts.delete(e.name);
        else this.counts.set(e.name, count);
        touched.add(e.name);
      }
    };
    if (old) apply(old, -1);
    if (next) {
      apply(next, 1);
      this.contributions.set(name, next);
    } else this.contributions.delete(name);
    if (touched.size > 0) this.evaluateBreaker(touched);
  }

  private evaluateBreaker(touched: ReadonlySet<string>): void {
    const { config, metrics, log, events, cache } = this.deps;
    const relevant = new Map(
      [...touched].flatMap((name) =>
        this.counts.has(name) ? [[name, this.counts.get(name) as ExtensionFailureCount]] : [],
      ),
    );
    const nowTripped = evaluateBreaker(relevant, config.maxUnhealthyFraction);
    const next = new Set(this.tripped);
    let changed = false;
    for (const name of touched) {
      const was = this.tripped.has(name);
      const is = nowTripped.has(name);
      if (was === is) continue;
      changed = true;
      const count = this.counts.get(name) ?? { requiring: 0, failing: 0 };
      metrics.breakerTripped.set({ extension: name }, is ? 1 : 0);
      if (is) {
        next.add(name);
        const message = `Extension ${name} fails on ${count.failing} of ${count.requiring} nodes at once: treating it as a faulty rollout, not faulty nodes; holding back runtime taints for it.`;
        log.warn({ extension: name, ...count }, 'Correlated failure: breaker tripped');
        const someNode = [...this.contributions].find(([, c]) =>
          c.extensions.some((e) => e.name === name && e.failing),
        )?.[0];
        const node = someNode ? cache.node(someNode) : undefined;
        if (node) {
          metrics.events.inc({ reason: EventReason.CorrelatedFailure });
          events
            .nodeEvent(node, { type: 'Warning', reason: EventReason.CorrelatedFailure, message })
            .catch((err: unknown) => log.warn({ err }, 'Failed to record event'));
        }
      } else {
        next.delete(name);
        log.info({ extension: name, ...count }, 'Correlated failure over: breaker reset');
      }
    }
    if (changed) {
      this.tripped = next;
      this.deps.onBreakerChange();
    }
  }
}
