import { describe, expect, it } from 'vitest';
import { NodeState } from '../decide/node-state.ts';
import { HoldReason } from './owners.ts';
import {
  BlockReason,
  BudgetReason,
  EVICTION_DEFAULTS,
  NO_STORM,
  groupOf,
  planEvictions,
  validateEvictionPolicy,
  type EvictionNode,
  type EvictionPolicy,
  type StormMemory,
} from './plan.ts';

const T0 = Date.UTC(2026, 0, 1);
const SECOND = 1000;
const NOW = T0 + 3600 * SECOND;
const ON: EvictionPolicy = { ...EVICTION_DEFAULTS, evictAfterSeconds: 300, breakerTripped: false };
const LONG_AGO = NOW - 3000 * SECOND;

function degraded(name: string, zone = 'a', degradedSinceMs = LONG_AGO, extra: Partial<EvictionNode> = {}) {
  return { name, zone, state: NodeState.Degraded, degradedSinceMs, ...extra } satisfies EvictionNode;
}
function ready(name: string, zone = 'a'): EvictionNode {
  return { name, zone, state: NodeState.Ready };
}
function many(count: number, make: (name: string) => EvictionNode, prefix: string): EvictionNode[] {
  return Array.from({ length: count }, (_, i) => make(`${prefix}${i + 1}`));
}

describe('planEvictions', () => {
  it.each<{
    name: string;
    nodes: EvictionNode[];
    policy?: Partial<EvictionPolicy>;
    limiter?: Array<[string, number]>;
    evict: string[];
    blocked?: Array<[string, BlockReason]>;
    nextDeadlineMs: number | undefined;
  }>([
    {
      name: 'off by default → nothing',
      nodes: [degraded('n1'), ready('n2'), ready('n3')],
      policy: { evictAfterSeconds: EVICTION_DEFAULTS.evictAfterSeconds },
      evict: [],
      nextDeadlineMs: undefined,
    },
    {
      name: 'Degraded for less than evictAfterSeconds → nothing; deadline when it qualifies',
      nodes: [degraded('n1', 'a', NOW - 100 * SECOND), ready('n2'), ready('n3')],
      evict: [],
      nextDeadlineMs: NOW + 200 * SECOND,
    },
    {
      name: 'Degraded for exactly evictAfterSeconds → evicted',
      nodes: [degraded('n1', 'a', NOW - 300 * SECOND), ready('n2'), ready('n3')],
      evict: ['n1'],
      nextDeadlineMs: undefined,
    },
    {
      name: 'Degraded with no known start → never evicted',
      nodes: [{ name: 'n1', zone: 'a', state: NodeState.Degraded }, ready('n2')],
      evict: [],
      nextDeadlineMs: undefined,
    },
    {
      name: 'zone with 3 of 5 Degraded (60%) → stopped',
      nodes: [...many(3, degraded, 'd'), ...many(2, ready, 'r')],
      evict: [],
      blocked: [['a', BlockReason.ZoneDisrupted]],
      nextDeadlineMs: undefined,
    },
    {
      name: 'zone with 2 of 5 Degraded (40%) → one evicted, the next when the limiter frees',
      nodes: [...many(2, degraded, 'd'), ...many(3, ready, 'r')],
      evict: ['d1'],
      nextDeadlineMs: NOW + 10 * SECOND,
    },
    {
      name: 'zone with 2 of 3 Degraded (67%, 3 nodes) → stopped',
      nodes: [...many(2, degraded, 'd'), ready('r1'), ready('x1', 'b')],
      evict: [],
      blocked: [['a', BlockReason.ZoneDisrupted]],
      nextDeadlineMs: undefined,
    },
    {
      name: 'zone of 2 with both Degraded while another zone is Ready → evicted (too small to be disrupted)',
      nodes: [...many(2, degraded, 'd'), ready('x1', 'b')],
      evict: ['d1'],
      nextDeadlineMs: NOW + 10 * SECOND,
    },
    {
      name: 'no Ready node in the whole cluster → stopped everywhere',
      nodes: [degraded('d1', 'a'), degraded('d2', 'b')],
      evict: [],
      blocked: [
        ['a', BlockReason.ZoneDisrupted],
        ['b', BlockReason.ZoneDisrupted],
      ],
      nextDeadlineMs: undefined,
    },
    {
      name: 'breaker tripped → stopped everywhere',
      nodes: [
        degraded('d1', 'a'),
        ...many(5, ready, 'r'),
        degraded('x1', 'b'),
        ready('x2', 'b'),
        ready('c1', 'c'),
      ],
      policy: { breakerTripped: true },
      evict: [],
      blocked: [
        ['a', BlockReason.CorrelatedFailure],
        ['b', BlockReason.CorrelatedFailure],
      ],
      nextDeadlineMs: undefined,
    },
    {
      name: 'two zones are limited independently',
      nodes: [
        degraded('a1', 'a'),
        degraded('a2', 'a'),
        ...many(4, ready, 'ra'),
        degraded('b1', 'b'),
        degraded('b2', 'b'),
        ...many(4, (n) => ready(n, 'b'), 'rb'),
      ],
      limiter: [['a', NOW - 4 * SECOND]],
      evict: ['b1'],
      nextDeadlineMs: NOW + 6 * SECOND,
    },
    {
      name: 'nextDeadline = when the next node qualifies, if before the limiter frees',
      nodes: [
        degraded('a1', 'a'),
        degraded('a2', 'a', NOW - 297 * SECOND),
        ...many(3, ready, 'ra'),
        degraded('b1', 'b', NOW - 297 * SECOND),
        ...many(3, (n) => ready(n, 'b'), 'rb'),
      ],
      evict: ['a1'],
      nextDeadlineMs: NOW + 3 * SECOND,
    },
    {
      name: 'nextDeadline = when the limiter frees, if a node already qualifies',
      nodes: [degraded('a1', 'a'), degraded('a2', 'a', NOW - 299 * SECOND), ...many(3, ready, 'r')],
      limiter: [['a', NOW - 9 * SECOND]],
      evict: [],
      nextDeadlineMs: NOW + SECOND,
    },
    {
      name: 'Bootstrapping nodes neither count nor dilute a disrupted zone',
      nodes: [
        ...many(3, degraded, 'd'),
        ...many(2, ready, 'r'),
        ...many(10, (n) => ({ ...ready(n), state: NodeState.Bootstrapping }), 'b'),
      ],
      evict: [],
      blocked: [['a', BlockReason.ZoneDisrupted]],
      nextDeadlineMs: undefined,
    },
    {
      name: 'BootstrapTimeout counts as unhealthy: 2 Degraded + 1 timed out of 5 → stopped',
      nodes: [
        ...many(2, degraded, 'd'),
        { ...ready('t1'), state: NodeState.BootstrapTimeout },
        ...many(2, ready, 'r'),
      ],
      evict: [],
      blocked: [['a', BlockReason.ZoneDisrupted]],
      nextDeadlineMs: undefined,
    },
    {
      name: 'a node whose eviction completed is not picked again',
      nodes: [
        degraded('d1', 'a', LONG_AGO, { evictionComplete: true, lastEvictionMs: NOW - 60 * SECOND }),
        ...many(3, ready, 'r'),
      ],
      evict: [],
      nextDeadlineMs: undefined,
    },
    {
      name: 'a node being evicted (blocked by a PDB) gets its next pass without the zone token; a new node starts too (budget room for both)',
      nodes: [
        degraded('d1', 'a', LONG_AGO, { lastEvictionMs: NOW - 60 * SECOND }),
        degraded('d2', 'a', NOW - 400 * SECOND),
        ...many(3, ready, 'r'),
      ],
      policy: { groupBudgetPercent: 100 },
      evict: ['d1', 'd2'],
      nextDeadlineMs: NOW + 10 * SECOND,
    },
    {
      name: "nodes without a zone label form the zone ''",
      nodes: [degraded('d1', ''), ready('r1', ''), degraded('a1', 'a'), ready('r2', 'a')],
      evict: ['d1', 'a1'],
      nextDeadlineMs: undefined,
    },
  ])('$name', ({ nodes, policy, limiter, evict, blocked = [], nextDeadlineMs }) => {
    const plan = planEvictions({
      nodes,
      policy: { ...ON, ...policy },
      limiter: new Map(limiter ?? []),
      nowMs: NOW,
    });
    expect(plan.evict.sort()).toEqual([...evict].sort());
    expect(plan.blockedZones.map((b) => [b.zone, b.reason])).toEqual(blocked);
    expect(plan.nextDeadlineMs).toBe(nextDeadlineMs);
  });

  it('rate limit 0.1/s → one node per 10 s per zone', () => {
    const nodes = [...many(4, degraded, 'd'), ...many(6, ready, 'r')];
    let limiter: ReadonlyMap<string, number> = new Map();
    const started: Array<[number, string]> = [];
    for (let t = 0; t <= 35; t++) {
      const nowMs = NOW + t * SECOND;
      const plan = planEvictions({ nodes, policy: ON, limiter, nowMs });
      for (const name of plan.evict) {
        started.push([t, name]);
        const node = nodes.find((n) => n.name === name) as EvictionNode;
        node.evictionComplete = true;
        node.lastEvictionMs = nowMs;
      }
      limiter = plan.limiter;
    }
    expect(started).toEqual([
      [0, 'd1'],
      [10, 'd2'],
      [20, 'd3'],
      [30, 'd4'],
    ]);
  });

  it('a Degraded node a suspension holds is not evicted', () => {
    const plan = planEvictions({
      nodes: [
        degraded('d1', 'a', LONG_AGO, { suspended: true }),
        degraded('d2'),
        ready('r1'),
        ready('r2'),
        ready('r3'),
      ],
      policy: ON,
      limiter: new Map(),
      nowMs: NOW,
    });
    expect(plan.evict).toEqual(['d2']);
  });

  it('a node in maintenance is never evicted and counts as unavailable for its zone', () => {
    const maintained = (name: string): EvictionNode => ({ name, zone: 'a', state: NodeState.Maintenance });
    const plan = planEvictions({
      nodes: [degraded('d1'), maintained('m1'), maintained('m2'), ready('r1')],
      policy: ON,
      limiter: new Map(),
      nowMs: NOW,
    });
    expect(plan.evict).toEqual([]);
    expect(plan.blockedZones).toEqual([{ zone: 'a', reason: 'ZoneDisrupted', considered: 4, unhealthy: 3 }]);
  });

  it('reports the counts of a blocked zone and keeps a Degraded-free zone out of the list', () => {
    const plan = planEvictions({
      nodes: [...many(3, degraded, 'd'), ready('r1'), ...many(3, (n) => ready(n, 'b'), 'b')],
      policy: ON,
      limiter: new Map(),
      nowMs: NOW,
    });
    expect(plan.blockedZones).toEqual([{ zone: 'a', reason: 'ZoneDisrupted', considered: 4, unhealthy: 3 }]);
  });

  it('forgets limiter entries whose spacing has passed', () => {
    const plan = planEvictions({
      nodes: [ready('r1')],
      policy: ON,
      limiter: new Map([
        ['a', NOW - 10 * SECOND],
        ['b', NOW - 9 * SECOND],
      ]),
      nowMs: NOW,
    });
    expect([...plan.limiter]).toEqual([['b', NOW - 9 * SECOND]]);
  });
});

describe('validateEvictionPolicy', () => {
  it('accepts the defaults', () => {
    expect(validateEvictionPolicy(EVICTION_DEFAULTS)).toEqual([]);
  });

  it('reports every problem at once', () => {
    expect(
      validateEvictionPolicy({
        evictAfterSeconds: -1,
        ratePerSecond: 0,
        unhealthyZoneThreshold: 1.5,
        minZoneNodes: 0,
        groupBudgetPercent: 0,
        maxParallelNodes: 1.5,
        maxParallelPercent: 101,
        stormCooldownSeconds: -1,
      }),
    ).toHaveLength(8);
  });
});

/** Nodes of the group `pool` (label karpenter.sh/nodepool=pool) in zone `zone`. */
function pooled(node: EvictionNode, pool: string): EvictionNode {
  return { ...node, group: groupOf({ 'karpenter.sh/nodepool': pool, [ZONE]: node.zone }, GROUP_LABEL) };
}
const ZONE = 'topology.kubernetes.io/zone';
const GROUP_LABEL = EVICTION_DEFAULTS.groupLabel;
/** A Degraded node whose eviction started and has not completed (its pods are still leaving). */
function evicting(name: string, zone = 'a'): EvictionNode {
  return degraded(name, zone, LONG_AGO, { lastEvictionMs: NOW - 60 * SECOND });
}

describe('planEvictions budgets beyond zones (issue 54 item 1)', () => {
  it.each<{
    name: string;
    nodes: EvictionNode[];
    policy?: Partial<EvictionPolicy>;
    evict: string[];
    waiting?: Array<[string, BudgetReason]>;
  }>([
    {
      name: 'group of 10 at 10%: one node being evicted → a new one waits (GroupBudget), the evicting one gets its pass',
      nodes: [evicting('e1'), degraded('d1'), ...many(8, ready, 'r')],
      evict: ['e1'],
      waiting: [['d1', BudgetReason.GroupBudget]],
    },
    {
      name: 'group of 3 at 10% rounds up: one node may be evicted',
      nodes: [degraded('d1'), ready('r1'), ready('r2'), ready('x1', 'b')],
      evict: ['d1'],
    },
    {
      name: 'group of 20 at 10%: two being evicted → both get their passes, a third waits',
      nodes: [evicting('e1'), evicting('e2'), degraded('d1'), ...many(17, ready, 'r')],
      evict: ['e1', 'e2'],
      waiting: [['d1', BudgetReason.GroupBudget]],
    },
    {
      name: 'group of 20 at 10%: one being evicted → a second starts',
      nodes: [
        evicting('e1', 'b'),
        degraded('d1'),
        ...many(9, ready, 'r'),
        ...many(9, (n) => ready(n, 'b'), 'rb'),
      ].map((n) => pooled(n, 'p')),
      evict: ['e1', 'd1'],
    },
    {
      name: 'one NodePool across two zones shares one budget: a1 goes, b1 waits',
      nodes: [
        degraded('a1', 'a'),
        degraded('b1', 'b'),
        ...many(4, ready, 'ra'),
        ...many(4, (n) => ready(n, 'b'), 'rb'),
      ].map((n) => pooled(n, 'p')),
      evict: ['a1'],
      waiting: [['b1', BudgetReason.GroupBudget]],
    },
    {
      name: 'two NodePools in one zone: each its own budget',
      nodes: [
        pooled(evicting('e1'), 'p'),
        pooled(degraded('d1'), 'q'),
        ...many(3, (n) => pooled(ready(n), 'p'), 'rp'),
        ...many(3, (n) => pooled(ready(n), 'q'), 'rq'),
      ],
      evict: ['e1', 'd1'],
    },
    {
      name: 'without the group label a node is grouped by its zone',
      nodes: [
        evicting('e1'),
        degraded('d2'),
        ...many(8, ready, 'r'),
        pooled(degraded('d1', 'b'), 'p'),
        ...many(3, (n) => ready(n, 'b'), 'rb'),
      ],
      evict: ['d1', 'e1'],
      waiting: [['d2', BudgetReason.GroupBudget]],
    },
    {
      name: 'cluster cap of 1 node: a1 goes, b1 (its own group) waits (ParallelCap)',
      nodes: [
        degraded('a1', 'a'),
        degraded('b1', 'b'),
        ...many(4, ready, 'ra'),
        ...many(4, (n) => ready(n, 'b'), 'rb'),
      ],
      policy: { maxParallelNodes: 1 },
      evict: ['a1'],
      waiting: [['b1', BudgetReason.ParallelCap]],
    },
    {
      name: 'cluster cap of 1 node with one being evicted: the evicting one gets its pass, no new node',
      nodes: [
        evicting('a1', 'a'),
        degraded('b1', 'b'),
        ...many(4, ready, 'ra'),
        ...many(4, (n) => ready(n, 'b'), 'rb'),
      ],
      policy: { maxParallelNodes: 1 },
      evict: ['a1'],
      waiting: [['b1', BudgetReason.ParallelCap]],
    },
    {
      name: 'cluster cap of 10% of 10 nodes rounds to 1: b1 waits',
      nodes: [
        degraded('a1', 'a'),
        degraded('b1', 'b'),
        ...many(4, ready, 'ra'),
        ...many(4, (n) => ready(n, 'b'), 'rb'),
      ],
      policy: { maxParallelPercent: 10 },
      evict: ['a1'],
      waiting: [['b1', BudgetReason.ParallelCap]],
    },
    {
      name: 'count and percentage: the smaller applies (3 nodes, 50% of 10 = 5 → 3)',
      nodes: [
        evicting('a1', 'a'),
        evicting('b1', 'b'),
        evicting('c1', 'c'),
        degraded('d1', 'd'),
        ...many(6, (n) => ready(n, 'e'), 're'),
      ],
      policy: { maxParallelNodes: 3, maxParallelPercent: 50 },
      evict: ['a1', 'b1', 'c1'],
      waiting: [['d1', BudgetReason.ParallelCap]],
    },
    {
      name: 'a completed node no longer counts: a new one starts',
      nodes: [
        degraded('e1', 'a', LONG_AGO, { lastEvictionMs: NOW - 60 * SECOND, evictionComplete: true }),
        degraded('d1'),
        ...many(8, ready, 'r'),
      ],
      evict: ['d1'],
    },
    {
      name: 'a held node neither goes nor counts as being evicted',
      nodes: [{ ...evicting('h1'), heldBy: HoldReason.DoNotDisrupt }, degraded('d1'), ...many(8, ready, 'r')],
      evict: ['d1'],
    },
  ])('$name', ({ nodes, policy, evict, waiting = [] }) => {
    const plan = planEvictions({ nodes, policy: { ...ON, ...policy }, limiter: new Map(), nowMs: NOW });
    expect([...plan.evict].sort()).toEqual([...evict].sort());
    expect(plan.waiting.map((w) => [w.name, w.reason])).toEqual(waiting);
  });

  it('groupOf: the label value when set, else the zone', () => {
    expect(groupOf({ [GROUP_LABEL]: 'gpu', [ZONE]: 'a' }, GROUP_LABEL)).toBe('karpenter.sh/nodepool=gpu');
    expect(groupOf({ [ZONE]: 'a' }, GROUP_LABEL)).toBe('topology.kubernetes.io/zone=a');
    expect(groupOf({}, GROUP_LABEL)).toBe('topology.kubernetes.io/zone=');
    expect(groupOf({ [GROUP_LABEL]: 'gpu', [ZONE]: 'a' }, '')).toBe('topology.kubernetes.io/zone=a');
  });

  it("a budget-held node has no deadline of its own; the evicting node's next pass sets it", () => {
    const nodes = [evicting('e1'), degraded('d1'), ...many(8, ready, 'r')];
    const plan = planEvictions({ nodes, policy: ON, limiter: new Map(), nowMs: NOW });
    expect(plan.evict).toEqual(['e1']);
    expect(plan.evicting).toEqual(['e1']);
    expect(plan.nextDeadlineMs).toBe(NOW + 10 * SECOND);
    // One second later, e1's pass made: nothing is due before its next pass, and d1 still waits on the budget.
    (nodes[0] as EvictionNode).lastEvictionMs = NOW;
    const next = planEvictions({ nodes, policy: ON, limiter: plan.limiter, nowMs: NOW + SECOND });
    expect(next.evict).toEqual([]);
    expect(next.waiting.map((w) => w.name)).toEqual(['d1']);
    expect(next.nextDeadlineMs).toBe(NOW + 10 * SECOND);
  });

  it('a node being evicted is not polled faster than the zone rate, and takes no token from a new node', () => {
    const plan = planEvictions({
      nodes: [
        degraded('e1', 'a', LONG_AGO, { lastEvictionMs: NOW - 4 * SECOND }),
        degraded('d1'),
        ...many(8, ready, 'r'),
      ],
      policy: { ...ON, groupBudgetPercent: 100 },
      limiter: new Map(),
      nowMs: NOW,
    });
    expect(plan.evict).toEqual(['d1']);
    expect(plan.nextDeadlineMs).toBe(NOW + 6 * SECOND);
  });

  it('held nodes are listed with their reason', () => {
    const plan = planEvictions({
      nodes: [
        { ...degraded('h2'), heldBy: HoldReason.KarpenterDisruption },
        { ...degraded('h1'), heldBy: HoldReason.Medik8sRemediation },
        ...many(8, ready, 'r'),
      ],
      policy: ON,
      limiter: new Map(),
      nowMs: NOW,
    });
    expect(plan.evict).toEqual([]);
    expect(plan.held).toEqual([
      { name: 'h1', reason: 'Medik8sRemediation' },
      { name: 'h2', reason: 'KarpenterDisruption' },
    ]);
  });
});

describe('planEvictions storm cooldown (issue 54 item 1)', () => {
  const zoneA = [degraded('a1', 'a'), ...many(4, ready, 'ra')];
  const zoneB = [degraded('b1', 'b'), ...many(4, (n) => ready(n, 'b'), 'rb')];

  /** Plans at each [second, breakerTripped, nodes] step, carrying the storm memory (a fresh limiter each step). */
  function run(steps: Array<[number, boolean, EvictionNode[]]>, policy: Partial<EvictionPolicy> = {}) {
    let storm: StormMemory = NO_STORM;
    return steps.map(([t, breakerTripped, nodes]) => {
      const plan = planEvictions({
        nodes,
        policy: { ...ON, ...policy, breakerTripped },
        limiter: new Map(),
        storm,
        nowMs: NOW + t * SECOND,
      });
      storm = plan.storm;
      return plan;
    });
  }

  it('the breaker trips, then stops: every zone waits the cooldown (StormCooldown), then evicts', () => {
    const nodes = [...zoneA, ...zoneB];
    const [tripped, ended, during, after] = run([
      [0, true, nodes],
      [10, false, nodes],
      [309, false, nodes],
      [310, false, nodes],
    ]);
    expect(tripped?.blockedZones.map((b) => b.reason)).toEqual(['CorrelatedFailure', 'CorrelatedFailure']);
    expect(ended?.evict).toEqual([]);
    expect(ended?.blockedZones).toEqual([
      { zone: 'a', reason: 'StormCooldown', considered: 5, unhealthy: 1, untilMs: NOW + 310 * SECOND },
      { zone: 'b', reason: 'StormCooldown', considered: 5, unhealthy: 1, untilMs: NOW + 310 * SECOND },
    ]);
    expect(ended?.nextDeadlineMs).toBe(NOW + 310 * SECOND);
    expect(during?.evict).toEqual([]);
    expect(after?.evict).toEqual(['a1', 'b1']);
    expect(after?.blockedZones).toEqual([]);
  });

  it("a zone's disruption ends: that zone waits the cooldown, the other zone does not", () => {
    const disrupted = [...many(3, (n) => degraded(n, 'a'), 'da'), ...many(2, ready, 'ra')];
    const recovered = [degraded('da1', 'a'), ...many(4, ready, 'ra')];
    const [stopped, ended, after] = run([
      [0, false, [...disrupted, ...zoneB]],
      [5, false, [...recovered, ...zoneB]],
      [305, false, [...recovered, ...zoneB]],
    ]);
    expect(stopped?.blockedZones.map((b) => [b.zone, b.reason])).toEqual([['a', 'ZoneDisrupted']]);
    expect(stopped?.evict).toEqual(['b1']);
    expect(ended?.blockedZones.map((b) => [b.zone, b.reason])).toEqual([['a', 'StormCooldown']]);
    expect(ended?.evict).toEqual(['b1']);
    expect(after?.evict).toEqual(['da1', 'b1']);
  });

  it('a zone disrupted again during its cooldown is ZoneDisrupted, and its cooldown starts anew when it ends', () => {
    const disrupted = [...many(3, (n) => degraded(n, 'a'), 'da'), ...many(2, ready, 'ra'), ...zoneB];
    const recovered = [degraded('da1', 'a'), ...many(4, ready, 'ra'), ...zoneB];
    const plans = run([
      [0, false, disrupted],
      [10, false, recovered],
      [100, false, disrupted],
      [200, false, recovered],
      [450, false, recovered],
      [500, false, recovered],
    ]);
    expect(plans.map((p) => p.blockedZones.find((b) => b.zone === 'a')?.reason)).toEqual([
      'ZoneDisrupted',
      'StormCooldown',
      'ZoneDisrupted',
      'StormCooldown',
      'StormCooldown',
      undefined,
    ]);
  });

  it('cooldown 0 → evicts as soon as the stop ends', () => {
    const nodes = [...zoneA, ...zoneB];
    const [, ended] = run(
      [
        [0, true, nodes],
        [1, false, nodes],
      ],
      { stormCooldownSeconds: 0 },
    );
    expect(ended?.evict).toEqual(['a1', 'b1']);
  });

  it('no storm seen (a new term) → no cooldown', () => {
    const [first] = run([[0, false, [...zoneA, ...zoneB]]]);
    expect(first?.evict).toEqual(['a1', 'b1']);
  });
});
