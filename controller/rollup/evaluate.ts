// The roll-up's evaluation (docs/design.md section 6, docs/rollup.md): from every (node, extension) pair to one
// Gardener-style condition per condition type, per-extension counts and the status label. Pure: the reconciler
// passes the pairs it decided, the old conditions and `nowMs`.
//
// Precedence per type, as Gardener's health-check library orders it: a pair that cannot be evaluated →
// Unknown / ConditionCheckError; else a failing pair → the threshold machine (HealthCheckUnsuccessful); else a
// progressing pair → Progressing / HealthCheckProgressing; else True / HealthCheckSuccessful.

import { BUILTIN_CONDITION_TYPES } from '../../api/extension.ts';
import { ExtensionState } from '../../api/names.ts';
import { ControllerReason, ProbeReason } from '../../api/reasons.ts';
import { capInput } from '../../api/text.ts';
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

/** How many failing items a message names before it says how many more there are. */
export const MAX_MESSAGE_ITEMS = 10;

/**
 * Bounds that keep every status the roll-up computes within the ClusterHealth CRD's schema (a status the API
 * server refuses with 422 would block the whole roll-up): whatever nodes write, one item of a message is at
 * most MAX_ITEM_LENGTH characters (a node name of 253, an extension name of 63, the state and a capped
 * reason fit), a message at most MAX_CONDITION_MESSAGE (the CRD allows 32,768), at most MAX_CONDITIONS
 * conditions (the CRD's maxItems) and MAX_EXTENSION_ROWS per-extension rows (the CRD's maxItems).
 */
export const MAX_ITEM_LENGTH = 512;
export const MAX_CONDITION_MESSAGE = 8_192;
export const MAX_CONDITIONS = 64;
export const MAX_EXTENSION_ROWS = 10_000;

/** What the kubelet says about a NotReady node (capped and inert: controller/cache.ts kubeletNotReady). */
export interface NodeNotReadyFact {
  /** The kubelet Ready condition's reason, e.g. `NodeStatusUnknown`. */
  reason: string;
  /** Its lastTransitionTime ('' when absent). */
  since: string;
}

/** The node's agent is not reporting (the decision's agentNotReporting). */
export interface AgentNotReportingFact {
  /** Its heartbeat's last renewTime as written ('' when it never reported on this boot). */
  since: string;
}

/** One (node, extension) pair as the controller decided it. */
export interface RollupPair {
  node: string;
  extension: string;
  conditionType: string;
  state: ExtensionState;
  reason: string;
  /** Set when the node is NotReady (the kubelet's Ready is not True): the pair fails, naming the node. */
  nodeNotReady?: NodeNotReadyFact;
  /** Set on the pairs Unknown / AgentNotReporting: the message names the node once for all of them. */
  agentNotReporting?: AgentNotReportingFact;
}

export type PairVerdict = 'healthy' | 'progressing' | 'failing' | 'unevaluable';

/**
 * How a pair counts. A pair of a NotReady node (the kubelet's Ready is not True; the decision made it Unknown /
 * NodeNotReady) is failing: Gardener's own EveryNodeReady check fails a node whose Ready is not True through
 * its threshold machine (`NodeUnhealthy`), it does not report a check error, and what is known is a fact about
 * the node, not an outdated report (docs/rollup.md). An expired lease or an agent that stopped reporting cannot
 * be evaluated (Gardener's outdated report → Unknown). An agent's own Unknown ("could not determine") counts as
 * failing: our one deviation from Gardener, which counts an Unknown check without error as a success — a check
 * that cannot tell whether the GPU plugin works must not report the cluster healthy.
 */
export function classifyPair(pair: Pick<RollupPair, 'state' | 'reason' | 'nodeNotReady'>): PairVerdict {
  if (pair.nodeNotReady !== undefined || pair.reason === ControllerReason.NodeNotReady) return 'failing';
  switch (pair.state) {
    case ExtensionState.Healthy:
      return 'healthy';
    case ExtensionState.Progressing:
      return 'progressing';
    case ExtensionState.Unhealthy:
      return 'failing';
    case ExtensionState.Unknown:
      return pair.reason === ControllerReason.AgentNotReporting ||
        pair.reason === ControllerReason.LeaseExpired ||
        pair.reason === ControllerReason.LeaseMissing
        ? 'unevaluable'
        : 'failing';
    default: {
      const unreachable: never = pair.state;
      return unreachable;
    }
  }
}

function isConfigurationProblem(pair: RollupPair): boolean {
  return (
    pair.reason === ControllerReason.InvalidRegistration || pair.reason === ProbeReason.InvalidRegistration
  );
}

/**
 * `node-a: gpu-plugin Unhealthy (ProbeTimeout)`; for a NotReady node, whatever the extension,
 * `node-a: kubelet not ready (NodeStatusUnknown) since 2026-11-24T14:00:00Z` (said once per node). Capped and
 * made inert (the reason is a node's word).
 */
function describePair(pair: RollupPair): string {
  const k = pair.nodeNotReady;
  const item =
    k !== undefined
      ? `${pair.node}: kubelet not ready${k.reason ? ` (${k.reason})` : ''}${k.since ? ` since ${k.since}` : ''}`
      : `${pair.node}: ${pair.extension} ${pair.state}${pair.reason ? ` (${pair.reason})` : ''}`;
  return capInput(item, MAX_ITEM_LENGTH);
}

function byNodeThenExtension(a: RollupPair, b: RollupPair): number {
  if (a.node !== b.node) return a.node < b.node ? -1 : 1;
  return a.extension < b.extension ? -1 : a.extension > b.extension ? 1 : 0;
}

/**
 * Gardener's message format: one item is `<x>.`, several are `1) <a>. 2) <b>.`; past `max` items the rest are
 * counted (`… and 3 more.`). Sorted, so equal inputs give an equal message and nothing is written twice.
 */
export function itemsMessage(pairs: readonly RollupPair[], max: number = MAX_MESSAGE_ITEMS): string {
  // Sorted by node, so the pairs of a NotReady node (one item for all of them) are adjacent.
  const items = [...pairs].sort(byNodeThenExtension).map(describePair);
  const unique = items.filter((item, i) => i === 0 || item !== items[i - 1]);
  const shown = unique.slice(0, max);
  const rest = unique.length - shown.length;
  const listed = shown.length === 1 ? `${shown[0]}.` : shown.map((item, i) => `${i + 1}) ${item}.`).join(' ');
  return capMessage(rest > 0 ? `${listed} … and ${rest} more.` : listed);
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** What made a pair unevaluable, in words (the reason stays beside it for a search). */
function whyUnevaluable(pair: RollupPair): string {
  switch (pair.reason) {
    case ControllerReason.AgentNotReporting: {
      const since = pair.agentNotReporting?.since;
      return since ? `agent not reporting since ${since}` : 'agent has not reported on this boot';
    }
    case ControllerReason.LeaseExpired:
      return 'its lease was not renewed in time (LeaseExpired)';
    case ControllerReason.LeaseMissing:
      return 'no lease written (LeaseMissing)';
    default:
      return `${pair.state} (${pair.reason})`;
  }
}

/**
 * The message of ConditionCheckError (the reason stays Gardener's): what happened, not "failed to execute N
 * health checks". The pairs of one node that share a cause are one item: `3 extensions on node node-a: agent
 * not reporting since 2026-11-24T14:00:00Z`; one pair alone is `gpu-plugin on node node-a: …`. Sorted, capped
 * and made inert as itemsMessage.
 */
export function unevaluableMessage(pairs: readonly RollupPair[], max: number = MAX_MESSAGE_ITEMS): string {
  const groups = new Map<string, RollupPair[]>();
  for (const pair of [...pairs].sort(byNodeThenExtension)) {
    const key = JSON.stringify([pair.node, whyUnevaluable(pair)]);
    groups.set(key, [...(groups.get(key) ?? []), pair]);
  }
  const items = [...groups.values()].map((group) => {
    const first = group[0]!;
    const what = group.length === 1 ? first.extension : plural(group.length, 'extension');
    return capInput(`${what} on node ${first.node}: ${whyUnevaluable(first)}`, MAX_ITEM_LENGTH);
  });
  const shown = items.slice(0, max);
  const rest = items.length - shown.length;
  const listed = shown.length === 1 ? `${shown[0]}.` : shown.map((item, i) => `${i + 1}) ${item}.`).join(' ');
  return capMessage(rest > 0 ? `${listed} … and ${rest} more.` : listed);
}

/** A condition message within MAX_CONDITION_MESSAGE characters, whatever `max` items it lists. */
export function capMessage(message: string): string {
  if (message.length <= MAX_CONDITION_MESSAGE) return message;
  const tail = ` … (${message.length - MAX_CONDITION_MESSAGE} more characters)`;
  return `${message.slice(0, MAX_CONDITION_MESSAGE - tail.length)}${tail}`;
}

export interface ExtensionCounts {
  name: string;
  /** The condition type the extension feeds (its registrations may disagree across nodes: the first wins). */
  conditionType: string;
  healthy: number;
  progressing: number;
  unhealthy: number;
  unknown: number;
}

export interface RollupInput {
  pairs: Iterable<RollupPair>;
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
}

const BUILTIN_TYPES: ReadonlySet<string> = new Set(BUILTIN_CONDITION_TYPES);

/** The four Gardener types first, then custom types by name. */
function byTypePriority(a: string, b: string): number {
  const builtin = Number(BUILTIN_TYPES.has(b)) - Number(BUILTIN_TYPES.has(a));
  if (builtin !== 0) return builtin;
  return a < b ? -1 : a > b ? 1 : 0;
}

interface TypeBucket {
  unevaluable: RollupPair[];
  failing: RollupPair[];
  progressing: RollupPair[];
}

function emptyCounts(name: string, conditionType: string): ExtensionCounts {
  return { name, conditionType, healthy: 0, progressing: 0, unhealthy: 0, unknown: 0 };
}

/** The count each extension state adds to (ClusterHealth `extensions`, SystemExtension status). */
export const COUNT_FIELD = {
  [ExtensionState.Healthy]: 'healthy',
  [ExtensionState.Progressing]: 'progressing',
  [ExtensionState.Unhealthy]: 'unhealthy',
  [ExtensionState.Unknown]: 'unknown',
} as const satisfies Record<ExtensionState, 'healthy' | 'progressing' | 'unhealthy' | 'unknown'>;

export function evaluateRollup(input: RollupInput): RollupResult {
  const { nowMs } = input;
  const thresholds = { ...DEFAULT_THRESHOLDS_MS, ...input.thresholdsMs };
  const buckets = new Map<string, TypeBucket>();
  const counts = new Map<string, ExtensionCounts>();
  for (const pair of input.pairs) {
    let bucket = buckets.get(pair.conditionType);
    if (!bucket) {
      bucket = { unevaluable: [], failing: [], progressing: [] };
      buckets.set(pair.conditionType, bucket);
    }
    const verdict = classifyPair(pair);
    if (verdict !== 'healthy') bucket[verdict].push(pair);
    let count = counts.get(pair.extension);
    if (!count) {
      count = emptyCounts(pair.extension, pair.conditionType);
      counts.set(pair.extension, count);
    }
    count[COUNT_FIELD[pair.state]] += 1;
  }

  const workerless = input.workerless ?? false;
  const previousByType = new Map(input.previous.map((c) => [c.type, c]));
  const ownedBefore = new Set(input.ownedBefore);
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
        : evaluateType(old, buckets.get(type), thresholds[type] ?? DEFAULT_THRESHOLD_MS, nowMs),
    );
  }

  let changed = false;
  const conditions: RollupCondition[] = [];
  for (const old of input.previous) {
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
  const extensions = [...counts.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const deadlines = conditions
    .filter(
      (c) =>
        owned.includes(c.type) &&
        c.status === RollupStatus.Progressing &&
        c.reason === RollupReason.HealthCheckUnsuccessful,
    )
    .map((c) => Date.parse(c.lastTransitionTime) + (thresholds[c.type] ?? DEFAULT_THRESHOLD_MS) + 1_000);
  return {
    conditions,
    owned,
    changed,
    nextDeadlineMs: deadlines.length > 0 ? Math.min(...deadlines) : undefined,
    extensions: extensions.slice(0, MAX_EXTENSION_ROWS),
    label: statusLabel(conditions),
    droppedTypes,
    droppedExtensions: Math.max(0, extensions.length - MAX_EXTENSION_ROWS),
  };
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
