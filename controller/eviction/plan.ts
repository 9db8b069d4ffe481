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

/** What the plan remembers of storms between calls (the caller keeps it, one per leadership term). */
export interface StormMemory {
  /** The breaker had tripped at the last call. */
  breakerTripped: boolean;
  /** Zones disrupted at the last call. */
  disruptedZones: ReadonlySet<string>;
  /** Every zone waits until then (the breaker's storm ended). */
  clusterCooldownUntilMs?: number;
  /** Per zone, it waits until then (its disruption ended). */
  zoneCooldownUntilMs: ReadonlyMap<string, number>;
}

export const NO_STORM: StormMemory = {
  breakerTripped: false,
  disruptedZones: new Set(),
  zoneCooldownUntilMs: new Map(),
};

export const BlockReason = {
  ZoneDisrupted: 'ZoneDisrupted',
  CorrelatedFailure: 'CorrelatedFailure',
  StormCooldown: 'StormCooldown',
} as const;
export type BlockReason = (typeof BlockReason)[keyof typeof BlockReason];

/** Why a node that qualifies waits although its zone is open. */
export const BudgetReason = {
  GroupBudget: 'GroupBudget',
  ParallelCap: 'ParallelCap',
} as const;
export type BudgetReason = (typeof BudgetReason)[keyof typeof BudgetReason];

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

/** `percent` of `total`, rounded up: any budget above 0% of a non-empty set allows one. */
function percentOf(percent: number, total: number): number {
  return Math.ceil((percent * total) / 100 - 1e-9);
}

/** The storm memory after this call, and the cooldowns that hold now. */
function nextStorm(
  previous: StormMemory,
  policy: EvictionPolicy,
  disruptedZones: ReadonlySet<string>,
  nowMs: number,
): StormMemory {
  const cooldownMs = policy.stormCooldownSeconds * 1000;
  let clusterCooldownUntilMs = previous.clusterCooldownUntilMs;
  if (previous.breakerTripped && !policy.breakerTripped && cooldownMs > 0)
    clusterCooldownUntilMs = nowMs + cooldownMs;
  if (clusterCooldownUntilMs !== undefined && clusterCooldownUntilMs <= nowMs)
    clusterCooldownUntilMs = undefined;
  const zoneCooldownUntilMs = new Map(
    [...previous.zoneCooldownUntilMs].filter(
      ([zone, untilMs]) => untilMs > nowMs && !disruptedZones.has(zone),
    ),
  );
  if (cooldownMs > 0)
    for (const zone of previous.disruptedZones)
      if (!disruptedZones.has(zone)) zoneCooldownUntilMs.set(zone, nowMs + cooldownMs);
  return {
    breakerTripped: policy.breakerTripped,
    disruptedZones,
    ...(clusterCooldownUntilMs !== undefined ? { clusterCooldownUntilMs } : {}),
    zoneCooldownUntilMs,
  };
}

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
    evict: [],
    blockedZones: [],
    waiting: [],
    held: [],
    evicting: [],
    nextDeadlineMs: undefined,
    limiter,
    storm,
  };
  if (!(policy.evictAfterSeconds > 0) || !(policy.ratePerSecond > 0)) return plan;

  const evictAfterMs = policy.evictAfterSeconds * 1000;
  const groupSize = new Map<string, number>();
  const groupEvicting = new Map<string, number>();
  let evicting = 0;
  const candidates = new Map<string, EvictionNode[]>();
  for (const node of nodes) {
    const group = groupKey(node);
    groupSize.set(group, (groupSize.get(group) ?? 0) + 1);
    if (isEvicting(node)) {
      groupEvicting.set(group, (groupEvicting.get(group) ?? 0) + 1);
      evicting += 1;
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
  const clusterAllowed = Math.min(
    policy.maxParallelNodes > 0 ? policy.maxParallelNodes : Infinity,
    percentOf(policy.maxParallelPercent, nodes.length),
  );

  const later = (atMs: number): void => {
    if (atMs > nowMs && (plan.nextDeadlineMs === undefined || atMs < plan.nextDeadlineMs)) {
      plan.nextDeadlineMs = atMs;
    }
  };
  for (const zone of [...zones.keys()].sort()) {
    const count = zones.get(zone) as ZoneCount;
    const cooldownUntilMs = Math.max(
      storm.clusterCooldownUntilMs ?? -Infinity,
      storm.zoneCooldownUntilMs.get(zone) ?? -Infinity,
    );
    const reason: BlockReason | undefined = policy.breakerTripped
      ? BlockReason.CorrelatedFailure
      : disruptedZones.has(zone)
        ? BlockReason.ZoneDisrupted
        : cooldownUntilMs > nowMs
          ? BlockReason.StormCooldown
          : undefined;
    const waiting = (candidates.get(zone) ?? []).sort(evictionOrder);
    if (reason) {
      if (count.degraded > 0) {
        plan.blockedZones.push({
          zone,
          reason,
          considered: count.considered,
          unhealthy: count.unhealthy,
          ...(reason === BlockReason.StormCooldown ? { untilMs: cooldownUntilMs } : {}),
        });
      }
      if (reason === BlockReason.StormCooldown && waiting.length > 0) later(cooldownUntilMs);
      continue;
    }
    const last = limiter.get(zone);
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
      const qualifiesAtMs = (node.degradedSinceMs as number) + evictAfterMs;
      if (qualifiesAtMs > nowMs || freeAtMs > nowMs) {
        later(Math.max(qualifiesAtMs, freeAtMs));
        continue;
      }
      // A new node: inside its group's budget and the cluster's cap, or it waits for a node to complete (a
      // pass of a node being evicted, with its own deadline).
      const group = groupKey(node);
      const groupAllowed = percentOf(policy.groupBudgetPercent, groupSize.get(group) ?? 0);
      const budget: BudgetReason | undefined =
        (groupEvicting.get(group) ?? 0) >= groupAllowed
          ? BudgetReason.GroupBudget
          : evicting >= clusterAllowed
            ? BudgetReason.ParallelCap
            : undefined;
      if (budget) {
        plan.waiting.push({ name: node.name, group, reason: budget });
        continue;
      }
      groupEvicting.set(group, (groupEvicting.get(group) ?? 0) + 1);
      evicting += 1;
      plan.evict.push(node.name);
      limiter.set(zone, nowMs);
      freeAtMs = nowMs + intervalMs;
    }
  }
  plan.waiting.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  plan.held.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  plan.evicting.sort();
  return plan;
}
