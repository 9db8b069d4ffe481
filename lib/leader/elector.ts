// Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics (tools/leaderelection):
// a candidate takes the lease when it is free (empty holder) or when it has not seen the lease record
// change for the holder's leaseDuration by its OWN monotonic clock (observedTime, so neither clock skew between
// replicas nor a step of this replica's wall clock matters; wall time only goes into the written times); the leader renews every retryPeriod and steps down when it could not renew within
// renewDeadline; every write is optimistic (resourceVersion); leaseTransitions counts takeovers; stop()
// releases the lease (empty holder, leaseDurationSeconds 1) so a standby takes over on its next try.
//
// Deviations from client-go, on purpose:
// - Candidates retry every retryPeriod × [1, 1.2), not × [1, 2.2): with client-go's jitter a graceful
//   hand-off takes up to 4.4 s, beyond the 3 s docs/design.md P7 asks for. Jitter only spreads candidates, and we
//   run two replicas.
// - A leader that reads the lease and finds another holder steps down at once instead of polling until
//   its renewDeadline ends.
// - onStoppedLeading is called only after onStartedLeading was, and it may return a promise: the lease is
//   released only once it settles, so the old leader's last writes finish before the standby starts.
// - After losing the lease the elector becomes a candidate again (client-go's Run returns); a caller that
//   prefers to exit does so from onStoppedLeading.
// - onNewLeader reports holders only, never the empty holder of a released lease.
// - A candidate campaigns only while `canLead()` says it could do the work (the controller's caches are in
//   sync): a replica that cannot sync never takes the lease from one that can. canLeadChanged() makes it try at
//   once when that turns. stepDown() ends leadership and releases the lease while the process goes on, for a
//   leader that stayed out of sync too long (issue 50 item 5); it campaigns again once canLead() allows.
// - A candidate also watches the lease (LeaseStore.watch): it tries at once when the lease is released or
//   deleted, instead of at its next retry, and it sees the holder's renewals when they happen, so it tries
//   again the moment the lease has gone unrenewed for its duration (by its own clock, as before) instead of
//   up to a retry period later. The retries every retryPeriod go on, so a watch that delivers nothing changes
//   nothing. A leader ignores the watch: it knows the lease from its own writes, and an event that arrives
//   late (the release it took the lease from) must not make it step down.
// - A candidate whose copy of the lease (the watch's, or its last read) shows it free or expired writes its
//   takeover from that copy, without the read client-go makes first (writes.ts; ADR 0012's addendum). The
//   write is conditional on the copy's resourceVersion, so it lands only on the record it judged; a 409 or
//   404 falls back to the read in the same attempt.

import { COMPONENT_NAMESPACE } from '../../api/names.ts';
import type { Clock } from '../clock.ts';
import type { LeaseStore } from '../kube/leases.ts';
import type { Logger } from '../log.ts';
import { ObservedRecord, type LeaderLease } from './record.ts';
import { LeaseWrites } from './writes.ts';
import {
  ACQUIRE_JITTER,
  LEADER_ELECTION_DEFAULTS,
  validateLeaderElectionTiming,
  type LeaderElectionTiming,
} from './timing.ts';

export {
  LEADER_ELECTION_DEFAULTS,
  validateLeaderElectionTiming,
  type LeaderElectionTiming,
} from './timing.ts';

export type { LeaderLease } from './record.ts';

export interface LeaderCallbacks {
  /** This replica now leads; `signal` aborts when it stops leading. Only the leader writes. */
  onStartedLeading(signal: AbortSignal): void;
  /** Leadership ended (lost, or stop()). On stop() the lease is released only after a returned promise settles. */
  onStoppedLeading(): void | Promise<void>;
  /** The lease holder changed (including to this replica). */
  onNewLeader?(identity: string): void;
  /** Whether this replica may campaign now (default: always). A leader is not asked: see stepDown(). */
  canLead?(): boolean;
}

export interface LeaderElectorOptions extends Partial<LeaderElectionTiming> {
  store: LeaseStore;
  clock: Clock;
  log: Logger;
  /** Unique per replica (the pod name). */
  identity: string;
  /** Name of the Lease. */
  name: string;
  /** Default nodecare-system. */
  namespace?: string;
  random?: () => number;
}

export class LeaderElector {
  readonly identity: string;
  readonly name: string;
  readonly namespace: string;
  private readonly store: LeaseStore;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly random: () => number;
  private readonly timing: LeaderElectionTiming;

  /** The lease as last read or written, and our clock when its record was last seen to change. */
  private readonly record: ObservedRecord;
  private readonly writes: LeaseWrites;
  private reportedLeader = '';
  /** Aborts the candidate's current wait between tries (the watch saw the lease released). */
  private waiting: AbortController | undefined;
  /** The watch saw the lease released (or gone) during the try in flight: try again at once after it. */
  private releasedDuringTry = false;

  private callbacks: LeaderCallbacks | undefined;
  private leadership: AbortController | undefined;
  private readonly stopping = new AbortController();
  private releaseOnStop = true;
  /** The release must be done by then (the caller's shutdown deadline). */
  private releaseByMs = Infinity;
  /** stepDown() was asked while leading: end the term, release the lease, campaign again. */
  private steppingDown = false;
  private running: Promise<void> | undefined;

  constructor(options: LeaderElectorOptions) {
    this.timing = {
      leaseDurationMs: options.leaseDurationMs ?? LEADER_ELECTION_DEFAULTS.leaseDurationMs,
      renewDeadlineMs: options.renewDeadlineMs ?? LEADER_ELECTION_DEFAULTS.renewDeadlineMs,
      retryPeriodMs: options.retryPeriodMs ?? LEADER_ELECTION_DEFAULTS.retryPeriodMs,
    };
    const problems = validateLeaderElectionTiming(this.timing);
    if (!options.identity) problems.push('identity must not be empty');
    if (!options.name) problems.push('name must not be empty');
    if (problems.length > 0) throw new Error(`invalid leader election config: ${problems.join('; ')}`);
    this.store = options.store;
    this.clock = options.clock;
    this.identity = options.identity;
    this.name = options.name;
    this.namespace = options.namespace ?? COMPONENT_NAMESPACE;
    this.random = options.random ?? Math.random;
    this.log = options.log.child({ lease: `${this.namespace}/${this.name}`, identity: this.identity });
    this.record = new ObservedRecord(this.clock, this.timing.leaseDurationMs);
    this.writes = new LeaseWrites({
      store: this.store,
      identity: this.identity,
      name: this.name,
      clock: this.clock,
      log: this.log,
      namespace: this.namespace,
      leaseDurationMs: this.timing.leaseDurationMs,
      record: this.record,
      stopping: this.stopping.signal,
      observe: (lease, wroteIt) => this.observe(lease, wroteIt),
    });
  }

  /** Hands the lease back, within the renew deadline and the caller's shutdown deadline. */
  private release(): Promise<void> {
    return this.writes.release(
      Math.min(this.clock.monotonic() + this.timing.renewDeadlineMs, this.releaseByMs),
    );
  }

  private tryAcquireOrRenew(deadlineMs: number): Promise<boolean> {
    return this.writes.tryAcquireOrRenew(deadlineMs, this.isLeader);
  }

  /** True from onStartedLeading until leadership ends. */
  get isLeader(): boolean {
    return this.leadership !== undefined;
  }

  /** The holder of the lease as last observed ('' when free or unknown). */
  get leader(): string {
    return this.record.holder;
  }

  /**
   * Ends leadership (onStoppedLeading is awaited) and releases the lease, so a standby takes it at once; then
   * campaigns again, as allowed by canLead(). Nothing when not leading.
   */
  stepDown(): void {
    if (!this.isLeader || this.steppingDown || this.stopping.signal.aborted) return;
    this.log.warn('Stepping down');
    this.steppingDown = true;
    this.waiting?.abort();
  }

  /** canLead() may have turned: a waiting candidate looks again at once. */
  canLeadChanged(): void {
    if (!this.isLeader) this.waiting?.abort();
  }

  /** Starts campaigning. Call once. */
  start(callbacks: LeaderCallbacks): void {
    if (this.running) throw new Error('LeaderElector already started');
    this.callbacks = callbacks;
    this.running = this.run().catch((err: unknown) => {
      this.log.error({ err }, 'Leader election stopped on an unexpected error');
    });
  }

  /**
   * Stops campaigning; when leading, aborts the leader's signal, waits for onStoppedLeading, then releases
   * the lease (unless `release: false`, which leaves it to expire as after a crash). The release's requests
   * end by `deadlineMs` (on the elector's monotonic clock), so a shutdown deadline is kept. Resolves when done.
   */
  async stop(options: { release?: boolean; deadlineMs?: number } = {}): Promise<void> {
    if (!this.stopping.signal.aborted) {
      this.releaseOnStop = options.release ?? true;
      this.releaseByMs = options.deadlineMs ?? Infinity;
      this.stopping.abort(new Error('leader elector stopped'));
    }
    await this.running;
  }

  private async run(): Promise<void> {
    const watching = this.store
      .watch(
        this.namespace,
        this.name,
        {
          changed: (lease) => this.seen(lease),
          error: (err) => this.log.debug({ err }, 'Watch of the leadership lease failed; retrying'),
        },
        this.stopping.signal,
      )
      .catch((err: unknown) => this.log.warn({ err }, 'Watch of the leadership lease stopped'));
    try {
      await this.campaign();
    } finally {
      await watching;
    }
  }

  private async campaign(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      if (!(await this.acquire())) return;
      if (this.stopping.signal.aborted) {
        // Stopped while the winning write was in flight: hand the lease back without ever leading.
        if (this.releaseOnStop) await this.release();
        return;
      }
      this.beginLeading();
      await this.renewWhileLeading();
      const stopped = this.stopping.signal.aborted;
      await this.endLeading();
      if (stopped) {
        if (this.releaseOnStop) await this.release();
        return;
      }
      if (this.steppingDown) {
        await this.release();
        this.steppingDown = false;
      }
    }
  }

  /**
   * Tries at once, then every retryPeriod (jittered), or sooner: when the holder's lease expires (by our
   * clock) or the watch sees it released. Returns true once it holds the lease, false when stopped.
   */
  private async acquire(): Promise<boolean> {
    for (;;) {
      if (this.stopping.signal.aborted) return false;
      if (this.callbacks?.canLead && !this.callbacks.canLead()) {
        // Not even a read: a replica that cannot do the work stays out of the race (canLeadChanged wakes it).
        if (!(await this.sleep(this.timing.retryPeriodMs))) return false;
        continue;
      }
      this.releasedDuringTry = false;
      if (await this.tryAcquireOrRenew(this.clock.monotonic() + this.timing.renewDeadlineMs)) return true;
      if (this.releasedDuringTry) continue;
      const retryMs = this.timing.retryPeriodMs * (1 + this.random() * ACQUIRE_JITTER);
      const holder = this.leader;
      const untilExpiryMs =
        holder && holder !== this.identity ? this.record.expiresAtMs() - this.clock.monotonic() : retryMs;
      if (!(await this.sleep(Math.max(0, Math.min(retryMs, untilExpiryMs))))) return false;
    }
  }

  /**
   * Sleeps on the clock; false when stop() or stepDown() interrupted it. The watch may end it early, and does so only while
   * this replica is a candidate (seen()).
   */
  private async sleep(ms: number): Promise<boolean> {
    if (this.steppingDown) return false;
    const waiting = new AbortController();
    this.waiting = waiting;
    try {
      await this.clock.sleep(ms, AbortSignal.any([this.stopping.signal, waiting.signal]));
    } catch {
      // woken or stopped
    } finally {
      this.waiting = undefined;
    }
    return !this.stopping.signal.aborted && !this.steppingDown;
  }

  /**
   * What the watch delivered. A candidate records a changed record as a read would (observedTime moves)
   * and, when the lease is released or gone, tries at once. A leader ignores it (see the header).
   */
  private seen(lease: LeaderLease | undefined): void {
    if (this.isLeader || this.stopping.signal.aborted) return;
    // Our own takeover, written and not yet begun (or a term just lost): its answer is newer than any event.
    if (this.record.lease?.spec?.holderIdentity === this.identity) return;
    if (lease) {
      if (lease.metadata.resourceVersion === this.record.lease?.metadata.resourceVersion) return;
      this.observe(lease, false);
      if (lease.spec?.holderIdentity) return;
    }
    this.releasedDuringTry = true;
    this.waiting?.abort();
  }

  /**
   * Renews every retryPeriod. A renewal round retries every retryPeriod until renewDeadline from its start;
   * when the round fails, or another holder is seen, leadership is lost. Returns when lost or stopped.
   */
  private async renewWhileLeading(): Promise<void> {
    const { retryPeriodMs, renewDeadlineMs } = this.timing;
    for (;;) {
      if (!(await this.sleep(retryPeriodMs))) return;
      const deadline = this.clock.monotonic() + renewDeadlineMs;
      while (!(await this.tryAcquireOrRenew(deadline))) {
        if (this.stopping.signal.aborted) return;
        if (this.leader !== this.identity) {
          this.log.warn({ holder: this.leader }, 'Lost leadership to another holder');
          return;
        }
        const left = deadline - this.clock.monotonic();
        if (left <= 0 || !(await this.sleep(Math.min(retryPeriodMs, left)))) return;
        if (this.clock.monotonic() >= deadline) {
          this.log.warn({ renewDeadlineMs }, 'Lost leadership: could not renew within the renew deadline');
          return;
        }
      }
    }
  }

  private beginLeading(): void {
    const controller = new AbortController();
    this.leadership = controller;
    this.log.info('Acquired leadership');
    try {
      this.callbacks?.onStartedLeading(controller.signal);
    } catch (err) {
      this.log.error({ err }, 'Leader callback onStartedLeading failed');
    }
  }

  private async endLeading(): Promise<void> {
    const controller = this.leadership;
    if (!controller) return;
    this.leadership = undefined;
    controller.abort(new Error('leadership ended'));
    this.log.info('Stopped leading');
    try {
      await this.callbacks?.onStoppedLeading();
    } catch (err) {
      this.log.error({ err }, 'Leader callback onStoppedLeading failed');
    }
  }

  /** Records what we read or wrote; observedTime moves only when the record changed (or we wrote it). */
  private observe(lease: LeaderLease, wroteIt: boolean): void {
    this.record.observe(lease, wroteIt);
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder && holder !== this.reportedLeader) {
      this.reportedLeader = holder;
      if (holder !== this.identity) this.log.info({ holder }, 'Observed new leader');
      try {
        this.callbacks?.onNewLeader?.(holder);
      } catch (err) {
        this.log.error({ err }, 'Leader callback onNewLeader failed');
      }
    }
  }
}
