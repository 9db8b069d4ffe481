// The narrow port the agent needs for Leases (docs/conventions.md 5), over the API; the fake with fault
// injection for unit tests is in testing.ts.

import { LEASE_NAMESPACE, type LeaseObject } from '../../api/index.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import { leasesPath } from '../../lib/kube/paths.ts';

export interface LeaseStore {
  get(name: string): Promise<LeaseObject>;
  create(lease: LeaseObject): Promise<LeaseObject>;
  /** Fails with Conflict when lease.metadata.resourceVersion is stale, NotFound when it is gone. */
  replace(lease: LeaseObject): Promise<LeaseObject>;
  delete(name: string): Promise<void>;
}

export class KubeLeaseStore implements LeaseStore {
  private readonly client: KubeClient;
  private readonly timeoutMs: number;
  private readonly namespace: string;

  constructor(client: KubeClient, timeoutMs: number, namespace = LEASE_NAMESPACE) {
    this.client = client;
    this.timeoutMs = timeoutMs;
    this.namespace = namespace;
  }

  get(name: string): Promise<LeaseObject> {
    return this.client.get<LeaseObject>(leasesPath(this.namespace, name), { timeoutMs: this.timeoutMs });
  }

  create(lease: LeaseObject): Promise<LeaseObject> {
    return this.client.request<LeaseObject>('POST', leasesPath(this.namespace), {
      body: lease,
      timeoutMs: this.timeoutMs,
    });
  }

  replace(lease: LeaseObject): Promise<LeaseObject> {
    return this.client.request<LeaseObject>('PUT', leasesPath(this.namespace, lease.metadata.name ?? ''), {
      body: lease,
      timeoutMs: this.timeoutMs,
    });
  }

  async delete(name: string): Promise<void> {
    await this.client.request('DELETE', leasesPath(this.namespace, name), { timeoutMs: this.timeoutMs });
  }
}
