// The one Lease port (docs/conventions.md 5): get, create, replace (renew, take over, release) and delete a
// coordination.k8s.io/v1 Lease, each request with its own deadline, and watch one Lease by name. The agent's
// lease writer and the controller's leader election both go through it; FakeLeaseStore (lib/kube/testing.ts)
// is its one fake.

import type { LeaseObject } from '../../api/lease.ts';
import { systemClock, type Clock } from '../clock.ts';
import type { KubeClient } from './client.ts';
import { leasesPath } from './paths.ts';
import { Reflector } from './reflector.ts';

export interface LeaseCallOptions {
  /** Deadline of this one request. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface LeaseStore {
  get(namespace: string, name: string, options: LeaseCallOptions): Promise<LeaseObject>;
  /** Fails with AlreadyExists when someone created it first. */
  create(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject>;
  /** Fails with Conflict when lease.metadata.resourceVersion is stale, NotFound when it is gone. */
  replace(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject>;
  delete(namespace: string, name: string, options: LeaseCallOptions): Promise<void>;
  /**
   * Tells `handlers` of the Lease as it is now and of every change to it (undefined: deleted or absent),
   * until `signal` aborts; resolves then. Failures are retried within (and reported to `handlers.error`).
   * The same version may be told more than once (after a relist).
   */
  watch(namespace: string, name: string, handlers: LeaseWatchHandlers, signal: AbortSignal): Promise<void>;
}

export interface LeaseWatchHandlers {
  changed(lease: LeaseObject | undefined): void;
  error?(err: unknown): void;
}

/** Resolves when `signal` aborts (at once when it has): how a watch of the port lasts until it is stopped. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** The Lease port over the API server. */
export class KubeLeaseStore implements LeaseStore {
  private readonly client: KubeClient;
  private readonly clock: Clock;

  constructor(client: KubeClient, clock: Clock = systemClock) {
    this.client = client;
    this.clock = clock;
  }

  get(namespace: string, name: string, options: LeaseCallOptions): Promise<LeaseObject> {
    return this.client.request<LeaseObject>('GET', leasesPath(namespace, name), options);
  }

  create(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject> {
    const path = leasesPath(lease.metadata.namespace ?? '');
    return this.client.request<LeaseObject>('POST', path, { ...options, body: lease });
  }

  replace(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject> {
    const path = leasesPath(lease.metadata.namespace ?? '', lease.metadata.name ?? '');
    return this.client.request<LeaseObject>('PUT', path, { ...options, body: lease });
  }

  async delete(namespace: string, name: string, options: LeaseCallOptions): Promise<void> {
    await this.client.request('DELETE', leasesPath(namespace, name), options);
  }

  /** A reflector over the one Lease (a field selector on its name: RBAC can grant list and watch by name). */
  async watch(
    namespace: string,
    name: string,
    handlers: LeaseWatchHandlers,
    signal: AbortSignal,
  ): Promise<void> {
    if (signal.aborted) return;
    const reflector = new Reflector<LeaseObject, LeaseObject>({
      client: this.client,
      clock: this.clock,
      path: leasesPath(namespace),
      fieldSelector: `metadata.name=${name}`,
      transform: (raw) => raw,
      handlers: {
        added: (lease) => handlers.changed(lease),
        updated: (lease) => handlers.changed(lease),
        deleted: () => handlers.changed(undefined),
        error: (err) => handlers.error?.(err),
      },
    });
    reflector.start();
    await untilAborted(signal);
    await reflector.stop();
  }
}

/** The Leases of one namespace, each request with the same deadline: what the agent writes through. */
export interface NamespacedLeases {
  get(name: string): Promise<LeaseObject>;
  create(lease: LeaseObject): Promise<LeaseObject>;
  replace(lease: LeaseObject): Promise<LeaseObject>;
  delete(name: string): Promise<void>;
}

export function namespacedLeases(store: LeaseStore, namespace: string, timeoutMs: number): NamespacedLeases {
  const options = { timeoutMs };
  const inNamespace = (lease: LeaseObject): LeaseObject => ({
    ...lease,
    metadata: { ...lease.metadata, namespace },
  });
  return {
    get: (name) => store.get(namespace, name, options),
    create: (lease) => store.create(inNamespace(lease), options),
    replace: (lease) => store.replace(inNamespace(lease), options),
    delete: (name) => store.delete(namespace, name, options),
  };
}
