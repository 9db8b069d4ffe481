// Reconciles one node in one pass (docs/conventions.md 1 and 3): the view (the caches, the node book) → the
// decision → the writes → the commit into the book, then the events for the changes the writes really made and
// the next deadline to requeue at. Two loops stay inside the pass: a decision that acts on a lease it judged
// stale has it read live and decides again, and a write that meets a 409 reads the node live and decides
// again. A deadline that comes when only lease renewals arrived since is re-armed by the book (docs/adr/0009).

import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import { bookOf, type NodeBook } from './book/index.ts';
import { toCachedNode, type CachedNode } from './cache/index.ts';
import type { ControllerConfig } from './config.ts';
import type { NodeDecision, NodeEvent } from './decide/index.ts';
import type { ControllerMetrics } from './metrics.ts';
import { NodeDecider, type ReconcilerCache } from './node-decider.ts';
import { decideEvery, startTerm, type TermStart } from './term-start.ts';
import type { ReconcileCause, ReconcileResult } from '../lib/workqueue/workqueue.ts';
import * as writes from './writes/index.ts';

export interface ReconcilerDeps {
  cache: ReconcilerCache;
  api: writes.NodeApi;
  fence: writes.Fence;
  clock: Clock;
  log: Logger;
  metrics: ControllerMetrics;
  events: writes.EventRecorder;
  config: ControllerConfig;
  /** The node book it writes; absent: one of its own (bookOf) that tells no one of its changes. */
  book?: NodeBook;
}

export class Reconciler {
  readonly book: NodeBook;
  private readonly deps: ReconcilerDeps;
  private readonly decider: NodeDecider;
  private readonly writer: writes.NodeWriter;

  constructor(deps: ReconcilerDeps) {
    const { cache, api, fence, clock, metrics, config } = deps;
    this.deps = deps;
    this.book = deps.book ?? bookOf(deps);
    this.decider = new NodeDecider({ cache, api, clock, config, book: this.book });
    this.writer = writes.nodeWriter({ api, fence, clock, metrics, config, cache });
  }

  /** Starts a leadership term: the book's reset and every node decided on the fresh view (term-start.ts). */
  reset(): TermStart {
    return startTerm({ ...this.deps, book: this.book, decider: this.decider, writer: this.writer });
  }

  /**
   * `cause` 'deadline': only the deadline this node's last reconcile returned came since (the work queue
   * knows); the node may be re-armed instead of decided.
   */
  async reconcile(name: string, cause: ReconcileCause = 'change'): Promise<ReconcileResult> {
    const { book, decider } = this;
    const { cache, clock, log, metrics } = this.deps;
    const delayMs = cause === 'deadline' ? book.rearm(name) : undefined;
    if (delayMs !== undefined) return { requeueAfterMs: delayMs };
    book.unsettle(name);
    const started = performance.now();
    // Other SystemExtensions: every node is decided on them before this one, so that the breaker judges an
    // extension only on every node decided for its new requirement (issue 50 item 3).
    if (book.requirementsChanged([...cache.systemExtensionList()]))
      book.recordAll(decideEvery(cache, decider));
    // A rollout window that ended is judged by the breaker before any node is decided as enforced.
    book.judgeBreaker();
    const cached = cache.node(name);
    const first = cached && decider.decide(name, cached);
    if (!cached || !first) {
      book.contribute(name, undefined);
      return {};
    }
    const nodeLog = log.child({ node: name });
    const confirmed = await this.confirmed(cached, first);
    const written = await this.write(cached, confirmed, nodeLog);
    if (!written) return {}; // deleted: its watch event reconciles it
    const { node, decision, taintEvents } = written;
    // Events about extensions and timeouts are transitions of the decision's memory: the confirmed decision's.
    // Taint events are what the node patches really changed, so a write that found its change already made
    // (a duplicate reconcile on a lagging cache, a 409 rebase) records nothing.
    const events = [...taintEvents, ...confirmed.events.filter((e) => !writes.isTaintEvent(e))];
    writes.recordNodeEvents(this.deps.events, metrics, node, events, nodeLog);
    book.commit(node, decision, taintEvents, nodeLog);
    metrics.reconcileDuration.observe((performance.now() - started) / 1000);
    const deadline = decision.nextDeadlineMs;
    return deadline === undefined ? {} : { requeueAfterMs: Math.max(0, deadline - clock.monotonic()) };
  }

  /**
   * Decides again until the decision acts on no stale lease that was not read live, when it would write. A
   * renewal found live can uncover another stale lease (an expired heartbeat hides its extensions' leases).
   */
  private async confirmed(node: CachedNode, decision: NodeDecision): Promise<NodeDecision> {
    const readLive = new Set<string>();
    for (;;) {
      const unread = decision.staleLeases.filter((lease) => !readLive.has(lease));
      if (unread.length === 0 || !this.writer.wouldWrite(node, decision)) return decision;
      for (const lease of unread) readLive.add(lease);
      if (!(await this.decider.readLive(unread))) return decision;
      decision = this.decider.decide(node.name, node) ?? decision;
    }
  }

  /**
   * Writes the decision; a 409 (the node changed under it) reads the node live, decides again and writes
   * that, up to MAX_CONFLICT_RETRIES times. The taint events are those of every attempt. Undefined: deleted.
   */
  private async write(
    node: CachedNode,
    decision: NodeDecision,
    log: Logger,
  ): Promise<writes.Written | undefined> {
    const taintEvents: NodeEvent[] = [];
    for (let attempt = 0; ; attempt++) {
      try {
        await this.writer.apply(node, decision, log, taintEvents);
        return { node, decision, taintEvents };
      } catch (err) {
        if (isKubeError(err, KubeErrorCode.NotFound)) return undefined;
        if (!isKubeError(err, KubeErrorCode.Conflict) || attempt >= writes.MAX_CONFLICT_RETRIES) throw err;
        node = toCachedNode(await this.deps.api.getNode(node.name));
        decision = this.decider.decide(node.name, node) ?? decision;
      }
    }
  }
}
