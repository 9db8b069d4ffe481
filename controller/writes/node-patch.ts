// Everything the controller writes to a Node, as differences only. Taints, the status label and the bootstrap
// annotation go in one merge patch; the ExtensionsReady condition goes through the status subresource with a
// strategic merge on the condition type (other conditions are untouched), only when its status, reason or
// message change; when no taint changes, the label and annotation go with the condition in that one status
// patch (withMetadata). Both carry a resourceVersion precondition: a write decided on a stale node gets 409, and
// the writer re-reads and re-decides. nodecare never alters a taint it does not own: the taint list is the
// observed list, field for field, with only ours changed.

import {
  BOOTSTRAP_TAINT_VALUE,
  NODE_CONDITION_TYPE,
  NODE_STATUS_LABEL,
  NodeAnnotation,
  RUNTIME_TAINT_VALUE,
} from '../../api/index.ts';
import { EventReason } from '../../api/reasons.ts';
import type { CachedNode } from '../cache/index.ts';
import {
  hasTaint,
  OWN_TAINT_EFFECT,
  sameCondition,
  type DesiredCondition,
  type NodeDecision,
  type NodeEvent,
  type NodeTaint,
} from '../decide/index.ts';

export interface TaintKeys {
  bootstrap: string;
  runtime: string;
}
export interface NodeChange {
  taints?: NodeTaint[];
  labels?: Record<string, string>;
  /** null removes the annotation (JSON merge patch). */
  annotations?: Record<string, string | null>;
  /** Human summary of the taint change, for logs and dry-run. */
  taintSummary: string[];
}

/**
 * The taint list with nodecare's taints set as decided and every other taint kept as it is, field for field.
 * A wanted taint already there is kept as it is too, whatever its value (one a Karpenter NodePool or a
 * kubelet put there without nodecare's); only a taint nodecare adds gets nodecare's value.
 */
export function desiredTaintList<T extends NodeTaint>(
  current: readonly T[],
  decision: NodeDecision,
  keys: TaintKeys,
): NodeTaint[] {
  const wanted = [
    [keys.bootstrap, decision.desiredTaints.bootstrap, BOOTSTRAP_TAINT_VALUE],
    [keys.runtime, decision.desiredTaints.runtime, RUNTIME_TAINT_VALUE],
  ] as const;
  const unwanted = new Set(wanted.filter(([, want]) => !want).map(([key]) => key));
  const kept: NodeTaint[] = current.filter((t) => !unwanted.has(t.key) || t.effect !== OWN_TAINT_EFFECT);
  for (const [key, want, value] of wanted) {
    if (want && !hasTaint(kept, key)) kept.push({ key, value, effect: OWN_TAINT_EFFECT });
  }
  return kept;
}

/** What must change on the node's metadata and spec for it to match the decision (empty when nothing). */
export function nodeChange(
  node: CachedNode,
  decision: NodeDecision,
  keys: TaintKeys,
  writeTaints: boolean,
): NodeChange | undefined {
  const change: NodeChange = { taintSummary: [] };
  for (const [key, want] of [
    [keys.bootstrap, decision.desiredTaints.bootstrap],
    [keys.runtime, decision.desiredTaints.runtime],
  ] as const) {
    const has = hasTaint(node.taints, key);
    if (has !== want) change.taintSummary.push(`${want ? 'add' : 'remove'} ${key}:${OWN_TAINT_EFFECT}`);
  }
  if (writeTaints && change.taintSummary.length > 0)
    change.taints = desiredTaintList(node.taints, decision, keys);
  if (node.labels[NODE_STATUS_LABEL] !== decision.label)
    change.labels = { [NODE_STATUS_LABEL]: decision.label };
  const bootId = decision.desiredAnnotations.bootstrappedBootId;
  if (bootId !== undefined && node.annotations[NodeAnnotation.bootstrappedBootId] !== bootId) {
    change.annotations = { [NodeAnnotation.bootstrappedBootId]: bootId };
  }
  const maintenance = decision.desiredAnnotations.maintenance;
  if (maintenance !== undefined && (node.annotations[NodeAnnotation.maintenance] ?? null) !== maintenance) {
    change.annotations = { ...change.annotations, [NodeAnnotation.maintenance]: maintenance };
  }
  return change.taints || change.labels || change.annotations ? change : undefined;
}

/** The labels and annotations a NodeChange sets, as patch metadata (only those it has). */
function changedMetadata(change: NodeChange): object {
  return {
    ...(change.labels ? { labels: change.labels } : {}),
    ...(change.annotations ? { annotations: change.annotations } : {}),
  };
}

/** The merge patch for a NodeChange, valid only against `node`'s resourceVersion. */
export function nodePatch(node: CachedNode, change: NodeChange): object {
  return {
    metadata: { resourceVersion: node.resourceVersion, ...changedMetadata(change) },
    ...(change.taints ? { spec: { taints: change.taints } } : {}),
  };
}

/**
 * `statusPatch` carrying `change`'s label and annotation too, for a change that writes no taints. The status
 * subresource keeps metadata and drops spec, so a change with taints never goes this way.
 */
export function withMetadata(statusPatch: object, change: NodeChange): object {
  if (change.taints) throw new Error('a taint change cannot go through the status subresource');
  const patch = statusPatch as { metadata: object };
  return { ...patch, metadata: { ...patch.metadata, ...changedMetadata(change) } };
}

/**
 * The status patch that sets ExtensionsReady as decided, valid only against `node`'s resourceVersion, or
 * undefined when status, reason and message already match. lastTransitionTime moves only with status.
 */
export function conditionPatch(
  node: CachedNode,
  desired: DesiredCondition,
  nowMs: number,
): object | undefined {
  const observed = node.extensionsReadyCondition;
  if (sameCondition(observed, desired)) return undefined;
  const now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const transition =
    observed?.status === desired.status && node.conditionTransitionTime ? node.conditionTransitionTime : now;
  return {
    metadata: { resourceVersion: node.resourceVersion },
    status: {
      conditions: [
        {
          type: NODE_CONDITION_TYPE,
          status: desired.status,
          reason: desired.reason,
          message: desired.message,
          lastTransitionTime: transition,
          lastHeartbeatTime: now,
        },
      ],
    },
  };
}

const TAINT_EVENT_CHANGES = {
  [EventReason.BootstrapTaintAdded]: { taint: 'bootstrap', added: true },
  [EventReason.BootstrapTaintRemoved]: { taint: 'bootstrap', added: false },
  [EventReason.RuntimeTaintAdded]: { taint: 'runtime', added: true },
  [EventReason.RuntimeTaintRemoved]: { taint: 'runtime', added: false },
} as const satisfies Partial<Record<EventReason, { taint: keyof TaintKeys; added: boolean }>>;

export function isTaintEvent(event: NodeEvent): boolean {
  return event.reason in TAINT_EVENT_CHANGES;
}

/** The taint events among `events` that describe a change the write from `before` to `after` really made. */
export function writtenTaintEvents(
  before: CachedNode,
  after: CachedNode,
  events: readonly NodeEvent[],
  keys: TaintKeys,
): NodeEvent[] {
  return events.filter((event) => {
    const change = (
      TAINT_EVENT_CHANGES as Partial<Record<string, { taint: keyof TaintKeys; added: boolean }>>
    )[event.reason];
    if (!change) return false;
    const key = keys[change.taint];
    return !hasTaint(before.taints, key) === change.added && hasTaint(after.taints, key) === change.added;
  });
}
