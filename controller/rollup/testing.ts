// FakeRollupApi: the roll-up's API port over plain objects, with the API server's resourceVersion semantics
// (a stale precondition gets 409; create of an existing object gets 409 AlreadyExists) and fault injection with
// `failNext(op, error)` / `beforeNext(op, fn)`, as FakeNodeApi does for nodes (docs/conventions.md 5).

import { CLUSTER_HEALTH, GROUP_VERSION } from '../../api/index.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type {
  ClusterHealthObject,
  RollupApi,
  SystemExtensionCounts,
  SystemExtensionStatusView,
} from './store.ts';

export type RollupApiOp = keyof RollupApi;

export class FakeRollupApi implements RollupApi {
  object: ClusterHealthObject | undefined;
  readonly systemExtensions = new Map<string, SystemExtensionCounts | undefined>();
  /** Each SystemExtension's resourceVersion (set on the first read when absent). */
  readonly systemExtensionVersions = new Map<string, string>();
  gardenerCluster: unknown;
  readonly calls: RollupApiOp[] = [];
  private readonly faults: Array<{ op: RollupApiOp; error: Error }> = [];
  private readonly steps: Array<{ op: RollupApiOp; fn: () => void }> = [];
  private version = 1;

  static conflict(): KubeError {
    return new KubeError(KubeErrorCode.Conflict, 409, 'injected conflict');
  }

  failNext(op: RollupApiOp, error: Error): void {
    this.faults.push({ op, error });
  }

  /** Runs `fn` when `op` is next called, before it is answered (someone else writes meanwhile). */
  beforeNext(op: RollupApiOp, fn: () => void): void {
    this.steps.push({ op, fn });
  }

  /** Writes (not reads) that reached the fake. */
  get writes(): RollupApiOp[] {
    return this.calls.filter((op) => !op.startsWith('get') && !op.startsWith('list'));
  }

  private enter(op: RollupApiOp): void {
    this.calls.push(op);
    const step = this.steps.findIndex((s) => s.op === op);
    if (step >= 0) this.steps.splice(step, 1)[0]!.fn();
    const fault = this.faults.findIndex((f) => f.op === op);
    if (fault >= 0) throw this.faults.splice(fault, 1)[0]!.error;
  }

  /** Stores `object` as a write by someone else would (a new resourceVersion). */
  put(object: ClusterHealthObject): ClusterHealthObject {
    this.object = structuredClone({
      ...object,
      metadata: { ...object.metadata, resourceVersion: String(++this.version) },
    });
    return structuredClone(this.object);
  }

  private precondition(resourceVersion: string | undefined): ClusterHealthObject {
    if (!this.object) throw new KubeError(KubeErrorCode.NotFound, 404, 'clusterhealths "cluster" not found');
    if (resourceVersion !== this.object.metadata.resourceVersion) throw FakeRollupApi.conflict();
    return this.object;
  }

  async getClusterHealth(): Promise<ClusterHealthObject | undefined> {
    this.enter('getClusterHealth');
    return this.object && structuredClone(this.object);
  }

  async createClusterHealth(metadata: ClusterHealthObject['metadata']): Promise<ClusterHealthObject> {
    this.enter('createClusterHealth');
    if (this.object) throw new KubeError(KubeErrorCode.AlreadyExists, 409, 'already exists');
    return this.put({ apiVersion: GROUP_VERSION, kind: CLUSTER_HEALTH.kind, metadata, spec: {} });
  }

  async replaceClusterHealthStatus(object: ClusterHealthObject): Promise<ClusterHealthObject> {
    this.enter('replaceClusterHealthStatus');
    const stored = this.precondition(object.metadata.resourceVersion);
    return this.put({ ...stored, status: structuredClone(object.status ?? {}) });
  }

  async patchClusterHealthMetadata(
    resourceVersion: string,
    metadata: { labels: Record<string, string>; annotations: Record<string, string | null> },
  ): Promise<ClusterHealthObject> {
    this.enter('patchClusterHealthMetadata');
    const stored = this.precondition(resourceVersion);
    const annotations = { ...stored.metadata.annotations };
    for (const [key, value] of Object.entries(metadata.annotations)) {
      if (value === null) delete annotations[key];
      else annotations[key] = value;
    }
    return this.put({
      ...stored,
      metadata: {
        ...stored.metadata,
        labels: { ...stored.metadata.labels, ...metadata.labels },
        annotations,
      },
    });
  }

  private sxVersion(name: string): string {
    let version = this.systemExtensionVersions.get(name);
    if (version === undefined) {
      version = String(++this.version);
      this.systemExtensionVersions.set(name, version);
    }
    return version;
  }

  /** Stores a SystemExtension's counts as a write by someone else would (a new resourceVersion). */
  putSystemExtensionStatus(name: string, counts: SystemExtensionCounts | undefined): void {
    this.systemExtensions.set(name, counts && { ...counts });
    this.systemExtensionVersions.set(name, String(++this.version));
  }

  async listSystemExtensions(): Promise<SystemExtensionStatusView[]> {
    this.enter('listSystemExtensions');
    return [...this.systemExtensions].map(([name, counts]) => ({
      name,
      resourceVersion: this.sxVersion(name),
      counts: counts && { ...counts },
    }));
  }

  async patchSystemExtensionStatus(
    name: string,
    resourceVersion: string,
    status: SystemExtensionCounts,
  ): Promise<string> {
    this.enter('patchSystemExtensionStatus');
    if (!this.systemExtensions.has(name))
      throw new KubeError(KubeErrorCode.NotFound, 404, `systemextensions "${name}" not found`);
    if (resourceVersion !== this.sxVersion(name)) throw FakeRollupApi.conflict();
    this.putSystemExtensionStatus(name, status);
    return this.sxVersion(name);
  }

  async getGardenerCluster(_name: string): Promise<unknown> {
    this.enter('getGardenerCluster');
    return this.gardenerCluster;
  }
}
