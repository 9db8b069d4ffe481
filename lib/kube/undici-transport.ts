// The default transport: one keep-alive undici dispatcher. undici bounds connecting with its own timeout and
// frees the slot of a failed connection, which kept the 5,000-node benchmark's simulator going when the API
// server was too slow to accept connections (docs/adr/0006).

import { Agent, ProxyAgent, request, type Dispatcher } from 'undici';
import type { Transport, TransportOptions, TransportRequest, TransportResponse } from './transport-port.ts';

/**
 * A socket buffers no more than the read in hand: when a coalesced stream pauses (CoalescedBody), the socket
 * stops reading too and the kernel keeps what arrives, instead of the socket reading on, one wake-up per event,
 * until 16 KiB are buffered. undici passes it to net.connect/tls.connect (its option types do not list it), and
 * drains a socket in a loop while the response is not paused.
 */
const SOCKET_BUFFERING = { highWaterMark: 1 };

/** Chunks a coalesced stream holds unread before it stays paused until they are read. */
const MAX_QUEUED_CHUNKS = 1024;

export class UndiciTransport implements Transport {
  private readonly dispatcher: Dispatcher;

  constructor(options: TransportOptions) {
    const connect = {
      ...options.tls,
      keepAlive: true,
      keepAliveInitialDelay: 30_000,
      ...SOCKET_BUFFERING,
      ...(options.connectTimeoutMs === undefined ? {} : { timeout: options.connectTimeoutMs }),
    };
    if (options.proxy) {
      // To an https:// server, a tunnel (CONNECT) per connection with TLS to the API server inside it; to an
      // http:// one, requests forwarded by the proxy: as Go's net/http, and so kubectl.
      this.dispatcher = new ProxyAgent({
        uri: options.proxy,
        requestTls: connect,
        ...(options.connectTimeoutMs === undefined ? {} : { connectTimeout: options.connectTimeoutMs }),
        connections: options.connections,
        keepAliveTimeout: 60_000,
        allowH2: false,
      });
      return;
    }
    this.dispatcher = new Agent({
      connect,
      keepAliveTimeout: 60_000,
      connections: options.connections,
      // HTTP/1.1, a pool of `connections`: undici 8 negotiates HTTP/2 by default, which puts every watch and
      // every request on one connection, and under load node's HTTP/2 session buffered outgoing data without
      // bound (the 5,000-node benchmark's simulator went from 0.6 to 18 GB and was OOM-killed; docs/adr/0006).
      allowH2: false,
    });
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    if (req.streaming && req.coalesceMs !== undefined && req.coalesceMs > 0) return this.coalesced(req);
    const response = await settledByAbort(
      request(req.url, {
        method: req.method as Dispatcher.HttpMethod,
        dispatcher: this.dispatcher,
        headers: req.headers,
        body: req.body,
        signal: req.signal,
        ...(req.streaming ? { bodyTimeout: 0 } : {}),
      }),
      req.signal,
    );
    return {
      statusCode: response.statusCode,
      headers: response.headers,
      body: response.body,
      text: () => response.body.text(),
    };
  }

  /**
   * A stream read in batches (TransportRequest.coalesceMs), on undici's dispatch API: its controller pauses
   * the response and resumes it, which `request()`'s body stream does not expose.
   */
  private coalesced(req: TransportRequest): Promise<TransportResponse> {
    const coalesceMs = req.coalesceMs ?? 0;
    return new Promise<TransportResponse>((resolve, reject) => {
      let body: CoalescedBody | undefined;
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(controller) {
          const abort = (): void => controller.abort(abortReason(req.signal));
          if (req.signal.aborted) return abort();
          req.signal.addEventListener('abort', abort, { once: true });
          body = new CoalescedBody(controller, coalesceMs, () =>
            req.signal.removeEventListener('abort', abort),
          );
        },
        onResponseStart(_controller, statusCode, headers) {
          const b = body as CoalescedBody;
          resolve({
            statusCode,
            headers,
            body: b,
            text: () => b.text(),
            consume: (onChunk) => b.consume(onChunk),
          });
        },
        onResponseData(_controller, chunk) {
          body?.push(chunk);
        },
        onResponseEnd() {
          body?.end();
        },
        onResponseError(_controller, err) {
          body?.fail(err);
          reject(err); // a no-op once the response has started: its body carries the error
        },
      };
      this.dispatcher.dispatch(
        {
          origin: req.url.origin,
          path: req.url.pathname + req.url.search,
          method: req.method as Dispatcher.HttpMethod,
          headers: req.headers,
          ...(req.body !== undefined ? { body: req.body } : {}),
          bodyTimeout: 0,
        },
        handler,
      );
    });
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}

/**
 * `pending`, or the signal's reason as soon as it aborts: undici does not end a TLS handshake in progress when
 * the signal aborts, and would settle only at its connect timeout (kubectl nodecare --request-timeout=1s
 * against a server that accepts and never answers took 10 s: test/integration/cli-connection.test.ts). What
 * undici settles later is discarded.
 */
function settledByAbort<T extends { body: { destroy(): unknown } }>(
  pending: Promise<T>,
  signal: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = (): void => {
      reject(abortReason(signal));
      pending.then(
        (late) => late.body.destroy(),
        () => undefined,
      );
    };
    signal.addEventListener('abort', abort, { once: true });
    pending.then(
      (response) => {
        signal.removeEventListener('abort', abort);
        resolve(response);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err as Error);
      },
    );
  });
}

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
}

/**
 * The body of a coalesced stream, as the chunks undici parsed. A chunk that arrives while the stream flows is
 * handed on and pauses the response for `coalesceMs` (undici reads the pause when the chunk's handler returns,
 * so its parser stops after that chunk): undici stops reading the socket, the socket (high-water mark 1) stops
 * reading from the kernel, and what arrives meanwhile stays there. On resume everything that came is read
 * and handed on in that turn of the event loop (a handful of reads, not one per event); the next chunk after
 * it pauses the stream again. So an event after a quiet spell is handed on at once and one that arrives
 * during a pause at most `coalesceMs` later. Consumed by one `for await` or one `consume()` (each chunk handed
 * on from undici's own callback); leaving it early (break, throw) aborts the request.
 */
class CoalescedBody implements AsyncIterable<Buffer> {
  private readonly controller: Dispatcher.DispatchController;
  private readonly coalesceMs: number;
  private readonly done: () => void;
  private readonly chunks: Buffer[] = [];
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;
  /** 'flowing': the next chunk pauses the stream; 'paused': until resumeTimer; 'draining': this turn. */
  private state: 'flowing' | 'paused' | 'draining' = 'flowing';
  /** Paused past its window because MAX_QUEUED_CHUNKS are unread: resumed when they are. */
  private heldBack = false;
  private resumeTimer: NodeJS.Timeout | undefined;
  /** consume()'s reader, which takes each chunk as it comes instead of the queue. */
  private sink: ((chunk: Buffer) => void) | undefined;
  private settle: { resolve: () => void; reject: (err: Error) => void } | undefined;

  constructor(controller: Dispatcher.DispatchController, coalesceMs: number, done: () => void) {
    this.controller = controller;
    this.coalesceMs = coalesceMs;
    this.done = done;
  }

  push(chunk: Buffer): void {
    if (this.sink) this.deliver(chunk);
    else {
      this.chunks.push(chunk);
      this.notify();
    }
    if (this.state !== 'flowing' || this.ended) return;
    this.state = 'paused';
    this.controller.pause();
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined;
      if (this.chunks.length >= MAX_QUEUED_CHUNKS) this.heldBack = true;
      else this.resume();
    }, this.coalesceMs);
  }

  end(): void {
    this.finish();
    this.notify();
    this.settle?.resolve();
  }

  fail(err: Error): void {
    this.error ??= err;
    this.finish();
    this.notify();
    this.settle?.reject(this.error);
  }

  /** TransportResponse.consume: what came before it first, then every chunk as undici hands it over. */
  consume(onChunk: (chunk: Buffer) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
      this.sink = onChunk;
      for (let chunk = this.chunks.shift(); chunk !== undefined && this.sink; chunk = this.chunks.shift())
        this.deliver(chunk);
      if (this.heldBack) {
        this.heldBack = false;
        this.resume();
      }
      if (this.error) reject(this.error);
      else if (this.ended) resolve();
    });
  }

  /** One chunk to consume()'s reader; a throw there ends the stream with it. */
  private deliver(chunk: Buffer): void {
    const sink = this.sink as (chunk: Buffer) => void;
    try {
      sink(chunk);
    } catch (err) {
      this.sink = undefined;
      const error = err instanceof Error ? err : new Error(String(err));
      this.fail(error);
      this.controller.abort(error);
    }
  }

  async text(): Promise<string> {
    const parts: Buffer[] = [];
    for await (const chunk of this) parts.push(chunk);
    return Buffer.concat(parts).toString('utf8');
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const chunk = this.chunks.shift();
        if (chunk !== undefined) {
          if (this.heldBack && this.chunks.length === 0) {
            this.heldBack = false;
            this.resume();
          }
          yield chunk;
          continue;
        }
        if (this.error) throw this.error;
        if (this.ended) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      if (!this.ended) {
        this.finish();
        this.controller.abort(new Error('the stream was left before its end'));
      }
    }
  }

  /** Reads what came during the pause, all of it in this turn of the event loop; then flows again. */
  private resume(): void {
    if (this.ended) return;
    this.state = 'draining';
    this.controller.resume();
    setImmediate(() => {
      if (this.state === 'draining') this.state = 'flowing';
    });
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.resumeTimer);
    this.done();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
