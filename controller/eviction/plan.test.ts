import { describe, expect, it } from 'vitest';
import { NodeState } from '../decide/node-state.ts';
import {
  BlockReason,
  EVICTION_DEFAULTS,
  planEvictions,
  validateEvictionPolicy,
  type EvictionNode,
  type EvictionPolicy,
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
      name: 'a node tried before (blocked by a PDB) goes after one never tried',
      nodes: [
        degraded('d1', 'a', LONG_AGO, { lastEvictionMs: NOW - 60 * SECOND }),
        degraded('d2', 'a', NOW - 400 * SECOND),
        ...many(3, ready, 'r'),
      ],
      evict: ['d2'],
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
      }),
    ).toHaveLength(4);
  });
});
