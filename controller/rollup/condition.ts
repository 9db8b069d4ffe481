// Gardener's condition builder and threshold machine, rule for rule (docs/rollup.md; Gardener's
// pkg/api/core/v1beta1/helper condition_builder.go and condition.go `FailedCondition`). Pure: the caller passes
// the old condition and `nowMs`; nothing here reads a clock.

/** Status of a Gardener-style condition: Kubernetes' three plus Progressing. */
export const RollupStatus = {
  True: 'True',
  False: 'False',
  Unknown: 'Unknown',
  Progressing: 'Progressing',
} as const;
export type RollupStatus = (typeof RollupStatus)[keyof typeof RollupStatus];

/** Condition reasons of the roll-up, as Gardener's health-check library names them. */
export const RollupReason = {
  ConditionInitialized: 'ConditionInitialized',
  ConditionCheckError: 'ConditionCheckError',
  HealthCheckSuccessful: 'HealthCheckSuccessful',
  HealthCheckUnsuccessful: 'HealthCheckUnsuccessful',
  HealthCheckProgressing: 'HealthCheckProgressing',
  Unspecified: 'Unspecified',
} as const;
export type RollupReason = (typeof RollupReason)[keyof typeof RollupReason];

export const INITIALIZED_MESSAGE =
  'The condition has been initialized but its semantic check has not been performed yet.';
export const NO_MESSAGE = 'No message given.';

export interface RollupCondition {
  type: string;
  status: RollupStatus;
  /** RFC 3339, second precision (metav1.Time). */
  lastTransitionTime: string;
  lastUpdateTime: string;
  reason: string;
  message: string;
  codes: string[];
}

/** RFC 3339 with second precision, as the API server stores metav1.Time. */
export function apiTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.000Z$/, 'Z');
}

/** Gardener's `InitConditionWithClock`: Unknown / ConditionInitialized, both times now. */
export function initCondition(type: string, nowMs: number): RollupCondition {
  const now = apiTime(nowMs);
  return {
    type,
    status: RollupStatus.Unknown,
    lastTransitionTime: now,
    lastUpdateTime: now,
    reason: RollupReason.ConditionInitialized,
    message: INITIALIZED_MESSAGE,
    codes: [],
  };
}

export interface ConditionUpdate {
  status: RollupStatus;
  reason: string;
  message: string;
  /** Never inherited from the old condition: absent means none. */
  codes?: readonly string[];
}

function sameCodes(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((code, i) => code === b[i]);
}

/**
 * Gardener's condition builder: a status change moves lastTransitionTime; a change of reason, message or codes
 * moves lastUpdateTime (a status-only change does not); codes are never carried over; an empty reason becomes
 * `Unspecified`, an empty message `No message given.`. Returns the old object itself when nothing changed, so
 * `built === old` tells the caller there is nothing to write.
 */
export function updateCondition(
  old: RollupCondition,
  update: ConditionUpdate,
  nowMs: number,
): RollupCondition {
  const now = apiTime(nowMs);
  const reason = update.reason === '' ? RollupReason.Unspecified : update.reason;
  const message = update.message === '' ? NO_MESSAGE : update.message;
  const codes = [...(update.codes ?? [])].sort();
  const statusChanged = update.status !== old.status;
  const contentChanged = reason !== old.reason || message !== old.message || !sameCodes(codes, old.codes);
  if (!statusChanged && !contentChanged) return old;
  return {
    type: old.type,
    status: update.status,
    lastTransitionTime: statusChanged ? now : old.lastTransitionTime,
    lastUpdateTime: contentChanged ? now : old.lastUpdateTime,
    reason,
    message,
    codes,
  };
}

/**
 * Gardener's `FailedCondition` (without a last operation, which nodecare does not have): True → Progressing for
 * `thresholdMs` measured from lastTransitionTime, then False; False → Progressing again only when the failure
 * reason changes; Unknown or a new condition → False at once. No threshold → False at once.
 */
export function failedCondition(
  old: RollupCondition,
  thresholdMs: number | undefined,
  failure: { reason: string; message: string; codes?: readonly string[] },
  nowMs: number,
): RollupCondition {
  const to = (status: RollupStatus): RollupCondition => updateCondition(old, { ...failure, status }, nowMs);
  if (thresholdMs === undefined) return to(RollupStatus.False);
  switch (old.status) {
    case RollupStatus.True:
      return to(RollupStatus.Progressing);
    case RollupStatus.Progressing: {
      const sinceMs = Date.parse(old.lastTransitionTime);
      return to(nowMs - sinceMs <= thresholdMs ? RollupStatus.Progressing : RollupStatus.False);
    }
    case RollupStatus.False:
      return to(failure.reason !== old.reason ? RollupStatus.Progressing : RollupStatus.False);
    case RollupStatus.Unknown:
      return to(RollupStatus.False);
    default: {
      const unreachable: never = old.status;
      return unreachable;
    }
  }
}
