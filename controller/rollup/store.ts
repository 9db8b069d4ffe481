// The API calls of the roll-up (docs/conventions.md 5), through one narrow port (RollupApi; the controller's
// KubePort, controller/port.ts, against the API server). ClusterHealth `cluster`: status
// is replaced through the status subresource with the resourceVersion it was computed on (optimistic: 409 when
// someone wrote meanwhile, and the writer re-reads and re-evaluates); the status label and the owned-types
// annotation go in a merge patch of the metadata carrying the same precondition. SystemExtension counts go in a
// merge patch of each object's status, which only nodecare writes. `FakeRollupApi` (testing.ts) is the
// unit-test double.

import type { PublishedPolicy } from '../../api/policy.ts';
import type { RolloutPolicy } from '../../api/index.ts';
import type { RollupCondition } from './condition.ts';
import type { ExtensionCounts, MaintenanceCounts } from './evaluate.ts';
import type { RollupTally } from './tally.ts';
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

/** Writes on an object that keeps changing under them are retried this often, then the writer backs off. */
export const MAX_CONFLICT_RETRIES = 5;

/** What the roll-up reads: the reconciler's latest verdicts and the SystemExtensions in the cache. */
export interface RollupSource {
  /** Every (node, extension) pair as last decided, kept counted (the node book's tally). */
  tally(): RollupTally;
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
