// `spec.rollout` of a SystemExtension (docs/extensions.md, "Rolling out a new requirement") and the rollout
// window its status records: how a new or changed requirement treats the nodes that already run.

import { capInput, quoteInput } from './text.ts';

/**
 * `spec.rollout.existingNodes`: how a new or changed SystemExtension treats the nodes that already completed
 * bootstrap and carry no runtime taint (docs/extensions.md, "Rolling out a new requirement"). New nodes are
 * held by bootstrap as usual whatever it says.
 */
export const RolloutMode = {
  /** Judged at once (the default). */
  Enforce: 'Enforce',
  /** Reported, not enforced, for `gracePeriodSeconds` after the object was created or its spec changed. */
  Grace: 'Grace',
  /** Reported, never enforced on existing nodes, until the admin sets Enforce. */
  Observe: 'Observe',
} as const;
export type RolloutMode = (typeof RolloutMode)[keyof typeof RolloutMode];

export interface RolloutPolicy {
  existingNodes: RolloutMode;
  gracePeriodSeconds: number;
}

export const ROLLOUT_DEFAULTS: RolloutPolicy = {
  existingNodes: RolloutMode.Enforce,
  gracePeriodSeconds: 600,
};

/** When the current rollout window of a SystemExtension started, as its status records it. */
export interface RecordedRollout {
  /** The metadata.generation the window was recorded at. */
  generation: number;
  /** The requirement (ParsedSystemExtension.requirement) the window belongs to; absent in older records. */
  requirement?: string;
  startedMs: number;
}

/** `spec.rollout`, every problem reported; what is wrong falls back to the default (Enforce: fail closed). */
export function parseRollout(raw: unknown, problem: (text: string) => void): RolloutPolicy {
  if (raw === undefined) return ROLLOUT_DEFAULTS;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    problem(`rollout: expected an object, got ${capInput(JSON.stringify(raw) ?? '')}`);
    return ROLLOUT_DEFAULTS;
  }
  const {
    existingNodes = ROLLOUT_DEFAULTS.existingNodes,
    gracePeriodSeconds = ROLLOUT_DEFAULTS.gracePeriodSeconds,
    ...rest
  } = raw as Record<string, unknown>;
  for (const field of Object.keys(rest)) problem(`rollout.${field}: unknown field`);
  const modes: readonly unknown[] = Object.values(RolloutMode);
  const mode = modes.includes(existingNodes) ? (existingNodes as RolloutMode) : undefined;
  if (!mode)
    problem(
      `rollout.existingNodes: expected Enforce, Grace or Observe, got ${quoteInput(String(existingNodes))}`,
    );
  const grace =
    typeof gracePeriodSeconds === 'number' &&
    Number.isInteger(gracePeriodSeconds) &&
    gracePeriodSeconds >= 0 &&
    gracePeriodSeconds <= 604_800
      ? gracePeriodSeconds
      : undefined;
  if (grace === undefined)
    problem(
      `rollout.gracePeriodSeconds: expected an integer from 0 to 604800, got ${capInput(JSON.stringify(gracePeriodSeconds) ?? '')}`,
    );
  if (!mode || grace === undefined) return ROLLOUT_DEFAULTS;
  return { existingNodes: mode, gracePeriodSeconds: grace };
}

/** status.rollout's window (observedGeneration, startedAt, requirement) when it is well-formed. */
export function recordedRollout(status: unknown): RecordedRollout | undefined {
  const rollout = (
    status as
      { rollout?: { observedGeneration?: unknown; startedAt?: unknown; requirement?: unknown } } | undefined
  )?.rollout;
  const generation = rollout?.observedGeneration;
  const startedMs = typeof rollout?.startedAt === 'string' ? Date.parse(rollout.startedAt) : Number.NaN;
  if (typeof generation !== 'number' || !Number.isFinite(startedMs)) return undefined;
  const requirement =
    typeof rollout?.requirement === 'string' ? capInput(rollout.requirement, 64) : undefined;
  return { generation, startedMs, ...(requirement === undefined ? {} : { requirement }) };
}
