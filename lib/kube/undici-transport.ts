// The default transport: one keep-alive undici dispatcher. undici bounds connecting with its own timeout and
// frees the slot of a failed connection, which kept the 5,000-node benchmark's simulator going when the API
// server was too slow to accept connections (docs/adr/0006).

import { Agent, request, type Dispatcher } from 'undici';
import type { Transport, TransportOptions, TransportRequest, TransportResponse } from './transport-port.ts';

export class UndiciTransport implements Transport {
  private readonly dispatcher: Dispatcher;

  constructor(options: TransportOptions) {
    this.dispatcher = new Agent({
      connect: { ...options.tls, keepAlive: true, keepAliveInitialDelay: 30_000 },
      keepAliveTimeout: 60_000,
      connections: options.connections,
      // HTTP/1.1, a pool of `connections`: undici 8 negotiates HTTP/2 by default, which puts every watch and
      // every request on one connection, and under load node's HTTP/2 session buffered outgoing data without
      // bound (the 5,000-node benchmark's simulator went from 0.6 to 18 GB and was OOM-killed; docs/adr/0006).
      allowH2: false,
    });
  }

  async request(req: TransportRequest): Promise<TransportResponse> {
    const response = await request(req.url, {
      method: req.method as Dispatcher.HttpMethod,
      dispatcher: this.dispatcher,
      headers: req.headers,
      body: req.body,
      signal: req.signal,
      ...(req.streaming ? { bodyTimeout: 0 } : {}),
    });
    return {
      statusCode: response.statusCode,
      headers: response.headers,
      body: response.body,
      text: () => response.body.text(),
    };
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }
}
