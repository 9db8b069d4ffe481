// The Lease contract between agent and controller (docs/design.md section 4): deterministic names, the desired
// object built by one pure function, and the decoder the controller uses. Plain JSON shapes; no client.

import { RESERVED_EXTENSION_NAME } from './naming.ts';
import { capInput, escapeControls } from './text.ts';
import {
  LEASE_NAMESPACE,
  LeaseAnnotation,
  LeaseLabel,
  LeaseRole,
  isExtensionState,
  type ExtensionState,
} from './names.ts';

const MAX_NAME = 253;
/**
 * The longest lease duration the controller believes: three times the agent's longest renewal interval
 * (`--extension-renew-seconds` ≤ MAX_RENEW_SECONDS; the heartbeat's ≤ MAX_RENEW_SECONDS). A longer one (the API allows 68 years) is cut
 * to this, so a lease cannot postpone its own expiry for weeks, nor put a deadline past what a timer can hold.
 */
export const MAX_RENEW_SECONDS = 3600;
/** Also the admission policy's bound (manifests/base/admission-agent-leases.yaml; a unit test holds them equal). */
export const MAX_LEASE_DURATION_SECONDS = 3 * MAX_RENEW_SECONDS;

/** Messages on a Lease are short and never carry response bodies. */
export const MAX_LEASE_MESSAGE = 256;

/** A Node UID as the API server makes them (a lowercase UUID): a DNS label, so it can end a Lease name. */
const NODE_UID = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * `<extension>.<node>`: readable, and unique because an extension name is a DNS label (the first dot splits
 * the pair). When that exceeds 253 characters, `<extension>.<node UID>` instead: a name the admission policy
 * can check exactly (the agent's token carries its node's UID; CEL has no hash function to check a hashed
 * form), and one that names exactly one Node object. Only a node whose *name* is another node's UID could
 * collide with that node's long form (docs/install.md, "Threat model"). Throws for a long pair without a
 * usable UID: no name is better than a guessed one.
 */
export function extensionLeaseName(nodeName: string, extension: string, nodeUid = ''): string {
  const plain = `${extension}.${nodeName}`;
  if (plain.length <= MAX_NAME) return plain;
  if (!NODE_UID.test(nodeUid))
    throw new Error(
      `the Lease of ${extension} on node ${nodeName.slice(0, 40)}… (a name of ${nodeName.length} characters) ` +
        `is named after the node's UID, and ${nodeUid ? `"${nodeUid.slice(0, 64)}" is not one` : 'none is known'}`,
    );
  return `${extension}.${nodeUid}`;
}

/** The name `extensionLeaseName` gives, or undefined where it gives none (a long pair without a UID). */
export function leaseNameOrUndefined(nodeName: string, extension: string, nodeUid = ''): string | undefined {
  try {
    return extensionLeaseName(nodeName, extension, nodeUid);
  } catch {
    return undefined;
  }
}

/** The agent's own heartbeat Lease (the extension name it uses is reserved). */
export function agentLeaseName(nodeName: string, nodeUid = ''): string {
  return extensionLeaseName(nodeName, RESERVED_EXTENSION_NAME, nodeUid);
}

export interface NodeRef {
  name: string;
  uid: string;
}

export interface ProbeStateRecord {
  state: ExtensionState;
  reason: string;
  message: string;
  /** When this state began (RFC 3339). */
  since: string;
}

/** The JSON shape of a coordination.k8s.io/v1 Lease, as much as nodecare reads and writes. */
export interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string }>;
    deletionTimestamp?: string | Date;
  };
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    renewTime?: string | Date;
    acquireTime?: string | Date;
    /** Leader election only: how many times the holder changed. */
    leaseTransitions?: number;
  };
}

/** Kubernetes MicroTime: RFC 3339 with six fractional digits. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface DesiredLease {
  node: NodeRef;
  /** undefined for the agent heartbeat. */
  extension: string | undefined;
  holderIdentity: string;
  leaseDurationSeconds: number;
  renewTime: Date;
  /** The node's current bootID as the agent sees it ('' when the node reports none). */
  bootId: string;
  /** Extension leases carry the probe state; the heartbeat carries none. */
  record: ProbeStateRecord | undefined;
  resourceVersion?: string;
}

/** One line of at most MAX_LEASE_MESSAGE characters, its control characters escaped (api/text.ts). */
export function truncateMessage(message: string): string {
  const oneLine = escapeControls(message.replace(/\s+/g, ' ').trim());
  return oneLine.length <= MAX_LEASE_MESSAGE ? oneLine : `${oneLine.slice(0, MAX_LEASE_MESSAGE - 1)}…`;
}

/**
 * `record` with `note` appended to its message in brackets, the message cut so the note survives the Lease's
 * message cap (a note says something the operator must see, e.g. a registration conflict).
 */
export function withNote(record: ProbeStateRecord, note: string): ProbeStateRecord {
  const tail = ` [${truncateMessage(note).slice(0, MAX_LEASE_MESSAGE / 2)}]`;
  const head = truncateMessage(record.message);
  const room = MAX_LEASE_MESSAGE - tail.length;
  return { ...record, message: `${head.length <= room ? head : `${head.slice(0, room - 1)}…`}${tail}` };
}

/** Builds the whole desired Lease (docs/conventions.md 9): the writer only adds the resourceVersion it last saw. */
export function buildLease(desired: DesiredLease): LeaseObject {
  const { node, extension, record } = desired;
  const labels: Record<string, string> = {
    [LeaseLabel.role]: extension ? LeaseRole.extension : LeaseRole.agent,
  };
  if (extension) labels[LeaseLabel.extension] = extension;
  const annotations: Record<string, string> = {
    [LeaseAnnotation.node]: node.name,
    [LeaseAnnotation.bootId]: desired.bootId,
  };
  if (record) {
    annotations[LeaseAnnotation.state] = record.state;
    annotations[LeaseAnnotation.reason] = record.reason;
    annotations[LeaseAnnotation.message] = truncateMessage(record.message);
    annotations[LeaseAnnotation.since] = record.since;
  }
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: extension
        ? extensionLeaseName(node.name, extension, node.uid)
        : agentLeaseName(node.name, node.uid),
      namespace: LEASE_NAMESPACE,
      ...(desired.resourceVersion ? { resourceVersion: desired.resourceVersion } : {}),
      labels,
      annotations,
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid }],
    },
    spec: {
      holderIdentity: desired.holderIdentity,
      leaseDurationSeconds: desired.leaseDurationSeconds,
      renewTime: microTime(desired.renewTime),
    },
  };
}

/** What the controller keeps of a Lease: a few hundred bytes instead of the whole object. */
export interface ObservedLease {
  name: string;
  resourceVersion: string;
  node: string;
  role: LeaseRole;
  extension: string | undefined;
  /** undefined on the heartbeat, or when the annotation is missing or not a known state. */
  state: ExtensionState | undefined;
  reason: string;
  message: string;
  since: string;
  bootId: string;
  holderIdentity: string;
  leaseDurationSeconds: number;
  /** The renewTime as written (the controller compares it for change, never with its own clock). */
  renewTime: string;
}

/**
 * The most characters the controller keeps of each string of a Lease (issue 50 item 2): an agent token may
 * write up to 1.5 MB into any of them, and what is kept of a Lease is a constant whatever it holds. Names and
 * the node are Kubernetes names (253); a resourceVersion is an etcd revision (20 digits); a time is RFC 3339
 * (at most 35 characters); a boot ID is a UUID (36). The admission policy refuses more than these from an
 * agent (manifests/base/admission-agent-leases.yaml); a Lease written around it is cut here.
 */
export const LEASE_FIELD_CHARS = {
  name: 253,
  resourceVersion: 64,
  node: 253,
  extension: 63,
  since: 64,
  bootId: 64,
  holderIdentity: 253,
  renewTime: 64,
} as const;

/** A message is read from its first this many characters only (it is then cut to MAX_LEASE_MESSAGE). */
const MESSAGE_READ_CHARS = 4 * MAX_LEASE_MESSAGE;

/**
 * `value` cut to `max` characters, as a string of its own: V8 makes a longer cut a view of the whole string
 * (a sliced string), which would keep all 1.5 MB of it alive for as long as the cut is kept. The copy is made
 * only when a cut is (a JSON round trip of at most `max` characters; lone surrogates survive it).
 */
export function boundedText(value: string, max: number): string {
  return value.length <= max ? value : (JSON.parse(JSON.stringify(value.slice(0, max))) as string);
}

const cut = boundedText;

/** The most owner references kept of a Lease (compactLease): the agent's have one. */
const MAX_KEPT_OWNER_REFERENCES = 4;

/**
 * `raw` with only what decodeLease and the controller's checks read (controller/ingest.ts toCachedLease),
 * each string cut to LEASE_FIELD_CHARS (the node one character longer, so that a node name too long to be
 * one still reads as such): so that a reader holding every Lease at once (`kubectl nodecare status`) holds
 * a constant of each, whatever it held, and decodes it to the same ObservedLease.
 */
export function compactLease(raw: LeaseObject): LeaseObject {
  const F = LEASE_FIELD_CHARS;
  const { metadata, spec } = raw;
  const annotations: Record<string, string> = {};
  const limits: Record<string, number> = {
    [LeaseAnnotation.node]: F.node + 1,
    [LeaseAnnotation.state]: 16,
    [LeaseAnnotation.reason]: MESSAGE_READ_CHARS,
    [LeaseAnnotation.message]: MESSAGE_READ_CHARS,
    [LeaseAnnotation.since]: F.since,
    [LeaseAnnotation.bootId]: F.bootId,
  };
  for (const [key, max] of Object.entries(limits)) {
    const value = metadata.annotations?.[key];
    if (value !== undefined) annotations[key] = cut(value, max);
  }
  const labels: Record<string, string> = {};
  for (const key of [LeaseLabel.role, LeaseLabel.extension]) {
    const value = metadata.labels?.[key];
    if (value !== undefined) labels[key] = cut(value, F.extension);
  }
  const owners = (metadata.ownerReferences ?? [])
    .filter((ref) => ref.apiVersion === 'v1' && ref.kind === 'Node')
    .slice(0, MAX_KEPT_OWNER_REFERENCES)
    .map((ref) => ({
      apiVersion: 'v1',
      kind: 'Node',
      name: cut(ref.name, F.node + 1),
      uid: cut(ref.uid, 64),
    }));
  const renew = spec?.renewTime;
  return {
    metadata: {
      ...(metadata.name !== undefined ? { name: cut(metadata.name, F.name) } : {}),
      ...(metadata.namespace !== undefined ? { namespace: cut(metadata.namespace, 63) } : {}),
      ...(metadata.resourceVersion !== undefined
        ? { resourceVersion: cut(metadata.resourceVersion, F.resourceVersion) }
        : {}),
      labels,
      annotations,
      ...(owners.length > 0 ? { ownerReferences: owners } : {}),
    },
    spec: {
      ...(spec?.holderIdentity !== undefined
        ? { holderIdentity: cut(spec.holderIdentity, F.holderIdentity) }
        : {}),
      ...(spec?.leaseDurationSeconds !== undefined
        ? { leaseDurationSeconds: spec.leaseDurationSeconds }
        : {}),
      ...(renew !== undefined ? { renewTime: renew instanceof Date ? renew : cut(renew, F.renewTime) } : {}),
    },
  };
}

/** A written duration within [0, MAX_LEASE_DURATION_SECONDS]; anything else (absent, not a number) is 0. */
function boundedDurationSeconds(value: unknown): number {
  if (typeof value !== 'number' || !(value > 0)) return 0;
  return Math.min(value, MAX_LEASE_DURATION_SECONDS);
}

/** Decodes a nodecare Lease; undefined for a Lease that is not ours (no node annotation or role label). */
export function decodeLease(obj: LeaseObject): ObservedLease | undefined {
  const { metadata, spec = {} } = obj;
  const node = metadata.annotations?.[LeaseAnnotation.node];
  const role = metadata.labels?.[LeaseLabel.role];
  if (!node || (role !== LeaseRole.extension && role !== LeaseRole.agent)) return undefined;
  const state = metadata.annotations?.[LeaseAnnotation.state];
  const renew = spec.renewTime;
  const annotation = (key: string, max: number): string => cut(metadata.annotations?.[key] ?? '', max);
  const F = LEASE_FIELD_CHARS;
  const extension = role === LeaseRole.extension ? metadata.labels?.[LeaseLabel.extension] : undefined;
  return {
    name: cut(metadata.name ?? '', F.name),
    resourceVersion: cut(metadata.resourceVersion ?? '', F.resourceVersion),
    // A longer one names no node; cut, it is held only to say so (controller/ingest.ts InvalidNode).
    node: cut(node, F.node),
    role,
    extension: extension === undefined ? undefined : cut(extension, F.extension),
    state: isExtensionState(state) ? state : undefined,
    // Written by the agent of a node (whoever controls it): made inert before any message repeats them.
    reason: capInput(annotation(LeaseAnnotation.reason, MESSAGE_READ_CHARS)),
    message: truncateMessage(annotation(LeaseAnnotation.message, MESSAGE_READ_CHARS)),
    since: annotation(LeaseAnnotation.since, F.since),
    bootId: annotation(LeaseAnnotation.bootId, F.bootId),
    holderIdentity: cut(spec.holderIdentity ?? '', F.holderIdentity),
    leaseDurationSeconds: boundedDurationSeconds(spec.leaseDurationSeconds),
    renewTime: cut(renew instanceof Date ? renew.toISOString() : (renew ?? ''), F.renewTime),
  };
}
