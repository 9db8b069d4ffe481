// The node decider over FakeCache and FakeNodeApi: decisions read the node's registrations and leases, memory
// carries between decisions, and a lease judged stale is read live before a decision that would write acts on it.

import { describe, expect, it } from 'vitest';
import { buildLease } from '../api/lease.ts';
import { EXTENSION_ANNOTATION_PREFIX, ExtensionState } from '../api/names.ts';
import { ControllerReason, ProbeReason } from '../api/reasons.ts';
import { FakeClock } from '../lib/testing.ts';
import { toCachedLease } from './cache/index.ts';
import { loadControllerConfig } from './config.ts';
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
  const decider = new NodeDecider({ cache, api, clock, config: loaded.config, tripped: () => new Set() });
  return { api, cache, clock, decider };
}

describe('NodeDecider', () => {
  it("decides on the node's registrations and leases, and is undefined for a node that is gone", () => {
    const { decider } = setup();
    expect(decider.decide('n')?.extensions.map((e) => [e.name, e.state])).toEqual([
      ['web', ExtensionState.Healthy],
    ]);
    expect(decider.decide('gone')).toBeUndefined();
  });

  it('remembers what was carried out, and forgets it on reset', () => {
    const { decider } = setup();
    const first = decider.decide('n')!;
    decider.remember('n', { ...first.memory, bootstrapStartedMs: T0 - 5_000 });
    expect(decider.bootstrapStartedMs('n')).toBe(T0 - 5_000);
    decider.reset();
    expect(decider.bootstrapStartedMs('n')).toBeUndefined();
  });

  it('reads a stale lease live before acting on it: renewed meanwhile, the decision is made again', async () => {
    const { api, cache, clock, decider } = setup();
    clock.advance(120_000);
    for (const ext of [undefined, 'web']) api.putLease(lease(ext, T0 + 110_000));
    const stale = decider.decide('n')!;
    expect(stale.staleLeases.length).toBeGreaterThan(0);
    const confirmed = await decider.confirmed(cache.node('n')!, stale, () => true);
    expect(api.calls.filter((c) => c.op === 'getLease').length).toBeGreaterThan(0);
    expect(confirmed.staleLeases).toEqual([]);
    expect(confirmed.extensions[0]?.reason).not.toBe(ControllerReason.LeaseExpired);
  });

  it('reads nothing live when the decision would not write, or when the leases are gone', async () => {
    const { api, cache, clock, decider } = setup();
    clock.advance(120_000);
    const stale = decider.decide('n')!;
    expect(await decider.confirmed(cache.node('n')!, stale, () => false)).toBe(stale);
    expect(api.calls).toEqual([]);
    // Not found live: the decision stands.
    expect(await decider.confirmed(cache.node('n')!, stale, () => true)).toBe(stale);
  });
});
