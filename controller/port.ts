// The controller's one port to the API server: every request it makes as leader (the node writers', the
// roll-up's, the evictor's) goes out here with the port's deadline, is cut off when the leadership term ends,
// and, when it writes, asks the fence first whether this replica still leads (a NotLeaderError rejects it
// unsent). The rooms see only the interface they need: NodeApi (writes/), RollupApi (rollup/) and a
// KubeClient-shaped `request` for the evictor's reads and evictions (eviction/). Their unit-test doubles are
// FakeNodeApi and FakeRollupApi (testing.ts).

import { API_GROUP, API_VERSION, CLUSTER_HEALTH, GROUP_VERSION, SYSTEM_EXTENSION } from '../api/index.ts';
import type { LeaseObject } from '../api/lease.ts';
import { PatchType, type HttpMethod, type KubeClient, type RequestOptions } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import type { NodeObject } from './cache/index.ts';
import type {
  ClusterHealthObject,
  RollupApi,
  SystemExtensionCounts,
  SystemExtensionStatusView,
} from './rollup/index.ts';
import type { Fence, NodeApi } from './writes/index.ts';

export interface KubePortOptions {
  /** Deadline of each request. */
  timeoutMs: number;
  /** Aborts requests in flight (the leadership term ended, or the program is stopping). */
  signal?(): AbortSignal | undefined;
  /** Asked before every write (not before a GET); throws NotLeaderError when this replica no longer leads. */
  fence?: Fence;
}

const CLUSTER_HEALTH_PATH = `/apis/${API_GROUP}/${API_VERSION}/${CLUSTER_HEALTH.plural}`;
const SYSTEM_EXTENSIONS_PATH = `/apis/${API_GROUP}/${API_VERSION}/${SYSTEM_EXTENSION.plural}`;
const GARDENER_CLUSTERS_PATH = '/apis/extensions.gardener.cloud/v1alpha1/clusters';

interface SystemExtensionListItem {
  metadata: { name: string; resourceVersion?: string };
  status?: Partial<SystemExtensionCounts>;
}

function countsOf(status: Partial<SystemExtensionCounts> | undefined): SystemExtensionCounts | undefined {
  if (!status || typeof status.nodes !== 'number') return undefined;
  const n = (v: unknown): number => (typeof v === 'number' ? v : 0);
  return {
    nodes: status.nodes,
    healthy: n(status.healthy),
    progressing: n(status.progressing),
    unhealthy: n(status.unhealthy),
    unknown: n(status.unknown),
    failing: n(status.failing),
    ...(status.rollout ? { rollout: status.rollout } : {}),
    ...(typeof status.observedGeneration === 'number'
      ? { observedGeneration: status.observedGeneration }
      : {}),
    ...(Array.isArray(status.conditions) ? { conditions: status.conditions } : {}),
  };
}

export class KubePort implements NodeApi, RollupApi, Pick<KubeClient, 'request'> {
  private readonly client: Pick<KubeClient, 'request'>;
  private readonly options: KubePortOptions;

  constructor(client: Pick<KubeClient, 'request'>, options: KubePortOptions) {
    this.client = client;
    this.options = options;
  }

  /** KubeClient's request with the port's deadline and term signal (a caller's own win); a write is fenced. */
  async request<T>(method: HttpMethod, path: string, options: RequestOptions = {}): Promise<T> {
    if (method !== 'GET' && method !== 'HEAD') this.options.fence?.();
    const signal = options.signal ?? this.options.signal?.();
    return this.client.request<T>(method, path, {
      timeoutMs: this.options.timeoutMs,
      ...options,
      ...(signal ? { signal } : {}),
    });
  }

  private call<T>(method: HttpMethod, path: string, body?: object, type?: string): Promise<T> {
    return this.request<T>(method, path, {
      ...(body ? { body } : {}),
      ...(type ? { contentType: type } : {}),
    });
  }

  // NodeApi: the node writers and their events.

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

  // RollupApi: ClusterHealth, SystemExtension counts, the Gardener Cluster.

  private async getOrUndefined<T>(path: string): Promise<T | undefined> {
    try {
      return await this.call<T>('GET', path);
    } catch (err) {
      if (isKubeError(err, KubeErrorCode.NotFound)) return undefined;
      throw err;
    }
  }

  getClusterHealth(): Promise<ClusterHealthObject | undefined> {
    return this.getOrUndefined(`${CLUSTER_HEALTH_PATH}/${CLUSTER_HEALTH.name}`);
  }

  createClusterHealth(metadata: ClusterHealthObject['metadata']): Promise<ClusterHealthObject> {
    return this.call('POST', CLUSTER_HEALTH_PATH, {
      apiVersion: GROUP_VERSION,
      kind: CLUSTER_HEALTH.kind,
      metadata,
      spec: {},
    });
  }

  replaceClusterHealthStatus(object: ClusterHealthObject): Promise<ClusterHealthObject> {
    return this.call('PUT', `${CLUSTER_HEALTH_PATH}/${CLUSTER_HEALTH.name}/status`, object);
  }

  patchClusterHealthMetadata(
    resourceVersion: string,
    metadata: { labels: Record<string, string>; annotations: Record<string, string | null> },
  ): Promise<ClusterHealthObject> {
    return this.call(
      'PATCH',
      `${CLUSTER_HEALTH_PATH}/${CLUSTER_HEALTH.name}`,
      { metadata: { resourceVersion, ...metadata } },
      PatchType.merge,
    );
  }

  async listSystemExtensions(): Promise<SystemExtensionStatusView[]> {
    const list = await this.call<{ items?: SystemExtensionListItem[] }>('GET', SYSTEM_EXTENSIONS_PATH);
    return (list.items ?? []).map((item) => ({
      name: item.metadata.name,
      resourceVersion: item.metadata.resourceVersion ?? '',
      counts: countsOf(item.status),
    }));
  }

  async patchSystemExtensionStatus(
    name: string,
    resourceVersion: string,
    status: SystemExtensionCounts,
  ): Promise<string> {
    const written = await this.call<SystemExtensionListItem>(
      'PATCH',
      `${SYSTEM_EXTENSIONS_PATH}/${encodeURIComponent(name)}/status`,
      { metadata: { resourceVersion }, status },
      PatchType.merge,
    );
    return written.metadata.resourceVersion ?? '';
  }

  getGardenerCluster(name: string): Promise<unknown> {
    return this.getOrUndefined(`${GARDENER_CLUSTERS_PATH}/${encodeURIComponent(name)}`);
  }
}
