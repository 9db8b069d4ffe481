// The controller's view of the cluster: Nodes, nodecare Leases and SystemExtensions, each decoded on ingest
// (ingest.ts) to what the decision reads. Lease staleness is judged from `observedAtMs`: the controller's own
// clock when it saw renewTime change, reset to "now" for every lease on start-up and on becoming leader
// (docs/design.md section 5).

import {
  GROUP_VERSION,
  LEASE_NAMESPACE,
  LeaseLabel,
  LeaseRole,
  SYSTEM_EXTENSION,
  parseSystemExtension,
  type LeaseObject,
  type ObservedLease,
  type ParsedSystemExtension,
  type SystemExtensionObject,
} from '../api/index.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import { Backoff, WATCH_BACKOFF } from '../lib/kube/backoff.ts';
import { Reflector, type ReflectorOptions } from '../lib/kube/reflector.ts';
import type { SeenLease } from './decide/index.ts';
import {
  LeaseProblem,
  MAX_LEASES_PER_NODE,
  toCachedLease,
  toCachedNode,
  type CachedLease,
  type CachedNode,
  type NodeObject,
} from './ingest.ts';
import type { ControllerMetrics } from './metrics.ts';

export * from './ingest.ts';
/**
 * Whether resourceVersion `a` is newer than `b`, when both are etcd's decimal revisions (as client-go's
 * MutationCache and the scheduler's assume cache compare them); undefined when either is not, and then nothing
 * is assumed about their order.
 */
export function newerResourceVersion(a: string, b: string): boolean | undefined {
  if (!/^\d{1,19}$/.test(a) || !/^\d{1,19}$/.test(b)) return undefined;
  return a.length !== b.length ? a.length > b.length : a > b;
}

/**
 * The nodes this controller's own writes returned, each until the watch delivers that version or a newer one
 * (client-go's MutationCache, for nodes). Without it the next reconcile of a node just written decides on the
 * watch's copy from before the write and patches again against its old resourceVersion: a 409 the API
 * server pays for (a third of the taint patches at 200 nodes, measured with the audit log; issue 24). A write
 * is kept only while it is newer than the watch's copy by etcd's revision order; a node the watch deleted is
 * gone, whatever was written.
 */
export class WrittenNodes {
  private readonly nodes = new Map<string, CachedNode>();

  /** The newer of `watched` (the watch's copy of node `name`) and our own write of it. */
  read(name: string, watched: CachedNode | undefined): CachedNode | undefined {
    const written = this.nodes.get(name);
    if (written === undefined) return watched;
    if (
      watched === undefined ||
      newerResourceVersion(written.resourceVersion, watched.resourceVersion) !== true
    ) {
      this.nodes.delete(name); // the watch caught up (or the node is gone): its copy is the truth again
      return watched;
    }
    return written;
  }

  note(node: CachedNode, watched: CachedNode | undefined): void {
    if (watched !== undefined && newerResourceVersion(node.resourceVersion, watched.resourceVersion) === true)
      this.nodes.set(node.name, node);
  }

  get size(): number {
    return this.nodes.size;
  }
}

/** Two stripped nodes that differ only in resourceVersion give the same decision: no reconcile needed. */
function sameForDecision(a: CachedNode, b: CachedNode): boolean {
  return JSON.stringify({ ...a, resourceVersion: '' }) === JSON.stringify({ ...b, resourceVersion: '' });
}

/** True when a lease update changed nothing but renewTime (and the resourceVersion that comes with it). */
function onlyRenewed(lease: ObservedLease, old: ObservedLease): boolean {
  return (
    JSON.stringify({ ...lease, renewTime: '', resourceVersion: '' }) ===
    JSON.stringify({ ...old, renewTime: '', resourceVersion: '' })
  );
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
  private readonly leases = new Map<string, CachedLease>();
  /** Lease name → controller clock when its renewTime was last seen to change. */
  private readonly observedAt = new Map<string, number>();
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
    this.observedAt.set(lease.name, this.clock.now());
    this.file(lease);
    return lease.node;
  }

  updated(lease: CachedLease, old: CachedLease): string | undefined {
    const known = this.leases.get(old.name);
    if (!this.believe(lease)) {
      if (!known) return undefined;
      this.remove(known);
      return known.node;
    }
    if (!known) return this.added(lease);
    const now = this.clock.now();
    const lastSeen = this.observedAt.get(lease.name) ?? now;
    const wasExpired = now - lastSeen >= known.leaseDurationSeconds * 1000;
    if (lease.node !== known.node) this.remove(known);
    if (lease.renewTime !== known.renewTime) this.observedAt.set(lease.name, now);
    this.file(lease);
    // A renewal of a live lease changes nothing the decision reads now: the node's pending deadline (the
    // lease's old expiry) re-checks it, which saves a reconcile per heartbeat (500/s at 5,000 nodes). A
    // renewal that revives an expired lease (an agent back from the dead) is a change.
    return wasExpired || !onlyRenewed(lease, known) ? lease.node : undefined;
  }

  deleted(lease: CachedLease): string | undefined {
    this.setIgnored(lease.name, undefined, lease.node);
    const known = this.leases.get(lease.name);
    if (!known) return undefined;
    this.remove(known);
    this.observedAt.delete(lease.name);
    return known.node;
  }

  /** Records a lease read live (before acting on staleness); true when it was renewed meanwhile. */
  observeLive(lease: CachedLease): boolean {
    if (!this.believe(lease)) return false;
    if (this.leases.get(lease.name)?.renewTime === lease.renewTime) return false;
    this.observedAt.set(lease.name, this.clock.now());
    this.file(lease);
    return true;
  }

  /** Every lease gets a fresh full duration from now (after start-up or a leader change). */
  refreshObservations(): void {
    const now = this.clock.now();
    for (const name of this.observedAt.keys()) this.observedAt.set(name, now);
  }

  /**
   * The node's believed extension leases by extension name, and its agent heartbeat. A lease owned by
   * another incarnation of the node (owner UID) is ignored.
   */
  leasesOf(node: { name: string; uid: string }): NodeLeases {
    const extensions = new Map<string, SeenLease>();
    let agent: SeenLease | undefined;
    for (const name of this.byNode.get(node.name) ?? []) {
      const lease = this.leases.get(name);
      if (!lease) continue;
      const foreign = node.uid !== '' && lease.ownerUid !== undefined && lease.ownerUid !== node.uid;
      this.setIgnored(name, foreign ? LeaseProblem.OwnerMismatch : undefined, node.name);
      if (foreign) continue;
      const seen = { lease, observedAtMs: this.observedAt.get(name) ?? this.clock.now() };
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

  private file(lease: CachedLease): void {
    this.leases.set(lease.name, lease);
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

interface Meta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/**
 * The client a relisting reflector uses. A new reflector reads a 404 on its first list as "this resource
 * type does not exist" and syncs empty; in a relist that would wipe what we know whenever an API server
 * that just restarted does not serve a CRD's path yet. Here a 404 is an error to retry with backoff: the
 * source stays out of sync until a real list replaces what it knew.
 */
function relistClient(client: KubeClient): KubeClient {
  return Object.create(client, {
    get: {
      value: async (...args: Parameters<KubeClient['get']>): Promise<unknown> => {
        try {
          return await client.get(...args);
        } catch (err) {
          if (!isKubeError(err, KubeErrorCode.NotFound)) throw err;
          throw new KubeError(KubeErrorCode.ServerError, err.status, `${err.message} (while relisting)`);
        }
      },
    },
  }) as KubeClient;
}

/** A source that stayed in sync this long has recovered: its next relist starts from the shortest backoff. */
const STABLE_MS = 60_000;

/**
 * One list-and-watch source that knows whether it is in sync. After a failed list or watch it is not: it
 * may have missed events. It relists (as client-go's ListAndWatch does after every failure, keeping what it
 * knew so the differences come out as updates and deletions), after a capped backoff so a server that keeps
 * failing is not hammered with lists, and is in sync again once that list is in.
 */
export class Source<R extends Meta, T> {
  private readonly options: ReflectorOptions<R, T>;
  private readonly backoff: Backoff;
  private reflector: Reflector<R, T>;
  private fresh = false;
  private syncedAtMs = 0;
  private running = false;
  private stopping = new AbortController();
  private restarting: Promise<void> = Promise.resolve();

  constructor(options: ReflectorOptions<R, T>) {
    this.options = options;
    this.backoff = new Backoff(WATCH_BACKOFF, options.random);
    this.reflector = this.make(new Map(), options.client);
  }

  get store(): Map<string, T> {
    return this.reflector.store;
  }

  /** The last list is complete and no list or watch failed since. */
  get synced(): boolean {
    return this.fresh;
  }

  start(): void {
    this.running = true;
    this.stopping = new AbortController();
    this.reflector.start();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    await this.restarting;
    await this.reflector.stop();
  }

  private make(known: Map<string, T>, client: KubeClient): Reflector<R, T> {
    const { handlers, clock } = this.options;
    const reflector = new Reflector<R, T>({
      ...this.options,
      client,
      handlers: {
        ...handlers,
        synced: () => {
          this.fresh = true;
          this.syncedAtMs = clock.now();
          handlers.synced?.();
        },
        error: (err) => {
          handlers.error?.(err);
          this.relist();
        },
      },
    });
    for (const [key, value] of known) reflector.store.set(key, value);
    return reflector;
  }

  private relist(): void {
    // Before the first complete list the reflector keeps retrying its list by itself.
    if (!this.fresh || !this.running) return;
    this.fresh = false;
    const { clock } = this.options;
    if (clock.now() - this.syncedAtMs >= STABLE_MS) this.backoff.reset();
    const delayMs = this.backoff.next();
    const failed = this.reflector;
    const stopping = this.stopping.signal;
    this.restarting = (async () => {
      await failed.stop();
      await clock.sleep(delayMs, stopping).catch(() => undefined);
      if (!this.running) return;
      this.reflector = this.make(failed.store, relistClient(this.options.client));
      this.reflector.start();
    })();
  }
}

export interface CacheEvents extends LeaseIndexEvents {
  nodeChanged(name: string): void;
  /** SystemExtensions changed: any node may be affected. */
  allNodesChanged(): void;
  error(source: string, err: unknown): void;
  /** An object whose ingest threw (a poison object) was skipped; called each time it is seen. */
  skipped(source: string, key: string, err: unknown): void;
}

/** How many poison objects the reporter remembers as already logged (then it starts over). */
const MAX_REMEMBERED_SKIPPED = 1024;

/**
 * CacheEvents.skipped for the controller: every skip is counted; each object (source and key) is logged
 * once, not again on every relist or update, with memory for a bounded number of them.
 */
export function skippedObjectReporter(
  log: Logger,
  metrics: Pick<ControllerMetrics, 'watchObjectsSkipped'>,
): CacheEvents['skipped'] {
  const logged = new Set<string>();
  return (source, key, err) => {
    metrics.watchObjectsSkipped.inc({ source });
    const id = `${source}/${key}`;
    if (logged.has(id)) return;
    if (logged.size >= MAX_REMEMBERED_SKIPPED) logged.clear();
    logged.add(id);
    log.error({ err, source, object: key }, 'Skipped an object that could not be handled');
  };
}

export class ClusterCache {
  readonly nodes: Source<NodeObject, CachedNode>;
  readonly leases: Source<LeaseObject, CachedLease>;
  readonly systemExtensions: Source<SystemExtensionObject, ParsedSystemExtension>;
  private readonly index: LeaseIndex;
  private readonly written = new WrittenNodes();

  /**
   * `nodeSelector` (the controller's --node-selector, kubectl's `-l` syntax): only these nodes are seen,
   * so only they are managed; '' sees every node.
   */
  constructor(client: KubeClient, clock: Clock, events: CacheEvents, nodeSelector = '') {
    this.index = new LeaseIndex(clock, events);
    const changed = (name: string | undefined): void => {
      if (name !== undefined) events.nodeChanged(name);
    };
    this.nodes = new Source({
      client,
      clock,
      path: '/api/v1/nodes',
      ...(nodeSelector ? { labelSelector: nodeSelector } : {}),
      transform: toCachedNode,
      handlers: {
        added: (node) => events.nodeChanged(node.name),
        updated: (node, old) => {
          if (!sameForDecision(node, old)) events.nodeChanged(node.name);
        },
        deleted: (node) => events.nodeChanged(node.name),
        error: (err) => events.error('nodes', err),
        skipped: (err, key) => events.skipped('nodes', key, err),
      },
    });
    this.leases = new Source({
      client,
      clock,
      path: leasesPath(LEASE_NAMESPACE),
      labelSelector: LeaseLabel.role,
      transform: toCachedLease,
      handlers: {
        added: (lease) => changed(this.index.added(lease)),
        updated: (lease, old) => changed(this.index.updated(lease, old)),
        deleted: (lease) => changed(this.index.deleted(lease)),
        error: (err) => events.error('leases', err),
        skipped: (err, key) => events.skipped('leases', key, err),
      },
    });
    this.systemExtensions = new Source({
      client,
      clock,
      path: `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`,
      transform: parseSystemExtension,
      handlers: {
        added: () => events.allNodesChanged(),
        updated: () => events.allNodesChanged(),
        deleted: () => events.allNodesChanged(),
        error: (err) => events.error('systemextensions', err),
        skipped: (err, key) => events.skipped('systemextensions', key, err),
      },
    });
  }

  start(): void {
    this.nodes.start();
    this.leases.start();
    this.systemExtensions.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.nodes.stop(), this.leases.stop(), this.systemExtensions.stop()]);
  }

  /** Every source listed completely and none has failed since (it relists after a failure). */
  get synced(): boolean {
    return this.nodes.synced && this.leases.synced && this.systemExtensions.synced;
  }

  /** The node as last seen: the watch's copy, or this controller's own newer write (WrittenNodes). */
  node(name: string): CachedNode | undefined {
    return this.written.read(name, this.nodes.store.get(name));
  }

  nodeNames(): IterableIterator<string> {
    return this.nodes.store.keys();
  }

  /** Records the node a write of this controller returned, until the watch delivers it (WrittenNodes). */
  noteWritten(node: CachedNode): void {
    this.written.note(node, this.nodes.store.get(node.name));
  }

  systemExtensionList(): Iterable<ParsedSystemExtension> {
    return this.systemExtensions.store.values();
  }

  /** Every lease gets a fresh full duration from now (after start-up or a leader change). */
  refreshObservations(): void {
    this.index.refreshObservations();
  }

  /** Records a lease read live (before acting on staleness); returns true when it was renewed meanwhile. */
  observeLive(lease: CachedLease): boolean {
    return this.index.observeLive(lease);
  }

  /** The node's extension leases by extension name, and its agent heartbeat. */
  leasesOf(nodeName: string): NodeLeases {
    return this.index.leasesOf({ name: nodeName, uid: this.node(nodeName)?.uid ?? '' });
  }
}
