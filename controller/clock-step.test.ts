// A fleet judged across a step of the controller's wall clock (NTP makestep, a VM time sync): lease age is
// measured on the monotonic clock from when each renewal was seen (docs/adr/0020), so a forward step marks no
// healthy node AgentNotReporting and a backward step still finds a dead agent after its lease duration
// (regression: issue 50 item 4). The real Reconciler and LeaseIndex over the fakes of controller/testing.ts.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildLease, type LeaseObject } from '../api/lease.ts';
import {
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
  ExtensionState,
  NODE_CONDITION_TYPE,
  NodeAnnotation,
} from '../api/names.ts';
import { ProbeReason } from '../api/reasons.ts';
import { createLogger } from '../lib/log.ts';
import { FakeClock } from '../lib/testing.ts';
import { toCachedLease, toCachedNode, type NodeObject } from './cache/index.ts';
import { loadControllerConfig, type ControllerConfig } from './config.ts';
import { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { FakeCache, FakeNodeApi } from './testing.ts';
import { eventRecorder } from './writes/index.ts';

const T0 = Date.UTC(2026, 0, 1);
const NODES = 8;
const LEASE_SECONDS = 40;
/** The agents renew every quarter of the duration, spread over it. */
const RENEW_MS = (LEASE_SECONDS * 1000) / 4;

function config(): ControllerConfig {
  const loaded = loadControllerConfig([], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  return loaded.config;
}

const nodeName = (i: number): string => `node-${i}`;

function rawNode(i: number): NodeObject {
  return {
    metadata: {
      name: nodeName(i),
      uid: `uid-${i}`,
      creationTimestamp: new Date(T0 - 3_600_000).toISOString(),
      annotations: {
        [`${EXTENSION_ANNOTATION_PREFIX}web`]: 'http://127.0.0.1:8080/',
        [NodeAnnotation.bootstrappedBootId]: 'boot-1',
      },
      labels: {},
    },
    spec: { taints: [] },
    status: { nodeInfo: { bootID: 'boot-1' } },
  };
}

/** The lease an agent writes: renewTime by the node's own clock (which the controller must not read). */
function lease(i: number, extension: string | undefined, renewedAtMs: number): LeaseObject {
  return buildLease({
    node: { name: nodeName(i), uid: `uid-${i}` },
    extension,
    holderIdentity: `nodecare-agent-${nodeName(i)}`,
    leaseDurationSeconds: LEASE_SECONDS,
    renewTime: new Date(renewedAtMs),
    bootId: 'boot-1',
    record: extension
      ? { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded, message: '', since: '' }
      : undefined,
  });
}

function fleet() {
  const clock = new FakeClock(T0);
  const api = new FakeNodeApi();
  const cache = new FakeCache(clock);
  const fence = (): void => undefined;
  const reconciler = new Reconciler({
    cache,
    api,
    fence,
    clock,
    log: createLogger({ level: 'silent', name: 'test' }),
    metrics: new ControllerMetrics(new Registry()),
    events: eventRecorder(api, 'test', clock, fence),
    config: config(),
  });
  for (let i = 0; i < NODES; i++) cache.nodes.set(nodeName(i), api.putNode(rawNode(i)));
  const dead = new Set<number>();
  /** Agent i renews both its leases when its turn in the renewal period comes (the agents' clocks run true). */
  const renewDue = (elapsedMs: number): void => {
    for (let i = 0; i < NODES; i++) {
      const offsetMs = Math.floor((i * RENEW_MS) / NODES / 1000) * 1000;
      if (dead.has(i) || (elapsedMs - offsetMs) % RENEW_MS !== 0) continue;
      for (const extension of [undefined, 'web']) {
        const fresh = lease(i, extension, T0 + elapsedMs);
        api.putLease(fresh);
        const cached = toCachedLease(fresh)!;
        const held = cache.leases.held(cached.name);
        if (held) cache.leases.updated(cached, held);
        else cache.leases.added(cached);
      }
    }
  };
  /** Every node decided and written, then the cache catches up with the writes. */
  const reconcileAll = async (): Promise<void> => {
    for (let i = 0; i < NODES; i++) await reconciler.reconcile(nodeName(i));
    for (let i = 0; i < NODES; i++) cache.nodes.set(nodeName(i), toCachedNode(api.node(nodeName(i))!));
  };
  const condition = (i: number) =>
    api.node(nodeName(i))?.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE);
  const tainted = (i: number): boolean =>
    (api.node(nodeName(i))?.spec?.taints ?? []).some((t) => t.key === RUNTIME);
  /** The nodes ever seen AgentNotReporting, and ever runtime-tainted, after a run() second. */
  const ever = { notReporting: new Set<string>(), tainted: new Set<string>() };
  /** Runs the fleet second by second from `fromMs` to `toMs` after T0 (monotonic), stepping nothing. */
  const run = async (fromMs: number, toMs: number): Promise<void> => {
    for (let t = fromMs; t < toMs; t += 1_000) {
      renewDue(t);
      await reconcileAll();
      for (let i = 0; i < NODES; i++) {
        if (condition(i)?.reason === 'AgentNotReporting') ever.notReporting.add(nodeName(i));
        if (tainted(i)) ever.tainted.add(nodeName(i));
      }
      await clock.advance(1_000);
    }
  };
  return { clock, dead, run, condition, ever };
}

describe('lease age across a wall clock step (regression: issue 50 item 4)', () => {
  it('a 45 s forward step with a healthy fleet marks no node AgentNotReporting and taints none', async () => {
    const f = fleet();
    await f.run(0, 60_000);
    expect(f.condition(0)?.reason).toBe('AllExtensionsHealthy');
    f.clock.stepWall(45_000);
    await f.run(60_000, 180_000);
    expect([...f.ever.notReporting]).toEqual([]);
    expect([...f.ever.tainted]).toEqual([]);
  });

  it('a 1 h backward step still finds a dead agent after its lease duration, and only it', async () => {
    const f = fleet();
    await f.run(0, 60_000);
    f.clock.stepWall(-3_600_000);
    f.dead.add(3);
    // Its last renewal was seen at most RENEW_MS before it died; give the duration and the re-read a second.
    await f.run(60_000, 60_000 + RENEW_MS + LEASE_SECONDS * 1000 + 2_000);
    expect([...f.ever.notReporting]).toEqual([nodeName(3)]);
    expect([...f.ever.tainted]).toEqual([nodeName(3)]);
  });
});
