// What `kubectl nodecare uninstall` removes from a Node, as pure functions of the Node (docs/design.md
// section 7: uninstalling leaves no nodecare taint, condition, label or annotation behind).

import { DEFAULT_BOOTSTRAP_TAINT_KEY, DEFAULT_RUNTIME_TAINT_KEY, NODE_CONDITION_TYPE } from '../api/index.ts';

export interface NodeTaint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

export interface CleanupNode {
  metadata: {
    name: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { taints?: NodeTaint[] };
  status?: { conditions?: Array<{ type: string }> };
}

export const DEFAULT_TAINT_KEYS: readonly string[] = [DEFAULT_BOOTSTRAP_TAINT_KEY, DEFAULT_RUNTIME_TAINT_KEY];

/**
 * A label, annotation or taint key in nodecare's domain: `nodecare.io/…` (the status label, the
 * bootstrapped-boot-id annotation) or `<sub>.nodecare.io/…` (the `extensions.nodecare.io/<name>` registrations).
 */
export function isNodecareKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return domain === 'nodecare.io' || domain.endsWith('.nodecare.io');
}

export interface NodeCleanup {
  node: string;
  taints: string[];
  labels: string[];
  annotations: string[];
  condition: boolean;
  /** JSON merge patch of the Node (with a resourceVersion precondition), or undefined when nothing to do. */
  metadataPatch: object | undefined;
  /** Strategic merge patch of nodes/status deleting the condition, or undefined. */
  statusPatch: object | undefined;
}

/** What to remove from `node`: taints with one of `taintKeys` or a nodecare key, nodecare labels, annotations, the condition. */
export function planNodeCleanup(node: CleanupNode, taintKeys: readonly string[]): NodeCleanup {
  const taints = node.spec?.taints ?? [];
  const removedTaints = taints.filter((t) => taintKeys.includes(t.key) || isNodecareKey(t.key));
  const labels = Object.keys(node.metadata.labels ?? {}).filter(isNodecareKey);
  const annotations = Object.keys(node.metadata.annotations ?? {}).filter(isNodecareKey);
  const condition = (node.status?.conditions ?? []).some((c) => c.type === NODE_CONDITION_TYPE);
  const nulls = (keys: string[]): Record<string, null> => Object.fromEntries(keys.map((k) => [k, null]));
  const metadataChanged = removedTaints.length > 0 || labels.length > 0 || annotations.length > 0;
  return {
    node: node.metadata.name,
    taints: removedTaints.map((t) => t.key),
    labels,
    annotations,
    condition,
    metadataPatch: metadataChanged
      ? {
          metadata: {
            // The precondition: a Node changed since it was read is re-read and planned again, so a taint
            // someone else added meanwhile is never dropped by writing back a stale list.
            resourceVersion: node.metadata.resourceVersion,
            ...(labels.length > 0 ? { labels: nulls(labels) } : {}),
            ...(annotations.length > 0 ? { annotations: nulls(annotations) } : {}),
          },
          ...(removedTaints.length > 0
            ? { spec: { taints: taints.filter((t) => !removedTaints.includes(t)) } }
            : {}),
        }
      : undefined,
    statusPatch: condition
      ? { status: { conditions: [{ type: NODE_CONDITION_TYPE, $patch: 'delete' }] } }
      : undefined,
  };
}

/** One line per node that had something of nodecare's, saying what was (or would be) removed. */
export function describeCleanup(c: NodeCleanup): string | undefined {
  const parts = [
    c.taints.length > 0 ? `taints ${c.taints.join(', ')}` : '',
    c.labels.length > 0 ? `labels ${c.labels.join(', ')}` : '',
    c.annotations.length > 0 ? `annotations ${c.annotations.join(', ')}` : '',
    c.condition ? `condition ${NODE_CONDITION_TYPE}` : '',
  ].filter(Boolean);
  return parts.length > 0 ? `node ${c.node}: ${parts.join('; ')}` : undefined;
}
