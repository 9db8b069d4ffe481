// /healthz, /readyz and /metrics on one small HTTP server. Port 0 picks a free port (logged by the caller).
// Loopback unless told otherwise: under host networking any other address serves metrics on every interface
// of the node.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

// node:http through getBuiltinModule, not an import: an ES import of it evaluates every export, and its lazy
// WebSocket, CloseEvent and MessageEvent load node's bundled fetch (~12 MiB RSS; docs/adr/0006).
const { createServer } = process.getBuiltinModule('node:http');

export interface HealthChecks {
  /** The process is alive and its loops are turning. */
  healthy(): boolean;
  /** The process is ready to do its job (caches synced, first write done). */
  ready(): boolean;
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(
  port: number,
  checks: HealthChecks,
  registry: Registry,
  host = '127.0.0.1',
): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'method not allowed\n');
    switch (path) {
      case '/healthz':
      case '/livez':
        return checks.healthy() ? reply(200, 'ok\n') : reply(503, 'unhealthy\n');
      case '/readyz':
        return checks.ready() ? reply(200, 'ok\n') : reply(503, 'not ready\n');
      case '/metrics':
        registry.metrics().then(
          (text) => reply(200, text, registry.contentType),
          (err: Error) => reply(500, `${err.message}\n`),
        );
        return undefined;
      default:
        return reply(404, 'not found\n');
    }
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
