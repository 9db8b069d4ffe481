// The leader election record as one replica sees it (client-go's observedRecord and observedTime): the lease
// it last read or wrote, and when its record was last seen to change by this replica's own monotonic clock;
// and the records the elector (elector.ts) writes.

import type { LeaseObject } from '../../api/lease.ts';
import { microTime } from '../../api/lease.ts';
import type { Clock } from '../clock.ts';
import { RELEASED_LEASE_SECONDS } from './timing.ts';

/** The leader's Lease: a coordination.k8s.io/v1 Lease with leaseTransitions (through the one Lease port). */
export type LeaderLease = LeaseObject;

/** The fields of the lease that make up the leader election record; a change to any is an observed change. */
function recordKey(lease: LeaderLease): string {
  const spec = lease.spec ?? {};
  return JSON.stringify([
    spec.holderIdentity ?? '',
    spec.leaseDurationSeconds ?? 0,
    String(spec.acquireTime ?? ''),
    String(spec.renewTime ?? ''),
    spec.leaseTransitions ?? 0,
  ]);
}

export class ObservedRecord {
  /** The lease as last read or written. */
  lease: LeaderLease | undefined;
  private key = '';
  private timeMs = 0;

  private readonly clock: Clock;
  /** Counts for a lease that names no duration of its own. */
  private readonly leaseDurationMs: number;

  constructor(clock: Clock, leaseDurationMs: number) {
    this.clock = clock;
    this.leaseDurationMs = leaseDurationMs;
  }

  /** The holder as last observed ('' when free or unknown). */
  get holder(): string {
    return this.lease?.spec?.holderIdentity ?? '';
  }

  /** Records what was read or written; observedTime moves only when the record changed (or we wrote it). */
  observe(lease: LeaderLease, wroteIt: boolean): void {
    const key = recordKey(lease);
    if (wroteIt || key !== this.key) this.timeMs = this.clock.monotonic();
    this.lease = lease;
    this.key = key;
  }

  /** When the observed lease stops being valid (by our monotonic clock): observedTime + its duration. */
  expiresAtMs(): number {
    const seconds = this.lease?.spec?.leaseDurationSeconds;
    const durationMs = seconds && seconds > 0 ? seconds * 1000 : this.leaseDurationMs;
    return this.timeMs + durationMs;
  }

  isValid(nowMs: number): boolean {
    return this.expiresAtMs() > nowMs;
  }
}

/**
 * The record of `identity` holding the lease at `nowMs` (wall time): a renewal keeps acquireTime and
 * leaseTransitions, a takeover starts them anew.
 */
export function holderSpec(
  identity: string,
  leaseDurationMs: number,
  nowMs: number,
  previous: LeaderLease['spec'],
  takeover: boolean,
): LeaderLease['spec'] {
  const renewTime = microTime(new Date(nowMs));
  const transitions = previous?.leaseTransitions ?? 0;
  return {
    holderIdentity: identity,
    leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
    acquireTime: takeover ? renewTime : (previous?.acquireTime ?? renewTime),
    renewTime,
    leaseTransitions: takeover ? transitions + 1 : transitions,
  };
}

/** The record of a released lease (`nowMs` wall time): empty holder, a 1 s duration, the transitions kept. */
export function releasedSpec(nowMs: number, previous: LeaderLease['spec']): LeaderLease['spec'] {
  const now = microTime(new Date(nowMs));
  return {
    holderIdentity: '',
    leaseDurationSeconds: RELEASED_LEASE_SECONDS,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: previous?.leaseTransitions ?? 0,
  };
}
