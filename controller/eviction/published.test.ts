// What the evictor publishes of its guards (ClusterHealth status.eviction) and what the plugin reads of it.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { readPublishedEviction } from '../../api/eviction.ts';
import { createLogger } from '../../lib/log.ts';
import { FakeClock } from '../../lib/testing.ts';
import { loadControllerConfig } from '../config.ts';
import { NodeState } from '../decide/index.ts';
import { ControllerMetrics } from '../metrics.ts';
import { NO_STORM, planEvictions, type EvictionNode } from './plan.ts';
import { EVICTION_DEFAULTS } from './policy.ts';
import { PUBLISHED_LIST_MAX, publishEviction } from './published.ts';
import { Evictor } from './runner.ts';

const SETTINGS = {
  evictAfterSeconds: 60,
  dryRun: false,
  groupLabel: 'karpenter.sh/nodepool',
  groupBudgetPercent: 10,
  maxParallelNodes: 1,
  maxParallelPercent: 100,
  stormCooldownSeconds: 300,
};
const POLICY = { ...EVICTION_DEFAULTS, ...SETTINGS, breakerTripped: false };
const wall = (ms: number) => new Date(ms).toISOString();

function nodes(spec: Array<[string, NodeState, Partial<EvictionNode>?]>): EvictionNode[] {
  return spec.map(([name, state, extra]) => ({
    name,
    state,
    zone: 'z',
    group: 'karpenter.sh/nodepool=a',
    ...extra,
  }));
}

describe('publishEviction (the plan as ClusterHealth status.eviction)', () => {
  it('the budgets in use, the parallel cap, the waiting and held nodes, the skips', () => {
    const plan = planEvictions({
      nodes: nodes([
        ...Array.from({ length: 8 }, (_, i): [string, NodeState] => [`ready-${i}`, NodeState.Ready]),
        ['evicting', NodeState.Degraded, { degradedSinceMs: 0, lastEvictionMs: 100_000 }],
        ['waits', NodeState.Degraded, { degradedSinceMs: 0 }],
        ['held', NodeState.Degraded, { degradedSinceMs: 0, heldBy: 'NodeHealthCheck' }],
      ]),
      policy: POLICY,
      limiter: new Map(),
      storm: NO_STORM,
      nowMs: 200_000,
    });
    const published = publishEviction({
      plan,
      settings: SETTINGS,
      skipped: new Map([
        ['pod/DoNotDisrupt', 2],
        ['node/NodeHealthCheck', 1],
      ]),
      wall,
    });
    expect(published).toEqual({
      ...SETTINGS,
      parallel: { evicting: 1, allowed: 1 },
      groups: [{ group: 'karpenter.sh/nodepool=a', nodes: 11, allowed: 2, evicting: 1 }],
      stoppedZones: [],
      waiting: [{ node: 'waits', group: 'karpenter.sh/nodepool=a', reason: 'ParallelCap' }],
      held: [{ node: 'held', reason: 'NodeHealthCheck' }],
      skipped: [
        { subject: 'node', reason: 'NodeHealthCheck', count: 1 },
        { subject: 'pod', reason: 'DoNotDisrupt', count: 2 },
      ],
    });
    // What the plugin reads back is the same.
    expect(readPublishedEviction(JSON.parse(JSON.stringify(published)))).toEqual(published);
  });

  it.each<{ name: string; breaker: [boolean, boolean]; cooldown: boolean; parallel: object }>([
    {
      name: 'no cap, no storm: the node starts',
      breaker: [false, false],
      cooldown: false,
      parallel: { evicting: 1 },
    },
    {
      name: 'the breaker stopped tripping: every zone cools down until then',
      breaker: [true, false],
      cooldown: true,
      parallel: { evicting: 0 },
    },
    {
      name: 'the breaker still trips: the zone is stopped, no cooldown yet',
      breaker: [true, true],
      cooldown: false,
      parallel: { evicting: 0 },
    },
  ])('$name', ({ breaker, cooldown, parallel }) => {
    const input = {
      nodes: nodes([
        ['ready', NodeState.Ready],
        ['bad', NodeState.Degraded, { degradedSinceMs: 0 }],
      ]),
      limiter: new Map(),
      nowMs: 1_000_000,
    };
    const first = planEvictions({
      ...input,
      policy: { ...POLICY, maxParallelNodes: 0, breakerTripped: breaker[0] },
    });
    const plan = planEvictions({
      ...input,
      policy: { ...POLICY, maxParallelNodes: 0, breakerTripped: breaker[1] },
      storm: first.storm,
    });
    const published = publishEviction({ plan, settings: SETTINGS, skipped: new Map(), wall });
    expect(published.parallel).toEqual(parallel);
    expect(published.cooldownUntil).toBe(cooldown ? wall(1_000_000 + 300_000) : undefined);
    expect(published.stoppedZones.map((z) => z.reason)).toEqual(
      breaker[1] ? ['CorrelatedFailure'] : cooldown ? ['StormCooldown'] : [],
    );
    if (cooldown) expect(published.stoppedZones[0]?.until).toBe(wall(1_300_000));
  });

  it(`caps the lists at ${PUBLISHED_LIST_MAX} and says how many it left out`, () => {
    const many = Array.from(
      { length: PUBLISHED_LIST_MAX + 7 },
      (_, i): [string, NodeState, Partial<EvictionNode>] => [
        `held-${String(i).padStart(3, '0')}`,
        NodeState.Degraded,
        { degradedSinceMs: 0, heldBy: 'DoNotDisrupt' },
      ],
    );
    const plan = planEvictions({
      nodes: nodes([
        ...Array.from({ length: 200 }, (_, i): [string, NodeState] => [`r-${i}`, NodeState.Ready]),
        ...many,
      ]),
      policy: POLICY,
      limiter: new Map(),
      nowMs: 200_000,
    });
    const published = publishEviction({ plan, settings: SETTINGS, skipped: new Map(), wall });
    expect(published.held).toHaveLength(PUBLISHED_LIST_MAX);
    expect(published.omitted).toBe(7);
  });
});

describe('readPublishedEviction (what the plugin keeps of a status another version wrote)', () => {
  it.each<{ name: string; value: unknown; expected: unknown }>([
    { name: 'absent → undefined', value: undefined, expected: undefined },
    { name: 'not an object → undefined', value: 'on', expected: undefined },
    {
      name: 'bad entries dropped, the rest kept',
      value: {
        evictAfterSeconds: 600,
        parallel: { evicting: 2 },
        groups: [{ nodes: 3 }, { group: 'g', nodes: 3, allowed: 1, evicting: 1 }],
        held: ['x', { node: 'n', reason: 'Maintenance' }],
      },
      expected: expect.objectContaining({
        evictAfterSeconds: 600,
        parallel: { evicting: 2 },
        groups: [{ group: 'g', nodes: 3, allowed: 1, evicting: 1 }],
        held: [{ node: 'n', reason: 'Maintenance' }],
      }),
    },
  ])('$name', ({ value, expected }) => {
    expect(readPublishedEviction(value)).toEqual(expected);
  });
});

describe('Evictor publication (asks for a write only when the guards change)', () => {
  it('published once per change, with the term’s skips; undefined once stopped', async () => {
    const clock = new FakeClock();
    const loaded = loadControllerConfig(['--evict-after-seconds=1', '--eviction-max-parallel-nodes=1'], {});
    if (!('config' in loaded)) throw new Error('expected a config');
    const states = new Map<string, NodeState>([
      ...Array.from({ length: 6 }, (_, i): [string, NodeState] => [`ready-${i}`, NodeState.Ready]),
      ['bad', NodeState.Degraded],
    ]);
    let changes = 0;
    const evictor = new Evictor({
      evict: async () => [],
      hold: async () => 'NodeHealthCheck',
      clock,
      log: createLogger({ level: 'silent', name: 'test' }),
      metrics: new ControllerMetrics(new Registry()),
      events: { nodeEvent: async () => undefined },
      config: loaded.config,
      node: (name) => ({ name, uid: `uid-${name}`, zone: 'z' }),
      states: () => states,
      breakerTripped: () => false,
      published: () => void (changes += 1),
    });
    evictor.start();
    await clock.advance(0);
    expect(changes).toBe(1);
    expect(evictor.eviction()).toMatchObject({
      evictAfterSeconds: 1,
      maxParallelNodes: 1,
      parallel: { allowed: 1 },
    });
    for (let i = 0; i < 5; i++) await clock.advance(5_000);
    // The node qualified, the fresh read found NodeHealthCheck remediating it: held, counted once.
    expect(evictor.eviction()?.held).toEqual([{ node: 'bad', reason: 'NodeHealthCheck' }]);
    expect(evictor.eviction()?.skipped).toEqual([{ subject: 'node', reason: 'NodeHealthCheck', count: 1 }]);
    const settled = changes;
    for (let i = 0; i < 5; i++) await clock.advance(5_000);
    expect(changes).toBe(settled);
    await evictor.stop();
    expect(evictor.eviction()).toBeUndefined();
  });
});
