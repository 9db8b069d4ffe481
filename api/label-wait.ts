// `spec.labelWait` of a SystemExtension (docs/extensions.md, "Labels set after registration"; docs/adr/0019): a
// SystemExtension that selects on a label a labeler sets after registration (GPU Feature Discovery's
// `nvidia.com/gpu.present`, node-feature-discovery's `feature.node.kubernetes.io/*`) does not select a new node
// yet; with labelWait, a new node that lacks the label keys its nodeSelector reads waits up to waitSeconds for
// them before it may be released. Parsing and the label arithmetic live here; the timing is the controller's
// decision (controller/decide/label-wait.ts).

import { matchesSelector, validateSelector, type LabelSelector } from './selector.ts';
import { capInput } from './text.ts';

export interface LabelWaitPolicy {
  /** How long after the node's creation it waits at most (capped by the controller's bootstrap timeout). */
  waitSeconds: number;
  /** Only new nodes this selects wait (undefined: every new node that could still match). */
  nodeSelector: LabelSelector | undefined;
  /** A node this selects has been labeled (its labeler has run): its labels are final, it does not wait. */
  settledSelector: LabelSelector | undefined;
}

export const LABEL_WAIT_MAX_SECONDS = 3600;
const LABEL_WAIT_FIELDS = ['waitSeconds', 'nodeSelector', 'settledSelector'] as const;

/**
 * `spec.labelWait`, every problem reported through `problem` (the SystemExtension is then an invalid
 * registration, like any other bad field); undefined when absent or invalid. `nodeSelector` is the
 * SystemExtension's own (undefined when it is invalid): a wait needs a label key to wait for.
 */
export function parseLabelWait(
  raw: unknown,
  nodeSelector: LabelSelector | undefined,
  problem: (text: string) => void,
): LabelWaitPolicy | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problem(
      `labelWait: expected an object with waitSeconds (and optionally nodeSelector, settledSelector), got ${capInput(JSON.stringify(raw) ?? '')}`,
    );
    return undefined;
  }
  const fields = raw as Record<string, unknown>;
  let ok = true;
  const fail = (text: string): void => {
    ok = false;
    problem(text);
  };
  for (const field of Object.keys(fields)) {
    if (!(LABEL_WAIT_FIELDS as readonly string[]).includes(field))
      fail(`labelWait.${capInput(field)}: unknown field (expected one of ${LABEL_WAIT_FIELDS.join(', ')})`);
  }
  const { waitSeconds } = fields;
  if (
    typeof waitSeconds !== 'number' ||
    !Number.isInteger(waitSeconds) ||
    waitSeconds < 1 ||
    waitSeconds > LABEL_WAIT_MAX_SECONDS
  ) {
    fail(
      `labelWait.waitSeconds: expected an integer from 1 to ${LABEL_WAIT_MAX_SECONDS}, got ${waitSeconds === undefined ? 'none' : capInput(JSON.stringify(waitSeconds) ?? '')}`,
    );
  }
  for (const field of ['nodeSelector', 'settledSelector'] as const)
    for (const p of validateSelector(fields[field], `labelWait.${field}`)) fail(p);
  if (nodeSelector !== undefined && awaitableKeys(nodeSelector).length === 0) {
    fail(
      'labelWait: spec.nodeSelector names no label a node could gain (matchLabels, or matchExpressions with In or Exists), so there is nothing to wait for',
    );
  }
  if (!ok) return undefined;
  return {
    waitSeconds: waitSeconds as number,
    nodeSelector: (fields.nodeSelector ?? undefined) as LabelSelector | undefined,
    settledSelector: (fields.settledSelector ?? undefined) as LabelSelector | undefined,
  };
}

/** The keys a selector needs present: matchLabels, and matchExpressions with In or Exists. */
function awaitableKeys(selector: LabelSelector): string[] {
  const keys = new Set(Object.keys(selector.matchLabels ?? {}));
  for (const { key, operator } of selector.matchExpressions ?? [])
    if (operator === 'In' || operator === 'Exists') keys.add(key);
  return [...keys];
}

/**
 * The label keys `labels` lacks for `selector` to match, when gaining them could make it match: every
 * requirement on a key the node has holds (so a node whose labels already rule the selector out, such as
 * `nodepool=cpu` against `nodepool=gpu`, waits for nothing), and the keys it needs but lacks are returned,
 * sorted. Empty when the selector matches or can no longer match by labels being added.
 */
export function missingLabelKeys(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>>,
): string[] {
  if (matchesSelector(selector, labels)) return [];
  const needed = awaitableKeys(selector);
  const missing = needed.filter((key) => !Object.hasOwn(labels, key)).sort();
  if (missing.length === 0) return [];
  // Whether the node would match were the missing keys set to what the selector wants.
  const completed: Record<string, string> = { ...labels };
  for (const key of missing) {
    const wanted = selector.matchLabels?.[key];
    const inValues = selector.matchExpressions?.find((e) => e.key === key && e.operator === 'In')?.values;
    completed[key] = wanted ?? inValues?.[0] ?? '';
  }
  return matchesSelector(selector, completed) ? missing : [];
}
