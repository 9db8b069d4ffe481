// The recording sink of `npm run bench -- --controller-only`: in place of the API server, one loopback HTTP
// server (its own process, forked by bench/controller-only/run.ts) that serves a generated fleet to the real
// controller binary and takes its writes. It speaks the part of the API the controller uses: discovery,
// paginated LIST on a snapshot, WATCH from a resourceVersion (history kept for HISTORY_MS, 410 Gone before
// that, bookmarks), GET, POST, PUT, DELETE, and PATCH with resourceVersion preconditions (409 Conflict). It
// decides nothing: a patch is applied as the API server applies it to the fields nodecare writes (a merge
// patch; the status patch's conditions merged by type, as the strategic merge of a Node's conditions does),
// stored, and streamed back to the watches. What it adds is measurement: requests by kind, the writes
// refused, the renewals it streamed, and, against each node's expected state (what the generator set its
// leases to, not a decision), when every node matched and how long after a lease change its node did.
//
// The fleet is the benchmark's own (bench/common.ts nodeBody, extensionSpecs; api/lease.ts buildLease): N
// nodes, E SystemExtensions every node requires, a heartbeat Lease and E extension Leases per node, renewed
// at the agent's default cadence (heartbeat every third of its duration, extensions every
// --extension-renew-seconds), evenly spread.

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import {
  API_GROUP,
  API_VERSION,
  CLUSTER_HEALTH,
  GROUP_VERSION,
  LEASE_NAMESPACE,
  SYSTEM_EXTENSION,
  buildLease,
} from '../../api/index.ts';
import { HEARTBEAT_RENEWALS_PER_DURATION } from '../../agent/heartbeat.ts';
import { requestKind } from '../../lib/kube/paths.ts';
import { bootstrapping, extensionSpecs, failedNode, nodeBody, ready } from '../common.ts';
import type { SimState } from '../fleet.ts';
import { toSeenNode, type RawNode, type SeenNode } from '../observer.ts';

/** Watch events kept for a watch that resumes from an older resourceVersion (older: 410 Gone, relist). */
const HISTORY_MS = 120_000;
/** A bookmark on every open watch this often (the controller asks for them; a silent watch would restart). */
const BOOKMARK_MS = 20_000;
/** History compaction and the expiry of old list snapshots run this often. */
const HOUSEKEEPING_MS = 100;
/**
 * Renewals are streamed in ticks this short, each renewing its share of the fleet's leases (by the time since
 * the last tick): at 5,000 nodes one or two events per write, as a real API server sends them (it flushes
 * after each watch event unless more are queued: k8s.io/apiserver's watch handler). Longer ticks batched the
 * events into one read and understated the controller's CPU per renewal (docs/adr/0011).
 */
export const RENEW_TICK_MS = 5;
const SNAPSHOT_MS = 120_000;

export interface SinkInit {
  cmd: 'init';
  nodes: number;
  extensions: number;
  /** The first `cohort` nodes start with their last extension Progressing: they must end up bootstrapping. */
  cohort: number;
  heartbeatDurationSeconds: number;
  extensionRenewSeconds: number;
}

export type SinkCommand =
  | SinkInit
  | { cmd: 'renewals'; on: boolean }
  | { cmd: 'changes'; count: number; ratePerSecond: number; timeoutMs: number }
  | { cmd: 'restart'; count: number }
  | { cmd: 'stats' }
  | { cmd: 'stop' };

export interface SinkStats {
  /** `verb resource` → count, as the audit log would name them. */
  requests: Record<string, number>;
  /** Writes refused with 409 Conflict (a stale resourceVersion), by resource. */
  conflicts: Record<string, number>;
  /** Requests for paths the sink does not serve (answered 404): nothing the controller needs may hide here. */
  unserved: Record<string, number>;
  renewalsStreamed: number;
  nodesMatching: number;
  rssBytes: number;
}

export interface ChangeResult {
  /** Lease change streamed → the node write that made the node match, ms; one per change. */
  failLatencies: number[];
  recoverLatencies: number[];
  missed: number;
}

export type SinkEvent =
  | { evt: 'ready'; port: number; listed: number }
  | { evt: 'converged'; atEpochMs: number }
  | { evt: 'changes'; result: ChangeResult }
  | { evt: 'restart'; changed: number }
  | { evt: 'stats'; stats: SinkStats }
  | { evt: 'error'; message: string };

type Json = Record<string, unknown>;

interface Meta {
  name?: string;
  namespace?: string;
  resourceVersion?: string;
  generation?: number;
}

/** One extension or heartbeat lease of one node, as of one resourceVersion (replaced, never mutated). */
interface LeaseSlot {
  name: string;
  node: number;
  /** -1: the agent's heartbeat. */
  extension: number;
  state: SimState;
  since: string;
  renewMs: number;
  rv: number;
}

interface Watch {
  res: ServerResponse;
  timer: NodeJS.Timeout;
}

interface HistoryEntry {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  item: unknown;
  atMs: number;
}

/** A collection: its items by name, rendered to JSON on the way out; its watches and recent history. */
class Collection {
  readonly items = new Map<string, unknown>();
  readonly watches = new Set<Watch>();
  readonly history: HistoryEntry[] = [];
  /** Events before this resourceVersion are no longer in the history. */
  compactedTo = 0;

  readonly path: string;
  readonly kind: string;
  readonly apiVersion: string;
  readonly render: (item: unknown) => object;

  constructor(path: string, kind: string, apiVersion: string, render?: (item: unknown) => object) {
    this.path = path;
    this.kind = kind;
    this.apiVersion = apiVersion;
    this.render = render ?? ((item) => item as object);
  }

  line(type: string, item: unknown): string {
    return `${JSON.stringify({ type, object: this.render(item) })}\n`;
  }

  compact(nowMs: number): void {
    let drop = 0;
    while (drop < this.history.length && nowMs - this.history[drop]!.atMs > HISTORY_MS) drop++;
    if (drop === 0) return;
    this.compactedTo = this.history[drop - 1]!.rv;
    this.history.splice(0, drop);
  }
}

const CONDITION_KEY = 'conditions';

/** RFC 7386 JSON merge patch: objects merge, null deletes, anything else (lists too) replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Json =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Json) } : {};
  for (const [key, value] of Object.entries(patch as Json)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/**
 * The strategic merge of a Node status patch for what nodecare sends: `status.conditions` merged by `type`
 * (the list's patch merge key), everything else as a merge patch.
 */
export function strategicStatusPatch(target: Json, patch: Json): Json {
  const status = (patch.status ?? {}) as Json;
  const conditions = status[CONDITION_KEY] as Array<{ type: string }> | undefined;
  if (!conditions) return mergePatch(target, patch) as Json;
  const rest = { ...patch, status: { ...status } } as Json;
  delete (rest.status as Json)[CONDITION_KEY];
  const merged = mergePatch(target, rest) as Json;
  const current = [...((((merged.status ?? {}) as Json)[CONDITION_KEY] ?? []) as Array<{ type: string }>)];
  for (const c of conditions) {
    const at = current.findIndex((x) => x.type === c.type);
    if (at >= 0) current[at] = mergePatch(current[at], c) as { type: string };
    else current.push(c);
  }
  merged.status = { ...((merged.status ?? {}) as Json), [CONDITION_KEY]: current };
  return merged;
}

class Status extends Error {
  readonly code: number;
  readonly reason: string;

  constructor(code: number, reason: string, message: string) {
    super(message);
    this.code = code;
    this.reason = reason;
  }
}

export class Sink {
  private rv = 1;
  private readonly collections: Collection[] = [];
  private readonly byPath = new Map<string, Collection>();
  private readonly nodes: Collection;
  private readonly leases: Collection;
  private readonly stats: SinkStats = {
    requests: {},
    conflicts: {},
    unserved: {},
    renewalsStreamed: 0,
    nodesMatching: 0,
    rssBytes: 0,
  };
  private readonly nodeNames: string[] = [];
  private readonly nodeUids: string[] = [];
  private readonly bootIds: string[] = [];
  private readonly extensionNames: string[] = [];
  /** Each node's expected state, and whether it is in it now. */
  private readonly expected = new Map<string, (n: SeenNode) => boolean>();
  private readonly matching = new Set<string>();
  private readonly waiters = new Map<string, Array<(n: SeenNode, atMs: number) => boolean>>();
  private readonly snapshots = new Map<string, { rv: number; items: unknown[]; atMs: number }>();
  private readonly leaseOrder: string[] = [];
  private server: Server | undefined;
  private renewing = false;
  private lastTickMs = Date.now();
  private renewCursor = { heartbeat: 0, extension: 0, heartbeatDebt: 0, extensionDebt: 0 };
  private readonly timers: NodeJS.Timeout[] = [];
  private convergedAt: number | undefined;
  private readonly init: SinkInit;
  readonly onConverged: Array<(atEpochMs: number) => void> = [];

  constructor(init: SinkInit) {
    this.init = init;
    const sinceEpoch = new Date(Date.now() - 86_400_000).toISOString();
    const nodesCollection = (this.nodes = this.collection('/api/v1/nodes', 'Node', 'v1'));
    const leaseCollection = (this.leases = this.collection(
      `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`,
      'Lease',
      'coordination.k8s.io/v1',
      (item) => this.renderLease(item as LeaseSlot),
    ));
    const sxs = this.collection(
      `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`,
      SYSTEM_EXTENSION.kind,
      GROUP_VERSION,
    );
    this.collection(
      `/apis/${API_GROUP}/${API_VERSION}/${CLUSTER_HEALTH.plural}`,
      'ClusterHealth',
      GROUP_VERSION,
    );
    // The controller watches every DaemonSet's placement (a held node's condition names those its taint keeps
    // off); the benchmark has none.
    this.collection('/apis/apps/v1/daemonsets', 'DaemonSet', 'apps/v1');
    // The SystemExtensions exist before the nodes (as in `npm run bench`): every node is new to them.
    for (const [name, probe] of extensionSpecs(init.extensions, 8080, '/var/run/logging-agent.heartbeat')) {
      this.extensionNames.push(name);
      sxs.items.set(name, {
        apiVersion: GROUP_VERSION,
        kind: SYSTEM_EXTENSION.kind,
        metadata: {
          name,
          uid: randomUUID(),
          generation: 1,
          creationTimestamp: sinceEpoch,
          resourceVersion: String(++this.rv),
        },
        spec: { probe },
      });
    }
    const created = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    for (let i = 0; i < init.nodes; i++) {
      const name = `bench-node-${String(i).padStart(5, '0')}`;
      const body = nodeBody(name) as { metadata: Json; status: { nodeInfo: { bootID: string } } };
      const uid = randomUUID();
      body.metadata = {
        ...body.metadata,
        uid,
        creationTimestamp: created,
        resourceVersion: String(++this.rv),
      };
      nodesCollection.items.set(name, body);
      this.nodeNames.push(name);
      this.nodeUids.push(uid);
      this.bootIds.push(body.status.nodeInfo.bootID);
      this.expected.set(name, i < init.cohort ? bootstrapping : ready);
      const since = new Date().toISOString();
      const slots: LeaseSlot[] = [
        { name: '', node: i, extension: -1, state: 'Healthy', since, renewMs: Date.now(), rv: 0 },
      ];
      for (let e = 0; e < init.extensions; e++) {
        const progressing = i < init.cohort && e === init.extensions - 1;
        slots.push({
          name: '',
          node: i,
          extension: e,
          state: progressing ? 'Progressing' : 'Healthy',
          since,
          renewMs: Date.now(),
          rv: 0,
        });
      }
      for (const slot of slots) {
        slot.rv = ++this.rv;
        slot.name = (this.renderLease(slot) as { metadata: Meta }).metadata.name ?? '';
        leaseCollection.items.set(slot.name, slot);
        this.leaseOrder.push(slot.name);
      }
    }
  }

  get leaseCount(): number {
    return this.leases.items.size;
  }

  async listen(): Promise<number> {
    const server = (this.server = createServer((req, res) => this.handle(req, res)));
    server.keepAliveTimeout = 120_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.timers.push(setInterval(() => this.housekeeping(), HOUSEKEEPING_MS));
    this.timers.push(setInterval(() => this.tick(), RENEW_TICK_MS));
    this.timers.push(setInterval(() => this.bookmarks(), BOOKMARK_MS));
    return (server.address() as AddressInfo).port;
  }

  setRenewals(on: boolean): void {
    this.renewing = on;
  }

  snapshotStats(): SinkStats {
    return { ...this.stats, nodesMatching: this.matching.size, rssBytes: process.memoryUsage().rss };
  }

  /**
   * `count` changes at `ratePerSecond`: one extension of a ready node fails (its node must get the runtime
   * taint) and recovers as soon as it has it (the taint must go).
   */
  async changes(count: number, ratePerSecond: number, timeoutMs: number): Promise<ChangeResult> {
    const picked = this.spreadReadyNodes(count);
    let missed = 0;
    const failLatencies: number[] = [];
    const recoverLatencies: number[] = [];
    const failed = (n: SeenNode): boolean => n.runtimeTaint && n.condition === 'False';
    // Each node heals as soon as its taint is written (as `npm run bench` does): a handful fail together, far
    // from the breaker's fraction, whatever the size.
    const change = async (node: number, name: string): Promise<void> => {
      const firedAt = performance.now();
      const tainted = this.waitForNode(name, failed, timeoutMs);
      this.setLeaseState(node, 0, 'Unhealthy');
      const at = await tainted;
      if (at === undefined) return void missed++;
      failLatencies.push(at - firedAt);
      const healedAt = performance.now();
      const healed = this.waitForNode(name, ready, timeoutMs);
      this.setLeaseState(node, 0, 'Healthy');
      const back = await healed;
      if (back === undefined) missed++;
      else recoverLatencies.push(back - healedAt);
    };
    const pending: Promise<void>[] = [];
    const t0 = performance.now();
    for (const [i, node] of picked.entries()) {
      const wait = t0 + (i * 1000) / ratePerSecond - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(change(node, this.nodeNames[node]!));
    }
    await Promise.all(pending);
    return { failLatencies, recoverLatencies, missed };
  }

  /**
   * The restart case (P8), while no controller runs: one extension of `count` ready nodes fails, spread over
   * the extensions (`i % E`, so the breaker stays closed) and over the fleet. Those nodes are now expected
   * tainted, False and unhealthy, every other node as before; convergence is judged again from the nodes as
   * they are, and `onConverged` fires once more when every node matches.
   */
  restart(count: number): number {
    const picked = this.spreadReadyNodes(count);
    for (const [i, node] of picked.entries()) {
      this.setLeaseState(node, i % this.init.extensions, 'Unhealthy');
      this.expected.set(this.nodeNames[node]!, failedNode);
    }
    this.matching.clear();
    for (const [name, expected] of this.expected) {
      if (expected(toSeenNode(this.nodes.items.get(name) as RawNode))) this.matching.add(name);
    }
    this.convergedAt = undefined;
    return picked.length;
  }

  /** Indexes of `count` nodes past the bootstrapping cohort, spread evenly over the fleet. */
  private spreadReadyNodes(count: number): number[] {
    const { cohort } = this.init;
    const ready = this.nodeNames.length - cohort;
    const step = Math.max(1, Math.floor(ready / count));
    return Array.from({ length: Math.min(count, ready) }, (_, i) => cohort + i * step);
  }

  stop(): void {
    for (const t of this.timers) clearInterval(t);
    for (const c of this.collections) for (const w of c.watches) w.res.destroy();
    this.server?.closeAllConnections();
    this.server?.close();
  }

  private collection(
    path: string,
    kind: string,
    apiVersion: string,
    render?: (item: unknown) => object,
  ): Collection {
    const c = new Collection(path, kind, apiVersion, render);
    this.collections.push(c);
    this.byPath.set(path, c);
    return c;
  }

  private renderLease(slot: LeaseSlot): object {
    const node = { name: this.nodeNames[slot.node]!, uid: this.nodeUids[slot.node]! };
    const { heartbeatDurationSeconds, extensionRenewSeconds } = this.init;
    const extension = slot.extension < 0 ? undefined : this.extensionNames[slot.extension];
    return buildLease({
      node,
      extension,
      holderIdentity: `bench-agent-${node.name}`,
      leaseDurationSeconds: extension ? extensionRenewSeconds * 3 : heartbeatDurationSeconds,
      renewTime: new Date(slot.renewMs),
      bootId: this.bootIds[slot.node]!,
      record: extension
        ? {
            state: slot.state,
            reason: slot.state === 'Healthy' ? 'ProbeSucceeded' : 'ConnectionRefused',
            message: 'simulated',
            since: slot.since,
          }
        : undefined,
      resourceVersion: String(slot.rv),
    });
  }

  private setLeaseState(node: number, extension: number, state: SimState): void {
    const name = this.leaseOrder[node * (this.init.extensions + 1) + 1 + extension]!;
    const old = this.leases.items.get(name) as LeaseSlot;
    this.store(
      this.leases,
      name,
      { ...old, state, since: new Date().toISOString(), renewMs: Date.now(), rv: ++this.rv },
      'MODIFIED',
    );
  }

  private housekeeping(): void {
    const now = Date.now();
    for (const c of this.collections) c.compact(now);
    for (const [id, s] of this.snapshots) if (now - s.atMs > SNAPSHOT_MS) this.snapshots.delete(id);
  }

  /** Renews the share of the heartbeats and of the extension leases due since the last tick (renewTime only). */
  private tick(): void {
    const now = Date.now();
    const elapsedMs = Math.min(now - this.lastTickMs, 1_000);
    this.lastTickMs = now;
    if (!this.renewing) return;
    const { nodes, extensions, heartbeatDurationSeconds, extensionRenewSeconds } = this.init;
    const cur = this.renewCursor;
    cur.heartbeatDebt +=
      (nodes * elapsedMs) / ((heartbeatDurationSeconds * 1000) / HEARTBEAT_RENEWALS_PER_DURATION);
    cur.extensionDebt += (nodes * extensions * elapsedMs) / (extensionRenewSeconds * 1000);
    const stride = extensions + 1;
    for (; cur.heartbeatDebt >= 1; cur.heartbeatDebt--) {
      this.renew(this.leaseOrder[(cur.heartbeat++ % nodes) * stride]!, now);
    }
    for (; cur.extensionDebt >= 1; cur.extensionDebt--) {
      const k = cur.extension++ % (nodes * extensions);
      this.renew(this.leaseOrder[Math.floor(k / extensions) * stride + 1 + (k % extensions)]!, now);
    }
  }

  private renew(name: string, now: number): void {
    const old = this.leases.items.get(name) as LeaseSlot;
    this.store(this.leases, name, { ...old, renewMs: now, rv: ++this.rv }, 'MODIFIED');
    this.stats.renewalsStreamed++;
  }

  private bookmarks(): void {
    for (const c of this.collections) {
      if (c.watches.size === 0) continue;
      const line = `${JSON.stringify({ type: 'BOOKMARK', object: { kind: c.kind, apiVersion: c.apiVersion, metadata: { resourceVersion: String(this.rv) } } })}\n`;
      for (const w of c.watches) w.res.write(line);
    }
  }

  /** Stores `item` (its resourceVersion already set) and streams the event to the collection's watches. */
  private store(c: Collection, name: string, item: unknown, type: HistoryEntry['type']): void {
    if (type === 'DELETED') c.items.delete(name);
    else c.items.set(name, item);
    const rv = this.itemRv(c, item);
    c.history.push({ rv, type, item, atMs: Date.now() });
    if (c.watches.size > 0) {
      const line = c.line(type, item);
      for (const w of c.watches) w.res.write(line);
    }
    if (c === this.nodes) this.nodeWritten(name, item as Json);
  }

  private itemRv(c: Collection, item: unknown): number {
    return c === this.leases
      ? (item as LeaseSlot).rv
      : Number(((item as Json).metadata as Meta).resourceVersion);
  }

  private nodeWritten(name: string, node: Json): void {
    const seen = toSeenNode(node as RawNode);
    const at = performance.now();
    const list = this.waiters.get(name);
    if (list) {
      const left = list.filter((w) => !w(seen, at));
      if (left.length > 0) this.waiters.set(name, left);
      else this.waiters.delete(name);
    }
    const expected = this.expected.get(name);
    if (!expected) return;
    if (expected(seen)) this.matching.add(name);
    else this.matching.delete(name);
    if (this.convergedAt === undefined && this.matching.size === this.expected.size) {
      this.convergedAt = Date.now();
      for (const f of this.onConverged) f(this.convergedAt);
    }
  }

  /** Resolves with the time (performance.now) of the write that made node `name` pass `test`. */
  private waitForNode(
    name: string,
    test: (n: SeenNode) => boolean,
    timeoutMs: number,
  ): Promise<number | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        done = true;
        resolve(undefined);
      }, timeoutMs);
      let done = false;
      const list = this.waiters.get(name) ?? [];
      list.push((n, at) => {
        if (done) return true;
        if (!test(n)) return false;
        clearTimeout(timer);
        done = true;
        resolve(at);
        return true;
      });
      this.waiters.set(name, list);
    });
  }

  private count(bucket: Record<string, number>, key: string): void {
    bucket[key] = (bucket[key] ?? 0) + 1;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://sink');
      const watch = url.searchParams.get('watch') === 'true';
      const method = req.method ?? 'GET';
      const kind = requestKind(watch ? 'WATCH' : method, url.pathname);
      this.count(this.stats.requests, `${kind.verb} ${kind.resource}`);
      try {
        const body =
          chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json) : undefined;
        this.route(method, url, watch, body, req.headers['content-type'] ?? '', res);
      } catch (err) {
        const status = err instanceof Status ? err : new Status(500, 'InternalError', String(err));
        if (status.code === 409) this.count(this.stats.conflicts, kind.resource);
        if (status.code === 404 && status.reason === 'NotServed')
          this.count(this.stats.unserved, `${method} ${url.pathname}`);
        res.writeHead(status.code, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            reason: status.reason,
            code: status.code,
            message: status.message,
          }),
        );
      }
    });
  }

  private route(
    method: string,
    url: URL,
    watch: boolean,
    body: Json | undefined,
    contentType: string,
    res: ServerResponse,
  ): void {
    const path = url.pathname;
    const document = this.discovery(path);
    if (document) return this.send(res, 200, document);
    const events = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/.exec(path);
    if (events) {
      const c =
        this.byPath.get(`/apis/events.k8s.io/v1/namespaces/${events[1]}/events`) ??
        this.collection(`/apis/events.k8s.io/v1/namespaces/${events[1]}/events`, 'Event', 'events.k8s.io/v1');
      return this.object(c, method, events[2], undefined, body, contentType, res);
    }
    const collection = this.byPath.get(path);
    if (collection) {
      if (method === 'GET' && watch) return this.watch(collection, url, res);
      if (method === 'GET') return this.list(collection, url, res);
      if (method === 'POST')
        return this.object(collection, method, undefined, undefined, body, contentType, res);
    }
    const at = path.lastIndexOf('/');
    const parent = this.byPath.get(path.slice(0, at));
    if (parent)
      return this.object(
        parent,
        method,
        decodeURIComponent(path.slice(at + 1)),
        undefined,
        body,
        contentType,
        res,
      );
    const parts = /^(.*)\/([^/]+)\/status$/.exec(path);
    const owner = parts && this.byPath.get(parts[1]!);
    if (owner)
      return this.object(owner, method, decodeURIComponent(parts[2]!), 'status', body, contentType, res);
    throw new Status(404, 'NotServed', `the sink does not serve ${method} ${path}`);
  }

  private discovery(path: string): object | undefined {
    const groups: Record<string, string[]> = {
      [`/apis/${GROUP_VERSION}`]: [
        SYSTEM_EXTENSION.plural,
        `${SYSTEM_EXTENSION.plural}/status`,
        CLUSTER_HEALTH.plural,
        `${CLUSTER_HEALTH.plural}/status`,
      ],
      '/apis/coordination.k8s.io/v1': ['leases'],
      '/apis/events.k8s.io/v1': ['events'],
      '/api/v1': ['nodes', 'nodes/status', 'pods', 'pods/eviction'],
    };
    const resources = groups[path];
    return (
      resources && {
        kind: 'APIResourceList',
        groupVersion: path.replace(/^\/apis?\//, ''),
        resources: resources.map((name) => ({ name })),
      }
    );
  }

  private send(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private list(c: Collection, url: URL, res: ServerResponse): void {
    const limit = Number(url.searchParams.get('limit') ?? 0) || Number.MAX_SAFE_INTEGER;
    const token = url.searchParams.get('continue');
    let id: string;
    let offset: number;
    if (token) {
      const [tid, off] = token.split(':');
      id = tid ?? '';
      offset = Number(off);
      if (!this.snapshots.has(id)) throw new Status(410, 'Expired', 'the continue token has expired');
    } else {
      id = randomUUID();
      offset = 0;
      this.snapshots.set(id, { rv: this.rv, items: [...c.items.values()], atMs: Date.now() });
    }
    const snapshot = this.snapshots.get(id)!;
    const page = snapshot.items.slice(offset, offset + limit);
    const next = offset + page.length;
    const more = next < snapshot.items.length;
    if (!more) this.snapshots.delete(id);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      `{"kind":"${c.kind}List","apiVersion":"${c.apiVersion}","metadata":{"resourceVersion":"${snapshot.rv}"${more ? `,"continue":"${id}:${next}"` : ''}},"items":[${page.map((item) => JSON.stringify(c.render(item))).join(',')}]}`,
    );
  }

  private watch(c: Collection, url: URL, res: ServerResponse): void {
    const from = Number(url.searchParams.get('resourceVersion') ?? 0);
    if (from < c.compactedTo)
      throw new Status(410, 'Expired', `too old resource version: ${from} (${c.compactedTo})`);
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    for (const e of c.history) if (e.rv > from) res.write(c.line(e.type, e.item));
    const seconds = Number(url.searchParams.get('timeoutSeconds') ?? 1800);
    // At its timeout the watch ends (the client watches again from its last resourceVersion): out of the set
    // first, so that nothing is written after the end.
    const end = (): void => {
      clearTimeout(w.timer);
      c.watches.delete(w);
    };
    const w: Watch = {
      res,
      timer: setTimeout(() => {
        end();
        res.end();
      }, seconds * 1000),
    };
    c.watches.add(w);
    res.once('close', end);
    res.on('error', end);
  }

  /** GET, POST, PUT, PATCH or DELETE of one object (`sub` 'status': its status subresource). */
  private object(
    c: Collection,
    method: string,
    name: string | undefined,
    sub: 'status' | undefined,
    body: Json | undefined,
    contentType: string,
    res: ServerResponse,
  ): void {
    if (c === this.leases && method !== 'GET')
      throw new Status(405, 'MethodNotAllowed', 'the agents own their leases');
    if (method === 'POST') {
      const meta = { ...((body?.metadata ?? {}) as Json) } as Meta & Json;
      const key =
        meta.name ??
        (typeof meta.generateName === 'string' ? `${meta.generateName}${randomUUID().slice(0, 5)}` : '');
      if (c.items.has(key)) throw new Status(409, 'AlreadyExists', `${c.kind} ${key} already exists`);
      const created = {
        ...body,
        metadata: {
          ...meta,
          name: key,
          uid: randomUUID(),
          generation: 1,
          resourceVersion: String(++this.rv),
          creationTimestamp: new Date().toISOString(),
        },
      };
      this.store(c, key, created, 'ADDED');
      return this.send(res, 201, created);
    }
    const current = name === undefined ? undefined : c.items.get(name);
    if (current === undefined) throw new Status(404, 'NotFound', `${c.kind} ${name} not found`);
    if (method === 'GET') return this.send(res, 200, c.render(current));
    const stored = current as Json;
    const storedRv = ((stored.metadata ?? {}) as Meta).resourceVersion;
    const wantRv = ((body?.metadata ?? {}) as Meta).resourceVersion;
    if (method === 'DELETE') {
      this.store(
        c,
        name!,
        { ...stored, metadata: { ...(stored.metadata as Json), resourceVersion: String(++this.rv) } },
        'DELETED',
      );
      return this.send(res, 200, stored);
    }
    if (wantRv !== undefined && wantRv !== storedRv)
      throw new Status(409, 'Conflict', `the object has been modified (${wantRv} is not ${storedRv})`);
    let next: Json;
    if (method === 'PUT') next = body ?? {};
    else if (method === 'PATCH' && contentType.startsWith('application/merge-patch+json'))
      next = mergePatch(stored, body) as Json;
    else if (method === 'PATCH' && contentType.startsWith('application/strategic-merge-patch+json'))
      next = strategicStatusPatch(stored, body ?? {});
    else
      throw new Status(
        415,
        'UnsupportedMediaType',
        `the sink applies merge and strategic merge patches, not ${contentType}`,
      );
    // The status subresource writes status (and, for a Node, metadata too: the API server's
    // nodeStatusStrategy puts back only the old spec); the main resource everything else, as the API server.
    if (sub === 'status')
      next = c === this.nodes ? { ...next, spec: stored.spec } : { ...stored, status: next.status };
    else if (stored.status !== undefined) next = { ...next, status: stored.status };
    const meta = { ...(next.metadata as Json), resourceVersion: String(++this.rv) } as Meta & Json;
    if (sub !== 'status' && JSON.stringify(next.spec) !== JSON.stringify(stored.spec))
      meta.generation = (meta.generation ?? 1) + 1;
    next = { ...next, metadata: meta };
    this.store(c, name!, next, 'MODIFIED');
    this.send(res, 200, next);
  }
}

// As the forked process of run.ts: commands from the parent over IPC.
if (
  process.send &&
  process.argv[1] !== undefined &&
  import.meta.url === pathToFileURL(process.argv[1]).href
) {
  let sink: Sink | undefined;
  const reply = (e: SinkEvent): void => void process.send?.(e);
  process.on('message', (cmd: SinkCommand) => {
    void (async () => {
      switch (cmd.cmd) {
        case 'init': {
          sink = new Sink(cmd);
          sink.onConverged.push((atEpochMs) => reply({ evt: 'converged', atEpochMs }));
          const port = await sink.listen();
          reply({ evt: 'ready', port, listed: sink.leaseCount });
          break;
        }
        case 'renewals':
          sink?.setRenewals(cmd.on);
          break;
        case 'changes':
          if (sink)
            reply({
              evt: 'changes',
              result: await sink.changes(cmd.count, cmd.ratePerSecond, cmd.timeoutMs),
            });
          break;
        case 'restart':
          if (sink) reply({ evt: 'restart', changed: sink.restart(cmd.count) });
          break;
        case 'stats':
          if (sink) reply({ evt: 'stats', stats: sink.snapshotStats() });
          break;
        case 'stop':
          sink?.stop();
          process.exit(0);
      }
    })().catch((err: unknown) =>
      reply({ evt: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
}
