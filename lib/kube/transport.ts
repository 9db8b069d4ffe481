// How KubeClient sends an HTTP request: one small port with two implementations, loaded only when chosen.
// `undici` (undici-transport.ts) is the default, proven by the 5,000-node benchmark (controller, fleet
// simulator, CLI); `node` (node-transport.ts) uses node:http/node:https and its own bounded pool, so that a
// process that takes it (the agent, docs/adr/0006) does not load undici at all.

import type { TlsOptions } from './config.ts';

export type TransportKind = 'undici' | 'node';

export interface TransportOptions {
  tls: TlsOptions;
  /** Maximum concurrent connections (watches hold one each). */
  connections: number;
}

export interface TransportRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
  /** Aborting it ends the request (connecting, waiting for a connection, or reading the body). */
  signal: AbortSignal;
  /** A watch: the body may stay open and silent for long (the caller keeps its own inactivity deadline). */
  streaming?: boolean;
}

export interface TransportResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Buffer>;
  text(): Promise<string>;
}

export interface Transport {
  /** Resolves when the response headers arrive; rejects with the transport's error otherwise. */
  request(req: TransportRequest): Promise<TransportResponse>;
  close(): Promise<void>;
}

export async function createTransport(kind: TransportKind, options: TransportOptions): Promise<Transport> {
  switch (kind) {
    case 'undici':
      return new (await import('./undici-transport.ts')).UndiciTransport(options);
    case 'node':
      return new (await import('./node-transport.ts')).NodeTransport(options);
    default: {
      const never: never = kind;
      throw new Error(`unknown transport ${String(never)}`);
    }
  }
}
