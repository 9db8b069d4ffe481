// The one Lease port (docs/conventions.md 5): get, create, replace (renew, take over, release) and delete a
// coordination.k8s.io/v1 Lease, each request with its own deadline. The agent's lease writer and the
// controller's leader election both go through it; FakeLeaseStore (lib/kube/testing.ts) is its one fake.

import type { LeaseObject } from '../../api/lease.ts';
import type { KubeClient } from './client.ts';
import { leasesPath } from './paths.ts';

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
}

/** The Lease port over the API server. */
export class KubeLeaseStore implements LeaseStore {
  private readonly client: Pick<KubeClient, 'request'>;

  constructor(client: Pick<KubeClient, 'request'>) {
    this.client = client;
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
