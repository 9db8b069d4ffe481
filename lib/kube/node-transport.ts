// A transport on node:http/node:https with a small keep-alive pool of its own, for the agent: it has a handful
// of requests and three watches, and undici costs it ~10 MiB of its 64 MiB (docs/adr/0006).
//
// node's http.Agent is not used: under an overloaded API server it kept sockets destroyed while connecting in
// its pool, every slot filled with them and no request went out again (docs/adr/0006). This pool keeps one
// invariant instead: a socket holds a slot from the moment it is created until its 'close' event, whatever
// state it is in (connecting, busy, idle), and every way a socket can fail ends in 'close': a connection that
// is not up within connectTimeoutMs is destroyed, an idle one is destroyed after idleTimeoutMs, a request whose
// signal aborts destroys its socket. Requests beyond the limit wait for a slot; one that aborts while waiting
// leaves the queue at once.

import type { Agent, ClientRequest, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import type { SecureContext } from 'node:tls';
import type { TlsOptions } from './config.ts';
import type { Transport, TransportOptions, TransportRequest, TransportResponse } from './transport-port.ts';

// Not ES imports: those evaluate every export, node:http's lazy WebSocket ones (~12 MiB; lib/health.ts) and
// node:tls's rootCertificates (the bundled CA store, unused when the kubeconfig gives a CA).
const { request: httpRequest } = process.getBuiltinModule('node:http');
const { connect: tlsConnect, createSecureContext } = process.getBuiltinModule('node:tls');

export const CONNECT_TIMEOUT_MS = 10_000;
/** Below the API server's own idle timeout (90 s), so that it is rarely the server that closes first. */
export const IDLE_TIMEOUT_MS = 30_000;

export interface NodeTransportOptions extends TransportOptions {
  idleTimeoutMs?: number;
}

interface Origin {
  secure: boolean;
  host: string;
  port: number;
}

/**
 * The pool, in the shape node's ClientRequest expects of an agent (`addRequest`; it emits 'free' on a socket
 * whose response ended with keep-alive).
 */
export class ConnectionPool {
  readonly keepAlive = true;
  readonly protocol: 'http:' | 'https:';
  readonly defaultPort: number;
  private readonly sockets = new Set<Socket>();
  private readonly idle: Socket[] = [];
  private readonly waiting: ClientRequest[] = [];
  private readonly secureContext: SecureContext | undefined;
  private closed = false;
  readonly origin: Origin;
  private readonly tls: TlsOptions;
  private readonly maxSockets: number;
  private readonly connectTimeoutMs: number;
  private readonly idleTimeoutMs: number;

  constructor(
    origin: Origin,
    tls: TlsOptions,
    maxSockets: number,
    connectTimeoutMs: number,
    idleTimeoutMs: number,
  ) {
    this.origin = origin;
    this.tls = tls;
    this.maxSockets = maxSockets;
    this.connectTimeoutMs = connectTimeoutMs;
    this.idleTimeoutMs = idleTimeoutMs;
    this.protocol = origin.secure ? 'https:' : 'http:';
    this.defaultPort = origin.secure ? 443 : 80;
    // One secure context for every connection (not one per handshake); with a CA given, only that CA.
    this.secureContext = origin.secure
      ? createSecureContext({ ca: tls.ca, cert: tls.cert, key: tls.key })
      : undefined;
  }

  /** Sockets holding a slot (connecting, busy or idle), and requests waiting for one: for tests. */
  get stats(): { sockets: number; idle: number; waiting: number } {
    return { sockets: this.sockets.size, idle: this.idle.length, waiting: this.waiting.length };
  }

  addRequest(req: ClientRequest): void {
    if (this.closed) {
      onSocket(req, undefined, new Error('the API client is closed'));
      return;
    }
    const socket = this.idle.pop();
    if (socket) this.assign(req, socket);
    else if (this.sockets.size < this.maxSockets) this.assign(req, this.open());
    else this.waiting.push(req);
  }

  /** A request that gave up before it got a socket leaves the queue. */
  forget(req: ClientRequest): void {
    const i = this.waiting.indexOf(req);
    if (i !== -1) this.waiting.splice(i, 1);
  }

  close(): void {
    this.closed = true;
    for (const req of this.waiting.splice(0)) onSocket(req, undefined, new Error('the API client is closed'));
    for (const socket of this.sockets) socket.destroy();
  }

  private open(): Socket {
    const { secure, host, port } = this.origin;
    const socket = secure
      ? tlsConnect({
          host,
          port,
          // SNI carries names only; for an address the certificate is checked against its IP SANs.
          servername: this.tls.servername ?? (isIP(host) ? undefined : host),
          secureContext: this.secureContext,
          rejectUnauthorized: this.tls.rejectUnauthorized ?? true,
          ALPNProtocols: ['http/1.1'],
        })
      : netConnect({ host, port });
    this.sockets.add(socket);
    const deadline = setTimeout(() => {
      const err = Object.assign(new Error(`connect to ${host}:${port} timed out`), { code: 'ETIMEDOUT' });
      socket.destroy(err);
    }, this.connectTimeoutMs);
    deadline.unref();
    socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(deadline));
    socket.once('close', () => {
      clearTimeout(deadline);
      this.release(socket);
    });
    // The request attached to the socket gets its errors; between requests they only lead to 'close'.
    socket.on('error', () => {});
    socket.on('free', () => this.onFree(socket));
    socket.on('timeout', () => {
      if (this.idle.includes(socket)) socket.destroy();
    });
    socket.setKeepAlive(true, 30_000);
    socket.setNoDelay(true);
    return socket;
  }

  private assign(req: ClientRequest, socket: Socket): void {
    socket.ref();
    socket.setTimeout(0);
    onSocket(req, socket);
  }

  private onFree(socket: Socket): void {
    if (socket.destroyed || !this.sockets.has(socket)) return;
    const next = this.nextWaiting();
    if (next) {
      next.reusedSocket = true;
      this.assign(next, socket);
      return;
    }
    this.idle.push(socket);
    socket.unref();
    socket.setTimeout(this.idleTimeoutMs);
  }

  private release(socket: Socket): void {
    if (!this.sockets.delete(socket)) return;
    const i = this.idle.indexOf(socket);
    if (i !== -1) this.idle.splice(i, 1);
    // The freed slot goes to the next waiting request, on a new connection.
    const next = this.nextWaiting();
    if (next) this.assign(next, this.open());
  }

  private nextWaiting(): ClientRequest | undefined {
    let req = this.waiting.shift();
    while (req?.destroyed) req = this.waiting.shift();
    return req;
  }
}

/** ClientRequest.onSocket takes an error as its second argument (node's agent protocol; not in the types). */
function onSocket(req: ClientRequest, socket: Socket | undefined, err?: Error): void {
  (req as unknown as { onSocket(socket: Socket | undefined, err?: Error): void }).onSocket(socket, err);
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

export class NodeTransport implements Transport {
  private readonly pools = new Map<string, ConnectionPool>();
  private readonly options: NodeTransportOptions;

  constructor(options: NodeTransportOptions) {
    // Refused rather than ignored: a connection that was meant to go through a proxy must not go around it.
    if (options.proxy)
      throw new Error(
        `the node transport does not tunnel through a proxy (${options.proxy}, from the kubeconfig's proxy-url or HTTPS_PROXY); set NO_PROXY to the API server's host to connect directly`,
      );
    this.options = options;
  }

  /** The pool for an origin (one per client in practice: the API server). */
  pool(url: URL): ConnectionPool {
    let pool = this.pools.get(url.origin);
    if (!pool) {
      const secure = url.protocol === 'https:';
      if (!secure && url.protocol !== 'http:') throw new Error(`unsupported URL scheme ${url.protocol}`);
      pool = new ConnectionPool(
        {
          secure,
          host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
          port: Number(url.port) || (secure ? 443 : 80),
        },
        this.options.tls,
        this.options.connections,
        this.options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
        this.options.idleTimeoutMs ?? IDLE_TIMEOUT_MS,
      );
      this.pools.set(url.origin, pool);
    }
    return pool;
  }

  request(req: TransportRequest): Promise<TransportResponse> {
    const { signal } = req;
    if (signal.aborted) return Promise.reject(abortReason(signal));
    const pool = this.pool(req.url);
    const headers: Record<string, string | string[] | number> = { ...req.headers };
    if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body);
    return new Promise<TransportResponse>((resolve, reject) => {
      const send = req.url.protocol === 'https:' ? httpsRequest : httpRequest;
      let response: IncomingMessage | undefined;
      const out = send({
        method: req.method,
        host: pool.origin.host,
        port: pool.origin.port,
        path: req.url.pathname + req.url.search,
        headers,
        agent: pool as unknown as Agent, // duck-typed: ClientRequest only calls addRequest
      });
      const onAbort = (): void => {
        const reason = abortReason(signal);
        pool.forget(out);
        // Destroying the request destroys its socket (freeing the slot) and fails a body being read.
        response?.destroy(reason as Error);
        out.destroy(reason as Error);
        reject(reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      // `on`, not `once`: a socket error after the response has begun reaches the request too, and an
      // 'error' without a listener would end the process. The promise settles once; later calls do nothing.
      out.on('error', (err) => {
        signal.removeEventListener('abort', onAbort);
        reject(signal.aborted ? abortReason(signal) : err);
      });
      out.once('response', (res: IncomingMessage) => {
        response = res;
        res.once('close', () => signal.removeEventListener('abort', onAbort));
        // A reset while nobody reads the body must not end the process; a reader sees the error itself.
        res.on('error', () => {});
        const body = readBody(res, signal);
        const coalesceMs = req.streaming ? (req.coalesceMs ?? 0) : 0;
        resolve({
          statusCode: res.statusCode ?? 0,
          headers: res.headers,
          body,
          text: async () => {
            const chunks: Buffer[] = [];
            for await (const chunk of body) chunks.push(chunk);
            return Buffer.concat(chunks).toString('utf8');
          },
          consume: (onChunk) => consumeBody(res, signal, coalesceMs, onChunk),
        });
      });
      out.end(req.body);
    });
  }

  async close(): Promise<void> {
    for (const pool of this.pools.values()) pool.close();
    this.pools.clear();
  }
}

/** The response body; an abort surfaces as the signal's reason rather than as the reset it causes. */
async function* readBody(res: IncomingMessage, signal: AbortSignal): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of res) yield chunk as Buffer;
  } catch (err) {
    throw signal.aborted ? abortReason(signal) : err;
  }
}

/**
 * TransportResponse.consume: each chunk to `onChunk` from the response's own 'data' event (no promise per
 * chunk). With `coalesceMs`, a stream read in batches as the undici transport reads it (CoalescedBody there):
 * a chunk that arrives while the stream flows is handed on and pauses the response for `coalesceMs`. Paused,
 * the response buffers up to its high-water mark and then stops reading its socket, so what arrives meanwhile
 * waits in the kernel; on resume all of it is read and handed on in that turn of the event loop (until
 * setImmediate), and the next chunk after that pauses the stream again. An event after a quiet spell is
 * handed on at once, one during a pause at most `coalesceMs` later. A throw from `onChunk` destroys the
 * response and rejects with what it threw; an abort rejects with the signal's reason.
 */
function consumeBody(
  res: IncomingMessage,
  signal: AbortSignal,
  coalesceMs: number,
  onChunk: (chunk: Buffer) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let state: 'flowing' | 'paused' | 'draining' = 'flowing';
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (err?: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      res.off('data', onData);
      if (err === undefined) resolve();
      else reject(signal.aborted ? abortReason(signal) : err);
    };
    const onData = (chunk: Buffer): void => {
      try {
        onChunk(chunk);
      } catch (err) {
        finish(err);
        res.destroy(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      if (coalesceMs <= 0 || state !== 'flowing') return;
      state = 'paused';
      res.pause();
      timer = setTimeout(() => {
        timer = undefined;
        state = 'draining';
        res.resume();
        setImmediate(() => (state = 'flowing'));
      }, coalesceMs);
    };
    res.on('data', onData);
    res.once('end', () => finish());
    res.once('error', (err) => finish(err));
    // A response destroyed without an error (the socket closed under it) ends neither way.
    res.once('close', () => {
      if (!res.complete) finish(new Error('the response closed before its end'));
      else finish();
    });
  });
}
