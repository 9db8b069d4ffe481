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
import type { PodEvictionResult } from './index.ts';
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
