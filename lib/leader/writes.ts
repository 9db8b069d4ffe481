// The elector's writes of its Lease (elector.ts), as client-go's tryAcquireOrRenew and release: each attempt is
// optimistic (resourceVersion), never throws, and records what it read or wrote through `observe`. Unlike
// client-go, a candidate whose copy already shows the lease free or expired writes its takeover without a read.

import { isKubeError, KubeErrorCode } from '../kube/errors.ts';
import type { Clock } from '../clock.ts';
import type { LeaseCallOptions, LeaseStore } from '../kube/leases.ts';
import type { Logger } from '../log.ts';
import { holderSpec, releasedSpec, type LeaderLease, type ObservedRecord } from './record.ts';

export interface LeaseWritesDeps {
  store: LeaseStore;
  clock: Clock;
  log: Logger;
  identity: string;
  name: string;
  namespace: string;
  leaseDurationMs: number;
  /** What was last read or written; read here, moved by `observe`. */
  record: ObservedRecord;
  /** The elector's stop: requests end with it, and what fails after it is not logged. */
  stopping: AbortSignal;
  /** Records a lease read (`wroteIt` false) or written. */
  observe(lease: LeaderLease, wroteIt: boolean): void;
}

export class LeaseWrites {
  private readonly d: LeaseWritesDeps;
  /** The resourceVersion a write was refused on (409): that copy is stale, so it is read, not written from. */
  private staleVersion: string | undefined;

  constructor(deps: LeaseWritesDeps) {
    this.d = deps;
  }

  private callOptions(deadlineMs: number): LeaseCallOptions {
    return { timeoutMs: Math.max(1, deadlineMs - this.d.clock.monotonic()), signal: this.d.stopping };
  }

  /** Our record (`now` wall time): a renewal keeps acquireTime and leaseTransitions, a takeover starts them anew. */
  private desiredSpec(now: number, previous: LeaderLease['spec'], takeover: boolean): LeaderLease['spec'] {
    return holderSpec(this.d.identity, this.d.leaseDurationMs, now, previous, takeover);
  }

  /** One attempt, as client-go's tryAcquireOrRenew; never throws. */
  async tryAcquireOrRenew(deadlineMs: number, isLeader: boolean): Promise<boolean> {
    const now = this.d.clock.monotonic();
    const wallNow = this.d.clock.now();
    // Fast path: the leader updates from the lease it last wrote, without reading.
    if (isLeader && this.d.record.lease && this.d.record.isValid(now)) {
      const spec = this.desiredSpec(wallNow, this.d.record.lease.spec, false);
      try {
        this.d.observe(
          await this.d.store.replace({ ...this.d.record.lease, spec }, this.callOptions(deadlineMs)),
          true,
        );
        return true;
      } catch (err) {
        if (this.d.stopping.aborted) return false;
        this.d.log.warn({ err }, 'Failed to renew leadership lease');
      }
    }

    // A candidate whose copy (read, or delivered by the watch) shows the lease free or expired takes it from that
    // copy, without reading first: the write is conditional on the copy's resourceVersion, so it lands only if
    // the record is still the one we judged, as a read would have found it. A stale copy (409) or a lease gone
    // (404) falls back to the read below, in the same attempt.
    if (!isLeader) {
      const taken = await this.takeOverFromCopy(now, wallNow, deadlineMs);
      if (taken !== undefined) return taken;
    }

    let current: LeaderLease;
    try {
      current = await this.d.store.get(this.d.namespace, this.d.name, this.callOptions(deadlineMs));
    } catch (err) {
      if (!isKubeError(err, KubeErrorCode.NotFound)) {
        if (!this.d.stopping.aborted) this.d.log.warn({ err }, 'Failed to read leadership lease');
        return false;
      }
      return this.create(wallNow, deadlineMs);
    }
    this.d.observe(current, false);

    const holder = current.spec?.holderIdentity ?? '';
    if (holder && holder !== this.d.identity && this.d.record.isValid(now)) return false;

    const takeover = holder !== this.d.identity;
    const spec = this.desiredSpec(wallNow, current.spec, takeover);
    try {
      this.d.observe(await this.d.store.replace({ ...current, spec }, this.callOptions(deadlineMs)), true);
      if (takeover) this.tookOver(holder, spec);
      return true;
    } catch (err) {
      if (this.d.stopping.aborted) return false;
      if (isKubeError(err, KubeErrorCode.Conflict)) {
        this.staleVersion = current.metadata.resourceVersion;
        this.d.log.debug({ err }, 'Lost a race for the leadership lease');
      } else {
        this.d.log.warn({ err }, 'Failed to update leadership lease');
      }
      return false;
    }
  }

  /**
   * The takeover from the copy last observed, when that copy is another's (or nobody's) and free or expired:
   * true or false as the attempt's answer, undefined when the copy does not qualify or was stale (read instead).
   */
  private async takeOverFromCopy(
    now: number,
    wallNow: number,
    deadlineMs: number,
  ): Promise<boolean | undefined> {
    const copy = this.d.record.lease;
    const holder = copy?.spec?.holderIdentity ?? '';
    const version = copy?.metadata.resourceVersion;
    if (!version || version === this.staleVersion || holder === this.d.identity) return undefined;
    if (holder && this.d.record.isValid(now)) return undefined;
    const spec = this.desiredSpec(wallNow, copy.spec, true);
    try {
      this.d.observe(await this.d.store.replace({ ...copy, spec }, this.callOptions(deadlineMs)), true);
      this.tookOver(holder, spec);
      return true;
    } catch (err) {
      if (this.d.stopping.aborted) return false;
      if (isKubeError(err, KubeErrorCode.Conflict) || isKubeError(err, KubeErrorCode.NotFound)) {
        this.staleVersion = version;
        this.d.log.debug({ err }, 'The copy of the leadership lease was stale; reading it');
        return undefined;
      }
      this.d.log.warn({ err }, 'Failed to update leadership lease');
      return false;
    }
  }

  private tookOver(previous: string, spec: LeaderLease['spec']): void {
    this.d.log.info({ previous, transitions: spec?.leaseTransitions }, 'Took over leadership lease');
  }

  private async create(wallNow: number, deadlineMs: number): Promise<boolean> {
    const lease: LeaderLease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.d.name, namespace: this.d.namespace },
      spec: this.desiredSpec(wallNow, undefined, false),
    };
    try {
      this.d.observe(await this.d.store.create(lease, this.callOptions(deadlineMs)), true);
      this.d.log.info('Created leadership lease');
      return true;
    } catch (err) {
      if (!this.d.stopping.aborted && !isKubeError(err, KubeErrorCode.AlreadyExists)) {
        this.d.log.warn({ err }, 'Failed to create leadership lease');
      }
      return false;
    }
  }

  /**
   * Hands the lease back: empty holder and a 1 s duration, from the last written object; on a conflict
   * (a renewal that was cut short may still have landed) it re-reads and retries once if we still hold it.
   */
  async release(deadline: number): Promise<void> {
    const options = (): LeaseCallOptions => ({ timeoutMs: deadline - this.d.clock.monotonic() });
    let lease = this.d.record.lease;
    for (let attempt = 0; attempt < 2 && lease; attempt++) {
      if (lease.spec?.holderIdentity !== this.d.identity) return;
      if (options().timeoutMs <= 0) {
        this.d.log.warn('No time left to release the leadership lease; it will expire');
        return;
      }
      const spec = releasedSpec(this.d.clock.now(), lease.spec);
      try {
        this.d.observe(await this.d.store.replace({ ...lease, spec }, options()), true);
        this.d.log.info('Released leadership lease');
        return;
      } catch (err) {
        if (!isKubeError(err, KubeErrorCode.Conflict) || attempt > 0) {
          this.d.log.warn({ err }, 'Failed to release leadership lease');
          return;
        }
        lease = await this.d.store.get(this.d.namespace, this.d.name, options()).catch(() => undefined);
      }
    }
  }
}
