// How KubeClient sends an HTTP request: one small port with two implementations, loaded only when chosen.
// `undici` (undici-transport.ts) is the default, proven by the 5,000-node benchmark (controller, fleet
// simulator, CLI); `node` (node-transport.ts) uses node:http/node:https and its own bounded pool, so that a
// process that takes it (the agent, docs/adr/0006) does not load undici at all.

import type { TransportKind, Transport, TransportOptions } from './transport-port.ts';

export type {
  Transport,
  TransportKind,
  TransportOptions,
  TransportRequest,
  TransportResponse,
} from './transport-port.ts';

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
