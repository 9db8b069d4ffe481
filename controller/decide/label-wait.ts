// Label waits (docs/extensions.md, "Labels set after registration"; docs/adr/0019): a SystemExtension with
// `spec.labelWait` whose nodeSelector does not select a new node yet, only because the node lacks label keys a
// labeler sets after registration (GPU Feature Discovery, node-feature-discovery), holds that node's first
// bootstrap until the labels arrive (it then selects the node and is required as usual) or waitSeconds after the
// node's creation have passed. Pure: which SystemExtensions wait is a function of the node's labels; when a wait
// ends is a function of the bootstrap start, which survives a controller restart (node creation).

import { Enforcement } from '../../api/extension.ts';
import { missingLabelKeys } from '../../api/label-wait.ts';
import { matchesSelector } from '../../api/selector.ts';
import { EventReason } from '../../api/reasons.ts';
import type { ParsedSystemExtension } from '../../api/registration.ts';
import type { ActiveLabelWait, LabelWait, NodeEvent } from './types.ts';

/**
 * The SystemExtensions with `spec.labelWait` that do not select the node now but could, once labels it lacks
 * are set: not settled (its `settledSelector` does not match), selected by its `labelWait.nodeSelector`, and
 * critical (a non-critical extension never holds a node, so it has nothing to wait for). Whether the node is new
 * and the wait still runs is the decision's part (activeLabelWaits).
 */
export function labelWaitsOf(
  labels: Readonly<Record<string, string>>,
  systemExtensions: Iterable<ParsedSystemExtension>,
): LabelWait[] {
  const waits: LabelWait[] = [];
  for (const sx of systemExtensions) {
    const wait = sx.labelWait;
    if (!wait || !sx.selector || !sx.parse.policy.critical) continue;
    if (wait.settledSelector && matchesSelector(wait.settledSelector, labels)) continue;
    if (wait.nodeSelector && !matchesSelector(wait.nodeSelector, labels)) continue;
    const missingKeys = missingLabelKeys(sx.selector, labels);
    if (missingKeys.length === 0) continue;
    waits.push({
      name: sx.name,
      missingKeys,
      waitSeconds: wait.waitSeconds,
      holds: sx.parse.policy.enforcement === Enforcement.Enforce,
    });
  }
  return waits.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Splits the node's waits by time: `active` until the bootstrap start plus waitSeconds (never past the bootstrap
 * timeout), `ended` after. Only a node's first bootstrap waits (no bootstrapped marker: a node that completed one
 * has been through its labelers; a reboot keeps its labels); otherwise both are empty.
 */
export function activeLabelWaits(
  waits: readonly LabelWait[],
  node: { firstBootstrap: boolean; startedMs: number | undefined; timeoutMs: number; now: number },
): { active: ActiveLabelWait[]; ended: ActiveLabelWait[] } {
  const active: ActiveLabelWait[] = [];
  const ended: ActiveLabelWait[] = [];
  const { startedMs } = node;
  if (!node.firstBootstrap || startedMs === undefined) return { active, ended };
  for (const wait of waits) {
    const waitedSeconds = Math.min(wait.waitSeconds, node.timeoutMs / 1000);
    const endsMs = startedMs + waitedSeconds * 1000;
    (node.now < endsMs ? active : ended).push({ ...wait, endsMs, waitedSeconds });
  }
  return { active, ended };
}

/** `node label nvidia.com/gpu.present`, `node labels a, b` */
function labelsText(keys: readonly string[]): string {
  return `node label${keys.length === 1 ? '' : 's'} ${keys.join(', ')}`;
}

/**
 * One condition message item per active wait: `gpu-plugin waiting until 2026-01-01T00:02:00.000Z for node label
 * nvidia.com/gpu.present (SystemExtension spec.labelWait)`. Deterministic: the end is fixed by the node's creation.
 */
export function describeLabelWait(wait: ActiveLabelWait): string {
  const dryRun = wait.holds ? '' : '; enforcement DryRun: not holding the node';
  return `${wait.name} waiting until ${new Date(wait.endsMs).toISOString()} for ${labelsText(wait.missingKeys)} (SystemExtension spec.labelWait${dryRun})`;
}

/** The Normal LabelWaitEnded event of a wait that ran out: the extension does not apply to this node. */
export function labelWaitEndedEvent(wait: ActiveLabelWait): NodeEvent {
  return {
    type: 'Normal',
    reason: EventReason.LabelWaitEnded,
    message: `SystemExtension ${wait.name} does not apply to this node: ${labelsText(wait.missingKeys)} not set within ${wait.waitedSeconds}s of the node's creation (spec.labelWait). The node no longer waits for ${wait.missingKeys.length === 1 ? 'it' : 'them'}.`,
  };
}
