// The node decider over FakeCache and FakeNodeApi: decisions read the node's registrations and leases and the
// memory the node book keeps, and stale leases are read live (the reconciler does so before a write acts on one).

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildLease } from '../api/lease.ts';
import { EXTENSION_ANNOTATION_PREFIX, ExtensionState } from '../api/names.ts';
import { ControllerReason, ProbeReason } from '../api/reasons.ts';
import { createLogger } from '../lib/log.ts';
import { FakeClock } from '../lib/testing.ts';
import { bookOf } from './book/index.ts';
import { toCachedLease } from './cache/index.ts';
import { loadControllerConfig } from './config.ts';
import { ControllerMetrics } from './metrics.ts';
import { NodeDecider } from './node-decider.ts';
import { FakeCache, FakeNodeApi } from './testing.ts';

const T0 = Date.UTC(2026, 0, 1);
const BOOT = 'boot-1';

function lease(extension: string | undefined, renewedAtMs: number) {
  return buildLease({
    node: { name: 'n', uid: 'u' },
    extension,
    holderIdentity: 'nodecare-agent-n',
    leaseDurationSeconds: 40,
    renewTime: new Date(renewedAtMs),
    bootId: BOOT,
    record: extension
      ? { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded, message: '', since: '' }
      : undefined,
  });
}

function setup() {
  const loaded = loadControllerConfig([], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  const clock = new FakeClock(T0);
  const api = new FakeNodeApi();
  const cache = new FakeCache(clock);
  cache.nodes.set(
    'n',
    api.putNode({
      metadata: {
        name: 'n',
        uid: 'u',
        creationTimestamp: new Date(T0 - 60_000).toISOString(),
        annotations: { [`${EXTENSION_ANNOTATION_PREFIX}web`]: 'http://127.0.0.1:8080/' },
        labels: {},
      },
      spec: {},
      status: { nodeInfo: { bootID: BOOT } },
    }),
  );
  for (const ext of [undefined, 'web']) cache.leases.added(toCachedLease(lease(ext, T0))!);
  const metrics = new ControllerMetrics(new Registry());
  const log = createLogger({ level: 'silent', name: 'test' });
  const book = bookOf({ api, fence: () => undefined, clock, log, metrics, cache, config: loaded.config });
  const decider = new NodeDecider({ cache, api, clock, config: loaded.config, book });
  return { api, book, cache, clock, decider };
}

describe('NodeDecider', () => {
  it("decides on the node's registrations and leases, and is undefined for a node that is gone", () => {
    const { decider } = setup();
    expect(decider.decide('n')?.extensions.map((e) => [e.name, e.state])).toEqual([
      ['web', ExtensionState.Healthy],
    ]);
    expect(decider.decide('gone')).toBeUndefined();
  });

  it('decides on the memory the node book keeps, and on none once the book is reset', () => {
    const { book, decider } = setup();
    const first = decider.decide('n')!;
    const earlier = first.memory.bootSeenMs - 5_000;
    book.settle('n', { ...first, memory: { ...first.memory, bootSeenMs: earlier } });
    expect(decider.decide('n')!.memory.bootSeenMs).toBe(earlier);
    book.reset([]);
    expect(book.memory('n')).toBeUndefined();
    expect(decider.decide('n')!.memory.bootSeenMs).toBe(first.memory.bootSeenMs);
  });

  it('reads stale leases live: true when one was renewed meanwhile, and the decision made again sees it', async () => {
    const { api, cache, clock, decider } = setup();
    clock.advance(120_000);
    for (const ext of [undefined, 'web']) api.putLease(lease(ext, T0 + 110_000));
    const stale = decider.decide('n')!;
    expect(stale.staleLeases.length).toBeGreaterThan(0);
    expect(await decider.readLive(stale.staleLeases)).toBe(true);
    expect(api.calls.filter((c) => c.op === 'getLease').length).toBe(stale.staleLeases.length);
    // The heartbeat found renewed uncovers the extension's lease, stale too: read live in turn.
    const uncovered = decider.decide('n', cache.node('n'))!;
    expect(uncovered.staleLeases).toEqual(['web.n']);
    expect(await decider.readLive(uncovered.staleLeases)).toBe(true);
    const again = decider.decide('n', cache.node('n'))!;
    expect(again.staleLeases).toEqual([]);
    expect(again.extensions[0]?.reason).not.toBe(ControllerReason.LeaseExpired);
  });

  it('reads stale leases live: false when they are not found (the decision stands)', async () => {
    const { clock, decider } = setup();
    clock.advance(120_000);
    const stale = decider.decide('n')!;
    expect(await decider.readLive(stale.staleLeases)).toBe(false);
  });
});
