// A level-triggered work queue keyed by node (docs/conventions.md 3, controller-runtime's contract): handlers
// only add keys; a key is never processed twice at once; adds while it is processed mark it dirty and it runs
// again once; repeated adds collapse; errors requeue with capped per-key backoff; addAfter keeps the earliest
// pending deadline per key. A stopped queue takes no keys and arms no timers. `stuckForMs` tells liveness
// when a reconcile has been running for too long (a hung request, a promise that never settles). A key that
// runs only because the deadline its last reconcile asked for came (nothing added it since) runs with cause
// 'deadline', so the reconcile can tell "time passed" from "something changed" (docs/adr/0009); `addDeadline`
// arms such a deadline for a key that did not run (a term's start decides every node itself). A sweep
// (`addSweep`: every node after a SystemExtension or breaker change) waits behind keys added one by one, as
// controller-runtime's priority queue puts the initial list behind later events: a change that comes during a
// sweep of 5,000 nodes is not reconciled after all of them.

import type { Clock, Timer } from '../clock.ts';
import { DueHeap, type DueRecord } from '../due-heap.ts';
import { Fifo } from './fifo.ts';

export interface ReconcileResult {
  /** Process the key again after this many ms (a deadline at which the answer may change). */
  requeueAfterMs?: number;
}

/**
 * Why a key runs: 'deadline' when only the deadline its last successful reconcile returned came since that
 * reconcile; 'change' for anything else (an add, a failure's retry, an add while it ran).
 */
export type ReconcileCause = 'change' | 'deadline';

export type ReconcileFn = (key: string, cause: ReconcileCause) => Promise<ReconcileResult | void>;

export interface WorkQueueOptions {
  clock: Clock;
  concurrency: number;
  /** Per-key backoff after failures. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  onError?(key: string, err: unknown, retryInMs: number): void;
  /**
   * Asked when a key's deadline comes and nothing added it since (its run would have cause 'deadline'): a
   * delay re-arms the key's deadline that much later without running it; undefined runs it. Synchronous, so a
   * deadline that only has to move (a node whose leases were all renewed, docs/adr/0009) costs no reconcile;
   * a throw runs the key.
   */
  rearm?(key: string): number | undefined;
  /**
   * Deadlines (cause 'deadline') come on multiples of this many ms of the clock, rounded up, so that those of
   * one slot share a timer's firing; retries after a failure keep their exact backoff. 0 (the default): exact.
   */
  deadlineTickMs?: number;
}

/** How much earlier than the wall clock a timer may fire (WorkQueue.onTimer). */
const TIMER_ROUNDING_MS = 1;

/**
 * A key's pending time: one record per key, moved in place when the key is scheduled again, and used again for
 * the next key scheduled once it fired (a re-armed deadline allocates nothing that lives until it comes).
 */
interface Pending extends DueRecord {
  key: string;
  cause: ReconcileCause;
}

export class WorkQueue {
  private readonly options: WorkQueueOptions;
  private readonly reconcile: ReconcileFn;
  private readonly queue = new Fifo<string>();
  /** Swept keys, in order; an entry whose key is no longer in `swept` was promoted or ran: skipped. */
  private readonly sweepQueue = new Fifo<string>();
  /** Keys queued by a sweep only (a subset of `queued`). */
  private readonly swept = new Set<string>();
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, Pending>();
  /**
   * The pending times in order, under one timer armed for the earliest (docs/adr/0015): a Node.js timer per
   * key cost a timer list per distinct delay, and thousands of deadlines a minute at 5,000 nodes.
   */
  private readonly due = new DueHeap<Pending>();
  private timer: Timer | undefined;
  /** When `timer` fires; Infinity while none is armed. */
  private timerAt = Number.POSITIVE_INFINITY;
  /** In onTimer: the keys it fires may schedule again, and it arms the timer once after them. */
  private firing = false;
  /** A record that fired, for the next key scheduled (Pending). */
  private spare: Pending | undefined;
  /** Queued keys whose only cause is their deadline. */
  private readonly deadlineOnly = new Set<string>();
  private readonly failures = new Map<string, number>();
  /** Key → clock when its reconcile started. */
  private readonly startedAt = new Map<string, number>();
  private active = 0;
  private running = false;
  private idleWaiters: Array<() => void> = [];

  constructor(reconcile: ReconcileFn, options: WorkQueueOptions) {
    this.reconcile = reconcile;
    this.options = options;
  }

  get depth(): number {
    return this.queue.length + this.swept.size;
  }

  add(key: string): void {
    this.deadlineOnly.delete(key);
    this.enqueue(key);
  }

  /** Adds a key as part of a sweep: after every key added otherwise; an add() of it meanwhile moves it ahead. */
  addSweep(key: string): void {
    this.deadlineOnly.delete(key);
    this.enqueue(key, true);
  }

  private enqueue(key: string, sweep = false): void {
    // Stopped, the queue takes no work: the term that starts it decides every node itself (Reconciler.reset)
    // and adds what is pressing. Kept, the adds of the caches' first list (every node, in name order) ran
    // before the pressing nodes and reconciled every node a second time.
    if (!this.running) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    // An add() of a swept key promotes it: its sweep entry is skipped when reached.
    if (sweep || !this.swept.delete(key)) {
      if (this.queued.has(key)) return;
      this.queued.add(key);
      if (sweep) this.swept.add(key);
    }
    (sweep ? this.sweepQueue : this.queue).push(key);
    this.pump();
  }

  /** The next key to run: one added by itself first, then the sweep's; undefined when none is queued. */
  private next(): string | undefined {
    if (this.queue.length > 0) return this.queue.shift();
    for (let key = this.sweepQueue.shift(); key !== undefined; key = this.sweepQueue.shift()) {
      if (this.swept.delete(key)) return key;
    }
    return undefined;
  }

  /** Adds the key after `delayMs`; a no-op while stopped (start() enqueues what matters anew). */
  addAfter(key: string, delayMs: number): void {
    this.schedule(key, delayMs, 'change');
  }

  /**
   * Runs the key after `delayMs` with cause 'deadline', as if its last reconcile had asked for it (a term's
   * start knows the deadlines of the nodes it does not reconcile: Reconciler.reset). A no-op while stopped.
   */
  addDeadline(key: string, delayMs: number): void {
    this.schedule(key, delayMs, 'deadline');
  }

  /**
   * Keeps the earliest pending time per key; the key's cause is 'deadline' only when every schedule merged
   * into it was a deadline.
   */
  private schedule(key: string, delayMs: number, cause: ReconcileCause): void {
    if (!this.running) return;
    const pending = this.delayed.get(key);
    const merged: ReconcileCause = pending?.cause === 'change' ? 'change' : cause;
    if (delayMs <= 0) {
      if (pending) this.unschedule(pending);
      return this.fire(key, merged);
    }
    const tick = cause === 'deadline' ? (this.options.deadlineTickMs ?? 0) : 0;
    const exact = this.options.clock.monotonic() + delayMs;
    const at = tick > 0 ? Math.ceil(exact / tick) * tick : exact;
    if (pending) {
      pending.cause = merged;
      if (pending.at <= at) return;
      pending.at = at;
      this.due.set(pending);
    } else {
      const record = this.spare ?? { key, at, cause: merged, heapIndex: -1 };
      this.spare = undefined;
      record.key = key;
      record.at = at;
      record.cause = merged;
      this.delayed.set(key, record);
      this.due.set(record);
    }
    this.armTimer();
  }

  private unschedule(pending: Pending): void {
    this.delayed.delete(pending.key);
    this.due.delete(pending);
  }

  /** Keeps the timer armed no later than the earliest pending time. */
  private armTimer(): void {
    if (this.firing) return; // onTimer arms it once it is done
    const first = this.due.peek();
    if (first === undefined || first.at >= this.timerAt) return;
    this.timer?.cancel();
    this.timerAt = first.at;
    this.timer = this.options.clock.setTimer(first.at - this.options.clock.monotonic(), () => this.onTimer());
  }

  /**
   * Fires every pending time that came, in order, then arms the timer for the next one. A Node.js timer may
   * fire up to a millisecond before the wall clock shows its time (each rounds to the millisecond on its own),
   * so a time that close counts as come rather than costing one more wake-up.
   */
  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    const now = this.options.clock.monotonic() + TIMER_ROUNDING_MS;
    this.firing = true;
    try {
      for (let first = this.due.peek(); first !== undefined && first.at <= now; first = this.due.peek()) {
        this.unschedule(first);
        this.spare = first;
        this.fire(first.key, first.cause);
      }
    } finally {
      this.firing = false;
    }
    this.armTimer();
  }

  /** A scheduled time came: a deadline alone leaves a key that is already queued or running as it is. */
  private fire(key: string, cause: ReconcileCause): void {
    if (cause === 'change') return this.add(key);
    if (this.queued.has(key)) return;
    // A running reconcile returns the next deadline itself.
    if (this.processing.has(key)) return;
    const delayMs = this.rearmDelay(key);
    if (delayMs !== undefined) return this.schedule(key, delayMs, 'deadline');
    this.deadlineOnly.add(key);
    this.enqueue(key);
  }

  /** The owner's re-arm for a key whose deadline came (WorkQueueOptions.rearm); undefined runs the key. */
  private rearmDelay(key: string): number | undefined {
    try {
      const delayMs = this.options.rearm?.(key);
      return delayMs !== undefined && delayMs > 0 ? delayMs : undefined;
    } catch {
      return undefined; // the reconcile decides the key, and a failure there is retried as any other
    }
  }

  /** Forgets a key's failure history and pending deadline (the object is gone). */
  forget(key: string): void {
    this.failures.delete(key);
    const pending = this.delayed.get(key);
    if (pending) this.unschedule(pending);
    this.deadlineOnly.delete(key);
  }

  start(): void {
    this.running = true;
    this.pump();
  }

  /** Stops taking new work; resolves when in-flight reconciles finish. Queued keys are dropped. */
  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.delayed.clear();
    this.due.clear();
    this.queue.clear();
    this.sweepQueue.clear();
    this.swept.clear();
    this.queued.clear();
    this.deadlineOnly.clear();
    this.dirty.clear();
    await this.idle();
  }

  /** How long the longest reconcile in flight has been running (0 when none is). */
  stuckForMs(): number {
    const now = this.options.clock.monotonic();
    let oldest = now;
    for (const at of this.startedAt.values()) oldest = Math.min(oldest, at);
    return now - oldest;
  }

  /** Resolves when nothing is queued or running. */
  idle(): Promise<void> {
    if (this.active === 0 && (this.depth === 0 || !this.running)) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.running && this.active < this.options.concurrency) {
      const key = this.next();
      if (key === undefined) break;
      this.queued.delete(key);
      this.processing.add(key);
      this.active++;
      void this.run(key, this.deadlineOnly.delete(key) ? 'deadline' : 'change');
    }
    if (this.active === 0 && (this.depth === 0 || !this.running)) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private async run(key: string, cause: ReconcileCause): Promise<void> {
    this.startedAt.set(key, this.options.clock.monotonic());
    let next: { delayMs: number; cause: ReconcileCause } | undefined;
    try {
      const result = await this.reconcile(key, cause);
      this.failures.delete(key);
      if (result?.requeueAfterMs !== undefined) next = { delayMs: result.requeueAfterMs, cause: 'deadline' };
    } catch (err) {
      const attempt = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, attempt);
      const { initialBackoffMs = 50, maxBackoffMs = 30_000 } = this.options;
      const delay = Math.min(maxBackoffMs, initialBackoffMs * 2 ** (attempt - 1));
      this.options.onError?.(key, err, delay);
      next = { delayMs: delay, cause: 'change' };
    } finally {
      this.startedAt.delete(key);
      this.processing.delete(key);
      this.active--;
      if (this.dirty.delete(key)) this.add(key); // a no-op once stopped (enqueue)
      // After the key left `processing`: a deadline already due queues it at once.
      if (next) this.schedule(key, next.delayMs, next.cause);
      this.pump();
    }
  }
}
