// Coalesced watches (TransportRequest.coalesceMs) over a real loopback HTTP server, on both transports (the
// controller's, undici, and the agent's, node): every event arrives, in order, events written while the stream
// pauses arrive after the pause, and every way out of the stream (its end, an ERROR event, a bad line,
// silence, an abort, leaving the loop) ends the request.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeClient } from './client.ts';
import { KubeErrorCode } from './errors.ts';
import { createTransport, type Transport, type TransportKind } from './transport.ts';
import { consistently } from '../../test/integration/helpers.ts';

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

const event = (n: number): string =>
  `${JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: `l${n}`, resourceVersion: String(n) } } })}\n`;

/** A loopback server handing each request to `handle`; the client and its address. */
async function serve(
  kind: TransportKind,
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  options: { inactivityMs?: number } = {},
): Promise<{ client: KubeClient; url: URL }> {
  server = createServer(handle);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const client = new KubeClient(
    { server: `http://127.0.0.1:${port}`, tls: {}, authHeaders: async () => ({}), source: 'test' },
    {
      transport: kind,
      ...(options.inactivityMs === undefined ? {} : { watchInactivityMs: options.inactivityMs }),
    },
  );
  return { client, url: new URL(`http://127.0.0.1:${port}/apis/x`) };
}

/**
 * A handler that answers 200 with events `first` and keeps the stream open: `stream()` is the open response (to
 * write more), `closed()` whether the client has closed the request.
 */
function streaming(...first: number[]): {
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  stream: () => ServerResponse | undefined;
  closed: () => boolean;
} {
  let open: ServerResponse | undefined;
  let closed = false;
  return {
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (const n of first) res.write(event(n));
      open = res;
      req.once('close', () => (closed = true));
    },
    stream: () => open,
    closed: () => closed,
  };
}

/** A coalesced streaming GET of `url` straight through a transport (no KubeClient). */
function openStream(transport: Transport, url: URL, coalesceMs: number) {
  return transport.request({
    method: 'GET',
    url,
    headers: {},
    signal: new AbortController().signal,
    streaming: true,
    coalesceMs,
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(test: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(5);
  }
}

describe.each(['undici', 'node'] as const)('a coalesced watch (%s transport)', (kind) => {
  it('delivers every event in order; those written while it pauses come after the pause', async () => {
    const open = streaming(1);
    const { client } = await serve(kind, open.handle);
    const seen: Array<{ n: number; at: number }> = [];
    const stop = new AbortController();
    const watching = client.watch<{ metadata: { resourceVersion: string } }>(
      '/apis/x',
      {},
      (e) => seen.push({ n: Number(e.object.metadata.resourceVersion), at: performance.now() }),
      stop.signal,
      { coalesceMs: 300 },
    );
    try {
      await until(() => seen.length === 1);
      const first = seen[0]!.at;
      // Five events, each written (and flushed) on its own, all within the pause that followed event 1's read.
      for (let n = 2; n <= 6; n++) {
        open.stream()!.write(event(n));
        await sleep(10);
      }
      await until(() => seen.length === 6);
      // Held until the pause ended (300 ms after event 1 was read; a lower bound only, slower is fine).
      for (const s of seen.slice(1)) expect(s.at - first).toBeGreaterThanOrEqual(200);
      // After a quiet spell, two more, apart.
      await sleep(400);
      open.stream()!.write(event(7));
      await sleep(20);
      open.stream()!.write(event(8));
      await until(() => seen.length === 8);
      expect(seen.map((s) => s.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    } finally {
      stop.abort();
      await watching;
      await client.close();
    }
  });

  it('ends when its signal aborts during a pause, and the server sees the request closed', async () => {
    const open = streaming(1);
    const { client } = await serve(kind, open.handle);
    const stop = new AbortController();
    let events = 0;
    const watching = client.watch('/apis/x', {}, () => events++, stop.signal, { coalesceMs: 5_000 });
    await until(() => events === 1);
    stop.abort();
    await expect(watching).resolves.toBeUndefined();
    await until(open.closed);
    await client.close();
  });

  it('rejects on an ERROR event, a line that is not JSON, or silence, with the same errors as an uncoalesced one', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const gone = await serve(kind, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write(event(1));
        res.write(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' } })}\n`,
        );
      });
      await expect(
        gone.client.watch('/apis/x', {}, () => {}, new AbortController().signal, { coalesceMs: 50 }),
      ).rejects.toMatchObject({ code: KubeErrorCode.Gone, status: 410 });
      await gone.client.close();
      server?.closeAllConnections();
      server?.close();

      const garbled = await serve(kind, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('not json\n');
      });
      await expect(
        garbled.client.watch('/apis/x', {}, () => {}, new AbortController().signal, { coalesceMs: 50 }),
      ).rejects.toMatchObject({ code: KubeErrorCode.Malformed });
      await garbled.client.close();
      server?.closeAllConnections();
      server?.close();

      const silent = await serve(kind, streaming(1).handle, { inactivityMs: 300 });
      await expect(
        silent.client.watch('/apis/x', {}, () => {}, new AbortController().signal, { coalesceMs: 50 }),
      ).rejects.toMatchObject({ code: KubeErrorCode.Timeout });
      await silent.client.close();
      await consistently(() => expect(uncaught).toEqual([]), 100, {
        intervalMs: 10,
        what: 'no uncaught error',
      });
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('reads a refusal (403 with a Status) as the error it is', async () => {
    const { client } = await serve(kind, (_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'leases is forbidden' }),
      );
    });
    await expect(
      client.watch('/apis/x', {}, () => {}, new AbortController().signal, { coalesceMs: 50 }),
    ).rejects.toMatchObject({ code: KubeErrorCode.Forbidden, status: 403 });
    await client.close();
  });

  it('joins an event split across reads, takes a last line without its newline, and refuses one over the limit', async () => {
    const whole = event(1) + event(2).trimEnd();
    const cut = 20;
    const split = await serve(kind, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(whole.slice(0, cut));
      setTimeout(() => res.end(whole.slice(cut)), 60);
    });
    const names: string[] = [];
    await split.client.watch<{ metadata: { name: string } }>(
      '/apis/x',
      {},
      (e) => void names.push(e.object.metadata.name),
      new AbortController().signal,
      { coalesceMs: 20 },
    );
    expect(names).toEqual(['l1', 'l2']);
    await split.client.close();
    server?.closeAllConnections();
    server?.close();

    const long = await serve(kind, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"type":"ADDED","object":{"metadata":{"name":"${'x'.repeat(600)}`);
      setTimeout(() => res.write('x'.repeat(600)), 30);
    });
    const strict = new KubeClient(
      { server: long.url.origin, tls: {}, authHeaders: async () => ({}), source: 'test' },
      { transport: kind, maxWatchLineBytes: 1_000 },
    );
    await expect(
      strict.watch('/apis/x', {}, () => {}, new AbortController().signal, { coalesceMs: 20 }),
    ).rejects.toMatchObject({
      code: KubeErrorCode.Malformed,
      message: expect.stringContaining('longer than 1000'),
    });
    await strict.close();
  });

  it("hands its chunks to consume()'s reader, what came before the call first, and ends with the body", async () => {
    const { url } = await serve(kind, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(event(1));
      setTimeout(() => res.end(event(2)), 100);
    });
    const transport = await createTransport(kind, { tls: {}, connections: 2 });
    const response = await openStream(transport, url, 20);
    await sleep(30); // event 1 is read (and queued) before anyone consumes it
    const chunks: string[] = [];
    await response.consume!((chunk) => void chunks.push(chunk.toString()));
    expect(chunks.join('')).toBe(event(1) + event(2));

    // A stream that fails (the server drops the connection) rejects.
    server?.closeAllConnections();
    server?.close();
    const dropped = await serve(kind, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(event(1));
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const failing = await openStream(transport, dropped.url, 20);
    const seen: string[] = [];
    await expect(failing.consume!((chunk) => void seen.push(chunk.toString()))).rejects.toThrow();
    expect(seen.join('')).toBe(event(1));
    await transport.close();
  });

  it("is ended, request and all, when consume()'s reader throws, and rejects with what it threw", async () => {
    const open = streaming(1);
    const { url } = await serve(kind, open.handle);
    const transport = await createTransport(kind, { tls: {}, connections: 2 });
    const response = await openStream(transport, url, 20);
    let calls = 0;
    const thrown = new Error('the reader gives up');
    const reading = response.consume!(() => {
      calls++;
      throw thrown;
    });
    await expect(reading).rejects.toBe(thrown);
    await until(open.closed);
    // Nothing more is handed over after the throw, whatever the server still writes.
    open.stream()?.write(event(2));
    await sleep(50);
    expect(calls).toBe(1);
    await transport.close();
  });

  it('is ended, request and all, when its reader leaves the loop early', async () => {
    const open = streaming(1, 2);
    const { url } = await serve(kind, open.handle);
    const transport = await createTransport(kind, { tls: {}, connections: 2 });
    const response = await openStream(transport, url, 50);
    expect(response.statusCode).toBe(200);
    for await (const chunk of response.body) {
      expect(chunk.toString()).toContain('"l1"');
      break;
    }
    await until(open.closed);
    await transport.close();
  });
});
