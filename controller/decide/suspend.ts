// Suspend, for incident response (docs/controller.md, "Suspend"): while a node is in the scope of a suspension
// (a SystemExtension with `spec.suspend` that selects it, or the controller's --suspend for every node), every
// taint change nodecare would make on it is held: its taints stay exactly as they are, and what would have
// changed is reported (a Normal TaintChangeSuspended event per change, the decision's `suspended` for metrics and
// `kubectl nodecare explain`). Everything else — the condition, the label, the roll-up, the breaker's counts — is
// decided as usual, so when the suspension is lifted the held changes go through the same rules as any change:
// the breaker, already judged over the suspended decisions, holds back a correlated failure's taints. Pure.

import { EventReason } from '../../api/reasons.ts';
import type { DecisionInput, DecisionPolicy, NodeDecision } from './types.ts';

/** How the controller's own --suspend names itself in events and explain. */
export const CONTROLLER_SUSPEND = 'the controller (--suspend)';

/**
 * What going from the taints `current` to `wanted` changes, in words (`add the runtime taint <key>`): the one
 * wording of a taint change (suspension events, `kubectl nodecare explain`'s next action).
 */
export function taintChanges(
  wanted: NodeDecision['desiredTaints'],
  current: NodeDecision['desiredTaints'],
  policy: Pick<DecisionPolicy, 'bootstrapTaintKey' | 'runtimeTaintKey'>,
): string[] {
  const changes: string[] = [];
  for (const [kind, key] of [
    ['bootstrap', policy.bootstrapTaintKey],
    ['runtime', policy.runtimeTaintKey],
  ] as const) {
    if (wanted[kind] && !current[kind]) changes.push(`add the ${kind} taint ${key}`);
    if (!wanted[kind] && current[kind]) changes.push(`remove the ${kind} taint ${key}`);
  }
  return changes;
}

/**
 * The decision for a node in the scope of a suspension: `base` with its taints held as they are on the node
 * (the bootstrapped marker is not written either, since a bootstrap's taint stays), its taint events replaced by
 * one TaintChangeSuspended per held change (once: the memory keeps what was reported), and `suspended` saying
 * by whom and what would change.
 */
export function suspended(
  base: NodeDecision,
  input: DecisionInput,
  by: readonly string[],
  tainted: NodeDecision['desiredTaints'],
): NodeDecision {
  const wouldChange = taintChanges(base.desiredTaints, tainted, input.policy);
  const reported = wouldChange.join('; ');
  const events = base.events.filter(
    (e) =>
      e.reason !== EventReason.BootstrapTaintAdded &&
      e.reason !== EventReason.BootstrapTaintRemoved &&
      e.reason !== EventReason.RuntimeTaintAdded &&
      e.reason !== EventReason.RuntimeTaintRemoved,
  );
  if (reported !== '' && input.previous?.suspendedReported !== reported) {
    events.push({
      type: 'Normal',
      reason: EventReason.TaintChangeSuspended,
      message: `Suspended by ${by.join(', ')}: would ${reported} (${base.condition.reason}). Nothing is written until the suspension is lifted.`,
    });
  }
  return {
    ...base,
    desiredTaints: { ...tainted },
    // The maintenance marker is no taint: it is written as decided.
    desiredAnnotations:
      base.desiredAnnotations.maintenance === undefined
        ? {}
        : { maintenance: base.desiredAnnotations.maintenance },
    events,
    suspended: { by: [...by], wouldChange },
    memory: { ...base.memory, suspendedReported: reported },
  };
}
