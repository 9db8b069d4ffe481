// A thin Kubernetes API client: raw JSON over one keep-alive node:https agent, a deadline on every request,
// errors classified at this boundary (errors.ts), and streaming watches with an inactivity timeout. Typed
// models are not deserialized: callers strip what they keep (docs/adr/0001). node:http(s) rather than undici:
// undici alone adds ~25 MiB RSS to a process whose whole budget is 64 MiB (docs/adr/0006).

import {
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { classifyResponse, classifyTransportError, KubeError, KubeErrorCode } from './errors.ts';
import type { Connection } from './config.ts';

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** A watch that has sent nothing (not even a bookmark) for this long is presumed dead and restarted. */
export const WATCH_INACTIVITY_MS = 90_000;
const MAX_ERROR_BODY = 64 * 1024;
/** A watch line (one event) longer than this is refused rather than buffered without bound. */
export const MAX_WATCH_LINE_BYTES = 16 * 1024 * 1024;

export type Query = Record<string, string | number | boolean | undefined>;

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Idle keep-alive connections are closed after this long. */
const IDLE_SOCKET_MS = 60_000;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Default application/json; patches pass their patch type. */
  contentType?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

export const PatchType = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;

export interface KubeClientOptions {
  /** Maximum concurrent connections to the API server (watches hold one each). */
  connections?: number;
  userAgent?: string;
  /** Default MAX_WATCH_LINE_BYTES. */
  maxWatchLineBytes?: number;
}

export class KubeClient {
  readonly server: string;
  private readonly connection: Connection;
  private readonly agent: HttpAgent;
  private readonly send: typeof httpRequest;
  private readonly userAgent: string;
  private readonly maxWatchLineBytes: number;

  constructor(connection: Connection, options: KubeClientOptions = {}) {
    this.connection = connection;
    this.server = connection.server;
    this.userAgent = options.userAgent ?? 'nodecare';
    this.maxWatchLineBytes = options.maxWatchLineBytes ?? MAX_WATCH_LINE_BYTES;
    const pool = {
      keepAlive: true,
      // TCP keep-alive probes after 30 s of silence find a dead peer under a long-running watch.
      keepAliveMsecs: 30_000,
      maxSockets: options.connections ?? 32,
      // Only free (idle) sockets are closed on this timeout; a request in flight is bounded by its deadline.
      timeout: IDLE_SOCKET_MS,
      scheduling: 'lifo' as const,
    };
    if (connection.server.startsWith('https:')) {
      this.agent = new HttpsAgent({ ...pool, ...connection.tls });
      this.send = httpsRequest;
    } else {
      this.agent = new HttpAgent(pool);
      this.send = httpRequest;
    }
  }

  private url(path: string, query?: Query): string {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  /** Sends one request; resolves with the response head (its body still to be read), rejects on transport failure. */
  private open(
    method: HttpMethod,
    url: string,
    headers: OutgoingHttpHeaders,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const req = this.send(url, { method, agent: this.agent, headers, signal }, resolve);
      req.on('error', reject);
      req.end(body);
    });
  }

  private async headers(contentType?: string): Promise<Record<string, string>> {
    return {
      accept: 'application/json',
      'user-agent': this.userAgent,
      ...(contentType ? { 'content-type': contentType } : {}),
      ...(await this.connection.authHeaders()),
    };
  }

  /** One API call. Resolves with the parsed JSON body; rejects with a KubeError. */
  async request<T>(method: HttpMethod, path: string, options: RequestOptions = {}): Promise<T> {
    const what = `${method} ${path}`;
    const timeout = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    const payload = options.body !== undefined ? JSON.stringify(options.body) : undefined;
    const headers: OutgoingHttpHeaders = await this.headers(
      payload !== undefined ? (options.contentType ?? 'application/json') : undefined,
    );
    if (payload !== undefined) headers['content-length'] = Buffer.byteLength(payload);
    let response: IncomingMessage;
    let text: string;
    try {
      response = await this.open(method, this.url(path, options.query), headers, payload, signal);
      text = await readText(response);
    } catch (err) {
      throw classifyTransportError(err, what);
    }
    const status = response.statusCode ?? 0;
    if (status >= 200 && status < 300) {
      return (text ? JSON.parse(text) : {}) as T;
    }
    let body: unknown;
    try {
      body = JSON.parse(text.slice(0, MAX_ERROR_BODY));
    } catch {
      body = { message: text.slice(0, 200) };
    }
    const retryAfter = response.headers['retry-after'];
    throw classifyResponse(status, body, retryAfter, what);
  }

  get<T>(path: string, options?: RequestOptions): Promise<T> {
    return this.request<T>('GET', path, options);
  }

  /**
   * Streams watch events to `onEvent` until the server ends the watch (resolves), the stream fails or goes
   * silent for WATCH_INACTIVITY_MS (rejects with a KubeError), or `signal` aborts (resolves).
   */
  async watch<T>(
    path: string,
    query: Query,
    onEvent: (event: WatchEvent<T>) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const what = `WATCH ${path}`;
    const local = new AbortController();
    const abortAll = (): void => local.abort(signal.reason);
    signal.addEventListener('abort', abortAll, { once: true });
    let inactivity: NodeJS.Timeout | undefined;
    const touch = (): void => {
      clearTimeout(inactivity);
      inactivity = setTimeout(
        () =>
          local.abort(
            new KubeError(KubeErrorCode.Timeout, 0, `${what}: no data for ${WATCH_INACTIVITY_MS} ms`),
          ),
        WATCH_INACTIVITY_MS,
      );
      inactivity.unref();
    };
    try {
      touch();
      let response: IncomingMessage;
      try {
        response = await this.open(
          'GET',
          this.url(path, { ...query, watch: true }),
          await this.headers(),
          undefined,
          local.signal,
        );
      } catch (err) {
        if (signal.aborted) return;
        throw local.signal.reason instanceof KubeError
          ? local.signal.reason
          : classifyTransportError(err, what);
      }
      if (response.statusCode !== 200) {
        const text = await readText(response).catch(() => '');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = { message: text.slice(0, 200) };
        }
        throw classifyResponse(response.statusCode ?? 0, body, undefined, what);
      }
      try {
        for await (const line of splitLines(response, this.maxWatchLineBytes, what)) {
          touch();
          if (line.length === 0) continue;
          let event: WatchEvent<T>;
          try {
            event = JSON.parse(line.toString('utf8')) as WatchEvent<T>;
          } catch {
            throw new KubeError(KubeErrorCode.Malformed, 200, `${what}: a watch line is not JSON`);
          }
          if (event.type === 'ERROR') {
            const status = event.object as { code?: number };
            throw classifyResponse(status.code ?? 500, event.object, undefined, what);
          }
          onEvent(event);
        }
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof KubeError) throw err;
        throw local.signal.reason instanceof KubeError
          ? local.signal.reason
          : classifyTransportError(err, what);
      }
    } finally {
      clearTimeout(inactivity);
      signal.removeEventListener('abort', abortAll);
      local.abort();
    }
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }
}

async function readText(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Splits a byte stream into lines (newline never occurs inside a UTF-8 multi-byte sequence), refusing a line
 * longer than `maxBytes` instead of buffering it without bound.
 */
async function* splitLines(
  body: AsyncIterable<Buffer>,
  maxBytes: number,
  what: string,
): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const tooLong = (): KubeError =>
    new KubeError(KubeErrorCode.Malformed, 200, `${what}: a watch line is longer than ${maxBytes} bytes`);
  for await (const chunk of body) {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      if (pendingBytes + end - start > maxBytes) throw tooLong();
      const part = chunk.subarray(start, end);
      yield pending.length > 0 ? Buffer.concat([...pending, part]) : part;
      pending = [];
      pendingBytes = 0;
      start = end + 1;
    }
    if (start < chunk.length) {
      pendingBytes += chunk.length - start;
      if (pendingBytes > maxBytes) throw tooLong();
      pending.push(chunk.subarray(start));
    }
  }
  if (pendingBytes > 0) yield Buffer.concat(pending);
}
