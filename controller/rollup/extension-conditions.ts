// A SystemExtension's own conditions (metav1.Condition), so that `kubectl wait --for=condition=Valid` and
// `kubectl get sx` tell a bad spec and a requirement not yet in force from the object itself, not only from
// each node's Lease (issue 51 item 4; docs/extensions.md, "Status"). Pure: the counts writer passes what the
// cache parsed, the rollout phase it computed and the conditions the object carries.

import { Enforcement, capInput } from '../../api/index.ts';
import { apiTime } from './condition.ts';

/** A SystemExtension's status.rollout (written by the roll-up's store, store.ts). */
export interface SystemExtensionRolloutStatus {
  observedGeneration: number;
  /** The requirement the window belongs to (ParsedSystemExtension.requirement). */
  requirement: string;
  /** RFC 3339, second precision. */
  startedAt: string;
  phase: 'Enforced' | 'Grace' | 'Observe';
  enforcingAt?: string;
  message: string;
}

export const SystemExtensionConditionType = {
  /** The spec parses and validates, as the agent and the controller read it. */
  Valid: 'Valid',
  /** The requirement can taint the nodes it selects now (critical, enforced, not suspended, no window open). */
  InForce: 'InForce',
} as const;
export type SystemExtensionConditionType =
  (typeof SystemExtensionConditionType)[keyof typeof SystemExtensionConditionType];

export const SystemExtensionReason = {
  SpecValid: 'SpecValid',
  InvalidSpec: 'InvalidSpec',
  Enforced: 'Enforced',
  NotCritical: 'NotCritical',
  GracePeriod: 'GracePeriod',
  Observing: 'Observing',
  Suspended: 'Suspended',
  DryRun: 'DryRun',
} as const;
export type SystemExtensionReason = (typeof SystemExtensionReason)[keyof typeof SystemExtensionReason];

/** metav1.Condition. */
export interface SystemExtensionCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** What the conditions are computed from: the cached, parsed object. */
export interface SystemExtensionSpecState {
  generation: number;
  /** Every problem of the spec (field path and expected form); empty when it is valid. */
  problems: readonly string[];
  suspend: boolean;
  critical: boolean;
  enforcement: Enforcement;
}

/** The problems in a Valid=False message, at most this long (the CRD allows 32768). */
export const MAX_PROBLEMS_MESSAGE_CHARS = 4096;

type Verdict = Pick<SystemExtensionCondition, 'type' | 'status' | 'reason' | 'message'>;

function validity(spec: SystemExtensionSpecState): Verdict {
  const type = SystemExtensionConditionType.Valid;
  if (spec.problems.length === 0)
    return { type, status: 'True', reason: SystemExtensionReason.SpecValid, message: 'The spec is valid.' };
  return {
    type,
    status: 'False',
    reason: SystemExtensionReason.InvalidSpec,
    message: capInput(
      `The spec is invalid: ${spec.problems.join('; ')}. Every selected node reports the extension Unknown / InvalidRegistration until it is fixed.`,
      MAX_PROBLEMS_MESSAGE_CHARS,
    ),
  };
}

function inForce(spec: SystemExtensionSpecState, rollout: SystemExtensionRolloutStatus | undefined): Verdict {
  const type = SystemExtensionConditionType.InForce;
  const no = (reason: SystemExtensionReason, message: string): Verdict => ({
    type,
    status: 'False',
    reason,
    message,
  });
  if (spec.problems.length > 0)
    return no(
      SystemExtensionReason.InvalidSpec,
      'Not in force: the spec is invalid (see the Valid condition).',
    );
  if (spec.suspend)
    return no(
      SystemExtensionReason.Suspended,
      'Not in force: spec.suspend holds every taint change on the nodes this object selects.',
    );
  if (spec.enforcement === Enforcement.DryRun)
    return no(
      SystemExtensionReason.DryRun,
      'Not in force: enforcement is DryRun (computed, reported and logged; no taint or eviction).',
    );
  if (rollout?.phase === 'Observe')
    return no(
      SystemExtensionReason.Observing,
      'Not in force on existing nodes: spec.rollout.existingNodes is Observe (new nodes are held by bootstrap as usual).',
    );
  if (rollout?.phase === 'Grace')
    return no(
      SystemExtensionReason.GracePeriod,
      `Not in force on existing nodes until ${rollout.enforcingAt ?? 'the grace period ends'} (spec.rollout: Grace; new nodes are held by bootstrap as usual).`,
    );
  if (!spec.critical)
    return {
      type,
      status: 'True',
      reason: SystemExtensionReason.NotCritical,
      message:
        'In force as a report: critical is false, so it is rolled up and shown but never taints a node.',
    };
  return {
    type,
    status: 'True',
    reason: SystemExtensionReason.Enforced,
    message: 'In force: every node it selects is held or tainted while the extension is not Healthy.',
  };
}

const OWN_TYPES: ReadonlySet<string> = new Set(Object.values(SystemExtensionConditionType));

/**
 * The object's conditions: Valid and InForce as they are now, each keeping its lastTransitionTime while its
 * status stays the same (metav1.Condition), and any condition type another writer owns, as it is.
 */
export function systemExtensionConditions(
  spec: SystemExtensionSpecState,
  rollout: SystemExtensionRolloutStatus | undefined,
  current: readonly SystemExtensionCondition[] | undefined,
  nowMs: number,
): SystemExtensionCondition[] {
  const previous = new Map((current ?? []).map((c) => [c.type, c]));
  const own = [validity(spec), inForce(spec, rollout)].map((verdict): SystemExtensionCondition => {
    const before = previous.get(verdict.type);
    return {
      ...verdict,
      observedGeneration: spec.generation,
      lastTransitionTime:
        before && before.status === verdict.status ? before.lastTransitionTime : apiTime(nowMs),
    };
  });
  return [...own, ...(current ?? []).filter((c) => !OWN_TYPES.has(c.type))];
}
