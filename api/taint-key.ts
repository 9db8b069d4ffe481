// Which taint keys nodecare may own (--bootstrap-taint-key, --runtime-taint-key, and the chart's
// taints.bootstrapKey and taints.runtimeKey, whose schema pattern spells the same rule): a valid key, and not
// one Kubernetes owns. nodecare removes its taints from nodes it finds healthy, so a key such as
// node.kubernetes.io/not-ready would have it remove the node lifecycle controller's taint from Ready nodes.

/** A taint key as the API server validates it: an optional DNS subdomain prefix and a name. */
const TAINT_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Domains Kubernetes owns, with every subdomain (node.kubernetes.io, node-role.kubernetes.io, node.k8s.io). */
export const RESERVED_TAINT_DOMAINS = ['kubernetes.io', 'k8s.io'] as const;

/**
 * The Cluster Autoscaler's prefixes, below kubernetes.io, that nodecare uses on purpose (docs/install.md,
 * "Cluster Autoscaler and Karpenter"): a startup taint (the older ignore-taint spelling too) and a status taint.
 */
export const CLUSTER_AUTOSCALER_TAINT_PREFIXES = [
  'startup-taint.cluster-autoscaler.kubernetes.io/',
  'status-taint.cluster-autoscaler.kubernetes.io/',
  'ignore-taint.cluster-autoscaler.kubernetes.io/',
] as const;

/** Why `key` cannot be one of nodecare's taint keys, or undefined when it can. */
export function taintKeyProblem(key: string): string | undefined {
  if (!TAINT_KEY.test(key)) return 'is not a valid taint key';
  const slash = key.indexOf('/');
  if (slash < 0) return undefined;
  const domain = key.slice(0, slash);
  const reserved = RESERVED_TAINT_DOMAINS.find((d) => domain === d || domain.endsWith(`.${d}`));
  if (!reserved || CLUSTER_AUTOSCALER_TAINT_PREFIXES.some((p) => key.startsWith(p))) return undefined;
  return `has a prefix Kubernetes owns (${reserved} and its subdomains; nodecare would remove Kubernetes' own taints), and is not one of the Cluster Autoscaler's (${CLUSTER_AUTOSCALER_TAINT_PREFIXES.join(', ')})`;
}
