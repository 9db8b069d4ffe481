import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeClient } from './client.ts';
import { KubeErrorCode } from './errors.ts';

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  server?.close();
  server = undefined;
});

/**
 * A loopback server that answers every watch with `lines`, then one more line every `everyMs` (if given) while
 * `more` says so, and keeps the stream open.
 */
async function watchServer(
  lines: string[],
  options: { everyMs?: number; more?: () => boolean; inactivityMs?: number } = {},
): Promise<KubeClient> {
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    for (const line of lines) res.write(`${line}\n`);
    if (options.everyMs === undefined) return;
    const timer = setInterval(() => {
      if (options.more?.() === false) return clearInterval(timer);
      res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } })}\n`);
    }, options.everyMs);
    res.once('close', () => clearInterval(timer));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return new KubeClient(
    {
      server: `http://127.0.0.1:${port}`,
      tls: {},
      authHeaders: async () => ({}),
      source: 'test',
    },
    options.inactivityMs === undefined ? {} : { watchInactivityMs: options.inactivityMs },
  );
}

describe('KubeClient.watch', () => {
  it('an ERROR event (410 Gone after an API server restart) rejects with Gone and does not crash the process', async () => {
    const client = await watchServer([
      JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '5' } } }),
      JSON.stringify({
        type: 'ERROR',
        object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 5 (9)' },
      }),
    ]);
    const events: string[] = [];
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      await expect(
        client.watch('/api/v1/nodes', {}, (e) => events.push(e.type), new AbortController().signal),
      ).rejects.toMatchObject({ code: KubeErrorCode.Gone, status: 410 });
      // Aborting the request after the loop ended errors the stream; that must not surface anywhere.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(uncaught).toEqual([]);
      expect(events).toEqual(['ADDED']);
    } finally {
      process.off('uncaughtException', onUncaught);
      await client.close();
    }
  });

  it('a line that is not JSON rejects the watch without crashing the process', async () => {
    const client = await watchServer(['{"type":"ADDED","object":{}}', 'not json']);
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      await expect(
        client.watch('/api/v1/nodes', {}, () => {}, new AbortController().signal),
      ).rejects.toThrow();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      await client.close();
    }
  });
});

describe('KubeClient.watch inactivity', () => {
  it('a watch that keeps sending outlives its inactivity deadline; one that goes silent rejects with Timeout', async () => {
    let sending = true;
    const client = await watchServer([], { everyMs: 50, more: () => sending, inactivityMs: 300 });
    const events: string[] = [];
    const started = Date.now();
    let silentSince = 0;
    setTimeout(() => {
      sending = false;
      silentSince = Date.now();
    }, 1_000);
    try {
      await expect(
        client.watch('/api/v1/nodes', {}, (e) => events.push(e.type), new AbortController().signal),
      ).rejects.toMatchObject({ code: KubeErrorCode.Timeout });
      // Three deadlines passed while lines came (each pushed it back); it fired only once they stopped.
      expect(silentSince).toBeGreaterThan(0);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_000 + 300 - 60);
      expect(events.length).toBeGreaterThanOrEqual(10);
    } finally {
      await client.close();
    }
  });
});

describe('KubeClient.listen', () => {
  it('tells its listener of each request and watch event, by verb and resource', async () => {
    const client = await watchServer([
      JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '5' } } }),
      JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: 'a', resourceVersion: '6' } } }),
    ]);
    const seen: string[] = [];
    client.listen({
      request: ({ verb, resource }) => seen.push(`${verb} ${resource}`),
      watchEvent: (resource) => seen.push(`event ${resource}`),
    });
    const stop = new AbortController();
    let events = 0;
    const watching = client.watch('/api/v1/pods', {}, () => ++events === 2 && stop.abort(), stop.signal);
    await watching;
    // The loopback never ends its answer, so the get times out; it was sent all the same.
    await expect(client.get('/api/v1/nodes/n', { timeoutMs: 100 })).rejects.toThrow(/timed out|timeout/i);
    expect(seen).toEqual(['watch pods', 'event pods', 'event pods', 'get nodes']);
    await client.close();
  });
});
