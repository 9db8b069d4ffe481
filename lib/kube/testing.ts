// A loopback HTTP server speaking just enough of the Kubernetes list/watch protocol for unit tests of the
// reflector and the agent (docs/conventions.md 6: real servers, not mocks of the client). Collections are registered by
// path; a LIST answers with the current items, a WATCH streams what the test emits. Selectors are ignored:
// the test serves exactly what the program under test should see. Also the protobuf bodies the tests of
// protobuf.ts and client.ts feed their decoders (protobufMessage, protobufBody).

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs/minimal.js';
import type { LeaseObject } from '../../api/lease.ts';
import { KubeClient, type KubeClientOptions, type WatchEventType } from './client.ts';
import { KubeError, KubeErrorCode } from './errors.ts';
import { untilAborted, type LeaseCallOptions, type LeaseStore, type LeaseWatchHandlers } from './leases.ts';

interface Obj {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

interface Collection {
  items: Map<string, Obj>;
  watches: Set<ServerResponse>;
}

export interface ServedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  watch: boolean;
}

export class FakeApiServer {
  readonly requests: ServedRequest[] = [];
  /** How each WATCH is answered; the default streams emitted events until the test ends it. */
  watchBehaviour: 'stream' | 'end-at-once' = 'stream';
  /**
   * The next this many LIST pages asked for with a continue token answer 410 Expired, as the API server does
   * once the resourceVersion the token lists at is compacted (its Status, with the token for an inconsistent
   * remainder).
   */
  expireContinueTokens = 0;
  private readonly server: Server;
  private readonly collections = new Map<string, Collection>();
  /** Fixed answers to GET, by path (discovery documents). */
  private readonly documents = new Map<string, object>();
  private version = 1;

  private constructor(server: Server) {
    this.server = server;
  }

  static async start(): Promise<FakeApiServer> {
    const server = createServer();
    const fake = new FakeApiServer(server);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => fake.handle(req, res));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return fake;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  client(options: KubeClientOptions = {}): KubeClient {
    return new KubeClient(
      { server: this.url, tls: {}, authHeaders: async () => ({}), source: 'fake' },
      options,
    );
  }

  /** Registers a collection (an empty one unless items are given); unregistered paths answer 404. */
  /** Answers GET `path` with `body` (a discovery document, for example). */
  serveDocument(path: string, body: object): void {
    this.documents.set(path, body);
  }

  serve(path: string, items: readonly object[] = []): void {
    const collection: Collection = { items: new Map(), watches: new Set() };
    this.collections.set(path, collection);
    for (const item of items as readonly Obj[])
      collection.items.set(item.metadata?.name ?? '', this.stamp(item));
  }

  /** Applies an event to the collection and streams it to every open watch of it. */
  emit(path: string, type: WatchEventType, object: object): void {
    const collection = this.collections.get(path);
    if (!collection) throw new Error(`no collection ${path}`);
    const stamped = this.stamp(object as Obj);
    if (type === 'DELETED') collection.items.delete(stamped.metadata?.name ?? '');
    else if (type !== 'BOOKMARK') collection.items.set(stamped.metadata?.name ?? '', stamped);
    this.write(collection, `${JSON.stringify({ type, object: stamped })}\n`);
  }

  /** Streams a raw line (or part of one) to every open watch of the collection. */
  emitRaw(path: string, text: string): void {
    const collection = this.collections.get(path);
    if (collection) this.write(collection, text);
  }

  /** Ends every open watch of the collection, as the API server does at its timeout. */
  endWatches(path: string): void {
    const collection = this.collections.get(path);
    for (const res of collection?.watches ?? []) res.end();
    collection?.watches.clear();
  }

  watchRequests(path: string): ServedRequest[] {
    return this.requests.filter((r) => r.watch && r.path === path);
  }

  listRequests(path: string): ServedRequest[] {
    return this.requests.filter((r) => !r.watch && r.method === 'GET' && r.path === path);
  }

  async close(): Promise<void> {
    for (const collection of this.collections.values()) for (const res of collection.watches) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private stamp(object: Obj): Obj {
    return { ...object, metadata: { ...object.metadata, resourceVersion: String(++this.version) } };
  }

  private write(collection: Collection, text: string): void {
    for (const res of collection.watches) res.write(text);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', this.url);
    const watch = url.searchParams.get('watch') === 'true';
    this.requests.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, watch });
    const document = this.documents.get(url.pathname);
    if (document && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(document));
      return;
    }
    const collection = this.collections.get(url.pathname);
    if (!collection || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'not found' }));
      return;
    }
    if (!watch && url.searchParams.has('continue') && this.expireContinueTokens > 0) {
      this.expireContinueTokens -= 1;
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: { continue: url.searchParams.get('continue') },
          status: 'Failure',
          message:
            'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
          reason: 'Expired',
          code: 410,
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (!watch) {
      // Paged as the API server pages (`limit`, an opaque `continue` token), the list's metadata first.
      const items = [...collection.items.values()];
      const limit = Number(url.searchParams.get('limit') ?? 0);
      const from = Number(Buffer.from(url.searchParams.get('continue') ?? '', 'base64url').toString() || 0);
      const to = limit > 0 ? Math.min(items.length, from + limit) : items.length;
      const more = to < items.length ? { continue: Buffer.from(String(to)).toString('base64url') } : {};
      res.end(
        JSON.stringify({
          kind: 'List',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(this.version), ...more },
          items: items.slice(from, to),
        }),
      );
      return;
    }
    if (this.watchBehaviour === 'end-at-once') {
      res.end();
      return;
    }
    res.flushHeaders();
    collection.watches.add(res);
    res.once('close', () => collection.watches.delete(res));
  }
}

/** A kubeconfig (JSON, which kubeconfig readers take as YAML) for `server` with a bearer token: what tests run programs with. */
export function tokenKubeconfig(server: string, token = 'not-a-real-token'): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server } }],
    users: [{ name: 'u', user: { token } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
}

export type LeaseOp = 'get' | 'create' | 'replace' | 'delete';

/**
 * The one fake of the Lease port (lib/kube/leases.ts), for the agent's and the controller's tests: Leases in
 * memory with resourceVersion semantics (a stale replace gets 409, a second create AlreadyExists, a missing
 * Lease 404, as from the API server), every call recorded, and faults injected with `failNext`. Leases are
 * kept by name: a test uses each name in one namespace only. Watches are told of every write and delete a
 * microtask later, as a watch event comes after the write's answer; `watchesDeliver = false` silences them
 * (a watch that is open but gets nothing through). Watches are not recorded in `calls`.
 */
export class FakeLeaseStore implements LeaseStore {
  /** By name. */
  readonly leases = new Map<string, LeaseObject>();
  readonly calls: Array<{ op: LeaseOp; name: string; timeoutMs: number }> = [];
  watchesDeliver = true;
  private readonly faults: Array<{ op: LeaseOp; error: KubeError }> = [];
  private readonly watchers = new Set<{ namespace: string; name: string; handlers: LeaseWatchHandlers }>();
  private version = 1;

  static conflict(): KubeError {
    return new KubeError(KubeErrorCode.Conflict, 409, 'conflict');
  }

  static unavailable(): KubeError {
    return new KubeError(KubeErrorCode.ServerError, 503, 'injected 503');
  }

  static error(code: KubeErrorCode, status: number): KubeError {
    return new KubeError(code, status, `injected ${status}`);
  }

  /** The next `times` calls of `op` fail with `error`. */
  failNext(op: LeaseOp, error: KubeError, times = 1): void {
    for (let i = 0; i < times; i++) this.faults.push({ op, error });
  }

  /** Drops injected faults that have not fired. */
  clearFaults(): void {
    this.faults.length = 0;
  }

  /** Writes a Lease as another party would (no fault injection, no call recorded). */
  put(lease: LeaseObject): LeaseObject {
    return this.stamp(lease);
  }

  /** The stored Lease, when it is in `namespace`. */
  lease(namespace: string, name: string): LeaseObject | undefined {
    const lease = this.leases.get(name);
    return lease && lease.metadata.namespace === namespace ? structuredClone(lease) : undefined;
  }

  async get(namespace: string, name: string, options: LeaseCallOptions): Promise<LeaseObject> {
    this.enter('get', name, options);
    const lease = this.lease(namespace, name);
    if (!lease) throw new KubeError(KubeErrorCode.NotFound, 404, `lease ${name} not found`);
    return lease;
  }

  async create(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject> {
    const name = lease.metadata.name ?? '';
    this.enter('create', name, options);
    if (this.leases.has(name)) throw new KubeError(KubeErrorCode.AlreadyExists, 409, `lease ${name} exists`);
    return this.stamp({ ...lease, metadata: { ...lease.metadata, resourceVersion: undefined } });
  }

  async replace(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject> {
    const name = lease.metadata.name ?? '';
    this.enter('replace', name, options);
    const current = this.lease(lease.metadata.namespace ?? '', name);
    if (!current) throw new KubeError(KubeErrorCode.NotFound, 404, `lease ${name} not found`);
    const rv = lease.metadata.resourceVersion;
    if (rv !== undefined && rv !== current.metadata.resourceVersion) throw FakeLeaseStore.conflict();
    return this.stamp(lease);
  }

  async delete(namespace: string, name: string, options: LeaseCallOptions): Promise<void> {
    this.enter('delete', name, options);
    if (!this.lease(namespace, name))
      throw new KubeError(KubeErrorCode.NotFound, 404, `lease ${name} not found`);
    this.leases.delete(name);
    this.notify(namespace, name);
  }

  async watch(
    namespace: string,
    name: string,
    handlers: LeaseWatchHandlers,
    signal: AbortSignal,
  ): Promise<void> {
    if (signal.aborted) return;
    const watcher = { namespace, name, handlers };
    this.watchers.add(watcher);
    // As a reflector's first list: the Lease when there is one, nothing when there is none.
    if (this.lease(namespace, name)) this.notify(namespace, name, watcher);
    await untilAborted(signal);
    this.watchers.delete(watcher);
  }

  /** Tells the Lease as it is now to its watchers (or to one), a microtask later. */
  private notify(namespace: string, name: string, only?: { handlers: LeaseWatchHandlers }): void {
    const lease = this.lease(namespace, name);
    const told = only
      ? [only]
      : [...this.watchers].filter((w) => w.namespace === namespace && w.name === name);
    queueMicrotask(() => {
      if (!this.watchesDeliver) return;
      for (const w of told) w.handlers.changed(lease && structuredClone(lease));
    });
  }

  private enter(op: LeaseOp, name: string, options: LeaseCallOptions): void {
    this.calls.push({ op, name, timeoutMs: options.timeoutMs });
    const index = this.faults.findIndex((f) => f.op === op);
    if (index >= 0) throw this.faults.splice(index, 1)[0]?.error;
  }

  private stamp(lease: LeaseObject): LeaseObject {
    const copy = structuredClone(lease);
    copy.metadata.resourceVersion = String(++this.version);
    this.leases.set(copy.metadata.name ?? '', copy);
    this.notify(copy.metadata.namespace ?? '', copy.metadata.name ?? '');
    return structuredClone(copy);
  }
}

/** One field of a protobuf message written by protobufMessage: number, kind, value. */
export type ProtobufField =
  [number, 'string', string] | [number, 'varint', number] | [number, 'message', Uint8Array];

/** A protobuf message of these fields, in this order (a field may repeat), for tests of protobuf.ts. */
export function protobufMessage(...fields: ProtobufField[]): Uint8Array {
  const w = protobuf.Writer.create();
  for (const [n, kind, value] of fields) {
    if (kind === 'string') w.uint32((n << 3) | 2).string(value);
    else if (kind === 'varint') w.uint32(n << 3).int64(value);
    else w.uint32((n << 3) | 2).bytes(value);
  }
  return w.finish();
}

/** A body as the API server sends protobuf: the magic `k8s\0`, then a runtime.Unknown wrapping `raw`. */
export function protobufBody(kind: string, raw: Uint8Array, apiVersion = 'coordination.k8s.io/v1'): Buffer {
  const unknown = protobufMessage(
    [1, 'message', protobufMessage([1, 'string', apiVersion], [2, 'string', kind])],
    [2, 'message', raw],
  );
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), unknown]);
}
