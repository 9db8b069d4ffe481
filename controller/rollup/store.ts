// The API calls of the roll-up (docs/conventions.md 5), through one narrow port. ClusterHealth `cluster`: status
// is replaced through the status subresource with the resourceVersion it was computed on (optimistic: 409 when
// someone wrote meanwhile, and the writer re-reads and re-evaluates); the status label and the owned-types
// annotation go in a merge patch of the metadata carrying the same precondition. SystemExtension counts go in a
// merge patch of each object's status, which only nodecare writes. `FakeRollupApi` (testing.ts) is the
// unit-test double.

import type { PublishedPolicy } from '../../api/policy.ts';
import type { SourcedPair } from './pairs.ts';
import {
  API_GROUP,
  API_VERSION,
  CLUSTER_HEALTH,
  GROUP_VERSION,
  SYSTEM_EXTENSION,
  type RolloutPolicy,
} from '../../api/index.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { PatchType, type KubeClient } from '../../lib/kube/client.ts';
import { portRequest, type KubeNodeApiOptions } from '../writes/index.ts';
import type { RollupCondition } from './condition.ts';
import type { ExtensionCounts, MaintenanceCounts } from './evaluate.ts';
import type {
  SystemExtensionCondition,
  SystemExtensionRolloutStatus,
  SystemExtensionSpecState,
} from './extension-conditions.ts';

/** Annotation on ClusterHealth: the condition types nodecare wrote last (so it can remove one no longer used). */
export const OWNED_TYPES_ANNOTATION = 'nodecare.io/owned-condition-types';

export interface ClusterHealthStatus {
  observedAt?: string;
  conditions?: RollupCondition[];
  extensions?: ExtensionCounts[];
  maintenance?: MaintenanceCounts;
  /** The leader's effective policy (api/policy.ts), for readers that judge nodes as it does. */
  policy?: Partial<PublishedPolicy>;
}

export interface ClusterHealthObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: object;
  status?: ClusterHealthStatus;
}

/** What a SystemExtension's status says about the nodes that require it (printer columns NODES/HEALTHY/FAILING). */
export interface SystemExtensionCounts {
  /** Nodes that require the extension through this SystemExtension. */
  nodes: number;
  healthy: number;
  progressing: number;
  unhealthy: number;
  unknown: number;
  /** Neither healthy nor progressing (unhealthy + unknown): the FAILING column. */
  failing: number;
  /** The rollout on its nodes (spec.rollout; controller/rollup/extension-counts.ts rolloutStatus). */
  rollout?: SystemExtensionRolloutStatus;
  /** The metadata.generation the conditions were computed from. */
  observedGeneration?: number;
  /** Valid and InForce (controller/rollup/extension-conditions.ts), and any type another writer owns. */
  conditions?: SystemExtensionCondition[];
}

export type { SystemExtensionRolloutStatus };

export interface SystemExtensionStatusView {
  name: string;
  /** The object's resourceVersion when read: the precondition of the next status write. */
  resourceVersion: string;
  counts: SystemExtensionCounts | undefined;
}

export interface RollupApi {
  /** undefined when the object does not exist. */
  getClusterHealth(): Promise<ClusterHealthObject | undefined>;
  createClusterHealth(metadata: ClusterHealthObject['metadata']): Promise<ClusterHealthObject>;
  /** PUT of the status subresource; the object's resourceVersion is the precondition (409 when stale). */
  replaceClusterHealthStatus(object: ClusterHealthObject): Promise<ClusterHealthObject>;
  /** Merge patch of labels and annotations, with `resourceVersion` as the precondition. */
  patchClusterHealthMetadata(
    resourceVersion: string,
    metadata: { labels: Record<string, string>; annotations: Record<string, string | null> },
  ): Promise<ClusterHealthObject>;
  listSystemExtensions(): Promise<SystemExtensionStatusView[]>;
  /**
   * Merge patch of the status with `resourceVersion` as the precondition (409 when stale); resolves with the
   * object's new resourceVersion.
   */
  patchSystemExtensionStatus(
    name: string,
    resourceVersion: string,
    status: SystemExtensionCounts,
  ): Promise<string>;
  /** A Gardener `extensions.gardener.cloud/v1alpha1` Cluster; undefined when it does not exist. */
  getGardenerCluster(name: string): Promise<unknown>;
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

export class KubeRollupApi implements RollupApi {
  private readonly client: Pick<KubeClient, 'request'>;
  private readonly options: KubeNodeApiOptions;

  constructor(client: Pick<KubeClient, 'request'>, options: KubeNodeApiOptions) {
    this.client = client;
    this.options = options;
  }

  private call<T>(method: 'GET' | 'PATCH' | 'POST' | 'PUT', path: string, body?: object, type?: string) {
    return portRequest<T>(this.client, this.options, method, path, body, type);
  }

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

/** Writes on an object that keeps changing under them are retried this often, then the writer backs off. */
export const MAX_CONFLICT_RETRIES = 5;

/** What the roll-up reads: the reconciler's latest verdicts and the SystemExtensions in the cache. */
export interface RollupSource {
  pairs(): Iterable<SourcedPair>;
  systemExtensionNames(): Iterable<string>;
  /** The rollout of a SystemExtension in the cache: its policy, generation, requirement and window start. */
  systemExtensionRollout?(name: string): SystemExtensionRollout | undefined;
  /** What a SystemExtension's conditions are computed from: its generation and parsed spec. */
  systemExtensionSpec?(name: string): SystemExtensionSpecState | undefined;
}

export interface SystemExtensionRollout {
  policy: RolloutPolicy;
  generation: number;
  /** What the window belongs to (ParsedSystemExtension.requirement): recorded so a new leader keeps it. */
  requirement: string;
  startedMs: number;
}
