// The believed leases by node, with the controller's monotonic clock reading of when each renewTime last changed
// (lease staleness is judged from it, never from renewTime against the wall clock: reset to "now" for every lease
// on start-up and on becoming leader, docs/design.md section 5, docs/adr/0020). Fed by the lease watch and by live re-reads; leases that are not the agent's own are ignored.

import { LeaseRole } from '../../api/index.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SeenLease } from '../decide/index.ts';
import { LeaseProblem, MAX_LEASES_PER_NODE, ownedByAnotherNode, type CachedLease } from '../ingest.ts';

/**
 * True when a lease update changed nothing but renewTime (and the resourceVersion that comes with it). Every
 * field is a string, a number or undefined; an undefined field equals an absent one. Compared in place, with
 * no copy: this runs on every renewal the watch delivers (hundreds a second at 5,000 nodes).
 */
function onlyRenewed(lease: CachedLease, old: CachedLease): boolean {
  const now = lease as unknown as Readonly<Record<string, unknown>>;
  const was = old as unknown as Readonly<Record<string, unknown>>;
  for (const key in now)
    if (key !== 'renewTime' && key !== 'resourceVersion' && now[key] !== was[key]) return false;
  for (const key in was) if (!(key in now) && was[key] !== undefined) return false;
  return true;
}

/** A believed lease and the controller clock when its renewTime was last seen to change. */
interface Filed {
  readonly lease: CachedLease;
  observedAtMs: number;
}

export interface NodeLeases {
  extensions: Map<string, SeenLease>;
  agent: SeenLease | undefined;
}

export interface LeaseIndexEvents {
  /** A lease is ignored for `problem` (once per lease and problem, not on every renewal). */
  ignored?(lease: { name: string; node: string }, problem: LeaseProblem): void;
  /** The number of leases ignored for `problem` changed. */
  ignoredCount?(problem: LeaseProblem, count: number): void;
}

/**
 * The believed leases by node, with the controller's clock reading of when each renewTime last changed.
 * Fed by the lease watch (added/updated/deleted, which return the node to reconcile, if any) and by live
 * re-reads (observeLive).
 */
export class LeaseIndex {
  private readonly clock: Clock;
  private readonly events: LeaseIndexEvents;
  /**
   * Lease name → the believed lease and the controller clock when its renewTime was last seen to change. The
   * record and the lease in it are kept across renewals and brought up to date in place (see `updated`).
   */
  private readonly leases = new Map<string, Filed>();
  /** Node name → its lease names. */
  private readonly byNode = new Map<string, Set<string>>();
  private readonly ignoredLeases = new Map<string, LeaseProblem>();
  /** Problem → how many leases are ignored for it (kept with ignoredLeases, never recounted). */
  private readonly ignoredCounts = new Map<LeaseProblem, number>();

  constructor(clock: Clock, events: LeaseIndexEvents) {
    this.clock = clock;
    this.events = events;
  }

  added(lease: CachedLease): string | undefined {
    if (!this.believe(lease)) return undefined;
    this.file(lease, this.clock.monotonic());
    return lease.node;
  }

  updated(lease: CachedLease, old: CachedLease): string | undefined {
    const known = this.leases.get(old.name);
    if (!this.believe(lease)) {
      if (!known) return undefined;
      this.remove(known.lease);
      return known.lease.node;
    }
    if (!known) return this.added(lease);
    const now = this.clock.monotonic();
    const wasExpired = now - known.observedAtMs >= known.lease.leaseDurationSeconds * 1000;
    if (lease.renewTime !== known.lease.renewTime) known.observedAtMs = now;
    if (onlyRenewed(lease, known.lease)) {
      // A renewal: the lease already held is brought up to date in place (the cache keeps it too, see
      // `held`). It and its strings are long since in V8's old generation; a new object kept instead would be
      // promoted there and be garbage at the next renewal, hundreds a second at 5,000 nodes (docs/adr/0013).
      known.lease.renewTime = lease.renewTime;
      known.lease.resourceVersion = lease.resourceVersion;
      // A renewal of a live lease changes nothing the decision reads now: the node's pending deadline (the
      // lease's old expiry) re-checks it, which saves a reconcile per heartbeat (500/s at 5,000 nodes). A
      // renewal that revives an expired lease (an agent back from the dead) is a change.
      return wasExpired ? lease.node : undefined;
    }
    if (lease.node !== known.lease.node) this.remove(known.lease);
    this.file(lease, known.observedAtMs);
    return lease.node;
  }

  /**
   * The object the index holds for the lease `name` (undefined when it believes none): after a renewal, the
   * lease it held before, brought up to date. The watch's cache keeps the same object.
   */
  held(name: string): CachedLease | undefined {
    return this.leases.get(name)?.lease;
  }

  /** Why the lease `name` is ignored (undefined when it is believed or unknown). */
  problemOf(name: string): LeaseProblem | undefined {
    return this.ignoredLeases.get(name);
  }

  deleted(lease: CachedLease): string | undefined {
    this.setIgnored(lease.name, undefined, lease.node);
    const known = this.leases.get(lease.name);
    if (!known) return undefined;
    this.remove(known.lease);
    return known.lease.node;
  }

  /** Records a lease read live (before acting on staleness); true when it was renewed meanwhile. */
  observeLive(lease: CachedLease): boolean {
    if (!this.believe(lease)) return false;
    if (this.leases.get(lease.name)?.lease.renewTime === lease.renewTime) return false;
    this.file(lease, this.clock.monotonic());
    return true;
  }

  /**
   * When the believed lease `name` of `node` expires by this controller's clock (undefined when there is no
   * such lease): where a renewal moved a node's deadline to (docs/adr/0009).
   */
  expiresAtMs(name: string, node: string): number | undefined {
    const known = this.leases.get(name);
    if (known?.lease.node !== node) return undefined;
    return known.observedAtMs + known.lease.leaseDurationSeconds * 1000;
  }

  /** Every lease gets a fresh full duration from now (after start-up or a leader change). */
  refreshObservations(): void {
    const now = this.clock.monotonic();
    for (const known of this.leases.values()) known.observedAtMs = now;
  }

  /**
   * The node's believed extension leases by extension name, and its agent heartbeat. A lease owned by
   * another incarnation of the node (owner UID) is ignored.
   */
  leasesOf(node: { name: string; uid: string }): NodeLeases {
    const extensions = new Map<string, SeenLease>();
    let agent: SeenLease | undefined;
    for (const name of this.byNode.get(node.name) ?? []) {
      const known = this.leases.get(name);
      if (!known) continue;
      const { lease } = known;
      const foreign = ownedByAnotherNode(lease, node.uid);
      this.setIgnored(name, foreign ? LeaseProblem.OwnerMismatch : undefined, node.name);
      if (foreign) continue;
      const seen = { lease, observedAtMs: known.observedAtMs };
      if (lease.role === LeaseRole.agent) agent = seen;
      else if (lease.extension) extensions.set(lease.extension, seen);
    }
    return { extensions, agent };
  }

  /** Whether the lease is one to believe and file; if not, it is recorded as ignored, with its problem. */
  private believe(lease: CachedLease): boolean {
    const problem = lease.problem ?? (this.hasRoom(lease) ? undefined : LeaseProblem.TooManyLeases);
    this.setIgnored(lease.name, problem, lease.node);
    return problem === undefined;
  }

  /** Whether the lease is filed for its node already or the node has room for one more. */
  private hasRoom(lease: CachedLease): boolean {
    const names = this.byNode.get(lease.node);
    return !names || names.has(lease.name) || names.size < MAX_LEASES_PER_NODE;
  }

  /** O(1): the counts per problem move with each change, never recounted from all ignored leases. */
  private setIgnored(name: string, problem: LeaseProblem | undefined, node: string): void {
    const was = this.ignoredLeases.get(name);
    if (was === problem) return;
    if (problem) this.ignoredLeases.set(name, problem);
    else this.ignoredLeases.delete(name);
    if (problem) this.events.ignored?.({ name, node }, problem);
    if (was) this.countIgnored(was, -1);
    if (problem) this.countIgnored(problem, +1);
  }

  private countIgnored(problem: LeaseProblem, delta: number): void {
    const count = (this.ignoredCounts.get(problem) ?? 0) + delta;
    if (count === 0) this.ignoredCounts.delete(problem);
    else this.ignoredCounts.set(problem, count);
    this.events.ignoredCount?.(problem, count);
  }

  /** Files `lease` (replacing what was held for its name) as observed at `observedAtMs`. */
  private file(lease: CachedLease, observedAtMs: number): void {
    this.leases.set(lease.name, { lease, observedAtMs });
    let names = this.byNode.get(lease.node);
    if (!names) {
      names = new Set();
      this.byNode.set(lease.node, names);
    }
    names.add(lease.name);
  }

  private remove(lease: CachedLease): void {
    this.leases.delete(lease.name);
    const names = this.byNode.get(lease.node);
    names?.delete(lease.name);
    if (names?.size === 0) this.byNode.delete(lease.node);
  }
}
