// The agent's transport against real loopback servers (docs/conventions.md 6): one that answers, one that
// never answers, one that resets, one whose TLS handshake never completes. The pool must free a slot as soon
// as its socket is gone, whatever state it was in (docs/adr/0006: node's own Agent wedged on that).

import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from './client.ts';
import { KubeErrorCode } from './errors.ts';
import { NodeTransport } from './node-transport.ts';
import { selfSignedCert } from '../testing.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const closers: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function listen(server: Server | ReturnType<typeof createNetServer>): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** An HTTP server whose behaviour the test changes between requests; it counts connections. */
async function httpServer(
  initial: Handler,
): Promise<{ url: string; handle: { fn: Handler }; connections: () => number }> {
  const handle = { fn: initial };
  let connections = 0;
  const server = createServer((req, res) => handle.fn(req, res));
  server.on('connection', () => connections++);
  const port = await listen(server);
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  return { url: `http://127.0.0.1:${port}`, handle, connections: () => connections };
}

const ok: Handler = (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end('{"ok":true}');
};
const never: Handler = () => {};

function transport(connections: number, options: { connectTimeoutMs?: number; idleTimeoutMs?: number } = {}) {
  const t = new NodeTransport({ tls: {}, connections, ...options });
  closers.push(() => t.close());
  return t;
}

function client(url: string, t: NodeTransport): KubeClient {
  return new KubeClient(
    { server: url, tls: {}, authHeaders: async () => ({}), source: 'test' },
    { transport: t },
  );
}

const tick = (ms = 20): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('NodeTransport', () => {
  it('refuses a proxy rather than connecting around it', () => {
    expect(() => new NodeTransport({ tls: {}, connections: 1, proxy: 'http://proxy.example:3128' })).toThrow(
      'the node transport does not tunnel through a proxy (http://proxy.example:3128',
    );
  });

  it('reuses one kept-alive connection for requests in sequence', async () => {
    const server = await httpServer(ok);
    const t = transport(2);
    const c = client(server.url, t);
    for (let i = 0; i < 5; i++) await expect(c.get('/api/v1/nodes/a')).resolves.toEqual({ ok: true });
    expect(server.connections()).toBe(1);
    expect(t.pool(new URL(server.url)).stats).toEqual({ sockets: 1, idle: 1, waiting: 0 });
  });

  it('a request that times out on a server that never answers frees its slot at once', async () => {
    const server = await httpServer(never);
    const t = transport(1);
    const c = client(server.url, t);
    await expect(c.get('/api/v1/nodes/a', { timeoutMs: 100 })).rejects.toMatchObject({
      code: KubeErrorCode.Timeout,
    });
    await tick();
    expect(t.pool(new URL(server.url)).stats.sockets).toBe(0);
    server.handle.fn = ok;
    await expect(c.get('/api/v1/nodes/a')).resolves.toEqual({ ok: true });
  });

  it('requests beyond the limit wait for a slot, and one that gives up waiting leaves the queue', async () => {
    const server = await httpServer(never);
    const t = transport(1);
    const c = client(server.url, t);
    const pool = t.pool(new URL(server.url));
    const first = c.get('/api/v1/nodes/a', { timeoutMs: 400 });
    const second = c.get('/api/v1/nodes/b', { timeoutMs: 100 });
    await tick(50);
    expect(pool.stats).toEqual({ sockets: 1, idle: 0, waiting: 1 });
    await expect(second).rejects.toMatchObject({ code: KubeErrorCode.Timeout });
    expect(pool.stats.waiting).toBe(0);
    server.handle.fn = ok;
    const third = c.get('/api/v1/nodes/c', { timeoutMs: 5_000 });
    await expect(first).rejects.toMatchObject({ code: KubeErrorCode.Timeout });
    // The first request's slot went to the third, on a new connection.
    await expect(third).resolves.toEqual({ ok: true });
    expect(pool.stats.sockets).toBe(1);
  });

  it('a connection reset is a Network error and frees the slot', async () => {
    const server = await httpServer((req) => req.socket.resetAndDestroy());
    const t = transport(1);
    const c = client(server.url, t);
    await expect(c.get('/api/v1/nodes/a')).rejects.toMatchObject({ code: KubeErrorCode.Network });
    await tick();
    expect(t.pool(new URL(server.url)).stats.sockets).toBe(0);
    server.handle.fn = ok;
    await expect(c.get('/api/v1/nodes/a')).resolves.toEqual({ ok: true });
  });

  it('a reset in the middle of a response body is a Network error, not a crash', async () => {
    const server = await httpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial":');
      setTimeout(() => req.socket.resetAndDestroy(), 20);
    });
    const t = transport(1);
    const c = client(server.url, t);
    await expect(c.get('/api/v1/nodes/a')).rejects.toMatchObject({ code: KubeErrorCode.Network });
    await tick();
    expect(t.pool(new URL(server.url)).stats.sockets).toBe(0);
  });

  it('a refused connection is a Network error and frees the slot', async () => {
    const server = await httpServer(ok);
    const port = new URL(server.url).port;
    for (const close of closers.splice(0)) await close();
    const t = transport(1);
    const c = client(`http://127.0.0.1:${port}`, t);
    await expect(c.get('/x')).rejects.toMatchObject({ code: KubeErrorCode.Network });
    await tick();
    expect(t.pool(new URL(`http://127.0.0.1:${port}`)).stats.sockets).toBe(0);
  });

  it.each([
    { status: 404, code: KubeErrorCode.NotFound },
    { status: 409, code: KubeErrorCode.Conflict },
    { status: 410, code: KubeErrorCode.Gone },
    { status: 429, code: KubeErrorCode.TooManyRequests, retryAfterMs: 3_000 },
    { status: 500, code: KubeErrorCode.ServerError },
  ])(
    '$status → $code, and the connection is kept for the next request',
    async ({ status, code, retryAfterMs }) => {
      const server = await httpServer((_req, res) => {
        res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '3' });
        res.end(JSON.stringify({ kind: 'Status', code: status, message: 'nope' }));
      });
      const t = transport(1);
      const c = client(server.url, t);
      await expect(
        c.request('PUT', '/apis/coordination.k8s.io/v1/leases/x', { body: { a: 1 } }),
      ).rejects.toMatchObject({
        code,
        status,
        ...(retryAfterMs ? { retryAfterMs } : {}),
      });
      server.handle.fn = ok;
      await expect(c.get('/x')).resolves.toEqual({ ok: true });
      expect(server.connections()).toBe(1);
    },
  );

  it('sends the body with its length and the headers it is given', async () => {
    let seen: { method?: string; length?: string; type?: string; body: string } = { body: '' };
    const server = await httpServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        seen = {
          method: req.method,
          length: req.headers['content-length'],
          type: req.headers['content-type'],
          body,
        };
        ok(req, res);
      });
    });
    const c = client(server.url, transport(1));
    await c.request('PATCH', '/api/v1/nodes/a', {
      body: { é: 1 },
      contentType: 'application/merge-patch+json',
    });
    expect(seen).toEqual({
      method: 'PATCH',
      length: '8',
      type: 'application/merge-patch+json',
      body: '{"é":1}',
    });
  });

  it('streams a watch until the signal aborts, then frees the slot', async () => {
    const server = await httpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
    });
    const t = transport(1);
    const c = client(server.url, t);
    const stop = new AbortController();
    const events: string[] = [];
    const watching = c.watch(
      '/api/v1/nodes',
      {},
      (e) => {
        events.push(e.type);
        stop.abort();
      },
      stop.signal,
    );
    await expect(watching).resolves.toBeUndefined();
    expect(events).toEqual(['ADDED']);
    await tick();
    expect(t.pool(new URL(server.url)).stats.sockets).toBe(0);
  });
});

describe('NodeTransport over TLS', () => {
  let dir = '';
  let key: Buffer;
  let cert: Buffer;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nodecare-transport-'));
    ({ key, cert } = await selfSignedCert(dir));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /**
   * A TCP listener that either swallows connections (the TLS handshake never completes: an API server too
   * slow to accept) or hands them to a real HTTPS server.
   */
  async function tlsServer(): Promise<{ url: string; mode: { hang: boolean } }> {
    const https = createHttpsServer({ key, cert }, ok);
    const held: Socket[] = [];
    const mode = { hang: true };
    const front = createNetServer((socket) => {
      if (mode.hang) held.push(socket);
      else https.emit('connection', socket);
    });
    const port = await listen(front);
    closers.push(() => {
      for (const s of held) s.destroy();
      https.closeAllConnections();
      front.close();
    });
    return { url: `https://127.0.0.1:${port}`, mode };
  }

  it('verifies the server against the given CA and reuses the connection', async () => {
    const server = await tlsServer();
    server.mode.hang = false;
    const c = new KubeClient(
      { server: server.url, tls: { ca: cert }, authHeaders: async () => ({}), source: 'test' },
      {
        transport: 'node',
      },
    );
    closers.push(() => c.close());
    await expect(c.get('/x')).resolves.toEqual({ ok: true });
    await expect(c.get('/x')).resolves.toEqual({ ok: true });
  });

  it('refuses a server its CA did not sign', async () => {
    const server = await tlsServer();
    server.mode.hang = false;
    const c = new KubeClient(
      { server: server.url, tls: {}, authHeaders: async () => ({}), source: 'test' },
      {
        transport: 'node',
      },
    );
    closers.push(() => c.close());
    await expect(c.get('/x')).rejects.toMatchObject({ code: KubeErrorCode.Network });
  });

  it('regression: handshakes that never complete do not wedge the pool (docs/adr/0006)', async () => {
    const server = await tlsServer();
    const t = new NodeTransport({ tls: { ca: cert }, connections: 2, connectTimeoutMs: 150 });
    closers.push(() => t.close());
    const c = client(server.url, t);
    const pool = t.pool(new URL(server.url));
    // Twenty requests time out against a server that never completes a handshake: some while connecting,
    // some while waiting for a slot, some cut by the connect deadline.
    const attempts = Array.from({ length: 20 }, (_, i) =>
      c.get('/x', { timeoutMs: 50 + (i % 4) * 100 }).then(
        () => 'ok',
        (err: { code: string }) => err.code,
      ),
    );
    const codes = await Promise.all(attempts);
    expect(codes.every((code) => code === KubeErrorCode.Timeout || code === KubeErrorCode.Network)).toBe(
      true,
    );
    await tick(200);
    expect(pool.stats).toEqual({ sockets: 0, idle: 0, waiting: 0 });
    server.mode.hang = false;
    await expect(c.get('/x', { timeoutMs: 5_000 })).resolves.toEqual({ ok: true });
  });

  it('a handshake that never completes fails at the connect deadline, before the request deadline', async () => {
    const server = await tlsServer();
    const t = new NodeTransport({ tls: { ca: cert }, connections: 1, connectTimeoutMs: 100 });
    closers.push(() => t.close());
    const c = client(server.url, t);
    const err = await c.get('/x', { timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: KubeErrorCode.Network });
    expect(String((err as Error).message)).toMatch(/ETIMEDOUT/);
    await tick();
    expect(t.pool(new URL(server.url)).stats.sockets).toBe(0);
  });
});
