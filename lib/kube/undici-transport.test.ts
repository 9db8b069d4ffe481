// The controller's transport (undici) where it differs from the agent's: it tunnels through a proxy, and a TLS
// handshake that never completes ends at the request deadline. Coalesced watches, on both transports:
// coalesced-watch.test.ts.
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KubeClient } from './client.ts';
import { KubeErrorCode } from './errors.ts';
import { selfSignedCert } from '../testing.ts';

describe('UndiciTransport through a proxy (Connection.proxy)', () => {
  it('tunnels with CONNECT to the server, verifies its certificate inside the tunnel, and sends the request', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nodecare-proxy-'));
    const { key, cert } = await selfSignedCert(dir);
    const api = createHttpsServer({ key, cert }, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ path: req.url, auth: req.headers.authorization }));
    });
    api.listen(0, '127.0.0.1');
    await once(api, 'listening');
    const apiPort = (api.address() as AddressInfo).port;
    const targets: string[] = [];
    const sockets: Socket[] = [];
    const proxy = createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req, client: Socket) => {
      targets.push(req.url ?? '');
      const upstream = connect(apiPort, '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.pipe(client);
        client.pipe(upstream);
      });
      sockets.push(client, upstream);
    });
    proxy.listen(0, '127.0.0.1');
    await once(proxy, 'listening');
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const connection = {
      server: `https://127.0.0.1:${apiPort}`,
      authHeaders: async () => ({ authorization: 'Bearer t' }),
      proxy: proxyUrl,
      source: 'test',
    };
    const trusted = new KubeClient({ ...connection, tls: { ca: cert } });
    const untrusted = new KubeClient({ ...connection, tls: {} });
    try {
      expect(await trusted.get('/api/v1/nodes')).toEqual({ path: '/api/v1/nodes', auth: 'Bearer t' });
      expect(targets).toEqual([`127.0.0.1:${apiPort}`]);
      // The proxy carries bytes only: TLS is end to end, so a server the client does not trust is refused.
      await expect(untrusted.get('/api')).rejects.toMatchObject({ code: KubeErrorCode.Network });
      expect(targets).toHaveLength(2);
    } finally {
      await trusted.close();
      await untrusted.close();
      for (const s of sockets) s.destroy();
      proxy.close();
      api.closeAllConnections();
      api.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('UndiciTransport deadlines', () => {
  it('a TLS handshake that never completes ends at the request deadline, not at the 10 s connect timeout (regression: undici waits for it)', async () => {
    const sockets: Socket[] = [];
    const silent = createNetServer((socket) => void sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const client = new KubeClient(
      {
        server: `https://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        tls: { rejectUnauthorized: false },
        authHeaders: async () => ({}),
        source: 'test',
      },
      { requestTimeoutMs: 300 },
    );
    const started = performance.now();
    try {
      await expect(client.get('/api')).rejects.toMatchObject({ code: KubeErrorCode.Timeout });
      expect(performance.now() - started).toBeLessThan(3000);
      await client.close();
      // The connection attempt is bounded by the deadline too: closing does not wait 10 s for it.
      expect(performance.now() - started).toBeLessThan(5000);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });
});
