// The leadership term: a replica does the work only while it leads on caches in sync (again, after an outage).
// One term starts the work on synced caches; losing the lease cuts it off at once; stop() lets it drain until a
// deadline and leaves time to release the lease. Every write asks `fence` first: only the current term writes.
// A replica that cannot sync stays out of the election (issue 50 item 5): it campaigns only on synced caches
// (elected.canLead), a leader whose caches stay out of sync for `leaderUnsyncedMs` steps down (releases the
// lease for a standby that can work), and syncOverdue() tells liveness that the caches never synced within
// `firstSyncMs` of the start.

import type { Clock, Timer } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import { SYNC_BOUND_DEFAULTS, type SyncBounds } from './sync-bounds.ts';
import type { ControllerMetrics } from './metrics.ts';
import { NotLeaderError, type Fence } from './writes/index.ts';

/** Of a stop budget, at most this much is kept for releasing the leader lease (the rest drains work). */
export const RELEASE_RESERVE_MS = 2_000;

/** What a term runs. */
export interface TermWork {
  /** All caches listed and none failed since; when that turns, LeadershipTerms.syncChanged() is called. */
  synced(): boolean;
  /** For the logs: how many nodes the caches hold. */
  nodeCount(): number;
  /** Starts the term's work (on synced caches, once this replica leads). */
  start(): void;
  /** Stops starting work and resolves once the work in flight has ended. */
  stop(): Promise<void>;
}

/** What the terms ask of the elector (lib/leader/elector.ts); absent without leader election. */
export interface TermElector {
  stepDown?(): void;
  canLeadChanged?(): void;
}

export class LeadershipTerms {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics: Pick<ControllerMetrics, 'isLeader'>;
  private readonly bounds: SyncBounds;
  private readonly elector: TermElector;
  /** Monotonic clock at construction (the process start, for the first-sync bound). */
  private readonly startedMs: number;
  private everSynced = false;
  /** Armed while this replica leads on caches out of sync: steps down when it fires. */
  private unsyncedTimer: Timer | undefined;
  private work: TermWork | undefined;
  private leadingNow = false;
  private stopped = false;
  private stopDeadlineMs = 0;
  /** The current term; aborted when it must not write any more. */
  private term: AbortController | undefined;
  private wasSynced = false;
  /** A look at the caches' sync, asked for by syncChanged() and not yet taken. */
  private syncCheck: Timer | undefined;

  constructor(
    clock: Clock,
    log: Logger,
    metrics: Pick<ControllerMetrics, 'isLeader'>,
    options: { bounds?: SyncBounds; elector?: TermElector } = {},
  ) {
    this.clock = clock;
    this.log = log;
    this.metrics = metrics;
    this.bounds = options.bounds ?? SYNC_BOUND_DEFAULTS;
    this.elector = options.elector ?? {};
    this.startedMs = clock.monotonic();
  }

  /** The caches have not synced once within the first-sync bound of the start (liveness fails). */
  syncOverdue(): boolean {
    return !this.everSynced && this.clock.monotonic() - this.startedMs >= this.bounds.firstSyncMs;
  }

  /** Checked just before every write: throws NotLeaderError unless a term is current. */
  readonly fence: Fence = () => {
    if (!this.term || this.term.signal.aborted) throw new NotLeaderError();
  };

  /** Aborts when the current term ends (requests in flight are cut off). */
  get signal(): AbortSignal | undefined {
    return this.term?.signal;
  }

  get leading(): boolean {
    return this.leadingNow;
  }

  /**
   * Takes `work`: a term starts as soon as this replica leads on synced caches. The caches say when their sync
   * turns (syncChanged); nothing polls them.
   */
  run(work: TermWork): void {
    this.work = work;
    this.checkSync();
  }

  /**
   * The caches' sync may have turned. Looked at on the next turn of the event loop, once for any number of
   * calls: the cache that calls this is still applying its list.
   */
  syncChanged(): void {
    if (this.syncCheck || this.stopped) return;
    this.syncCheck = this.clock.setTimer(0, () => {
      this.syncCheck = undefined;
      this.checkSync();
    });
  }

  private checkSync(): void {
    const work = this.work;
    if (!work || this.stopped) return;
    const synced = work.synced();
    if (synced !== this.wasSynced) {
      this.wasSynced = synced;
      if (synced) this.log.info({ nodes: work.nodeCount() }, 'Caches synced');
      else this.log.warn('Caches out of sync; relisting');
      if (synced) this.everSynced = true;
      this.watchUnsynced();
      this.elector.canLeadChanged?.();
    }
    this.maybeStart();
  }

  /** While leading on caches out of sync (as last looked at), the step-down timer runs; otherwise it is off. */
  private watchUnsynced(): void {
    const unsynced = this.leadingNow && !this.stopped && this.work !== undefined && !this.wasSynced;
    if (!unsynced) {
      this.unsyncedTimer?.cancel();
      this.unsyncedTimer = undefined;
      return;
    }
    if (this.unsyncedTimer) return;
    const { leaderUnsyncedMs } = this.bounds;
    this.unsyncedTimer = this.clock.setTimer(leaderUnsyncedMs, () => {
      this.unsyncedTimer = undefined;
      if (!this.leadingNow || this.stopped || this.wasSynced) return;
      this.log.warn({ leaderUnsyncedMs }, 'Caches out of sync too long; stepping down');
      this.elector.stepDown?.();
    });
  }

  /** The elector's callbacks. */
  readonly elected = {
    /** Campaign only on caches in sync: a replica that cannot do the work never takes the lease. */
    canLead: (): boolean => !this.stopped && this.work?.synced() === true,
    onStartedLeading: (): void => {
      this.leadingNow = true;
      this.metrics.isLeader.set(1);
      this.log.info('Became leader');
      this.watchUnsynced();
      this.maybeStart();
    },
    onStoppedLeading: async (): Promise<void> => {
      if (!this.leadingNow) return;
      this.leadingNow = false;
      this.watchUnsynced();
      this.metrics.isLeader.set(0);
      if (this.stopped) {
        const left = this.stopDeadlineMs - this.clock.monotonic();
        await this.end(this.stopDeadlineMs - Math.min(RELEASE_RESERVE_MS, left / 2));
      } else {
        this.log.warn('Lost leadership; stopped writing');
        await this.end(undefined);
      }
    },
  };

  /**
   * Stops for good by `deadlineMs`: `release` (the elector's stop: drains through onStoppedLeading, then
   * releases the lease), then whatever work is left is ended.
   */
  async stop(deadlineMs: number, release: (deadlineMs: number) => Promise<void>): Promise<void> {
    this.stopped = true;
    this.stopDeadlineMs = deadlineMs;
    this.syncCheck?.cancel();
    this.watchUnsynced();
    await release(deadlineMs);
    await this.end(this.clock.monotonic());
    this.leadingNow = false;
  }

  private maybeStart(): void {
    if (!this.leadingNow || this.term || this.stopped || !this.work?.synced()) return;
    this.term = new AbortController();
    this.work.start();
  }

  /**
   * Ends the term's work: no new work starts; what is in flight is awaited. After a lost election nothing more
   * may be written, so it is cut off at once (`drainByMs` undefined); on stop() this replica still holds the
   * lease and lets it finish until `drainByMs`.
   */
  private async end(drainByMs: number | undefined): Promise<void> {
    const current = this.term;
    if (!current || !this.work) return;
    if (drainByMs === undefined) current.abort();
    const drained = this.work.stop();
    if (drainByMs !== undefined) {
      const timeout = new AbortController();
      await Promise.race([
        drained,
        this.clock
          .sleep(Math.max(0, drainByMs - this.clock.monotonic()), timeout.signal)
          .catch(() => undefined),
      ]);
      timeout.abort();
      current.abort();
    }
    await drained;
    this.term = undefined;
  }
}
