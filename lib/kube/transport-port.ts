// The port KubeClient sends HTTP requests through (types only). Its two implementations, undici-transport.ts
// and node-transport.ts, import this file; transport.ts chooses and loads one.

import type { TlsOptions } from './config.ts';

export type TransportKind = 'undici' | 'node';

export interface TransportOptions {
  tls: TlsOptions;
  /** Maximum concurrent connections (watches hold one each). */
  connections: number;
  /** How long a connection (TCP, then TLS) may take to come up; default 10 s. */
  connectTimeoutMs?: number;
  /**
   * An HTTP proxy to tunnel through with CONNECT (Connection.proxy). The undici transport takes it; the node
   * transport (the agent's) refuses it.
   */
  proxy?: string;
}

export interface TransportRequest {
  method: string;
  url: URL;
  /** A list: the header sent once per value. */
  headers: Record<string, string | string[]>;
  body?: string;
  /** Aborting it ends the request (connecting, waiting for a connection, or reading the body). */
  signal: AbortSignal;
  /** A watch: the body may stay open and silent for long (the caller keeps its own inactivity deadline). */
  streaming?: boolean;
  /**
   * A stream that may be read in batches: after each read of its socket the next one waits this long, so what
   * arrives meanwhile comes in one read: one event-loop wake-up instead of one per watch event, for at most
   * this much delay (docs/adr/0011). Both transports do (undici-transport.ts, CoalescedBody; node-transport.ts, consumeBody).
   */
  coalesceMs?: number;
}

export interface TransportResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Buffer>;
  text(): Promise<string>;
  /**
   * Reads the body by handing each chunk to `onChunk` in the transport's own callback as it arrives, instead of
   * through `body` (no promise per chunk). Resolves when the body ends and rejects when it fails; a throw from
   * `onChunk` aborts the request and rejects with what it threw. Optional: without it, read `body`. Use one
   * of `body`, `text()` and `consume()`, once.
   */
  consume?(onChunk: (chunk: Buffer) => void): Promise<void>;
}

export interface Transport {
  /** Resolves when the response headers arrive; rejects with the transport's error otherwise. */
  request(req: TransportRequest): Promise<TransportResponse>;
  close(): Promise<void>;
}
