// The narrow port the agent needs for Leases (docs/conventions.md 5): the real one over the API, a fake with fault
// injection for unit tests.

import { LEASE_NAMESPACE, type LeaseObject } from '../../api/index.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';

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
  private readonly base: string;

  constructor(client: KubeClient, timeoutMs: number, namespace = LEASE_NAMESPACE) {
    this.client = client;
    this.timeoutMs = timeoutMs;
    this.base = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
  }

  get(name: string): Promise<LeaseObject> {
    return this.client.get<LeaseObject>(`${this.base}/${name}`, { timeoutMs: this.timeoutMs });
  }

  create(lease: LeaseObject): Promise<LeaseObject> {
    return this.client.request<LeaseObject>('POST', this.base, { body: lease, timeoutMs: this.timeoutMs });
  }

  replace(lease: LeaseObject): Promise<LeaseObject> {
    return this.client.request<LeaseObject>('PUT', `${this.base}/${lease.metadata.name}`, {
      body: lease,
      timeoutMs: this.timeoutMs,
    });
  }

  async delete(name: string): Promise<void> {
    await this.client.request('DELETE', `${this.base}/${name}`, { timeoutMs: this.timeoutMs });
  }
}

type Op = 'get' | 'create' | 'replace' | 'delete';

/** In-memory LeaseStore with resourceVersion semantics and `failNext(op, error)` fault injection. */
export class FakeLeaseStore implements LeaseStore {
  readonly leases = new Map<string, LeaseObject>();
  readonly calls: Array<{ op: Op; name: string }> = [];
  private readonly faults: Array<{ op: Op; error: KubeError }> = [];
  private version = 1;

  failNext(op: Op, error: KubeError): void {
    this.faults.push({ op, error });
  }

  static conflict(): KubeError {
    return new KubeError(KubeErrorCode.Conflict, 409, 'conflict');
  }

  static error(code: KubeErrorCode, status: number): KubeError {
    return new KubeError(code, status, `injected ${status}`);
  }

  private enter(op: Op, name: string): void {
    this.calls.push({ op, name });
    const index = this.faults.findIndex((f) => f.op === op);
    if (index >= 0) {
      const [fault] = this.faults.splice(index, 1);
      throw fault?.error;
    }
  }

  private stamp(lease: LeaseObject): LeaseObject {
    const copy = structuredClone(lease);
    copy.metadata.resourceVersion = String(++this.version);
    this.leases.set(copy.metadata.name ?? '', copy);
    return structuredClone(copy);
  }

  async get(name: string): Promise<LeaseObject> {
    this.enter('get', name);
    const lease = this.leases.get(name);
    if (!lease) throw new KubeError(KubeErrorCode.NotFound, 404, `lease ${name} not found`);
    return structuredClone(lease);
  }

  async create(lease: LeaseObject): Promise<LeaseObject> {
    const name = lease.metadata.name ?? '';
    this.enter('create', name);
    if (this.leases.has(name)) throw new KubeError(KubeErrorCode.AlreadyExists, 409, `lease ${name} exists`);
    return this.stamp({ ...lease, metadata: { ...lease.metadata, resourceVersion: undefined } });
  }

  async replace(lease: LeaseObject): Promise<LeaseObject> {
    const name = lease.metadata.name ?? '';
    this.enter('replace', name);
    const current = this.leases.get(name);
    if (!current) throw new KubeError(KubeErrorCode.NotFound, 404, `lease ${name} not found`);
    const rv = lease.metadata.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion) throw FakeLeaseStore.conflict();
    return this.stamp(lease);
  }

  async delete(name: string): Promise<void> {
    this.enter('delete', name);
    if (!this.leases.delete(name))
      throw new KubeError(KubeErrorCode.NotFound, 404, `lease ${name} not found`);
  }
}
