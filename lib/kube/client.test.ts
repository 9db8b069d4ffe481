import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { consistently } from '../../test/integration/helpers.ts';
import { isProtobuf, KubeClient, PROTOBUF_CONTENT_TYPE } from './client.ts';
import { KubeErrorCode } from './errors.ts';
import { decodeLeaseList, protobufListContinue } from './protobuf.ts';
import { protobufBody, protobufMessage, type ProtobufField } from './testing.ts';

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
      await consistently(
        () => {
          expect(uncaught).toEqual([]);
          expect(events).toEqual(['ADDED']);
        },
        200,
        { intervalMs: 10, what: 'nothing surfacing after the loop ended' },
      );
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
      await consistently(() => expect(uncaught).toEqual([]), 200, {
        intervalMs: 10,
        what: 'no uncaught error',
      });
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

describe('KubeClient.get with protobuf', () => {
  /** A loopback server answering every request with `status`, `contentType` and `body`; it records the Accept. */
  async function answering(
    status: number,
    contentType: string,
    body: Buffer | string,
    transport: 'undici' | 'node',
  ): Promise<{ client: KubeClient; accepts: string[] }> {
    const accepts: string[] = [];
    server = createServer((req, res) => {
      accepts.push(String(req.headers.accept));
      res.writeHead(status, { 'content-type': contentType });
      res.end(body);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const connection = {
      server: `http://127.0.0.1:${port}`,
      tls: {},
      authHeaders: async () => ({}),
      source: 'test',
    };
    return { client: new KubeClient(connection, { transport }), accepts };
  }

  const lease = protobufMessage([1, 'message', protobufMessage([1, 'string', 'a'], [6, 'string', '7'])]);
  const list = protobufMessage(
    [1, 'message', protobufMessage([2, 'string', '9'], [3, 'string', 'next'])],
    [2, 'message', lease],
  );

  for (const transport of ['undici', 'node'] as const) {
    it(`asks for protobuf and reads a protobuf answer with the decoder given, its bytes peeked first (${transport})`, async () => {
      const { client, accepts } = await answering(
        200,
        PROTOBUF_CONTENT_TYPE,
        protobufBody('LeaseList', list),
        transport,
      );
      const peeked: Array<string | undefined> = [];
      const got = await client.get('/apis/coordination.k8s.io/v1/leases', {
        protobuf: decodeLeaseList,
        peek: (body) => peeked.push(typeof body === 'string' ? 'text' : protobufListContinue(body)),
      });
      expect(got).toEqual({
        metadata: { resourceVersion: '9', continue: 'next' },
        items: [{ metadata: { name: 'a', resourceVersion: '7' } }],
      });
      expect(peeked).toEqual(['next']);
      expect(accepts).toEqual(['application/vnd.kubernetes.protobuf, application/json']);
      await client.close();
    });

    it(`parses a JSON answer as JSON when it asked for protobuf (a server that offers none) (${transport})`, async () => {
      const { client } = await answering(
        200,
        'application/json',
        '{"items":[{"metadata":{"name":"b"}}]}',
        transport,
      );
      const got = await client.get('/apis/x/v1/things', { protobuf: decodeLeaseList });
      expect(got).toEqual({ items: [{ metadata: { name: 'b' } }] });
      await client.close();
    });

    it(`reads an error's protobuf Status: kind from the code, message and retry-after from the Status (${transport})`, async () => {
      const status = (code: number, reason: string, message: string, retry?: number): Buffer =>
        protobufBody(
          'Status',
          protobufMessage(
            [3, 'string', message],
            [4, 'string', reason],
            ...(retry ? [[5, 'message', protobufMessage([5, 'varint', retry])] as ProtobufField] : []),
            [6, 'varint', code],
          ),
          'v1',
        );
      const gone = await answering(
        410,
        PROTOBUF_CONTENT_TYPE,
        status(410, 'Expired', 'the continue token is too old'),
        transport,
      );
      await expect(gone.client.get('/apis/x', { protobuf: decodeLeaseList })).rejects.toMatchObject({
        code: KubeErrorCode.Gone,
        message: 'GET /apis/x: 410 the continue token is too old',
      });
      await gone.client.close();
      server?.closeAllConnections();
      server?.close();
      const busy = await answering(
        429,
        PROTOBUF_CONTENT_TYPE,
        status(429, 'TooManyRequests', 'slow down', 3),
        transport,
      );
      await expect(busy.client.get('/apis/x', { protobuf: decodeLeaseList })).rejects.toMatchObject({
        code: KubeErrorCode.TooManyRequests,
        retryAfterMs: 3000,
      });
      await busy.client.close();
    });

    it(`refuses a protobuf answer it cannot read with Malformed, and one that is no Status with its size (${transport})`, async () => {
      const cut = protobufBody('LeaseList', list).subarray(0, 20);
      const bad = await answering(200, PROTOBUF_CONTENT_TYPE, cut, transport);
      await expect(bad.client.get('/apis/x', { protobuf: decodeLeaseList })).rejects.toMatchObject({
        code: KubeErrorCode.Malformed,
      });
      await bad.client.close();
      server?.closeAllConnections();
      server?.close();
      const noStatus = await answering(500, PROTOBUF_CONTENT_TYPE, Buffer.from('not protobuf'), transport);
      await expect(noStatus.client.get('/apis/x', { protobuf: decodeLeaseList })).rejects.toMatchObject({
        code: KubeErrorCode.ServerError,
        message: 'GET /apis/x: 500 12 bytes of protobuf that are not a Status',
      });
      await noStatus.client.close();
    });
  }
});

describe('KubeClient headers and deadlines', () => {
  async function echoServer(delayMs = 0): Promise<string> {
    server = createServer((req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(req.headersDistinct));
      }, delayMs);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  const connection = (url: string) => ({
    server: url,
    tls: {},
    authHeaders: async () => ({ 'impersonate-user': 'jane', 'impersonate-group': ['dev', 'ops'] }),
    source: 'test',
  });

  it.each(['undici', 'node'] as const)(
    'a list-valued header (Impersonate-Group) goes out once per value (%s transport)',
    async (transport) => {
      const client = new KubeClient(connection(await echoServer()), { transport });
      try {
        const seen = await client.get<Record<string, string[]>>('/api');
        expect(seen['impersonate-user']).toEqual(['jane']);
        expect(seen['impersonate-group']).toEqual(['dev', 'ops']);
      } finally {
        await client.close();
      }
    },
  );

  it('requestTimeoutMs is the deadline of a request that gives none; 0 is none', async () => {
    const url = await echoServer(300);
    const short = new KubeClient(connection(url), { requestTimeoutMs: 50 });
    const none = new KubeClient(connection(url), { requestTimeoutMs: 0 });
    try {
      await expect(short.get('/api')).rejects.toMatchObject({ code: KubeErrorCode.Timeout });
      await expect(none.get('/api')).resolves.toBeDefined();
    } finally {
      await short.close();
      await none.close();
    }
  });
});

describe('isProtobuf', () => {
  it("matches the API server's protobuf Content-Type only", () => {
    expect(isProtobuf('application/vnd.kubernetes.protobuf')).toBe(true);
    expect(isProtobuf('Application/VND.Kubernetes.Protobuf; charset=binary')).toBe(true);
    expect(isProtobuf(['application/vnd.kubernetes.protobuf'])).toBe(true);
    expect(isProtobuf('application/json')).toBe(false);
    expect(isProtobuf(undefined)).toBe(false);
  });
});
