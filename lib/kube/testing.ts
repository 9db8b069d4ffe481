// A loopback HTTP server speaking just enough of the Kubernetes list/watch protocol for unit tests of the
// reflector and the agent (docs/conventions.md 6: real servers, not mocks of the client). Collections are registered by
// path; a LIST answers with the current items, a WATCH streams what the test emits. Selectors are ignored:
// the test serves exactly what the program under test should see.

import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeClient, type KubeClientOptions, type WatchEventType } from './client.ts';

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
  private readonly server: Server;
  private readonly collections = new Map<string, Collection>();
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
    const collection = this.collections.get(url.pathname);
    if (!collection || req.method !== 'GET') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'not found' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    if (!watch) {
      res.end(
        JSON.stringify({
          metadata: { resourceVersion: String(this.version) },
          items: [...collection.items.values()],
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
