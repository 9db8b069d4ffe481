// The in-memory LeaseStore the agent's tests use (not part of the build).

import type { LeaseObject } from '../../api/index.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { LeaseStore } from './store.ts';

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
