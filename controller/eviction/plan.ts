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
// - A node is evicted in passes: one pass lists its pods and evicts what it may. The zone's token paces the
//   nodes whose eviction starts; a node already being evicted (below) gets its next pass on its own cadence,
//   1/ratePerSecond after its last, without the token, until a pass finds it done. So a node blocked by a
//   PodDisruptionBudget, or whose pods are still leaving, neither starves its zone nor is polled faster than
//   the zone's rate. Nodes never tried go before nodes tried least recently.
//
// Budgets beyond zones (issue 54 item 1), after the zone's stop and token:
// - A node is being evicted from its first pass in its Degraded spell until a pass finds nothing left to do:
//   no pod evicted by that pass, none blocked by a PodDisruptionBudget, none failed, none still Terminating
//   (evict.ts evictionComplete). So a node counts until the pods it lost have left it.
// - Per node group (the value of the label --eviction-group-label [karpenter.sh/nodepool]; nodes without it are
//   grouped by zone): at most groupBudgetPercent [10] of the group's nodes, rounded up, being evicted at once
//   (Karpenter's NodePool disruption budget rounds up too, so a group of 3 at 10% still allows one).
// - Cluster-wide: at most maxParallelNodes (0: no count cap) and maxParallelPercent [100] of all nodes, rounded
//   up, being evicted at once; the smaller applies.
// - A node already being evicted always gets its next pass (it is inside the budget already); a budget only
//   stops new nodes from starting (reasons GroupBudget, ParallelCap). Zones are walked in name order.
// - A storm stop (breaker, zone disrupted, cooldown) stops the passes of nodes being evicted too.
// - Storm cooldown: when the breaker has stopped tripping, every zone waits stormCooldownSeconds [300]; when a
//   zone stops being disrupted, that zone waits as long (reason StormCooldown). The memory of it (StormMemory)
//   is the caller's, kept per leadership term like the limiter: a new term has not seen the storm end, and it
//   waits evictAfterSeconds of its own for every node anyway.
// - A node another owner acts on (owners.ts: do-not-disrupt, Karpenter's or medik8s' taints, maintenance) is
//   never picked and never counts as being evicted; the plan lists it with its reason.

import { NodeState } from '../decide/index.ts';
import type { HoldReason } from './owners.ts';
import type { BudgetReason } from './budgets.ts';
import {
  budgetBreak,
  budgetsUsed,
  countStart,
  percentOf,
  type Budgets,
  type BudgetsInUse,
} from './budgets.ts';
import type { EvictionPolicy } from './policy.ts';

export { BudgetReason, type BudgetsInUse } from './budgets.ts';
import { NO_STORM, nextStorm, type StormMemory } from './storm.ts';

export {
  EVICTION_DEFAULTS,
  validateEvictionPolicy,
  type EvictionPolicy,
  type EvictionPolicyValues,
} from './policy.ts';

export { NO_STORM, type StormMemory } from './storm.ts';

export const ZONE_LABEL = 'topology.kubernetes.io/zone';

export interface EvictionNode {
  name: string;
  /** Label topology.kubernetes.io/zone, '' when absent. */
  zone: string;
  /** The node's group for its budget (groupOf); its zone's group when undefined. */
  group?: string;
  state: NodeState;
  /** Controller clock when the node became Degraded (this controller's view; a restart starts it anew). */
  degradedSinceMs?: number;
  /** When the last eviction pass on this node started, in its current Degraded spell. */
  lastEvictionMs?: number;
  /** A pass left nothing to evict: the node is done until it leaves Degraded. */
  evictionComplete?: boolean;
  /** A suspension holds the node (controller/decide/suspend.ts): nothing is evicted from it meanwhile. */
  suspended?: boolean;
  /** Another owner acts on the node (owners.ts): nothing is evicted from it meanwhile. */
  heldBy?: HoldReason;
}

/** `karpenter.sh/nodepool=default`, or `topology.kubernetes.io/zone=a` for a node without the group label. */
export function groupOf(labels: Readonly<Record<string, string>>, groupLabel: string): string {
  const value = groupLabel === '' ? undefined : labels[groupLabel];
  return value === undefined ? `${ZONE_LABEL}=${labels[ZONE_LABEL] ?? ''}` : `${groupLabel}=${value}`;
}

/** Per zone, when the last node eviction started (controller clock, ms). */
export type EvictionLimiter = ReadonlyMap<string, number>;

export const BlockReason = {
  ZoneDisrupted: 'ZoneDisrupted',
  CorrelatedFailure: 'CorrelatedFailure',
  StormCooldown: 'StormCooldown',
} as const;
export type BlockReason = (typeof BlockReason)[keyof typeof BlockReason];

export interface BlockedZone {
  zone: string;
  reason: BlockReason;
  /** Considered and unhealthy nodes in the zone, for messages and metrics. */
  considered: number;
  unhealthy: number;
  /** StormCooldown: when the zone opens again. */
  untilMs?: number;
}

export interface EvictionPlanInput {
  nodes: readonly EvictionNode[];
  policy: EvictionPolicy;
  limiter: EvictionLimiter;
  /** NO_STORM on the first call of a term. */
  storm?: StormMemory;
  nowMs: number;
}

export interface EvictionPlan {
  /** Nodes whose pods to evict now: at most one new node per zone, and the nodes being evicted whose next pass is due. */
  evict: string[];
  /** Zones where eviction is stopped and that hold at least one Degraded node, sorted by zone. */
  blockedZones: BlockedZone[];
  /** Nodes that qualify, in an open zone with its token free, held back by a budget; by name. */
  waiting: Array<{ name: string; group: string; reason: BudgetReason }>;
  /** Degraded nodes another owner acts on, by name. */
  held: Array<{ name: string; reason: HoldReason }>;
  /** Nodes being evicted (started, not complete), by name. */
  evicting: string[];
  /**
   * The budgets in use: each group with a node being evicted or waiting on it (its nodes, how many may be
   * evicted at once, how many are), and the cluster's cap (allowed absent: no cap).
   */
  budgets: BudgetsInUse;
  /** The earliest future time a call with the same nodes would evict something; undefined when never. */
  nextDeadlineMs: number | undefined;
  /** The limiter to pass to the next call. */
  limiter: Map<string, number>;
  /** The storm memory to pass to the next call. */
  storm: StormMemory;
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

function zoneDisrupted(count: ZoneCount, policy: EvictionPolicy, noReadyNode: boolean): boolean {
  return (
    noReadyNode ||
    (count.considered >= policy.minZoneNodes &&
      count.unhealthy / count.considered >= policy.unhealthyZoneThreshold)
  );
}

/** Least recently tried first (never tried before all), then longest Degraded, then by name. */
function evictionOrder(a: EvictionNode, b: EvictionNode): number {
  return (
    (a.lastEvictionMs ?? -Infinity) - (b.lastEvictionMs ?? -Infinity) ||
    (a.degradedSinceMs ?? 0) - (b.degradedSinceMs ?? 0) ||
    (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
}

function groupKey(node: EvictionNode): string {
  return node.group ?? `${ZONE_LABEL}=${node.zone}`;
}

/** Started in this Degraded spell and not complete (and not held: nodecare does nothing there). */
function isEvicting(node: EvictionNode): boolean {
  return (
    node.state === NodeState.Degraded &&
    node.lastEvictionMs !== undefined &&
    node.evictionComplete !== true &&
    node.heldBy === undefined &&
    node.suspended !== true
  );
}

/** Counts the budgets, fills plan.evicting and plan.held, and returns the candidates per zone. */
function collect(
  nodes: readonly EvictionNode[],
  policy: EvictionPolicy,
  plan: EvictionPlan,
): { budgets: Budgets; candidates: Map<string, EvictionNode[]> } {
  const budgets: Budgets = {
    groupSize: new Map(),
    groupEvicting: new Map(),
    evicting: 0,
    clusterAllowed: Math.min(
      policy.maxParallelNodes > 0 ? policy.maxParallelNodes : Infinity,
      policy.maxParallelPercent >= 100 ? Infinity : percentOf(policy.maxParallelPercent, nodes.length),
    ),
    groupBudgetPercent: policy.groupBudgetPercent,
  };
  const candidates = new Map<string, EvictionNode[]>();
  for (const node of nodes) {
    const group = groupKey(node);
    budgets.groupSize.set(group, (budgets.groupSize.get(group) ?? 0) + 1);
    if (isEvicting(node)) {
      countStart(budgets, group);
      plan.evicting.push(node.name);
    }
    if (node.state !== NodeState.Degraded || node.evictionComplete || node.suspended) continue;
    if (node.heldBy !== undefined) {
      plan.held.push({ name: node.name, reason: node.heldBy });
      continue;
    }
    if (node.degradedSinceMs === undefined) continue;
    const list = candidates.get(node.zone) ?? [];
    list.push(node);
    candidates.set(node.zone, list);
  }
  return { budgets, candidates };
}

/** Why a zone evicts nothing now, and until when for a cooldown. */
function zoneStop(
  zone: string,
  policy: EvictionPolicy,
  disruptedZones: ReadonlySet<string>,
  storm: StormMemory,
  nowMs: number,
): { reason: BlockReason; untilMs: number } | undefined {
  const untilMs = Math.max(
    storm.clusterCooldownUntilMs ?? -Infinity,
    storm.zoneCooldownUntilMs.get(zone) ?? -Infinity,
  );
  if (policy.breakerTripped) return { reason: BlockReason.CorrelatedFailure, untilMs };
  if (disruptedZones.has(zone)) return { reason: BlockReason.ZoneDisrupted, untilMs };
  if (untilMs > nowMs) return { reason: BlockReason.StormCooldown, untilMs };
  return undefined;
}

/** What one open zone's walk needs: the plan it fills and the budgets it spends. */
interface ZoneWalk {
  plan: EvictionPlan;
  budgets: Budgets;
  intervalMs: number;
  evictAfterMs: number;
  nowMs: number;
  later(atMs: number): void;
}

/** An open zone: the passes due of its nodes being evicted, and new nodes as its token and the budgets allow. */
function walkZone(zone: string, waiting: readonly EvictionNode[], walk: ZoneWalk): void {
  const { plan, budgets, intervalMs, nowMs, later } = walk;
  const last = plan.limiter.get(zone);
  let freeAtMs = last === undefined ? nowMs : last + intervalMs;
  for (const node of waiting) {
    if (isEvicting(node)) {
      // Started already: its next pass on its own cadence, without the zone's token.
      const nextPassMs = (node.lastEvictionMs as number) + intervalMs;
      if (nextPassMs <= nowMs) {
        plan.evict.push(node.name);
        later(nowMs + intervalMs);
      } else later(nextPassMs);
      continue;
    }
    const qualifiesAtMs = (node.degradedSinceMs as number) + walk.evictAfterMs;
    if (qualifiesAtMs > nowMs || freeAtMs > nowMs) {
      later(Math.max(qualifiesAtMs, freeAtMs));
      continue;
    }
    // A new node: inside its group's budget and the cluster's cap, or it waits for a node to complete (a
    // pass of a node being evicted, with its own deadline).
    const group = groupKey(node);
    const budget = budgetBreak(budgets, group);
    if (budget) {
      plan.waiting.push({ name: node.name, group, reason: budget });
      continue;
    }
    countStart(budgets, group);
    plan.evict.push(node.name);
    plan.limiter.set(zone, nowMs);
    freeAtMs = nowMs + intervalMs;
  }
}

const byName = <T extends { name: string }>(a: T, b: T): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

export function planEvictions(input: EvictionPlanInput): EvictionPlan {
  const { nodes, policy, nowMs } = input;
  const intervalMs = 1000 / policy.ratePerSecond;
  // Forget zones whose spacing has passed: the map stays as small as the zones that evicted lately.
  const limiter = new Map([...input.limiter].filter(([, lastMs]) => lastMs + intervalMs > nowMs));
  const zones = countZones(nodes);
  const noReadyNode = !nodes.some((n) => n.state === NodeState.Ready);
  const disruptedZones = new Set(
    [...zones].filter(([, count]) => zoneDisrupted(count, policy, noReadyNode)).map(([zone]) => zone),
  );
  const storm = nextStorm(input.storm ?? NO_STORM, policy, disruptedZones, nowMs);
  const plan: EvictionPlan = {
    ...{ evict: [], blockedZones: [], waiting: [], held: [], evicting: [] },
    ...{ budgets: { groups: [], parallel: { evicting: 0 } }, nextDeadlineMs: undefined, limiter, storm },
  };
  if (!(policy.evictAfterSeconds > 0) || !(policy.ratePerSecond > 0)) return plan;

  const { budgets, candidates } = collect(nodes, policy, plan);
  const later = (atMs: number): void => {
    if (atMs > nowMs && (plan.nextDeadlineMs === undefined || atMs < plan.nextDeadlineMs)) {
      plan.nextDeadlineMs = atMs;
    }
  };
  const walk: ZoneWalk = {
    plan,
    budgets,
    intervalMs,
    evictAfterMs: policy.evictAfterSeconds * 1000,
    nowMs,
    later,
  };
  for (const zone of [...zones.keys()].sort()) {
    const count = zones.get(zone) as ZoneCount;
    const stop = zoneStop(zone, policy, disruptedZones, storm, nowMs);
    const waiting = (candidates.get(zone) ?? []).sort(evictionOrder);
    if (!stop) {
      walkZone(zone, waiting, walk);
      continue;
    }
    const { reason, untilMs } = stop;
    if (count.degraded > 0) {
      plan.blockedZones.push({
        ...{ zone, reason, considered: count.considered, unhealthy: count.unhealthy },
        ...(reason === BlockReason.StormCooldown ? { untilMs } : {}),
      });
    }
    if (reason === BlockReason.StormCooldown && waiting.length > 0) later(untilMs);
  }
  plan.waiting.sort(byName);
  plan.held.sort(byName);
  plan.evicting.sort();
  plan.budgets = budgetsUsed(
    budgets,
    plan.waiting.map((w) => w.group),
  );
  return plan;
}
