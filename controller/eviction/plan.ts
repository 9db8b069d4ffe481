// Which Degraded nodes to evict now (docs/design.md section 5, safe eviction): a pure function of the nodes, the
// policy, the per-zone limiter and the time (docs/conventions.md 1). The reconciler runs the evictions it returns
// (evict.ts), requeues at nextDeadlineMs, and keeps the returned limiter for the next call.
//
// Modelled on the node lifecycle controller (pkg/controller/nodelifecycle), with these semantics:
// - Off unless evictAfterSeconds > 0. A node qualifies once Degraded for evictAfterSeconds.
// - Per zone (label topology.kubernetes.io/zone; nodes without it form the zone ''), at most one node
//   eviction starts every 1/ratePerSecond seconds [0.1/s → one per 10 s]: NLC's token bucket with burst 1.
// - A zone is disrupted when ≥ unhealthyZoneThreshold [0.55] of its considered nodes are unhealthy and it
//   has at least minZoneNodes [3] considered nodes: evictions stop there (reason ZoneDisrupted).
// - When no node anywhere is Ready (NLC: "all zones fully disrupted") every zone stops (ZoneDisrupted).
// - When the correlated-failure breaker has tripped, every zone stops (reason CorrelatedFailure).
//
// Deviations from the NLC, on purpose:
// - A disrupted zone stops entirely instead of evicting at the secondary rate (0.01/s, or 0 in clusters of
//   ≤ 50 nodes): a node-health taint spreading through a zone is far more likely a bad extension rollout
//   than many broken machines, and evicting a zone onto the others is the expensive mistake.
// - A zone whose nodes are all unhealthy also stops (the NLC keeps evicting a fully disrupted zone while
//   other zones are healthy): same reason.
// - Considered nodes are the judged ones (Ready, Degraded, BootstrapTimeout, NotReady); unhealthy ones are
//   Degraded, BootstrapTimeout and NotReady (the kubelet's Ready is not True: the NLC counts such nodes toward
//   a zone's disruption too). A NotReady node is never evicted by nodecare (the NLC's own not-ready and
//   unreachable taints handle its pods). Bootstrapping nodes neither dilute nor count, like the breaker's counts. The
//   minimum of 3 applies to the zone's considered nodes (the NLC asks for more than 2 NotReady nodes), so
//   2 Degraded of 3 also stops a zone.
// - A node is evicted in passes: one pass lists its pods and evicts what it may. A pass that left pods
//   (blocked by a PodDisruptionBudget, or failed) is repeated later; every pass takes the zone's token, and
//   nodes never tried go before nodes tried least recently, so one blocked node cannot starve a zone.

import { NodeState } from '../decide/index.ts';

export const ZONE_LABEL = 'topology.kubernetes.io/zone';

export const EVICTION_DEFAULTS = {
  /** 0 = eviction off (the default). */
  evictAfterSeconds: 0,
  /** Node evictions per second per zone (the NLC's --node-eviction-rate). */
  ratePerSecond: 0.1,
  /** Fraction of a zone's nodes unhealthy at which its evictions stop (the NLC's --unhealthy-zone-threshold). */
  unhealthyZoneThreshold: 0.55,
  /** Zones with fewer considered nodes are never declared disrupted. */
  minZoneNodes: 3,
} as const;

export interface EvictionPolicy {
  evictAfterSeconds: number;
  ratePerSecond: number;
  unhealthyZoneThreshold: number;
  minZoneNodes: number;
  /** The correlated-failure breaker has tripped for some extension: evict nothing anywhere. */
  breakerTripped: boolean;
}

/** Every problem with the policy at once (empty when valid). */
export function validateEvictionPolicy(policy: Omit<EvictionPolicy, 'breakerTripped'>): string[] {
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
  return problems;
}

export interface EvictionNode {
  name: string;
  /** Label topology.kubernetes.io/zone, '' when absent. */
  zone: string;
  state: NodeState;
  /** Controller clock when the node became Degraded (this controller's view; a restart starts it anew). */
  degradedSinceMs?: number;
  /** When the last eviction pass on this node started, in its current Degraded spell. */
  lastEvictionMs?: number;
  /** A pass left nothing to evict: the node is done until it leaves Degraded. */
  evictionComplete?: boolean;
  /** A suspension holds the node (controller/decide/suspend.ts): nothing is evicted from it meanwhile. */
  suspended?: boolean;
}

/** Per zone, when the last node eviction started (controller clock, ms). */
export type EvictionLimiter = ReadonlyMap<string, number>;

export const BlockReason = {
  ZoneDisrupted: 'ZoneDisrupted',
  CorrelatedFailure: 'CorrelatedFailure',
} as const;
export type BlockReason = (typeof BlockReason)[keyof typeof BlockReason];

export interface BlockedZone {
  zone: string;
  reason: BlockReason;
  /** Considered and unhealthy nodes in the zone, for messages and metrics. */
  considered: number;
  unhealthy: number;
}

export interface EvictionPlanInput {
  nodes: readonly EvictionNode[];
  policy: EvictionPolicy;
  limiter: EvictionLimiter;
  nowMs: number;
}

export interface EvictionPlan {
  /** Nodes whose pods to evict now: at most one per zone. */
  evict: string[];
  /** Zones where eviction is stopped and that hold at least one Degraded node, sorted by zone. */
  blockedZones: BlockedZone[];
  /** The earliest future time a call with the same nodes would evict something; undefined when never. */
  nextDeadlineMs: number | undefined;
  /** The limiter to pass to the next call. */
  limiter: Map<string, number>;
}

interface ZoneCount {
  considered: number;
  unhealthy: number;
  degraded: number;
}

/** Unavailable for a zone's disruption budget: a maintained node is too (it is being emptied or rebuilt). */
function isUnhealthy(state: NodeState): boolean {
  return (
    state === NodeState.Degraded ||
    state === NodeState.BootstrapTimeout ||
    state === NodeState.NotReady ||
    state === NodeState.Maintenance
  );
}

function isConsidered(state: NodeState): boolean {
  return state !== NodeState.Bootstrapping;
}

function countZones(nodes: readonly EvictionNode[]): Map<string, ZoneCount> {
  const zones = new Map<string, ZoneCount>();
  for (const node of nodes) {
    const count = zones.get(node.zone) ?? { considered: 0, unhealthy: 0, degraded: 0 };
    if (isConsidered(node.state)) count.considered += 1;
    if (isUnhealthy(node.state)) count.unhealthy += 1;
    if (node.state === NodeState.Degraded) count.degraded += 1;
    zones.set(node.zone, count);
  }
  return zones;
}

function blockReason(
  count: ZoneCount,
  policy: EvictionPolicy,
  noReadyNode: boolean,
): BlockReason | undefined {
  if (policy.breakerTripped) return BlockReason.CorrelatedFailure;
  if (noReadyNode) return BlockReason.ZoneDisrupted;
  if (
    count.considered >= policy.minZoneNodes &&
    count.unhealthy / count.considered >= policy.unhealthyZoneThreshold
  ) {
    return BlockReason.ZoneDisrupted;
  }
  return undefined;
}

/** Least recently tried first (never tried before all), then longest Degraded, then by name. */
function evictionOrder(a: EvictionNode, b: EvictionNode): number {
  return (
    (a.lastEvictionMs ?? -Infinity) - (b.lastEvictionMs ?? -Infinity) ||
    (a.degradedSinceMs ?? 0) - (b.degradedSinceMs ?? 0) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
}

export function planEvictions(input: EvictionPlanInput): EvictionPlan {
  const { nodes, policy, nowMs } = input;
  const intervalMs = 1000 / policy.ratePerSecond;
  // Forget zones whose spacing has passed: the map stays as small as the zones that evicted lately.
  const limiter = new Map([...input.limiter].filter(([, lastMs]) => lastMs + intervalMs > nowMs));
  const plan: EvictionPlan = { evict: [], blockedZones: [], nextDeadlineMs: undefined, limiter };
  if (!(policy.evictAfterSeconds > 0) || !(policy.ratePerSecond > 0)) return plan;

  const zones = countZones(nodes);
  const noReadyNode = !nodes.some((n) => n.state === NodeState.Ready);
  const evictAfterMs = policy.evictAfterSeconds * 1000;
  const candidates = new Map<string, EvictionNode[]>();
  for (const node of nodes) {
    if (
      node.state !== NodeState.Degraded ||
      node.evictionComplete ||
      node.suspended ||
      node.degradedSinceMs === undefined
    )
      continue;
    const list = candidates.get(node.zone) ?? [];
    list.push(node);
    candidates.set(node.zone, list);
  }

  const later = (atMs: number): void => {
    if (atMs > nowMs && (plan.nextDeadlineMs === undefined || atMs < plan.nextDeadlineMs)) {
      plan.nextDeadlineMs = atMs;
    }
  };
  for (const zone of [...zones.keys()].sort()) {
    const count = zones.get(zone) as ZoneCount;
    const reason = blockReason(count, policy, noReadyNode);
    if (reason) {
      if (count.degraded > 0) {
        plan.blockedZones.push({ zone, reason, considered: count.considered, unhealthy: count.unhealthy });
      }
      continue;
    }
    const waiting = (candidates.get(zone) ?? []).sort(evictionOrder);
    const last = limiter.get(zone);
    let freeAtMs = last === undefined ? nowMs : last + intervalMs;
    for (const node of waiting) {
      const qualifiesAtMs = (node.degradedSinceMs as number) + evictAfterMs;
      if (qualifiesAtMs <= nowMs && freeAtMs <= nowMs) {
        plan.evict.push(node.name);
        limiter.set(zone, nowMs);
        freeAtMs = nowMs + intervalMs;
      } else {
        later(Math.max(qualifiesAtMs, freeAtMs));
      }
    }
  }
  return plan;
}
