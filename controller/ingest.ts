// Ingest: what the controller keeps of a Node or a nodecare Lease, decoded from what the API returned, bounded
// and checked once (a few hundred bytes per object instead of tens of KB; docs/adr/0001). Pure: no I/O, so the
// controller's cache (controller/cache/) and `kubectl nodecare` (cli/) decode alike.
// A Lease counts only when it is the one the agent would write for its (node, extension): the deterministic
// name and an owner reference to that Node. Any other Lease claiming a node is ignored and reported.

import {
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_FIELD_CHARS,
  LeaseAnnotation,
  LeaseRole,
  NODE_CONDITION_TYPE,
  NodeAnnotation,
  NodeOverrideAnnotation,
  RESERVED_EXTENSION_NAME,
  annotationTooLong,
  boundedText,
  decodeLease,
  leaseNameOrUndefined,
  truncateMessage,
  type LeaseObject,
  type ObservedLease,
} from '../api/index.ts';
import { INJECT_TOLERATIONS_LABEL } from '../api/names.ts';
import { validateExtensionName } from '../api/naming.ts';
import type { DaemonSetObject, NodeSelectorTerm, PlacementSpec } from '../api/scheduling.ts';
import { capInput } from '../api/text.ts';
import { maintenanceOf, type KubeletNotReady, type NodeTaint, type ObservedNode } from './decide/index.ts';

/**
 * A taint exactly as observed: `timeAdded` (which drives tolerationSeconds of NoExecute taints) and any
 * other field included, so a taint nodecare does not own is written back field for field.
 */
export type ObservedTaint = NodeTaint & { timeAdded?: string };

export interface CachedNode extends ObservedNode {
  resourceVersion: string;
  /** Extension annotations too long to parse, by key, with that problem (their values are not kept). */
  unparsedAnnotations: Readonly<Record<string, string>>;
  taints: readonly ObservedTaint[];
  /** lastTransitionTime of the current ExtensionsReady condition (kept when only reason/message change). */
  conditionTransitionTime: string | undefined;
}

/** A Node as the API returns it, as much as the controller reads. */
export interface NodeObject {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec?: { taints?: ObservedTaint[]; unschedulable?: boolean };
  status?: {
    nodeInfo?: { bootID?: string };
    conditions?: Array<{
      type: string;
      status: string;
      reason?: string;
      message?: string;
      lastTransitionTime?: string;
    }>;
  };
}

/** The kubelet's own node condition: True when it posts status and is healthy (node lifecycle controller: Unknown when it went silent). */
export const KUBELET_READY_CONDITION = 'Ready';

/**
 * The kubelet's Ready condition as the decision reads it: only when it exists and is not True (a node without
 * one, such as a plain Node object no kubelet posts for, decides as before). Reason, message and time are
 * input from whoever controls the node: capped and made inert here, once.
 */
export function kubeletNotReady(raw: NodeObject): KubeletNotReady | undefined {
  const ready = raw.status?.conditions?.find((c) => c.type === KUBELET_READY_CONDITION);
  if (ready === undefined || ready.status === 'True') return undefined;
  return {
    status: capInput(String(ready.status ?? ''), 16),
    reason: capInput(ready.reason ?? '', 64),
    message: truncateMessage(ready.message ?? ''),
    since: capInput(ready.lastTransitionTime ?? '', 40),
  };
}

export function toCachedNode(raw: NodeObject): CachedNode {
  const annotations: Record<string, string> = {};
  const unparsedAnnotations: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw.metadata?.annotations ?? {})) {
    if (key === NodeAnnotation.bootstrappedBootId) annotations[key] = value;
    if (key === NodeAnnotation.maintenance) annotations[key] = capInput(value, 64);
    // A person's release override (controller/decide/override.ts judges and caps it).
    if (key === NodeOverrideAnnotation.releaseUntil || key === NodeOverrideAnnotation.releaseReason) {
      annotations[key] = capInput(value, 512);
    }
    if (!key.startsWith(EXTENSION_ANNOTATION_PREFIX)) continue;
    // A value too long to parse is never read: keep why, not up to 256 KiB of it.
    const tooLong = annotationTooLong(value);
    if (tooLong === undefined) annotations[key] = value;
    else unparsedAnnotations[key] = tooLong;
  }
  const condition = raw.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE);
  const notReady = kubeletNotReady(raw);
  const { maintenance, planned } = maintenanceOf({
    deletionTimestamp: raw.metadata?.deletionTimestamp,
    unschedulable: raw.spec?.unschedulable,
    taints: raw.spec?.taints,
    conditions: raw.status?.conditions,
  });
  return {
    name: raw.metadata?.name ?? '',
    uid: raw.metadata?.uid ?? '',
    resourceVersion: raw.metadata?.resourceVersion ?? '',
    creationTimestampMs: Date.parse(raw.metadata?.creationTimestamp ?? '') || 0,
    bootId: raw.status?.nodeInfo?.bootID ?? '',
    labels: raw.metadata?.labels ?? {},
    annotations,
    unparsedAnnotations,
    // Kept whole (not stripped to key/value/effect): the taint list nodecare writes is built from these.
    taints: raw.spec?.taints ?? [],
    extensionsReadyCondition: condition
      ? { status: condition.status, reason: condition.reason ?? '', message: condition.message ?? '' }
      : undefined,
    conditionTransitionTime: condition?.lastTransitionTime,
    ...(notReady ? { kubeletNotReady: notReady } : {}),
    ...(maintenance ? { maintenance } : {}),
    ...(planned ? { maintenancePlanned: planned } : {}),
  };
}

/** Why a Lease that claims a node is not believed. */
export const LeaseProblem = {
  /** Not the deterministic name for its (node, extension) pair (api/lease.ts). */
  NameMismatch: 'NameMismatch',
  /** No owner reference to the Node it claims (by name, and by UID once the node is known). */
  OwnerMismatch: 'OwnerMismatch',
  /** Its extension label is not an extension name (a DNS label): `<extension>.<node>` would be ambiguous. */
  InvalidExtension: 'InvalidExtension',
  /** Its node already has MAX_LEASES_PER_NODE Leases filed: what one node can make the controller hold. */
  TooManyLeases: 'TooManyLeases',
  /** Its node annotation is longer than a node name can be (253 characters): it names no node. */
  InvalidNode: 'InvalidNode',
} as const;

/**
 * The most characters of strings the controller keeps of one Lease (the sum of api/lease.ts
 * LEASE_FIELD_CHARS, a reason and a message that are cut, escapes included, and the owner UID): whatever the
 * Lease holds (up to 1.5 MB), what is kept of it is this much, about 8 KB in V8's two-byte strings at worst.
 */
export const MAX_CACHED_LEASE_CHARS = 4096;

/**
 * The most Leases filed for one node (extensions and the heartbeat). Far above any real node's extensions;
 * bounds what an agent token that writes Lease after Lease can make the controller keep and scan.
 */
export const MAX_LEASES_PER_NODE = 256;
export type LeaseProblem = (typeof LeaseProblem)[keyof typeof LeaseProblem];

/** A decoded nodecare Lease with what the validity checks need. */
export interface CachedLease extends ObservedLease {
  /** UID of the owner reference naming the claimed node (undefined when there is none). */
  ownerUid?: string;
  /** Set when the lease is not the one the agent would write for its node: it is ignored. */
  problem?: LeaseProblem;
}

/**
 * A lease owned by another incarnation of its node (an owner UID that is not the node's): not believed. A
 * lease without an owner, or a node whose UID is not known, believes it.
 */
export function ownedByAnotherNode(lease: Pick<CachedLease, 'ownerUid'>, nodeUid: string): boolean {
  return nodeUid !== '' && lease.ownerUid !== undefined && lease.ownerUid !== nodeUid;
}

/** The most characters kept of an owner reference's UID (the API server makes them 36). */
const MAX_OWNER_UID_CHARS = 64;

/**
 * What is kept of a Lease that is not believed: its name, node, role and extension (to report it) and its
 * problem, never its body (issue 50 item 2: an agent token can write Lease after Lease for the controller to
 * ignore).
 */
export function ignoredLease(lease: CachedLease, problem: LeaseProblem): CachedLease {
  return {
    name: lease.name,
    resourceVersion: lease.resourceVersion,
    node: lease.node,
    role: lease.role,
    extension: lease.extension,
    state: undefined,
    reason: '',
    message: '',
    since: '',
    bootId: '',
    holderIdentity: '',
    leaseDurationSeconds: 0,
    renewTime: '',
    problem,
  };
}

/**
 * Decodes a nodecare Lease and checks that it is the one the agent of its node would write; every string is
 * cut on the way (api/lease.ts LEASE_FIELD_CHARS), and one that is not believed keeps only its name and
 * problem (ignoredLease): at most MAX_CACHED_LEASE_CHARS whatever the Lease holds.
 */
export function toCachedLease(raw: LeaseObject): CachedLease | undefined {
  const lease = decodeLease(raw);
  if (!lease) return undefined;
  const owner = raw.metadata.ownerReferences?.find(
    (ref) => ref.apiVersion === 'v1' && ref.kind === 'Node' && ref.name === lease.node,
  );
  const ownerUid = owner === undefined ? undefined : boundedText(owner.uid, MAX_OWNER_UID_CHARS);
  // A long pair's name carries its Node's UID: the owner's here, held to the node's own in leasesOf.
  const expected =
    lease.role === LeaseRole.agent
      ? leaseNameOrUndefined(lease.node, RESERVED_EXTENSION_NAME, ownerUid)
      : lease.extension && leaseNameOrUndefined(lease.node, lease.extension, ownerUid);
  const problem =
    (raw.metadata.annotations?.[LeaseAnnotation.node]?.length ?? 0) > LEASE_FIELD_CHARS.node
      ? LeaseProblem.InvalidNode
      : lease.role !== LeaseRole.agent && lease.extension && validateExtensionName(lease.extension)
        ? LeaseProblem.InvalidExtension
        : lease.name !== expected
          ? LeaseProblem.NameMismatch
          : owner === undefined
            ? LeaseProblem.OwnerMismatch
            : undefined;
  if (problem) return ignoredLease(lease, problem);
  return { ...lease, ...(ownerUid !== undefined ? { ownerUid } : {}) };
}

/** A DaemonSet as the API returns it, as much as the controller reads. */
export interface DaemonSetRaw {
  metadata: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string> };
  spec?: { template?: { spec?: PlacementSpec } };
}

/** Beyond these a DaemonSet's placement is not kept (and it is never named): a bound per DaemonSet. */
const DAEMONSET_LIMITS = { tolerations: 64, nodeSelector: 64, terms: 16, requirements: 32, values: 64 };

function termWithin(term: NodeSelectorTerm): boolean {
  const reqs = [...(term.matchExpressions ?? []), ...(term.matchFields ?? [])];
  return (
    reqs.length <= DAEMONSET_LIMITS.requirements &&
    reqs.every((r) => (r.values?.length ?? 0) <= DAEMONSET_LIMITS.values)
  );
}

/**
 * What the controller keeps of a DaemonSet: its name and its pod template's placement (node name, node
 * selector, required node affinity, tolerations, host network), enough for api/scheduling.ts to tell whether
 * nodecare's taint keeps it off a node. Dropped (undefined): a DaemonSet labelled out of nodecare's
 * tolerations (nodecare.io/inject-tolerations: "false": kept off on purpose), and one whose placement is
 * larger than DAEMONSET_LIMITS.
 */
export function toCachedDaemonSet(raw: DaemonSetRaw): DaemonSetObject | undefined {
  if (raw.metadata.labels?.[INJECT_TOLERATIONS_LABEL] === 'false') return undefined;
  const spec = raw.spec?.template?.spec ?? {};
  const required = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const terms = required?.nodeSelectorTerms ?? [];
  if (
    (spec.tolerations?.length ?? 0) > DAEMONSET_LIMITS.tolerations ||
    Object.keys(spec.nodeSelector ?? {}).length > DAEMONSET_LIMITS.nodeSelector ||
    terms.length > DAEMONSET_LIMITS.terms ||
    !terms.every(termWithin)
  )
    return undefined;
  const { name, namespace, uid } = raw.metadata;
  const placement: PlacementSpec = {
    ...(spec.nodeName ? { nodeName: spec.nodeName } : {}),
    ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}),
    ...(spec.hostNetwork ? { hostNetwork: true } : {}),
    ...(spec.tolerations
      ? {
          tolerations: spec.tolerations.map(({ key, operator, value, effect }) => ({
            ...(key ? { key } : {}),
            ...(operator ? { operator } : {}),
            ...(value ? { value } : {}),
            ...(effect ? { effect } : {}),
          })),
        }
      : {}),
    ...(required
      ? {
          affinity: {
            nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
          },
        }
      : {}),
  };
  return { metadata: { name, namespace, uid }, spec: { template: { spec: placement } } };
}
