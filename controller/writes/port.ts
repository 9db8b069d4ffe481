// The port every controller write goes through (NodeApi; KubeNodeApi against the API server, FakeNodeApi in
// unit tests), each request with the port's deadline and cut off when its leadership term ends, and the fence
// that a write asks first whether this replica still leads.

import type { LeaseObject } from '../../api/lease.ts';
import { PatchType, type KubeClient } from '../../lib/kube/client.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import type { NodeObject } from '../cache/index.ts';

/** Thrown by a write attempted after this replica stopped leading: the write did not go out. */
export class NotLeaderError extends Error {
  readonly code = 'NotLeader';
  constructor() {
    super('not the leader: write not sent');
    this.name = 'NotLeaderError';
  }
}

/** Called just before every write; throws NotLeaderError when this replica no longer leads. */
export type Fence = () => void;

/** The API calls the controller makes (docs/conventions.md 5). FakeNodeApi (testing.ts) is the unit-test double. */
export interface NodeApi {
  getNode(name: string): Promise<NodeObject>;
  /** JSON merge patch of the Node (metadata and spec). */
  patchNode(name: string, patch: object): Promise<NodeObject>;
  /** Strategic merge patch of nodes/status. */
  patchNodeStatus(name: string, patch: object): Promise<NodeObject>;
  getLease(namespace: string, name: string): Promise<LeaseObject>;
  createEvent(namespace: string, event: object): Promise<void>;
  /** JSON merge patch of an Event (its series, when the same event repeats). */
  patchEvent(namespace: string, name: string, patch: object): Promise<void>;
}

export interface KubeNodeApiOptions {
  /** Deadline of each request. */
  timeoutMs: number;
  /** Aborts requests in flight (the leadership term ended, or the program is stopping). */
  signal?(): AbortSignal | undefined;
}

/** One request of a controller port: with the port's deadline, cut off when its term's signal aborts. */
export function portRequest<T>(
  client: Pick<KubeClient, 'request'>,
  options: KubeNodeApiOptions,
  method: 'GET' | 'PATCH' | 'POST' | 'PUT',
  path: string,
  body?: object,
  type?: string,
): Promise<T> {
  return client.request<T>(method, path, {
    ...(body ? { body } : {}),
    ...(type ? { contentType: type } : {}),
    timeoutMs: options.timeoutMs,
    signal: options.signal?.(),
  });
}

export class KubeNodeApi implements NodeApi {
  private readonly client: Pick<KubeClient, 'request'>;
  private readonly options: KubeNodeApiOptions;

  constructor(client: Pick<KubeClient, 'request'>, options: KubeNodeApiOptions) {
    this.client = client;
    this.options = options;
  }

  private call<T>(method: 'GET' | 'PATCH' | 'POST', path: string, body?: object, type?: string): Promise<T> {
    return portRequest<T>(this.client, this.options, method, path, body, type);
  }

  getNode(name: string): Promise<NodeObject> {
    return this.call('GET', `/api/v1/nodes/${encodeURIComponent(name)}`);
  }

  patchNode(name: string, patch: object): Promise<NodeObject> {
    return this.call('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, patch, PatchType.merge);
  }

  patchNodeStatus(name: string, patch: object): Promise<NodeObject> {
    return this.call('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}/status`, patch, PatchType.strategic);
  }

  getLease(namespace: string, name: string): Promise<LeaseObject> {
    return this.call('GET', leasesPath(namespace, name));
  }

  async createEvent(namespace: string, event: object): Promise<void> {
    await this.call(
      'POST',
      `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      event,
    );
  }

  async patchEvent(namespace: string, name: string, patch: object): Promise<void> {
    await this.call(
      'PATCH',
      `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events/${encodeURIComponent(name)}`,
      patch,
      PatchType.merge,
    );
  }
}
