// A thin Kubernetes API client: raw JSON over a keep-alive connection pool, a deadline on every request,
// errors classified at this boundary (errors.ts), and streaming watches with an inactivity timeout. Typed
// models are not deserialized: callers strip what they keep (docs/adr/0001). The pool is a transport
// (transport.ts): undici by default, node:https with a pool of its own for the agent (docs/adr/0006).

import { classifyTransportError, KubeError, KubeErrorCode } from './errors.ts';
import { deadlineSignal } from '../clock.ts';
import type { Connection } from './config.ts';
import { requestKind, type RequestKind } from './paths.ts';
import { answerError, parseJson, readBytes, watchFailure, watchRefused } from './body.ts';
import { watchLines, type WatchEvent, type WatchOptions } from './watch-lines.ts';
import { createTransport, type Transport, type TransportKind, type TransportResponse } from './transport.ts';

export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** The transports' connect timeout when the request deadline is no shorter (TransportOptions.connectTimeoutMs). */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** A watch that has sent nothing (not even a bookmark) for this long is presumed dead and restarted. */
export const WATCH_INACTIVITY_MS = 90_000;
const MAX_ERROR_BODY = 64 * 1024;
/** A watch line (one event) longer than this is refused rather than buffered without bound. */
export const MAX_WATCH_LINE_BYTES = 16 * 1024 * 1024;

/** Kubernetes' protobuf media type: what a request with a `protobuf` decoder asks for first. */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** Whether a response's Content-Type names Kubernetes' protobuf (parameters ignored). */
export function isProtobuf(contentType: string | string[] | undefined): boolean {
  const value = Array.isArray(contentType) ? contentType[0] : contentType;
  return value?.split(';', 1)[0]?.trim().toLowerCase() === PROTOBUF_CONTENT_TYPE;
}

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Default application/json; patches pass their patch type. */
  contentType?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Parse the response without `metadata.managedFields` (managed-fields.ts): the caller never reads them. */
  withoutManagedFields?: boolean;
  /**
   * Sees a successful response's body before it is parsed (a paged LIST reads its continue token there): its
   * text, or its bytes when it came as protobuf.
   */
  peek?: (body: string | Buffer) => void;
  /**
   * Asks for Kubernetes' protobuf encoding (offered for built-in types only, docs/adr/0018) and decodes an
   * answer in it with this; an answer in JSON (a server or proxy that does not offer protobuf) is parsed as
   * usual. An error's Status comes in protobuf too and is read as such.
   */
  protobuf?: (bytes: Buffer, what: string) => unknown;
  /**
   * A successful response's body over this many bytes is not read on: the request fails with TooLarge (a
   * LIST page then asks for fewer items, reflector.ts). Unbounded when absent.
   */
  maxBodyBytes?: number;
}

export type { WatchEvent, WatchEventType, WatchOptions } from './watch-lines.ts';
export { UNREADABLE_LINE_PREFIX_BYTES } from './body.ts';

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
  /** Default WATCH_INACTIVITY_MS. */
  watchInactivityMs?: number;
  /** Default `undici`; `node` keeps undici out of the process (the agent, docs/adr/0006); or one given. */
  transport?: TransportKind | Transport;
  /**
   * The deadline of a request that gives none (RequestOptions.timeoutMs); 0: none (kubectl's
   * --request-timeout=0). Default DEFAULT_REQUEST_TIMEOUT_MS.
   */
  requestTimeoutMs?: number;
}

/** Told of each request a client sends and each event its watches deliver (a process's API cost, counted). */
export interface RequestListener {
  /** As a request is sent; a watch is one request (verb `watch`), however long it streams. */
  request(kind: RequestKind): void;
  /** Each event a watch of `resource` delivers (bookmarks included). */
  watchEvent(resource: string): void;
}

export class KubeClient {
  readonly server: string;
  private readonly connection: Connection;
  private readonly userAgent: string;
  private readonly maxWatchLineBytes: number;
  private readonly watchInactivityMs: number;
  private readonly transportKind: TransportKind | Transport;
  private readonly connections: number;
  /** Undefined: no deadline. */
  private readonly requestTimeoutMs: number | undefined;
  private transportPromise: Promise<Transport> | undefined;
  private listener: RequestListener | undefined;

  constructor(connection: Connection, options: KubeClientOptions = {}) {
    this.connection = connection;
    this.server = connection.server;
    this.userAgent = options.userAgent ?? 'nodecare';
    this.maxWatchLineBytes = options.maxWatchLineBytes ?? MAX_WATCH_LINE_BYTES;
    this.watchInactivityMs = options.watchInactivityMs ?? WATCH_INACTIVITY_MS;
    this.transportKind = options.transport ?? 'undici';
    this.connections = options.connections ?? 32;
    const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.requestTimeoutMs = requestTimeoutMs === 0 ? undefined : requestTimeoutMs;
  }

  /** From now on, tells `listener` of every request and watch event (one listener; a metric's counters). */
  listen(listener: RequestListener): void {
    this.listener = listener;
  }

  /** Loaded on first use: a process pays only for the transport it takes. */
  private transport(): Promise<Transport> {
    const kind = this.transportKind;
    this.transportPromise ??=
      typeof kind === 'string'
        ? createTransport(kind, {
            tls: this.connection.tls,
            connections: this.connections,
            // A connection that comes up is part of the request: never given longer than its deadline.
            ...(this.requestTimeoutMs !== undefined && this.requestTimeoutMs < DEFAULT_CONNECT_TIMEOUT_MS
              ? { connectTimeoutMs: this.requestTimeoutMs }
              : {}),
            ...(this.connection.proxy ? { proxy: this.connection.proxy } : {}),
          })
        : Promise.resolve(kind);
    return this.transportPromise;
  }

  private url(path: string, query?: Query): URL {
    const url = new URL(this.server + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url;
  }

  private async headers(
    contentType?: string,
    protobuf?: boolean,
  ): Promise<Record<string, string | string[]>> {
    return {
      accept: protobuf ? `${PROTOBUF_CONTENT_TYPE}, application/json` : 'application/json',
      'user-agent': this.userAgent,
      ...(contentType ? { 'content-type': contentType } : {}),
      ...(await this.connection.authHeaders()),
    };
  }

  /** One API call. Resolves with the parsed JSON body; rejects with a KubeError. */
  async request<T>(method: HttpMethod, path: string, options: RequestOptions = {}): Promise<T> {
    const what = `${method} ${path}`;
    const timeoutMs = options.timeoutMs ?? this.requestTimeoutMs;
    // No timer at all for no deadline; one that ends with the request (deadlineSignal) otherwise.
    const deadline = timeoutMs === undefined ? undefined : deadlineSignal(timeoutMs, options.signal);
    try {
      return await this.requestOnce<T>(
        method,
        path,
        what,
        options,
        // Neither a deadline nor a caller's signal: one of its own that never aborts, as every request has one.
        deadline?.signal ?? options.signal ?? new AbortController().signal,
      );
    } finally {
      deadline?.done();
    }
  }

  /** request() on `signal`: the call, its answer read and parsed. */
  private async requestOnce<T>(
    method: HttpMethod,
    path: string,
    what: string,
    options: RequestOptions,
    signal: AbortSignal,
  ): Promise<T> {
    const hasBody = options.body !== undefined;
    this.listener?.request(requestKind(method, path));
    let response: TransportResponse;
    try {
      response = await (
        await this.transport()
      ).request({
        method,
        url: this.url(path, options.query),
        headers: await this.headers(
          hasBody ? (options.contentType ?? 'application/json') : undefined,
          options.protobuf !== undefined,
        ),
        body: hasBody ? JSON.stringify(options.body) : undefined,
        signal,
      });
    } catch (err) {
      throw classifyTransportError(err, what);
    }
    const ok = response.statusCode >= 200 && response.statusCode < 300;
    if (options.protobuf && isProtobuf(response.headers['content-type'])) {
      let bytes: Buffer;
      try {
        bytes = await readBytes(response, ok ? options.maxBodyBytes : undefined, what);
      } catch (err) {
        if (err instanceof KubeError) throw err;
        throw classifyTransportError(err, what);
      }
      if (ok) {
        options.peek?.(bytes);
        return options.protobuf(bytes, what) as T;
      }
      let status: unknown;
      try {
        // Loaded by whoever passed the decoder already; imported here, not at the top, so that a program that
        // never asks for protobuf (the agent, docs/adr/0006) does not load protobufjs.
        const { decodeStatus } = await import('./protobuf.ts');
        status = decodeStatus(bytes);
      } catch {
        status = { message: `${bytes.length} bytes of protobuf that are not a Status` };
      }
      throw answerError(response, status, what);
    }
    let text: string;
    try {
      text =
        ok && options.maxBodyBytes !== undefined
          ? (await readBytes(response, options.maxBodyBytes, what)).toString('utf8')
          : await response.text();
    } catch (err) {
      if (err instanceof KubeError) throw err;
      throw classifyTransportError(err, what);
    }
    if (ok) {
      if (!text) return {} as T;
      options.peek?.(text);
      return parseJson(text, options.withoutManagedFields) as T;
    }
    let body: unknown;
    try {
      body = JSON.parse(text.slice(0, MAX_ERROR_BODY));
    } catch {
      body = { message: text.slice(0, 200) };
    }
    throw answerError(response, body, what);
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
    options: WatchOptions = {},
  ): Promise<void> {
    const what = `WATCH ${path}`;
    const local = new AbortController();
    const abortAll = (): void => local.abort(signal.reason);
    signal.addEventListener('abort', abortAll, { once: true });
    // One timer for the watch's life, pushed back on every line (refresh() allocates nothing: a busy lease
    // watch gets hundreds of lines a second).
    const inactivityMs = this.watchInactivityMs;
    const inactivity = setTimeout(
      () => local.abort(new KubeError(KubeErrorCode.Timeout, 0, `${what}: no data for ${inactivityMs} ms`)),
      inactivityMs,
    );
    inactivity.unref();
    const touch = (): void => void inactivity.refresh();
    const listener = this.listener;
    const resource = listener ? requestKind('WATCH', path).resource : '';
    try {
      touch();
      listener?.request({ verb: 'watch', resource });
      let response: TransportResponse;
      try {
        response = await this.openWatch(path, query, local.signal, options.coalesceMs);
      } catch (err) {
        if (signal.aborted) return;
        throw watchFailure(local.signal, err, what);
      }
      if (response.statusCode !== 200) throw await watchRefused(response, what);
      const lines = watchLines<T>(what, options.maxLineBytes ?? this.maxWatchLineBytes, options, (event) => {
        listener?.watchEvent(resource);
        onEvent(event);
      });
      const onChunk = (chunk: Buffer): void => {
        touch();
        lines.push(chunk);
      };
      try {
        // In the transport's own callback where it can (no promise per chunk: docs/adr/0016), else by `for await`.
        if (response.consume) await response.consume(onChunk);
        else for await (const chunk of response.body) onChunk(chunk);
        lines.end();
      } catch (err) {
        if (signal.aborted) return;
        throw err instanceof KubeError ? err : watchFailure(local.signal, err, what);
      }
    } finally {
      clearTimeout(inactivity);
      signal.removeEventListener('abort', abortAll);
      local.abort();
    }
  }

  /** Sends a watch's request; resolves with its answer, whatever its status. */
  private async openWatch(
    path: string,
    query: Query,
    signal: AbortSignal,
    coalesceMs: number | undefined,
  ): Promise<TransportResponse> {
    return (await this.transport()).request({
      method: 'GET',
      url: this.url(path, { ...query, watch: true }),
      headers: await this.headers(),
      signal,
      streaming: true,
      ...(coalesceMs ? { coalesceMs } : {}),
    });
  }

  async close(): Promise<void> {
    const transport = this.transportPromise;
    this.transportPromise = undefined;
    if (transport) await (await transport).close();
  }
}
