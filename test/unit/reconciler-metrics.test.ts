// The operator metrics the reconciler feeds (issue 11): bootstrap duration, time held by the runtime taint, and
// nodes per ExtensionsReady reason, observed from the taint changes the writes really made, with fakes of
// the reconciler's ports (controller/testing.ts) and a stepped clock.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildLease, type LeaseObject } from '../../api/lease.ts';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
  ExtensionState,
  NodeAnnotation,
} from '../../api/names.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { toCachedLease, toCachedNode, type NodeObject } from '../../controller/cache/index.ts';
import { loadControllerConfig } from '../../controller/config.ts';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { Reconciler } from '../../controller/reconciler.ts';
import { FakeCache, FakeNodeApi } from '../../controller/testing.ts';
import { eventRecorder } from '../../controller/writes/index.ts';
import { FakeClock } from '../../lib/testing.ts';
import { createLogger } from '../../lib/log.ts';

const T0 = Date.UTC(2026, 0, 1);
const NODE = 'node-a';
const UID = 'uid-a';
const BOOT = 'boot-1';
const LEASE_SECONDS = 40;
const CREATED_SECONDS_AGO = 75;

function rawNode(taints: object[], bootstrapped: boolean): NodeObject {
  return {
    metadata: {
      name: NODE,
      uid: UID,
      creationTimestamp: new Date(T0 - CREATED_SECONDS_AGO * 1000).toISOString(),
      annotations: {
        [`${EXTENSION_ANNOTATION_PREFIX}web`]: 'http://127.0.0.1:8080/',
        ...(bootstrapped ? { [NodeAnnotation.bootstrappedBootId]: BOOT } : {}),
      },
      labels: {},
    },
    spec: { taints: taints as never },
    status: { nodeInfo: { bootID: BOOT } },
  };
}

function lease(extension: string | undefined, renewedAtMs: number): LeaseObject {
  return buildLease({
    node: { name: NODE, uid: UID },
    extension,
    holderIdentity: `nodecare-agent-${NODE}`,
    leaseDurationSeconds: LEASE_SECONDS,
    renewTime: new Date(renewedAtMs),
    bootId: BOOT,
    record: extension
      ? { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded, message: '', since: '' }
      : undefined,
  });
}

function setup(node: NodeObject) {
  const loaded = loadControllerConfig([], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  const clock = new FakeClock(T0);
  const api = new FakeNodeApi();
  const cache = new FakeCache(clock);
  cache.nodes.set(NODE, api.putNode(node));
  const metrics = new ControllerMetrics(new Registry());
  const fence = () => undefined;
  const reconciler = new Reconciler({
    cache,
    api,
    fence,
    clock,
    log: createLogger({ level: 'silent', name: 'test' }),
    metrics,
    events: eventRecorder(api, 'test', clock, fence),
    config: loaded.config,
  });
  const renew = (atMs: number): void => {
    for (const ext of [undefined, 'web']) {
      const l = lease(ext, atMs);
      cache.leases.added(toCachedLease(l)!);
      api.putLease(l);
    }
  };
  renew(T0);
  const sync = (): void => void cache.nodes.set(NODE, toCachedNode(api.node(NODE)!));
  const taints = (): string[] => (api.node(NODE)?.spec?.taints ?? []).map((x) => x.key);
  return { clock, reconciler, metrics, renew, sync, taints };
}

async function histogram(h: ControllerMetrics['bootstrapDuration']): Promise<{ count: number; sum: number }> {
  const { name, values } = await h.get();
  const pick = (metric: string) => values.find((v) => v.metricName === metric)?.value ?? 0;
  return { count: pick(`${name}_count`), sum: pick(`${name}_sum`) };
}

describe('reconciler metrics', () => {
  it('times a bootstrap from the node’s creation to the removal of the bootstrap taint, once', async () => {
    const t = setup(rawNode([{ key: BOOTSTRAP, effect: 'NoSchedule' }], false));
    await t.reconciler.reconcile(NODE);
    t.sync();
    await t.reconciler.reconcile(NODE); // nothing changes: nothing more observed
    expect(await histogram(t.metrics.bootstrapDuration)).toEqual({ count: 1, sum: CREATED_SECONDS_AGO });
  });

  it('times how long the runtime taint stayed on, and counts nodes by condition reason', async () => {
    const t = setup(rawNode([], true));
    await t.reconciler.reconcile(NODE);
    t.sync();
    // The agent stops renewing: its leases expire and the runtime taint goes on.
    await t.clock.advance(LEASE_SECONDS * 1000 + 1);
    await t.reconciler.reconcile(NODE);
    t.sync();
    expect((await t.metrics.nodeConditions.get()).values).toContainEqual(
      expect.objectContaining({ labels: { status: 'Unknown', reason: 'AgentNotReporting' }, value: 1 }),
    );
    expect(t.taints()).toContain(RUNTIME);
    await t.clock.advance(30_000);
    t.renew(t.clock.now());
    await t.reconciler.reconcile(NODE);
    t.sync();
    expect(await histogram(t.metrics.runtimeTaintDuration)).toEqual({ count: 1, sum: 30 });
    const reasons = (await t.metrics.nodeConditions.get()).values.filter((v) => v.value > 0);
    expect(reasons).toEqual([
      expect.objectContaining({ labels: { status: 'True', reason: 'AllExtensionsHealthy' }, value: 1 }),
    ]);
    expect(t.taints()).not.toContain(RUNTIME);
  });
});
