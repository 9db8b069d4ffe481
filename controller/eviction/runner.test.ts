// The eviction loop over its ports (a fake `evict`, a fake clock): it is stopped and awaited before the
// leader lease is released, and a pass in flight evicts no further node once stopped.

import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { FakeClock } from '../../lib/testing.ts';
import { createLogger } from '../../lib/log.ts';
import { loadControllerConfig, type ControllerConfig } from '../config.ts';
import { NodeState } from '../decide/index.ts';
import { HoldReason, SkipReason, type PodEvictionResult } from './index.ts';
import { EVICTION_RBAC_REMEDY, Evictor } from './runner.ts';
import { ControllerMetrics } from '../metrics.ts';

function config(): ControllerConfig {
  const loaded = loadControllerConfig(['--evict-after-seconds=1', '--eviction-rate=100'], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  return loaded.config;
}

function setup() {
  const clock = new FakeClock();
  const evicted: string[] = [];
  const gates: Array<() => void> = [];
  // Two Degraded nodes of eight in one zone: below the zone's unhealthy threshold, so both may go.
  const states = new Map<string, NodeState>([
    ...Array.from({ length: 6 }, (_, i): [string, NodeState] => [`ready-${i}`, NodeState.Ready]),
    ['bad-1', NodeState.Degraded],
    ['bad-2', NodeState.Degraded],
  ]);
  const evictor = new Evictor({
    // Each node's eviction waits until the test lets it finish.
    evict: async (name): Promise<PodEvictionResult[]> => {
      evicted.push(name);
      await new Promise<void>((resolve) => gates.push(resolve));
      return [{ pod: `ns/${name}-pod`, outcome: 'evicted', reason: 'Evicted' }];
    },
    clock,
    log: createLogger({ level: 'silent', name: 'test' }),
    metrics: new ControllerMetrics(new Registry()),
    events: { nodeEvent: async () => undefined },
    config: config(),
    node: (name) => ({ name, uid: `uid-${name}`, zone: 'z' }),
    states: () => states,
    breakerTripped: () => false,
  });
  return { clock, evictor, evicted, gates };
}

describe('Evictor stop (regression: a running eviction pass continued after leadership ended)', () => {
  it('stop() resolves only once the pass in flight has ended, and that pass evicts no further node', async () => {
    const { clock, evictor, evicted, gates } = setup();
    evictor.start();
    await clock.advance(0); // first pass: bad nodes become Degraded spells
    await clock.advance(5_000); // past evict-after: a pass starts evicting the first node
    expect(evicted).toHaveLength(1);

    let stopped = false;
    const stopping = evictor.stop().then(() => (stopped = true));
    await clock.advance(0);
    expect(stopped).toBe(false);
    gates.shift()?.();
    await stopping;
    expect(stopped).toBe(true);
    expect(evicted).toHaveLength(1);
    await clock.advance(60_000);
    expect(evicted).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });
});

describe('Evictor across leadership terms (regression: a stale "Degraded since" evicted at once)', () => {
  it('a new term evicts only once it has itself seen the node Degraded for --evict-after-seconds', async () => {
    const { clock, evictor, evicted, gates } = setup();
    evictor.start();
    await clock.advance(0); // this term sees bad-1 and bad-2 Degraded
    await evictor.stop();

    // Another replica leads for an hour (the nodes may have recovered and failed again meanwhile).
    await clock.advance(3_600_000);
    evictor.start();
    await clock.advance(0);
    expect(evicted).toEqual([]);
    await clock.advance(999);
    expect(evicted).toEqual([]);
    await clock.advance(1);
    expect(evicted).toHaveLength(1);
    gates.shift()?.();
    await evictor.stop();
  });
});

describe('Evictor without the rights (issue 50 item 6: the default install grants no Pod right)', () => {
  it('a pass the API server refuses (403) says which opt-in grants list pods and pods/eviction', async () => {
    const clock = new FakeClock();
    const lines: Array<{ msg: string; remedy?: string; level: string }> = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const states = new Map<string, NodeState>([
      ...Array.from({ length: 6 }, (_, i): [string, NodeState] => [`ready-${i}`, NodeState.Ready]),
      ['bad-1', NodeState.Degraded],
    ]);
    const evictor = new Evictor({
      evict: async () => {
        throw new KubeError(
          KubeErrorCode.Forbidden,
          403,
          'pods is forbidden: User "system:serviceaccount:nodecare-system:nodecare-controller" cannot list resource "pods"',
        );
      },
      clock,
      log: createLogger({ level: 'info', name: 'test' }, stream),
      metrics: new ControllerMetrics(new Registry()),
      events: { nodeEvent: async () => undefined },
      config: config(),
      node: (name) => ({ name, uid: `uid-${name}`, zone: 'z' }),
      states: () => states,
      breakerTripped: () => false,
    });
    evictor.start();
    await clock.advance(0);
    await clock.advance(5_000);
    await evictor.stop();
    const refused = lines.filter((l) => l.msg.startsWith('Eviction pass refused'));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused[0]).toMatchObject({ level: 'error', remedy: EVICTION_RBAC_REMEDY });
    expect(EVICTION_RBAC_REMEDY).toContain('controller-eviction');
  });
});

describe('Evictor guards (issue 54): budgets and other owners, as passes see them', () => {
  type Answer = (name: string) => PodEvictionResult[];
  function guarded(opts: {
    states: Map<string, NodeState>;
    answer?: Answer;
    cachedHold?: (name: string) => HoldReason | undefined;
    freshHold?: (name: string) => HoldReason | undefined;
    argv?: string[];
  }) {
    const clock = new FakeClock();
    const evicted: string[] = [];
    const reads: string[] = [];
    const events: Array<{ node: string; reason: string; message: string }> = [];
    const registry = new Registry();
    const metrics = new ControllerMetrics(registry);
    const loaded = loadControllerConfig(
      ['--evict-after-seconds=1', '--eviction-rate=100', ...(opts.argv ?? [])],
      {},
    );
    if (!('config' in loaded)) throw new Error('expected a config');
    const evictor = new Evictor({
      evict: async (name) => {
        evicted.push(name);
        return (opts.answer ?? (() => []))(name);
      },
      hold: async (name) => {
        reads.push(name);
        return opts.freshHold?.(name);
      },
      clock,
      log: createLogger({ level: 'silent', name: 'test' }),
      metrics,
      events: {
        nodeEvent: async (node, event) => {
          events.push({ node: node.name, reason: event.reason, message: event.message });
        },
      },
      config: loaded.config,
      node: (name) => {
        const hold = opts.cachedHold?.(name);
        return { name, uid: `uid-${name}`, zone: 'z', ...(hold ? { hold } : {}) };
      },
      states: () => opts.states,
      breakerTripped: () => false,
    });
    const skipped = async () =>
      (await metrics.evictionSkipped.get()).values.map((v) => [v.labels.subject, v.labels.reason, v.value]);
    return { clock, evictor, evicted, reads, events, metrics, skipped };
  }
  const fleet = (bad: string[], ready = 8) =>
    new Map<string, NodeState>([
      ...Array.from({ length: ready }, (_, i): [string, NodeState] => [`ready-${i}`, NodeState.Ready]),
      ...bad.map((name): [string, NodeState] => [name, NodeState.Degraded]),
    ]);

  it('a node the cache shows held (karpenter.sh/disrupted) is never evicted nor read; skipped once, one event', async () => {
    const t = guarded({
      states: fleet(['bad-1']),
      cachedHold: (name) => (name === 'bad-1' ? HoldReason.KarpenterDisruption : undefined),
    });
    t.evictor.start();
    await t.clock.advance(0);
    for (let i = 0; i < 5; i++) await t.clock.advance(5_000);
    await t.evictor.stop();
    expect(t.evicted).toEqual([]);
    expect(t.reads).toEqual([]);
    expect(await t.skipped()).toEqual([['node', 'KarpenterDisruption', 1]]);
    expect(t.events).toEqual([
      {
        node: 'bad-1',
        reason: 'EvictionSkipped',
        message: expect.stringMatching(/node tainted karpenter.sh\/disrupted/),
      },
    ]);
  });

  it('a node the fresh read finds annotated do-not-disrupt is left alone, gives back its token, and is read again only after 30 s', async () => {
    const t = guarded({
      states: fleet(['bad-1', 'bad-2'], 18),
      freshHold: (name) => (name === 'bad-1' ? HoldReason.DoNotDisrupt : undefined),
    });
    t.evictor.start();
    await t.clock.advance(0);
    await t.clock.advance(1_000); // both qualify; bad-1 (first by name) is read, held; bad-2 goes at once
    await t.clock.advance(0);
    expect(t.reads.slice(0, 2)).toEqual(['bad-1', 'bad-2']);
    expect(t.evicted).toEqual(['bad-2']);
    const readsOfHeld = () => t.reads.filter((n) => n === 'bad-1').length;
    await t.clock.advance(25_000);
    expect(readsOfHeld()).toBe(1);
    await t.clock.advance(10_000);
    expect(readsOfHeld()).toBe(2);
    await t.evictor.stop();
    expect(t.evicted).toEqual(['bad-2']);
    expect(await t.skipped()).toEqual([['node', 'DoNotDisrupt', 1]]);
    expect(t.events.map((e) => [e.node, e.reason])).toEqual([['bad-1', 'EvictionSkipped']]);
  });

  it('a fresh read that fails (429) holds that node for 30 s with its token back; the pass goes on to the next node', async () => {
    let failures = 1;
    const t = guarded({
      states: fleet(['bad-1', 'bad-2'], 18),
      freshHold: (name) => {
        if (name === 'bad-1' && failures-- > 0)
          throw new KubeError(KubeErrorCode.TooManyRequests, 429, 'GET /api/v1/nodes/bad-1: throttled', 1000);
        return undefined;
      },
    });
    t.evictor.start();
    await t.clock.advance(0);
    await t.clock.advance(1_000); // both qualify; bad-1's read fails, bad-2 still goes in the same pass
    await t.clock.advance(0);
    expect(t.reads.slice(0, 2)).toEqual(['bad-1', 'bad-2']);
    expect(t.evicted).toEqual(['bad-2']);
    await t.clock.advance(25_000);
    expect(t.reads.filter((n) => n === 'bad-1')).toHaveLength(1);
    await t.clock.advance(10_000); // read again after 30 s; it answers now, and the node is evicted from
    await t.evictor.stop();
    expect(t.evicted).toEqual(['bad-2', 'bad-1']);
    expect(await t.skipped()).toEqual([['node', 'NodeUnreadable', 1]]);
    expect(t.events.filter((e) => e.reason === 'EvictionSkipped')).toEqual([
      {
        node: 'bad-1',
        reason: 'EvictionSkipped',
        message: expect.stringMatching(/^Did not evict pods yet: node not read fresh/),
      },
    ]);
  });

  it('a pod annotated do-not-disrupt: counted and recorded once per spell, and it does not keep the node in flight', async () => {
    const t = guarded({
      states: fleet(['bad-1']),
      answer: () => [{ pod: 'ns/keep', outcome: 'skipped', reason: SkipReason.DoNotDisrupt }],
    });
    t.evictor.start();
    await t.clock.advance(0);
    for (let i = 0; i < 4; i++) await t.clock.advance(5_000);
    await t.evictor.stop();
    expect(t.evicted).toEqual(['bad-1']);
    expect(await t.skipped()).toEqual([['pod', 'DoNotDisrupt', 1]]);
    expect(t.events).toEqual([
      {
        node: 'bad-1',
        reason: 'EvictionSkipped',
        message: expect.stringMatching(/Did not evict pod ns\/keep/),
      },
    ]);
  });

  it('group budget 10% of 10 nodes: the second node starts only once a pass finds the first one empty', async () => {
    // bad-1's passes: its pod evicted, then Terminating, then gone; bad-2 waits (GroupBudget) until then.
    const leftToGo = new Map([
      ['bad-1', 2],
      ['bad-2', 2],
    ]);
    // Each node's first pass evicts its pod; the next finds it Terminating; the one after finds it gone.
    const t = guarded({
      states: fleet(['bad-1', 'bad-2']),
      answer: (name) => {
        const left = leftToGo.get(name) ?? 0;
        leftToGo.set(name, left - 1);
        if (left === 2) return [{ pod: `ns/${name}`, outcome: 'evicted', reason: 'Evicted' }];
        if (left === 1) return [{ pod: `ns/${name}`, outcome: 'skipped', reason: SkipReason.Terminating }];
        return [];
      },
    });
    t.evictor.start();
    await t.clock.advance(0);
    await t.clock.advance(1_000);
    expect(t.evicted).toEqual(['bad-1']);
    expect((await t.metrics.evictionEvictingNodes.get()).values[0]?.value).toBe(0);
    // A node being evicted gets its next pass 1/rate (10 ms) after its last: its pod Terminating, bad-2 waits.
    await t.clock.advance(10);
    expect(t.evicted).toEqual(['bad-1', 'bad-1']);
    const held = (await t.metrics.evictionHeldNodes.get()).values.find(
      (v) => v.labels.reason === 'GroupBudget',
    );
    expect(held?.value).toBe(1);
    // The pass that finds bad-1 empty frees its place, and bad-2 starts at once.
    await t.clock.advance(10);
    expect(t.evicted).toEqual(['bad-1', 'bad-1', 'bad-1', 'bad-2']);
    await t.evictor.stop();
  });
});
