// The controller's view of the cluster: Nodes, nodecare Leases and SystemExtensions, each decoded on ingest
// (../ingest.ts) to what the decision reads, with the lease index and the controller's own writes on top;
// poison objects are counted every time and logged once.

import { isDeepStrictEqual } from 'node:util';
import {
  GROUP_VERSION,
  LEASE_NAMESPACE,
  LeaseLabel,
  SYSTEM_EXTENSION,
  parseSystemExtension,
  type LeaseObject,
  type ParsedSystemExtension,
  type SystemExtensionObject,
} from '../../api/index.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/log.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import { decodeLeaseList, MAX_LEASE_BYTES, protobufListContinue } from '../../lib/kube/protobuf.ts';
import type { DaemonSetObject } from '../../api/scheduling.ts';
import {
  ignoredLease,
  toCachedDaemonSet,
  toCachedLease,
  toCachedNode,
  type CachedLease,
  type CachedNode,
  type DaemonSetRaw,
  type NodeObject,
} from '../ingest.ts';
import type { ControllerMetrics } from '../metrics.ts';
import { LeaseIndex, type LeaseIndexEvents, type NodeLeases } from './lease-index.ts';
import { Source } from './source.ts';
import { WrittenNodes } from './written-nodes.ts';

/** Two stripped nodes that differ only in resourceVersion give the same decision: no reconcile needed. */
function sameForDecision(a: CachedNode, b: CachedNode): boolean {
  return JSON.stringify({ ...a, resourceVersion: '' }) === JSON.stringify({ ...b, resourceVersion: '' });
}
export interface CacheEvents extends LeaseIndexEvents {
  nodeChanged(name: string): void;
  /** SystemExtensions changed what decisions read: any node may be affected. */
  allNodesChanged(): void;
  /** A DaemonSet's placement changed: any held node's condition message may be affected. */
  daemonSetsChanged?(): void;
  /**
   * A SystemExtension changed in nothing decisions read (its status counts, written by the roll-up): no node
   * is affected, but the roll-up may have to read its status again.
   */
  systemExtensionStatusChanged?(): void;
  error(source: string, err: unknown): void;
  /** `synced` may have turned: a source completed a list or fell out of sync. */
  syncChanged?(): void;
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

/**
 * Leases are listed 2,000 to a page (about 2.7 MB of JSON), not the reflector's 500: each page waits its turn
 * at a saturated API server, so fewer pages list sooner (measured: docs/benchmark.md, "A restarted
 * controller's LIST at 5,000 × 5"). Nodes keep 500: a real Node object is ten times a Lease's size.
 */
export const LEASE_LIST_PAGE_SIZE = 2_000;

/**
 * The lease watch is read in batches, at most this much later than an event arrives: at 5,000 nodes × 5 it
 * brings ~290 renewals a second, each flushed by the API server on its own, and a wake-up per event cost the
 * controller more CPU than everything it then does with the event (docs/adr/0011). 100 ms rather than the
 * first 50: the wake-ups were still a third of what reading an event cost (docs/adr/0016). A tenth of the 1 s
 * that P1 and P2 allow; a lone event after a quiet spell is read at once.
 */
export const LEASE_WATCH_COALESCE_MS = 100;

/**
 * The most bytes of one LIST page of Leases that are read: a page of 2,000 is about 2.7 MB of JSON and less
 * in protobuf, so real pages never meet it; a page it cuts is asked for again with fewer items, and the next
 * pages ask for as many as fit a quarter of it (lib/kube/reflector.ts). Two pages are in flight at most (one
 * asked for ahead), so a LIST holds at most 32 MiB of bodies whatever the Leases hold (issue 50 item 2).
 */
export const LEASE_LIST_PAGE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * A lease watch event over this many bytes is skipped, named from its first bytes, instead of being read:
 * twice what the protobuf reader decodes of one Lease (lib/kube/protobuf.ts MAX_LEASE_BYTES), JSON being
 * the longer of the two. A real Lease's event is about 1.5 KB.
 */
export const MAX_LEASE_EVENT_BYTES = 2 * MAX_LEASE_BYTES;

export class ClusterCache {
  readonly nodes: Source<NodeObject, CachedNode>;
  readonly leases: Source<LeaseObject, CachedLease>;
  readonly systemExtensions: Source<SystemExtensionObject, ParsedSystemExtension>;
  /**
   * Every DaemonSet's placement (ingest.ts toCachedDaemonSet), for the condition message of a held node
   * (api/scheduling.ts keptOffByTaints). Not part of `synced`: it only adds to a message, so a list that
   * fails (RBAC without it) never holds decisions back.
   */
  readonly daemonSets: Source<DaemonSetRaw, DaemonSetObject>;
  private readonly index: LeaseIndex;
  private readonly written = new WrittenNodes();

  /**
   * `nodeSelector` (the controller's --node-selector, kubectl's `-l` syntax): only these nodes are seen,
   * so only they are managed; '' sees every node.
   */
  constructor(client: KubeClient, clock: Clock, events: CacheEvents, nodeSelector = '') {
    this.index = new LeaseIndex(clock, events);
    const from: SourceContext = { client, clock, events, syncChanged: () => events.syncChanged?.() };
    this.nodes = nodeSource(from, nodeSelector, this.written);
    this.leases = leaseSource(from, this.index, (lease) => this.kept(lease));
    this.systemExtensions = systemExtensionSource(from);
    this.daemonSets = daemonSetSource(from);
  }

  /**
   * What the lease watch's cache keeps for `lease`: the object the index holds, or for a lease it ignores
   * (over its node's MAX_LEASES_PER_NODE) only its name and problem (ingest.ts ignoredLease).
   */
  private kept(lease: CachedLease): CachedLease | undefined {
    const held = this.index.held(lease.name);
    if (held) return held;
    const problem = this.index.problemOf(lease.name);
    return problem && lease.problem === undefined ? ignoredLease(lease, problem) : undefined;
  }

  start(): void {
    this.nodes.start();
    this.leases.start();
    this.systemExtensions.start();
    this.daemonSets.start();
  }

  async stop(): Promise<void> {
    await Promise.all([
      this.nodes.stop(),
      this.leases.stop(),
      this.systemExtensions.stop(),
      this.daemonSets.stop(),
    ]);
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

  systemExtension(name: string): ParsedSystemExtension | undefined {
    return this.systemExtensions.store.get(name);
  }

  systemExtensionList(): Iterable<ParsedSystemExtension> {
    return this.systemExtensions.store.values();
  }

  daemonSetList(): Iterable<DaemonSetObject> {
    return this.daemonSets.store.values();
  }

  /** Every lease gets a fresh full duration from now (after start-up or a leader change). */
  refreshObservations(): void {
    this.index.refreshObservations();
  }

  /** Records a lease read live (before acting on staleness); returns true when it was renewed meanwhile. */
  observeLive(lease: CachedLease): boolean {
    return this.index.observeLive(lease);
  }

  /** When the believed lease `leaseName` of the node expires (LeaseIndex.expiresAtMs). */
  leaseExpiresAtMs(leaseName: string, nodeName: string): number | undefined {
    return this.index.expiresAtMs(leaseName, nodeName);
  }

  /** The node's extension leases by extension name, and its agent heartbeat. */
  leasesOf(nodeName: string): NodeLeases {
    return this.index.leasesOf({ name: nodeName, uid: this.node(nodeName)?.uid ?? '' });
  }
}

/** What every source of the cache is built from. */
interface SourceContext {
  client: KubeClient;
  clock: Clock;
  events: CacheEvents;
  syncChanged: () => void;
}

function nodeSource(
  { client, clock, events, syncChanged }: SourceContext,
  nodeSelector: string,
  written: WrittenNodes,
): Source<NodeObject, CachedNode> {
  return new Source({
    client,
    clock,
    syncChanged,
    path: '/api/v1/nodes',
    ...(nodeSelector ? { labelSelector: nodeSelector } : {}),
    transform: toCachedNode,
    handlers: {
      added: (node) => events.nodeChanged(node.name),
      // The echo of this controller's own write is not a change (WrittenNodes.covers).
      updated: (node, old) => {
        if (!written.covers(node) && !sameForDecision(node, old)) events.nodeChanged(node.name);
      },
      deleted: (node) => events.nodeChanged(node.name),
      error: (err) => events.error('nodes', err),
      skipped: (err, key) => events.skipped('nodes', key, err),
    },
  });
}

/** `kept` says what the watch's cache holds of a lease (ClusterCache.kept). */
function leaseSource(
  { client, clock, events, syncChanged }: SourceContext,
  index: LeaseIndex,
  kept: (lease: CachedLease) => CachedLease | undefined,
): Source<LeaseObject, CachedLease> {
  const changed = (name: string | undefined): void => {
    if (name !== undefined) events.nodeChanged(name);
  };
  return new Source({
    client,
    clock,
    syncChanged,
    path: leasesPath(LEASE_NAMESPACE),
    labelSelector: LeaseLabel.role,
    pageSize: LEASE_LIST_PAGE_SIZE,
    pageMaxBytes: LEASE_LIST_PAGE_MAX_BYTES,
    maxObjectBytes: MAX_LEASE_EVENT_BYTES,
    watchCoalesceMs: LEASE_WATCH_COALESCE_MS,
    // Listed as protobuf: half the API server's CPU of a JSON list (docs/adr/0018).
    protobufList: { decode: decodeLeaseList, continueToken: protobufListContinue },
    transform: toCachedLease,
    handlers: {
      added: (lease) => {
        changed(index.added(lease));
        return kept(lease);
      },
      // The watch's cache keeps the object the index holds: after a renewal, the one it held before.
      updated: (lease, old) => {
        changed(index.updated(lease, old));
        return kept(lease);
      },
      deleted: (lease) => changed(index.deleted(lease)),
      error: (err) => events.error('leases', err),
      skipped: (err, key) => events.skipped('leases', key, err),
    },
  });
}

function systemExtensionSource({
  client,
  clock,
  events,
  syncChanged,
}: SourceContext): Source<SystemExtensionObject, ParsedSystemExtension> {
  return new Source({
    client,
    clock,
    syncChanged,
    path: `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`,
    transform: parseSystemExtension,
    handlers: {
      added: () => events.allNodesChanged(),
      // The roll-up rewrites a SystemExtension's status as its counts move; re-deciding every node for that
      // (5,000 at a time) was work for nothing. What decisions read is the parsed object: spec, generation,
      // status.rollout's window.
      updated: (sx, old) =>
        isDeepStrictEqual(sx, old) ? events.systemExtensionStatusChanged?.() : events.allNodesChanged(),
      deleted: () => events.allNodesChanged(),
      error: (err) => events.error('systemextensions', err),
      skipped: (err, key) => events.skipped('systemextensions', key, err),
    },
  });
}

/**
 * A DaemonSet's status moves with every pod it has; what is kept is its placement only, so an update that
 * changed none of it is not a change. Not part of `synced` (ClusterCache.daemonSets).
 */
function daemonSetSource({ client, clock, events }: SourceContext): Source<DaemonSetRaw, DaemonSetObject> {
  return new Source<DaemonSetRaw, DaemonSetObject>({
    client,
    clock,
    path: '/apis/apps/v1/daemonsets',
    transform: toCachedDaemonSet,
    handlers: {
      added: () => events.daemonSetsChanged?.(),
      updated: (ds, old) => (isDeepStrictEqual(ds, old) ? undefined : events.daemonSetsChanged?.()),
      deleted: () => events.daemonSetsChanged?.(),
      error: (err) => events.error('daemonsets', err),
      skipped: (err, key) => events.skipped('daemonsets', key, err),
    },
  });
}
