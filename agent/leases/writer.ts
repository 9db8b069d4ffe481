// Writes Leases the way the kubelet renews its node lease (docs/conventions.md 9): build the whole desired object in
// one pure function (api/lease.ts buildLease), update from the last object written (no GET in steady state),
// re-read on conflict, create when missing, capped backoff on failures, a deadline on every request.
// Writes to one Lease are serialized and coalesced: while a write is in flight only the newest desired
// state waits, so a burst of state changes never queues stale writes.

import { buildLease, type DesiredLease, type LeaseObject } from '../../api/index.ts';
import type { Clock } from '../../lib/clock.ts';
import { Backoff, LEASE_BACKOFF } from '../../lib/kube/backoff.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { NamespacedLeases } from '../../lib/kube/leases.ts';

export interface LeaseWriterMetrics {
  /** Counts write attempts by operation and result (ok, conflict, error). */
  write(operation: 'create' | 'update' | 'delete', result: 'ok' | 'conflict' | 'error'): void;
}

export interface LeaseWriterDeps {
  store: NamespacedLeases;
  clock: Clock;
  log: Logger;
  metrics?: LeaseWriterMetrics;
  random?: () => number;
}

/** Like the kubelet's maxUpdateRetries: a few immediate retries on conflict, then back off. */
const MAX_IMMEDIATE_CONFLICT_RETRIES = 5;

interface Slot {
  /** The last object the API server returned for this lease (its resourceVersion is what we update from). */
  lastWritten: LeaseObject | undefined;
  pending: DesiredLease | undefined;
  running: Promise<void> | undefined;
  deleted: boolean;
}

export class LeaseWriter {
  private readonly deps: LeaseWriterDeps;
  private readonly slots = new Map<string, Slot>();
  /** Deletes in progress, by lease name. */
  private readonly removals = new Map<string, Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(deps: LeaseWriterDeps) {
    this.deps = deps;
  }

  /** The resourceVersion of the last successful write of a lease, for tests and diagnostics. */
  lastWritten(name: string): LeaseObject | undefined {
    return this.slots.get(name)?.lastWritten;
  }

  /**
   * Queues `desired` and resolves once it (or a newer desired state for the same lease) is written, or the
   * writer stops. Never rejects: failures are retried with backoff and logged.
   */
  write(desired: DesiredLease): Promise<void> {
    const name = buildLease(desired).metadata.name as string;
    let slot = this.slots.get(name);
    if (!slot) {
      slot = { lastWritten: undefined, pending: undefined, running: undefined, deleted: false };
      this.slots.set(name, slot);
    }
    slot.deleted = false;
    slot.pending = desired;
    if (slot.running) return slot.running;
    const s = slot;
    const running = this.drain(name, s).finally(() => {
      s.running = undefined;
    });
    s.running = running;
    return running;
  }

  /**
   * Deletes a lease (deregistration). A missing lease counts as deleted. The slot is detached at once, so a
   * write of the same lease made meanwhile (re-registration) starts afresh and runs only after the delete.
   */
  remove(name: string): Promise<void> {
    const slot = this.slots.get(name);
    this.slots.delete(name);
    if (slot) {
      slot.deleted = true;
      slot.pending = undefined;
    }
    const earlier = this.removals.get(name);
    const removal = (async () => {
      await earlier;
      await slot?.running;
      await this.deleteWithRetries(name);
    })().finally(() => {
      if (this.removals.get(name) === removal) this.removals.delete(name);
    });
    this.removals.set(name, removal);
    return removal;
  }

  /**
   * Deletes until the lease is gone (or missing), with capped backoff: a deregistered lease left behind would
   * keep an extension the node no longer has in the controller's view. Ends early only when the writer stops
   * or the lease is written again meanwhile (re-registered: it is wanted after all, and that write waits).
   */
  private async deleteWithRetries(name: string): Promise<void> {
    const backoff = new Backoff(LEASE_BACKOFF, this.deps.random);
    for (let attempt = 1; !this.stopping.signal.aborted; attempt++) {
      try {
        await this.deps.store.delete(name);
        this.deps.metrics?.write('delete', 'ok');
        return;
      } catch (err) {
        if (isKubeError(err, KubeErrorCode.NotFound)) return;
        this.deps.metrics?.write('delete', 'error');
        const delay = isKubeError(err) && err.retryAfterMs ? err.retryAfterMs : backoff.next();
        this.deps.log.warn({ err, lease: name, attempt, retryInMs: delay }, 'Failed to delete lease');
        await this.deps.clock.sleep(delay, this.stopping.signal).catch(() => undefined);
        if (this.slots.has(name)) return;
      }
    }
  }

  /** Stops retrying; in-flight requests finish by their own deadline. */
  stop(): void {
    this.stopping.abort();
  }

  private async drain(name: string, slot: Slot): Promise<void> {
    await this.removals.get(name); // a delete of this lease still running goes first
    const backoff = new Backoff(LEASE_BACKOFF, this.deps.random);
    let conflicts = 0;
    while (slot.pending && !slot.deleted && !this.stopping.signal.aborted) {
      const desired = slot.pending;
      try {
        slot.lastWritten = await this.writeOnce(name, desired, slot.lastWritten);
        if (slot.pending === desired) slot.pending = undefined;
        backoff.reset();
        conflicts = 0;
      } catch (err) {
        if (isKubeError(err, KubeErrorCode.Conflict) && ++conflicts <= MAX_IMMEDIATE_CONFLICT_RETRIES) {
          // Someone else wrote it (or our cache is stale): re-read, then retry at once with the fresh version.
          slot.lastWritten = await this.deps.store.get(name).catch(() => undefined);
          continue;
        }
        if (isKubeError(err, KubeErrorCode.Conflict)) slot.lastWritten = undefined;
        const delay = isKubeError(err) && err.retryAfterMs ? err.retryAfterMs : backoff.next();
        this.deps.log.warn({ err, lease: name, retryInMs: delay }, 'Failed to write lease');
        await this.deps.clock.sleep(delay, this.stopping.signal).catch(() => undefined);
      }
    }
  }

  private async writeOnce(
    name: string,
    desired: DesiredLease,
    last: LeaseObject | undefined,
  ): Promise<LeaseObject> {
    const { store, metrics } = this.deps;
    if (!last) {
      try {
        const created = await store.create(buildLease(desired));
        metrics?.write('create', 'ok');
        return created;
      } catch (err) {
        if (!isKubeError(err, KubeErrorCode.AlreadyExists)) {
          metrics?.write('create', 'error');
          throw err;
        }
        last = await store.get(name);
      }
    }
    try {
      const updated = await store.replace(
        buildLease({ ...desired, resourceVersion: last.metadata.resourceVersion }),
      );
      metrics?.write('update', 'ok');
      return updated;
    } catch (err) {
      if (isKubeError(err, KubeErrorCode.NotFound)) {
        // Deleted behind our back (by hand, or by garbage collection racing a node re-create): create it again.
        const created = await store.create(buildLease(desired));
        metrics?.write('create', 'ok');
        return created;
      }
      metrics?.write('update', isKubeError(err, KubeErrorCode.Conflict) ? 'conflict' : 'error');
      throw err;
    }
  }
}
