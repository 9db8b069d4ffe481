// The roll-up's evaluation (docs/design.md section 6, docs/rollup.md): from every (node, extension) pair to one
// Gardener-style condition per condition type, per-extension counts and the status label. Pure: the reconciler
// passes the pairs it decided, the old conditions and `nowMs`.
//
// Precedence per type, as Gardener's health-check library orders it: a pair that cannot be evaluated →
// Unknown / ConditionCheckError; else a failing pair → the threshold machine (HealthCheckUnsuccessful); else a
// progressing pair → Progressing / HealthCheckProgressing; else True / HealthCheckSuccessful.

import { BUILTIN_CONDITION_TYPES } from '../../api/extension.ts';
import {
  failedCondition,
  initCondition,
  RollupReason,
  RollupStatus,
  updateCondition,
  type RollupCondition,
} from './condition.ts';

/** Gardener's error code for a registration that cannot work as written. */
export const ERR_CONFIGURATION_PROBLEM = 'ERR_CONFIGURATION_PROBLEM';

export const GardenerConditionType = {
  EveryNodeReady: 'EveryNodeReady',
  SystemComponentsHealthy: 'SystemComponentsHealthy',
  ObservabilityComponentsHealthy: 'ObservabilityComponentsHealthy',
  ControlPlaneHealthy: 'ControlPlaneHealthy',
} as const;

/** Gardener's stock thresholds: 5 minutes for EveryNodeReady, 1 minute for every other type. */
export const DEFAULT_THRESHOLD_MS = 60_000;
export const DEFAULT_THRESHOLDS_MS: Readonly<Record<string, number>> = {
  [GardenerConditionType.EveryNodeReady]: 5 * 60_000,
};

export const SUCCESS_MESSAGE = 'All health checks successful';
export const HIBERNATED_MESSAGE = 'Shoot is hibernated';

import { RollupTally, type ExtensionCounts, type TypeBucket } from './tally.ts';
import {
  MAX_CONDITIONS,
  MAX_EXTENSION_ROWS,
  isConfigurationProblem,
  itemsMessage,
  unevaluableMessage,
  type RollupPair,
} from './pairs.ts';

export {
  MAX_CONDITION_MESSAGE,
  MAX_CONDITIONS,
  MAX_EXTENSION_ROWS,
  MAX_ITEM_LENGTH,
  MAX_MESSAGE_ITEMS,
  capMessage,
  classifyPair,
  itemsMessage,
  unevaluableMessage,
  type AgentNotReportingFact,
  type NodeNotReadyFact,
  type PairVerdict,
  type RollupPair,
} from './pairs.ts';

export { COUNT_FIELD, RollupTally, type ExtensionCounts, type SortedPairs } from './tally.ts';

export interface RollupInput {
  /** Every (node, extension) pair, listed or as kept by a tally (the controller's, as nodes change). */
  pairs: Iterable<RollupPair> | RollupTally;
  /** The conditions as they are on the object now (foreign types included: they are kept). */
  previous: readonly RollupCondition[];
  /** The condition types the last write owned: one of them no longer in use is removed, others are kept. */
  ownedBefore: readonly string[];
  thresholdsMs?: Readonly<Record<string, number>>;
  /** Gardener awareness: the shoot is hibernated (every condition True, evaluation paused). */
  hibernated?: boolean;
  /** Gardener awareness: the shoot has no workers (no EveryNodeReady condition). */
  workerless?: boolean;
  nowMs: number;
}

export interface RollupResult {
  /** Every condition, ours recomputed and foreign ones kept, in a stable order. */
  conditions: RollupCondition[];
  /** The condition types nodecare owns now: one per type in use (remember them for `ownedBefore`). */
  owned: string[];
  /** True when a condition differs from `previous` (write only then). */
  changed: boolean;
  /** When a condition in its threshold (Progressing on a failure) turns False if nothing changes. */
  nextDeadlineMs: number | undefined;
  extensions: ExtensionCounts[];
  label: RollupLabel;
  /**
   * Condition types in use that got no condition because the object holds MAX_CONDITIONS already (the four
   * Gardener types come first, then custom types in name order); empty normally.
   */
  droppedTypes: string[];
  /** Per-extension rows left out past MAX_EXTENSION_ROWS (in name order); 0 normally. */
  droppedExtensions: number;
  /** Nodes (of those requiring an extension) in maintenance, and with maintenance planned. */
  maintenance: MaintenanceCounts;
}

/** ClusterHealth `status.maintenance`: how many nodes are maintained and planned for it. */
export interface MaintenanceCounts {
  inProgress: number;
  planned: number;
}

const BUILTIN_TYPES: ReadonlySet<string> = new Set(BUILTIN_CONDITION_TYPES);

/** The four Gardener types first, then custom types by name. */
function byTypePriority(a: string, b: string): number {
  const builtin = Number(BUILTIN_TYPES.has(b)) - Number(BUILTIN_TYPES.has(a));
  if (builtin !== 0) return builtin;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function evaluateRollup(input: RollupInput): RollupResult {
  const { nowMs } = input;
  const thresholds = { ...DEFAULT_THRESHOLDS_MS, ...input.thresholdsMs };
  const sorted = (input.pairs instanceof RollupTally ? input.pairs : RollupTally.of(input.pairs)).sorted();
  const ownedBefore = new Set(input.ownedBefore);
  const { owned, droppedTypes } = ownedTypes(input, sorted.buckets, ownedBefore);
  const previousByType = new Map(input.previous.map((c) => [c.type, c]));
  const next = new Map<string, RollupCondition>();
  for (const type of owned) {
    const old = previousByType.get(type) ?? initCondition(type, nowMs);
    next.set(
      type,
      input.hibernated
        ? updateCondition(
            old,
            {
              status: RollupStatus.True,
              reason: RollupReason.HealthCheckSuccessful,
              message: HIBERNATED_MESSAGE,
            },
            nowMs,
          )
        : evaluateType(old, sorted.buckets.get(type), thresholds[type] ?? DEFAULT_THRESHOLD_MS, nowMs),
    );
  }
  const { conditions, changed } = mergeConditions(input.previous, ownedBefore, next);
  const extensions = [...sorted.counts.values()].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  return {
    conditions,
    owned,
    changed,
    nextDeadlineMs: nextDeadlineMs(conditions, owned, thresholds),
    extensions: extensions.slice(0, MAX_EXTENSION_ROWS),
    label: statusLabel(conditions),
    droppedTypes,
    droppedExtensions: Math.max(0, extensions.length - MAX_EXTENSION_ROWS),
    maintenance: { inProgress: sorted.maintained, planned: sorted.planned },
  };
}

/** The condition types this controller writes (by name), and those in use that got no room. */
function ownedTypes(
  input: RollupInput,
  buckets: ReadonlyMap<string, TypeBucket>,
  ownedBefore: ReadonlySet<string>,
): { owned: string[]; droppedTypes: string[] } {
  const workerless = input.workerless ?? false;
  const inUse = [...buckets.keys()]
    .filter((type) => !(workerless && type === GardenerConditionType.EveryNodeReady))
    .sort(byTypePriority);
  // Another owner's conditions are kept (or taken over in place, when we feed the same type); ours fill the
  // room left within the CRD's maxItems.
  const foreign = new Set(input.previous.map((c) => c.type).filter((type) => !ownedBefore.has(type)));
  let size = foreign.size;
  const owned: string[] = [];
  const droppedTypes: string[] = [];
  for (const type of inUse) {
    if (foreign.has(type)) owned.push(type);
    else if (size < MAX_CONDITIONS) {
      owned.push(type);
      size += 1;
    } else droppedTypes.push(type);
  }
  owned.sort();
  return { owned, droppedTypes };
}

/**
 * The object's conditions in their order: each previous one replaced by the one built for its type, kept when
 * another owner's, removed when ours and no longer in use; new types after them. `next` is emptied.
 */
function mergeConditions(
  previous: readonly RollupCondition[],
  ownedBefore: ReadonlySet<string>,
  next: Map<string, RollupCondition>,
): { conditions: RollupCondition[]; changed: boolean } {
  let changed = false;
  const conditions: RollupCondition[] = [];
  for (const old of previous) {
    const built = next.get(old.type);
    if (built) {
      if (built !== old) changed = true;
      conditions.push(built);
      next.delete(old.type);
    } else if (ownedBefore.has(old.type)) {
      changed = true; // ours, no longer in use (or EveryNodeReady of a workerless shoot): removed
    } else {
      conditions.push(old); // another owner's condition type: kept as it is
    }
  }
  for (const [, built] of next) {
    conditions.push(built);
    changed = true;
  }
  return { conditions, changed };
}

/** When the first of our Progressing conditions turns False (a second after its threshold), if any. */
function nextDeadlineMs(
  conditions: readonly RollupCondition[],
  owned: readonly string[],
  thresholds: Readonly<Record<string, number>>,
): number | undefined {
  const deadlines = conditions
    .filter(
      (c) =>
        owned.includes(c.type) &&
        c.status === RollupStatus.Progressing &&
        c.reason === RollupReason.HealthCheckUnsuccessful,
    )
    .map((c) => Date.parse(c.lastTransitionTime) + (thresholds[c.type] ?? DEFAULT_THRESHOLD_MS) + 1_000);
  return deadlines.length > 0 ? Math.min(...deadlines) : undefined;
}

function evaluateType(
  old: RollupCondition,
  bucket: TypeBucket | undefined,
  thresholdMs: number,
  nowMs: number,
): RollupCondition {
  if (bucket && bucket.unevaluable.length > 0) {
    return updateCondition(
      old,
      {
        status: RollupStatus.Unknown,
        reason: RollupReason.ConditionCheckError,
        message: unevaluableMessage(bucket.unevaluable),
      },
      nowMs,
    );
  }
  if (bucket && bucket.failing.length > 0) {
    const codes = bucket.failing.some(isConfigurationProblem) ? [ERR_CONFIGURATION_PROBLEM] : [];
    return failedCondition(
      old,
      thresholdMs,
      { reason: RollupReason.HealthCheckUnsuccessful, message: itemsMessage(bucket.failing), codes },
      nowMs,
    );
  }
  if (bucket && bucket.progressing.length > 0) {
    return updateCondition(
      old,
      {
        status: RollupStatus.Progressing,
        reason: RollupReason.HealthCheckProgressing,
        message: itemsMessage(bucket.progressing),
      },
      nowMs,
    );
  }
  return updateCondition(
    old,
    { status: RollupStatus.True, reason: RollupReason.HealthCheckSuccessful, message: SUCCESS_MESSAGE },
    nowMs,
  );
}

export const RollupLabel = {
  healthy: 'healthy',
  progressing: 'progressing',
  unknown: 'unknown',
  unhealthy: 'unhealthy',
} as const;
export type RollupLabel = (typeof RollupLabel)[keyof typeof RollupLabel];

const LABEL_RANK: Record<RollupLabel, number> = { healthy: 3, progressing: 2, unknown: 1, unhealthy: 0 };

/**
 * Gardener's `ComputeShootStatus` over every condition on the object (foreign ones too): the worst wins, ranked
 * healthy > progressing > unknown > unhealthy; True → healthy, Progressing → progressing, Unknown → unknown,
 * anything else → unhealthy. nodecare has no last operation: it counts as Succeeded (contributes healthy).
 */
export function statusLabel(conditions: readonly Pick<RollupCondition, 'status'>[]): RollupLabel {
  let worst: RollupLabel = RollupLabel.healthy;
  for (const { status } of conditions) {
    const label =
      status === RollupStatus.True
        ? RollupLabel.healthy
        : status === RollupStatus.Progressing
          ? RollupLabel.progressing
          : status === RollupStatus.Unknown
            ? RollupLabel.unknown
            : RollupLabel.unhealthy;
    if (LABEL_RANK[label] < LABEL_RANK[worst]) worst = label;
  }
  return worst;
}
