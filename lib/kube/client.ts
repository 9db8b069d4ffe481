// A thin Kubernetes API client: raw JSON over one keep-alive undici dispatcher, a deadline on every
// request, errors classified at this boundary (errors.ts), and streaming watches with an inactivity
// timeout. Typed models are not deserialized: callers strip what they keep (docs/adr/0001).

import { createInterface } from 'node:readline';
import { Agent, request, type Dispatcher } from 'undici';
import { classifyResponse, classifyTransportError, KubeError, KubeErrorCode } from './errors.ts';
import type { Connection } from './config.ts';

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** A watch that has sent nothing (not even a bookmark) for this long is presumed dead and restarted. */
export const WATCH_INACTIVITY_MS = 90_000;
const MAX_ERROR_BODY = 64 * 1024;

export type Query = Record<string, string | number | boolean | undefined>;

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
}

export class KubeClient {
  readonly server: string;
  private readonly connection: Connection;
  private readonly dispatcher: Dispatcher;
  private readonly userAgent: string;

  constructor(connection: Connection, options: KubeClientOptions = {}) {
    this.connection = connection;
    this.server = connection.server;
    this.userAgent = options.userAgent ?? 'nodecare';
    this.dispatcher = new Agent({
      connect: { ...connection.tls, keepAlive: true, keepAliveInitialDelay: 30_000 },
      keepAliveTimeout: 60_000,
      connections: options.connections ?? 32,
    });
  }

  private url(path: string, query?: Query): string {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
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
  async request<T>(method: Dispatcher.HttpMethod, path: string, options: RequestOptions = {}): Promise<T> {
    const what = `${method} ${path}`;
    const timeout = AbortSignal.timeout(options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    const hasBody = options.body !== undefined;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(this.url(path, options.query), {
        method,
        dispatcher: this.dispatcher,
        headers: await this.headers(hasBody ? (options.contentType ?? 'application/json') : undefined),
        body: hasBody ? JSON.stringify(options.body) : undefined,
        signal,
      });
    } catch (err) {
      throw classifyTransportError(err, what);
    }
    let text: string;
    try {
      text = await response.body.text();
    } catch (err) {
      throw classifyTransportError(err, what);
    }
    if (response.statusCode >= 200 && response.statusCode < 300) {
      return (text ? JSON.parse(text) : {}) as T;
    }
    let body: unknown;
    try {
      body = JSON.parse(text.slice(0, MAX_ERROR_BODY));
    } catch {
      body = { message: text.slice(0, 200) };
    }
    const retryAfter = response.headers['retry-after'];
    throw classifyResponse(
      response.statusCode,
      body,
      Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
      what,
    );
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
      let response: Dispatcher.ResponseData;
      try {
        response = await request(this.url(path, { ...query, watch: true }), {
          method: 'GET',
          dispatcher: this.dispatcher,
          headers: await this.headers(),
          signal: local.signal,
          bodyTimeout: 0,
        });
      } catch (err) {
        if (signal.aborted) return;
        throw local.signal.reason instanceof KubeError
          ? local.signal.reason
          : classifyTransportError(err, what);
      }
      if (response.statusCode !== 200) {
        const text = await response.body.text().catch(() => '');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = { message: text.slice(0, 200) };
        }
        throw classifyResponse(response.statusCode, body, undefined, what);
      }
      const lines = createInterface({ input: response.body, crlfDelay: Infinity });
      // Leaving the loop early (an ERROR event such as 410 Gone, a bad line) stops the iteration, then the
      // abort below errors the body, which readline re-emits; unheard, that 'error' would crash the process.
      lines.on('error', () => {});
      try {
        for await (const line of lines) {
          touch();
          if (!line) continue;
          const event = JSON.parse(line) as WatchEvent<T>;
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
    await this.dispatcher.close();
  }
}
