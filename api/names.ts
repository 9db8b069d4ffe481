// Fixed names of the nodecare contract (docs/design.md section 1). Users, other tools and our acceptance tests rely on
// these strings; change them only with a migration note.

export const API_GROUP = 'nodecare.io';
export const API_VERSION = 'v1alpha1';
export const GROUP_VERSION = `${API_GROUP}/${API_VERSION}`;

export const SYSTEM_EXTENSION = {
  kind: 'SystemExtension',
  plural: 'systemextensions',
  shortName: 'sx',
} as const;
export const CLUSTER_HEALTH = { kind: 'ClusterHealth', plural: 'clusterhealths', name: 'cluster' } as const;

export const COMPONENT_NAMESPACE = 'nodecare-system';
export const LEASE_NAMESPACE = 'nodecare-leases';

/** Node annotation prefix that registers an extension: `extensions.nodecare.io/<extension-name>`. */
export const EXTENSION_ANNOTATION_PREFIX = 'extensions.nodecare.io/';

export const LeaseAnnotation = {
  state: 'nodecare.io/state',
  node: 'nodecare.io/node',
  reason: 'nodecare.io/reason',
  message: 'nodecare.io/message',
  since: 'nodecare.io/since',
  /** The node's status.nodeInfo.bootID when the agent wrote the lease (a reboot invalidates old results). */
  bootId: 'nodecare.io/boot-id',
} as const;

/** Node annotations the controller owns. */
export const NodeAnnotation = {
  /** The bootID for which the controller completed bootstrap; a different bootID means the node rebooted. */
  bootstrappedBootId: 'nodecare.io/bootstrapped-boot-id',
  /**
   * Present (its value the cause) while nodecare has reported the node's maintenance (MaintenanceStarted) and
   * not yet its end: what a new leader reads to say each once per spell (controller/decide/maintenance.ts).
   */
  maintenance: 'nodecare.io/maintenance',
} as const;

/**
 * Node annotations a person writes to override nodecare on one node (docs/operations.md, "Release a held
 * node"); the controller reads them and never writes them (controller/decide/override.ts).
 */
export const NodeOverrideAnnotation = {
  /**
   * An RFC 3339 time at most MAX_RELEASE_SECONDS ahead: until then the controller itself lifts its bootstrap
   * and runtime taints from the node, then resumes. Expired, malformed or too far ahead: reported and ignored.
   */
  releaseUntil: 'nodecare.io/release-until',
  /** Why (free text, shown in events and explain); optional. */
  releaseReason: 'nodecare.io/release-reason',
} as const;

/** The longest a release may run: 24 hours from the controller's reading of it. */
export const MAX_RELEASE_SECONDS = 24 * 60 * 60;

export const LeaseLabel = {
  /** On extension leases: the extension's name. */
  extension: 'nodecare.io/extension',
  /** On every nodecare lease: `extension` or `agent` (the agent's own heartbeat). */
  role: 'nodecare.io/role',
} as const;

export const LeaseRole = { extension: 'extension', agent: 'agent' } as const;
export type LeaseRole = (typeof LeaseRole)[keyof typeof LeaseRole];

export const DEFAULT_BOOTSTRAP_TAINT_KEY = 'startup-taint.cluster-autoscaler.kubernetes.io/meta-readiness';
export const DEFAULT_RUNTIME_TAINT_KEY = 'status-taint.cluster-autoscaler.kubernetes.io/meta-readiness';

/**
 * The values nodecare gives its taints, so that whoever reads a node's taints (`kubectl describe node`, the
 * autoscalers' logs, FailedScheduling on Kubernetes versions that still print the taint) sees who holds the
 * node and why. Fixed, whatever the keys: the Cluster Autoscaler goes by the key's prefix and Karpenter
 * matches startup taints by key and effect, so neither reads them. A taint of either key and effect
 * NoSchedule with another value, or none (a Karpenter `startupTaints` entry, a kubelet
 * `--register-with-taints` written without a value), is nodecare's too: recognised, kept as it is while
 * wanted (no write just to change a value), removed when not.
 */
export const BOOTSTRAP_TAINT_VALUE = 'nodecare.io-extensions-not-ready';
export const RUNTIME_TAINT_VALUE = 'nodecare.io-extension-unhealthy';

/**
 * Opts a DaemonSet, or every DaemonSet of a namespace, out of the MutatingAdmissionPolicy that adds
 * nodecare's tolerations (manifests/components/extension-daemonset-tolerations): the label with the value
 * `"false"` on the DaemonSet or on its Namespace.
 */
export const INJECT_TOLERATIONS_LABEL = 'nodecare.io/inject-tolerations';

/**
 * The nodes nodecare manages by default: every node but Windows and virtual-kubelet nodes, where the agent
 * cannot run (the agent DaemonSet's node affinity and the bootstrap-taint admission policy exclude the same).
 */
export const DEFAULT_NODE_SELECTOR = 'kubernetes.io/os!=windows,type!=virtual-kubelet';

export const NODE_CONDITION_TYPE = 'ExtensionsReady';
export const NODE_STATUS_LABEL = 'nodecare.io/status';

export const NodeStatusLabelValue = {
  healthy: 'healthy',
  progressing: 'progressing',
  unhealthy: 'unhealthy',
  unknown: 'unknown',
  /** The node is in maintenance (cordoned, drained, shutting down, deleted) and not every extension is Healthy. */
  maintenance: 'maintenance',
} as const;
export type NodeStatusLabelValue = (typeof NodeStatusLabelValue)[keyof typeof NodeStatusLabelValue];

/** Extension health as carried by a Lease (`nodecare.io/state`). */
export const ExtensionState = {
  Healthy: 'Healthy',
  Unhealthy: 'Unhealthy',
  Progressing: 'Progressing',
  Unknown: 'Unknown',
} as const;
export type ExtensionState = (typeof ExtensionState)[keyof typeof ExtensionState];
export const EXTENSION_STATES: readonly ExtensionState[] = Object.values(ExtensionState);

export function isExtensionState(value: unknown): value is ExtensionState {
  return typeof value === 'string' && (EXTENSION_STATES as readonly string[]).includes(value);
}
