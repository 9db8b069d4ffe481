// Which extension pods nodecare's taints keep off a node, as pure functions of plain objects, judged as
// Kubernetes judges it (v1.37.2):
// - a toleration tolerates a taint as k8s.io/api/core/v1 Toleration.ToleratesTaint says;
// - a pod selects a node by spec.nodeName, spec.nodeSelector and its required node affinity
//   (component-helpers nodeaffinity.RequiredNodeAffinity: terms ORed, requirements within a term ANDed, an
//   empty or unparsable term matching nothing, matchFields on metadata.name);
// - the DaemonSet controller creates a daemon pod for a node only when the node fits the template's node
//   selection and its taints with effect NoSchedule or NoExecute are tolerated by the template's
//   tolerations plus the ones the controller adds to every daemon pod (pkg/controller/daemon
//   NodeShouldRunDaemonPod, daemonPodTolerations). So a DaemonSet that does not tolerate nodecare's taint
//   has no pod at all for a node nodecare holds, Pending or otherwise: the DaemonSet itself is what to name.
// `kubectl nodecare explain` reports what keptOffByTaints finds (cli/verbs/explain.ts).

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** The fields of a pod spec (or a pod template's spec) that decide which nodes it may run on. */
export interface PlacementSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  hostNetwork?: boolean;
  tolerations?: Toleration[];
  affinity?: {
    nodeAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms?: NodeSelectorTerm[] };
    };
  };
}

export interface OwnerReference {
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

export interface DaemonSetObject {
  metadata: { name?: string; namespace?: string; uid?: string };
  spec?: { template?: { spec?: PlacementSpec } };
}

export interface PodObject {
  metadata: { name?: string; namespace?: string; ownerReferences?: OwnerReference[] };
  spec?: PlacementSpec;
  status?: {
    phase?: string;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
  };
}

export interface SchedulingNode {
  name: string;
  labels: Readonly<Record<string, string>>;
  taints: readonly Taint[];
}

/** Kubernetes' ToleratesTaint (k8s.io/api/core/v1 toleration.go), for one taint. */
export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? '') {
    case 'Exists':
      return true;
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    default:
      return false;
  }
}

function requirementMatches(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0]!))
        return false;
      const [have, bound] = [BigInt(value), BigInt(values[0]!)];
      return req.operator === 'Gt' ? have > bound : have < bound;
    }
    default:
      // An operator Kubernetes does not know makes the term unparsable: it matches nothing.
      return false;
  }
}

function termMatches(term: NodeSelectorTerm, node: SchedulingNode): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  return (
    expressions.every((req) =>
      requirementMatches(req, Object.hasOwn(node.labels, req.key) ? node.labels[req.key] : undefined),
    ) &&
    fields.every(
      (req) =>
        req.key === 'metadata.name' &&
        (req.operator === 'In' || req.operator === 'NotIn') &&
        requirementMatches(req, node.name),
    )
  );
}

/** Whether a pod with this spec may be placed on `node` by its nodeName, nodeSelector and required affinity. */
export function selectsNode(spec: PlacementSpec, node: SchedulingNode): boolean {
  if (spec.nodeName && spec.nodeName !== node.name) return false;
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) {
    if (node.labels[key] !== value) return false;
  }
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return (required.nodeSelectorTerms ?? []).some((term) => termMatches(term, node));
}

/**
 * Whether a Pending pod is meant for exactly this node: placed on it (spec.nodeName), or pinned to it by
 * name in its required node affinity (`matchFields` metadata.name In, as the DaemonSet controller pins
 * each daemon pod since Kubernetes 1.12).
 */
export function boundForNode(spec: PlacementSpec, nodeName: string): boolean {
  if (spec.nodeName) return spec.nodeName === nodeName;
  const terms =
    spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return (
    terms.length > 0 &&
    terms.every((term) =>
      (term.matchFields ?? []).some(
        (f) =>
          f.key === 'metadata.name' &&
          f.operator === 'In' &&
          f.values?.length === 1 &&
          f.values[0] === nodeName,
      ),
    )
  );
}

/** The tolerations the DaemonSet controller adds to every daemon pod (pkg/controller/daemon/util). */
export function daemonPodTolerations(spec: PlacementSpec): Toleration[] {
  const added: Toleration[] = [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
    { key: 'node.kubernetes.io/disk-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/pid-pressure', operator: 'Exists', effect: 'NoSchedule' },
    { key: 'node.kubernetes.io/unschedulable', operator: 'Exists', effect: 'NoSchedule' },
    ...(spec.hostNetwork
      ? [{ key: 'node.kubernetes.io/network-unavailable', operator: 'Exists', effect: 'NoSchedule' }]
      : []),
  ];
  return [...(spec.tolerations ?? []), ...added];
}

const keepsOff = (taint: Taint): boolean => taint.effect === 'NoSchedule' || taint.effect === 'NoExecute';

/** The taints of `taints` that keep a pod with these tolerations off (NoSchedule and NoExecute only). */
export function untoleratedTaints(tolerations: readonly Toleration[], taints: readonly Taint[]): Taint[] {
  return taints.filter((taint) => keepsOff(taint) && !tolerations.some((t) => toleratesTaint(t, taint)));
}

export const taintText = (t: Taint): string => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`;

export interface KeptOff {
  kind: 'DaemonSet' | 'Pod';
  namespace: string;
  name: string;
  /** A pod's controller, `DaemonSet kube-system/nvidia-device-plugin-daemonset`; absent for a bare pod. */
  owner?: string;
  /** nodecare's taints on the node that it does not tolerate, as `key=value:effect`. */
  untolerated: string[];
  /** Other taints on the node it does not tolerate either (nodecare is then not the only cause). */
  alsoUntolerated: string[];
  /** The scheduler's last word on a Pending pod (its PodScheduled condition), if it wrote one. */
  scheduler?: string;
}

const objectName = (m: { namespace?: string; name?: string }): string =>
  `${m.namespace ?? ''}/${m.name ?? ''}`;

function controllerOf(pod: PodObject, namespace: string): OwnerReference | undefined {
  const owner = pod.metadata.ownerReferences?.find((o) => o.controller) ?? pod.metadata.ownerReferences?.[0];
  return owner ? { ...owner, name: `${namespace}/${owner.name ?? ''}` } : undefined;
}

function byKindAndName(a: KeptOff, b: KeptOff): number {
  return a.kind.localeCompare(b.kind) || `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`);
}

/**
 * The extension workloads nodecare's taints keep off `node`: each DaemonSet that selects the node, does not
 * tolerate a nodecare taint on it and has no pod for it (so the DaemonSet controller created none), and each
 * Pending pod bound for the node that does not tolerate a nodecare taint on it, with its owner. `ownKeys`
 * are nodecare's two taint keys; only their NoSchedule taints count as nodecare's, whatever the value.
 * `pods` are the pods on the node and the unscheduled ones (a DaemonSet's pod for the node is either).
 */
export function keptOffByTaints(
  node: SchedulingNode,
  ownKeys: readonly string[],
  daemonSets: readonly DaemonSetObject[],
  pods: readonly PodObject[],
): KeptOff[] {
  const own = node.taints.filter((t) => ownKeys.includes(t.key) && t.effect === 'NoSchedule');
  if (own.length === 0) return [];
  const others = node.taints.filter((t) => !own.includes(t));
  const found: KeptOff[] = [];
  const withPod = new Set<string>();
  for (const pod of pods) {
    const spec = pod.spec ?? {};
    const namespace = pod.metadata.namespace ?? '';
    const mine = spec.nodeName === node.name || (!spec.nodeName && boundForNode(spec, node.name));
    if (!mine) continue;
    const owner = controllerOf(pod, namespace);
    if (owner?.kind === 'DaemonSet') withPod.add(owner.uid ?? owner.name ?? '');
    if (pod.status?.phase !== 'Pending' || spec.nodeName) continue;
    const untolerated = untoleratedTaints(spec.tolerations ?? [], own);
    if (untolerated.length === 0) continue;
    const scheduled = pod.status.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
    found.push({
      kind: 'Pod',
      namespace,
      name: pod.metadata.name ?? '',
      ...(owner ? { owner: `${owner.kind ?? 'owner'} ${owner.name}` } : {}),
      untolerated: untolerated.map(taintText),
      alsoUntolerated: untoleratedTaints(spec.tolerations ?? [], others).map(taintText),
      ...(scheduled?.message
        ? { scheduler: `${scheduled.reason ?? 'Unschedulable'}: ${scheduled.message}` }
        : {}),
    });
  }
  for (const ds of daemonSets) {
    const spec = ds.spec?.template?.spec ?? {};
    if (withPod.has(ds.metadata.uid ?? '') || withPod.has(objectName(ds.metadata))) continue;
    if (!selectsNode(spec, node)) continue;
    const tolerations = daemonPodTolerations(spec);
    const untolerated = untoleratedTaints(tolerations, own);
    if (untolerated.length === 0) continue;
    found.push({
      kind: 'DaemonSet',
      namespace: ds.metadata.namespace ?? '',
      name: ds.metadata.name ?? '',
      untolerated: untolerated.map(taintText),
      alsoUntolerated: untoleratedTaints(tolerations, others).map(taintText),
    });
  }
  return found.sort(byKindAndName);
}
