// The eviction plan's policy (plan.ts): its defaults, its shape and its validation, one problem a line.

export const EVICTION_DEFAULTS = {
  /** 0 = eviction off (the default). */
  evictAfterSeconds: 0,
  /** Node evictions per second per zone (the NLC's --node-eviction-rate). */
  ratePerSecond: 0.1,
  /** Fraction of a zone's nodes unhealthy at which its evictions stop (the NLC's --unhealthy-zone-threshold). */
  unhealthyZoneThreshold: 0.55,
  /** Zones with fewer considered nodes are never declared disrupted. */
  minZoneNodes: 3,
  /** The node label whose value names a node's group (Karpenter's NodePool); nodes without it: their zone. */
  groupLabel: 'karpenter.sh/nodepool',
  /** Percent of a group's nodes that may be being evicted at once, rounded up (Karpenter's repair default). */
  groupBudgetPercent: 10,
  /** Nodes being evicted at once in the whole cluster; 0 = no count cap. */
  maxParallelNodes: 0,
  /** Percent of all nodes being evicted at once, rounded up; 100 = no percentage cap. */
  maxParallelPercent: 100,
  /** How long eviction waits after the breaker stops tripping or a zone stops being disrupted. */
  stormCooldownSeconds: 300,
} as const;

export interface EvictionPolicy {
  evictAfterSeconds: number;
  ratePerSecond: number;
  unhealthyZoneThreshold: number;
  minZoneNodes: number;
  groupBudgetPercent: number;
  maxParallelNodes: number;
  maxParallelPercent: number;
  stormCooldownSeconds: number;
  /** The correlated-failure breaker has tripped for some extension: evict nothing anywhere. */
  breakerTripped: boolean;
}

/** The policy's tunables, as flags set them (the group label is the caller's: it only names groups). */
export type EvictionPolicyValues = Omit<EvictionPolicy, 'breakerTripped'>;

/** Every problem with the policy at once (empty when valid). */
export function validateEvictionPolicy(policy: EvictionPolicyValues): string[] {
  const problems: string[] = [];
  if (!Number.isFinite(policy.evictAfterSeconds) || policy.evictAfterSeconds < 0) {
    problems.push(`evictAfterSeconds must be 0 (off) or positive (got ${policy.evictAfterSeconds})`);
  }
  if (!Number.isFinite(policy.ratePerSecond) || policy.ratePerSecond <= 0) {
    problems.push(`eviction ratePerSecond must be positive (got ${policy.ratePerSecond})`);
  }
  if (!(policy.unhealthyZoneThreshold > 0 && policy.unhealthyZoneThreshold <= 1)) {
    problems.push(`unhealthyZoneThreshold must be in (0, 1] (got ${policy.unhealthyZoneThreshold})`);
  }
  if (!Number.isInteger(policy.minZoneNodes) || policy.minZoneNodes < 1) {
    problems.push(`minZoneNodes must be a positive integer (got ${policy.minZoneNodes})`);
  }
  if (!(policy.groupBudgetPercent > 0 && policy.groupBudgetPercent <= 100)) {
    problems.push(
      `groupBudgetPercent must be in (0, 100] (got ${policy.groupBudgetPercent}; eviction off is evictAfterSeconds 0)`,
    );
  }
  if (!Number.isInteger(policy.maxParallelNodes) || policy.maxParallelNodes < 0) {
    problems.push(
      `maxParallelNodes must be 0 (no count cap) or a positive integer (got ${policy.maxParallelNodes})`,
    );
  }
  if (!(policy.maxParallelPercent > 0 && policy.maxParallelPercent <= 100)) {
    problems.push(`maxParallelPercent must be in (0, 100] (got ${policy.maxParallelPercent}; 100 = no cap)`);
  }
  if (!Number.isFinite(policy.stormCooldownSeconds) || policy.stormCooldownSeconds < 0) {
    problems.push(`stormCooldownSeconds must be 0 (none) or positive (got ${policy.stormCooldownSeconds})`);
  }
  return problems;
}

/**
 * The settings of safe eviction (--evict-after-seconds, --eviction-rate, --unhealthy-zone-threshold,
 * --eviction-group-label, --eviction-group-budget-percent, --eviction-max-parallel-nodes,
 * --eviction-max-parallel-percent, --eviction-storm-cooldown-seconds, --eviction-dry-run).
 */
export interface EvictionSettings {
  evictAfterSeconds: number;
  ratePerSecond: number;
  unhealthyZoneThreshold: number;
  /** The node label naming a node's group ('' = groups are zones); read by the caller's node(). */
  groupLabel: string;
  groupBudgetPercent: number;
  maxParallelNodes: number;
  maxParallelPercent: number;
  stormCooldownSeconds: number;
  dryRun: boolean;
}
