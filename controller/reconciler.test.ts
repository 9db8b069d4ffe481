// The reconciler's write path with fakes of its ports (controller/testing.ts): events for what the writes
// really changed, foreign taints kept field for field, the stale-lease re-read, the leadership fence and
// the optimistic condition write.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { MAX_LEASE_DURATION_SECONDS, buildLease, type LeaseObject } from '../api/lease.ts';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
  ExtensionState,
  NODE_CONDITION_TYPE,
  NodeAnnotation,
  RUNTIME_TAINT_VALUE,
} from '../api/names.ts';
import { ControllerReason, ProbeReason } from '../api/reasons.ts';
import { FakeClock } from '../lib/testing.ts';
import { KubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { createLogger } from '../lib/log.ts';
import { bookOf } from './book/index.ts';
import { toCachedLease, toCachedNode, type NodeObject } from './cache/index.ts';
import { loadControllerConfig, type ControllerConfig } from './config.ts';
import { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { FakeCache, FakeNodeApi } from './testing.ts';
import { NotLeaderError, eventRecorder, type Fence } from './writes/index.ts';

const T0 = Date.UTC(2026, 0, 1);
const NODE = 'node-a';
const UID = 'uid-a';
const BOOT = 'boot-1';
const LEASE_SECONDS = 40;
const UNREACHABLE = {
  key: 'node.kubernetes.io/unreachable',
  effect: 'NoExecute',
  timeAdded: '2025-12-31T23:59:00Z',
};

function config(): ControllerConfig {
  const loaded = loadControllerConfig([], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  return loaded.config;
}

function rawNode(overrides: { taints?: object[]; bootstrapped?: boolean } = {}): NodeObject {
  return {
    metadata: {
      name: NODE,
      uid: UID,
      creationTimestamp: new Date(T0 - 60_000).toISOString(),
      annotations: {
        [`${EXTENSION_ANNOTATION_PREFIX}web`]: 'http://127.0.0.1:8080/',
        ...(overrides.bootstrapped ? { [NodeAnnotation.bootstrappedBootId]: BOOT } : {}),
      },
      labels: {},
    },
    spec: { taints: (overrides.taints ?? []) as never },
    status: { nodeInfo: { bootID: BOOT } },
  };
}

function lease(
  extension: string | undefined,
  renewedAtMs: number,
  state: ExtensionState = ExtensionState.Healthy,
): LeaseObject {
  return buildLease({
    node: { name: NODE, uid: UID },
    extension,
    holderIdentity: `nodecare-agent-${NODE}`,
    leaseDurationSeconds: LEASE_SECONDS,
    renewTime: new Date(renewedAtMs),
    bootId: BOOT,
    record: extension ? { state, reason: ProbeReason.ProbeSucceeded, message: '', since: '' } : undefined,
  });
}

/** One node requiring `web`, its agent and web leases live, a reconciler over fakes. */
function setup(node: NodeObject) {
  const clock = new FakeClock(T0);
  const api = new FakeNodeApi();
  const cache = new FakeCache(clock);
  cache.nodes.set(NODE, api.putNode(node));
  const state = { leading: true };
  const rollupChanges = { count: 0 };
  const fence: Fence = () => {
    if (!state.leading) throw new NotLeaderError();
  };
  const metrics = new ControllerMetrics(new Registry());
  const log = createLogger({ level: 'silent', name: 'test' });
  const cfg = config();
  const book = bookOf({
    ...{ cache, api, fence, clock, log, metrics, config: cfg },
    onRollupChange: () => void (rollupChanges.count += 1),
  });
  const reconciler = new Reconciler({
    ...{ cache, api, fence, clock, log, metrics, book, config: cfg },
    events: eventRecorder(api, 'test', clock, fence),
  });
  const renew = (atMs: number, into: 'cache' | 'api' | 'both'): void => {
    for (const ext of [undefined, 'web']) {
      const l = lease(ext, atMs);
      if (into !== 'api') cache.leases.added(toCachedLease(l)!);
      if (into !== 'cache') api.putLease(l);
    }
  };
  renew(T0, 'both');
  /** The cache catches up with the API. */
  const sync = (): void => void cache.nodes.set(NODE, toCachedNode(api.node(NODE)!));
  const reasons = (): string[] => api.events.map((e) => (e.event as { reason: string }).reason);
  const taints = (): object[] => api.node(NODE)?.spec?.taints ?? [];
  const eventsMetric = async (): Promise<number> =>
    (await metrics.events.get()).values.reduce((sum, v) => sum + v.value, 0);
  return {
    clock,
    api,
    cache,
    reconciler,
    state,
    renew,
    sync,
    reasons,
    taints,
    eventsMetric,
    rollupChanges,
    metrics,
  };
}

/** Lets the event recorder's fire-and-forget writes land. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('Reconciler events (regression: two events per taint change)', () => {
  it('a duplicate reconcile on a cache that has not caught up records nothing more', async () => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    const stale = t.cache.node(NODE)!;
    await t.reconciler.reconcile(NODE);
    await settle();
    expect(t.reasons()).toEqual(['BootstrapTaintRemoved']);
    // The watch has not delivered our own write yet: the same key is reconciled on the old node.
    t.cache.nodes.set(NODE, stale);
    await t.reconciler.reconcile(NODE);
    await settle();
    expect(t.reasons()).toEqual(['BootstrapTaintRemoved']);
    expect(await t.eventsMetric()).toBe(1);
  });

  it('a reconcile before the watch delivered our own write decides on what the write returned: no second patch, no 409', async () => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    await t.reconciler.reconcile(NODE);
    const writes = t.api.writes().length;
    expect(writes).toBeGreaterThan(0);
    // A lease renewal requeues the node while the watch still holds the node from before our write.
    await t.reconciler.reconcile(NODE);
    expect(t.api.writes()).toHaveLength(writes);
    const conflicts = (await t.metrics.nodeWrites.get()).values.filter((v) => v.labels.result === 'conflict');
    expect(conflicts.reduce((sum, v) => sum + v.value, 0)).toBe(0);
    // Once the watch delivers it, the watch's copy is read again (nothing of ours is kept).
    t.sync();
    expect(t.cache.node(NODE)?.resourceVersion).toBe(t.api.node(NODE)?.metadata?.resourceVersion);
    expect(t.cache.written.size).toBe(0);
  });

  it('a 409 whose live node shows the change already made records no event', async () => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    // Another writer (an earlier term) finishes the same change while our node patch is out.
    const done = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    await done.reconciler.reconcile(NODE);
    t.api.beforeNext('patchNode', () => void t.api.putNode(done.api.node(NODE)!));
    await t.reconciler.reconcile(NODE);
    await settle();
    expect(t.api.calls.filter((c) => c.op === 'patchNode')).toHaveLength(1);
    expect(t.reasons()).toEqual([]);
    expect(await t.eventsMetric()).toBe(0);
  });
});

describe('Reconciler roll-up contributions', () => {
  it('reports a change of what a node contributes, once, and never for a reconcile that changed nothing', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    await t.reconciler.reconcile(NODE);
    expect(t.rollupChanges.count).toBe(1); // first sight of the node
    expect([...t.reconciler.book.rollupPairs()]).toEqual([
      {
        node: NODE,
        extension: 'web',
        conditionType: 'EveryNodeReady',
        state: ExtensionState.Healthy,
        reason: ProbeReason.ProbeSucceeded,
        source: 'annotation',
      },
    ]);
    t.sync();
    await t.reconciler.reconcile(NODE);
    await t.reconciler.reconcile(NODE);
    expect(t.rollupChanges.count).toBe(1);
    await t.clock.advance(LEASE_SECONDS * 1000 + 1); // the agent is gone: its extension can no longer be judged
    await t.reconciler.reconcile(NODE);
    expect(t.rollupChanges.count).toBe(2);
    // The roll-up names the agent and since when it has not reported (its heartbeat's last renewTime).
    expect([...t.reconciler.book.rollupPairs()][0]).toMatchObject({
      state: ExtensionState.Unknown,
      reason: 'AgentNotReporting',
      agentNotReporting: { since: new Date(T0).toISOString().replace('Z', '000Z') },
    });
    t.cache.nodes.delete(NODE);
    await t.reconciler.reconcile(NODE);
    expect(t.rollupChanges.count).toBe(3);
    expect([...t.reconciler.book.rollupPairs()]).toEqual([]);
  });
});

describe('Reconciler: a node whose kubelet is not Ready', () => {
  const kubelet = (status: string, reason: string, since: string) => ({
    type: 'Ready',
    status,
    reason,
    message: status === 'Unknown' ? 'Kubelet stopped posting node status.' : 'not ready yet',
    lastTransitionTime: since,
    lastHeartbeatTime: since,
  });
  /** The kubelet (or the node lifecycle controller) writes the node's Ready condition; the cache sees it. */
  const setReady = (t: ReturnType<typeof setup>, condition: ReturnType<typeof kubelet> | undefined): void => {
    const live = t.api.node(NODE)!;
    const others = (live.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
    t.api.putNode({
      ...live,
      status: { ...live.status, conditions: [...others, ...(condition ? [condition] : [])] },
    });
    t.sync();
  };

  it('writes NodeNotReady and the unknown label, adds no taint, one event; the roll-up names the node; recovery is quiet', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    await t.reconciler.reconcile(NODE);
    t.sync();
    expect(t.rollupChanges.count).toBe(1);

    setReady(t, kubelet('Unknown', 'NodeStatusUnknown', '2026-01-01T00:00:30Z'));
    await t.reconciler.reconcile(NODE);
    await settle();
    t.sync();
    const live = t.api.node(NODE)!;
    expect(live.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE)).toMatchObject({
      status: 'Unknown',
      reason: 'NodeNotReady',
      message:
        'The kubelet reports Ready=Unknown since 2026-01-01T00:00:30Z (NodeStatusUnknown: Kubelet stopped posting node status.); extension results are not trusted until the node is Ready again.',
    });
    expect(live.metadata?.labels?.['nodecare.io/status']).toBe('unknown');
    expect(t.taints()).toEqual([]);
    expect(t.reasons()).toEqual(['NodeNotReady']);
    expect(t.reconciler.book.nodeStates().get(NODE)).toBe('NotReady');
    expect(t.rollupChanges.count).toBe(2);
    expect([...t.reconciler.book.rollupPairs()]).toEqual([
      {
        node: NODE,
        extension: 'web',
        conditionType: 'EveryNodeReady',
        state: ExtensionState.Unknown,
        reason: 'NodeNotReady',
        source: 'annotation',
        nodeNotReady: { reason: 'NodeStatusUnknown', since: '2026-01-01T00:00:30Z' },
      },
    ]);

    // Still not Ready, for another reason: the roll-up's message changes, nothing else does.
    setReady(t, kubelet('False', 'KubeletNotReady', '2026-01-01T00:01:00Z'));
    await t.reconciler.reconcile(NODE);
    await settle();
    t.sync();
    expect(t.rollupChanges.count).toBe(3);
    expect(t.reasons()).toEqual(['NodeNotReady']);

    setReady(t, kubelet('True', 'KubeletReady', '2026-01-01T00:02:00Z'));
    t.renew(T0 + 20_000, 'both');
    await t.reconciler.reconcile(NODE);
    await settle();
    t.sync();
    expect(t.api.node(NODE)?.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE)).toMatchObject({
      status: 'True',
      reason: 'AllExtensionsHealthy',
    });
    expect(t.api.node(NODE)?.metadata?.labels?.['nodecare.io/status']).toBe('healthy');
    expect(t.reasons()).toEqual(['NodeNotReady']);
    expect(t.reconciler.book.nodeStates().get(NODE)).toBe('Ready');
    expect([...t.reconciler.book.rollupPairs()][0]).not.toHaveProperty('nodeNotReady');
  });
});

describe('Reconciler taints', () => {
  it("keeps another owner's taint field for field, timeAdded included (regression)", async () => {
    const t = setup(rawNode({ taints: [UNREACHABLE] }));
    await t.reconciler.reconcile(NODE); // the agent has reported: no bootstrap taint, the marker is set
    t.sync();
    await t.clock.advance(LEASE_SECONDS * 1000 + 1); // the agent is gone: the runtime taint goes on
    await t.reconciler.reconcile(NODE);
    expect(t.taints()).toEqual([
      UNREACHABLE,
      { key: RUNTIME, value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' },
    ]);
    t.sync();
    t.renew(t.clock.now(), 'both');
    await t.reconciler.reconcile(NODE);
    expect(t.taints()).toEqual([UNREACHABLE]);
  });
});

describe("Reconciler: the condition names DaemonSets nodecare's taint keeps off the node (issue 49 item 3)", () => {
  const stock = {
    metadata: { name: 'nvidia-device-plugin-daemonset', namespace: 'kube-system', uid: 'ds-1' },
    spec: {
      template: {
        spec: { tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }] },
      },
    },
  };
  const tolerating = {
    metadata: { name: 'fixed', namespace: 'kube-system', uid: 'ds-2' },
    spec: {
      template: { spec: { tolerations: [{ key: RUNTIME, operator: 'Exists', effect: 'NoSchedule' }] } },
    },
  };
  const message = (t: ReturnType<typeof setup>): string | undefined =>
    t.api.node(NODE)?.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE)?.message;

  it('in the same write as the runtime taint it is about to add; gone with the taint', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    t.cache.daemonSets.push(stock, tolerating);
    await t.reconciler.reconcile(NODE);
    t.sync();
    expect(message(t)).toBe('All required extensions are Healthy.');
    // web fails: the runtime taint goes on.
    const failing = lease('web', t.clock.now(), ExtensionState.Unhealthy);
    t.cache.leases.added(toCachedLease(failing)!);
    t.api.putLease(failing);
    await t.reconciler.reconcile(NODE);
    t.sync();
    expect(t.taints()).toEqual([{ key: RUNTIME, value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' }]);
    expect(message(t)).toContain(
      `; DaemonSet kube-system/nvidia-device-plugin-daemonset does not tolerate ${RUNTIME}: its pod cannot start here`,
    );
    expect(message(t)).not.toContain('kube-system/fixed');
    t.renew(t.clock.now(), 'both');
    await t.reconciler.reconcile(NODE);
    expect(message(t)).toBe('All required extensions are Healthy.');
  });

  it('on a held node, whatever the value of its bootstrap taint; never on a Ready node', async () => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, value: 'true', effect: 'NoSchedule' }] }));
    t.renew(T0, 'both');
    t.cache.daemonSets.push(stock);
    // The agent has not reported for web yet: replace its lease with a Progressing one.
    const progressing = lease('web', T0, ExtensionState.Progressing);
    t.cache.leases.added(toCachedLease(progressing)!);
    t.api.putLease(progressing);
    await t.reconciler.reconcile(NODE);
    expect(message(t)).toContain(
      `DaemonSet kube-system/nvidia-device-plugin-daemonset does not tolerate ${BOOTSTRAP}: its pod cannot start here`,
    );
  });
});

describe('Reconciler stale-lease re-read', () => {
  it.each([
    { behaviour: 'renewed in the live read → no write at all', renewedLive: true },
    { behaviour: 'not renewed in the live read either → runtime taint', renewedLive: false },
  ])('lease judged stale by the cache, $behaviour', async ({ renewedLive }) => {
    const t = setup(rawNode({ bootstrapped: true }));
    await t.reconciler.reconcile(NODE);
    t.sync();
    const before = t.api.writes().length;
    await t.clock.advance(LEASE_SECONDS * 1000 + 1);
    if (renewedLive) t.renew(t.clock.now() - 1_000, 'api');
    await t.reconciler.reconcile(NODE);
    await settle();
    expect(t.api.calls.some((c) => c.op === 'getLease')).toBe(true);
    expect(t.api.writes().length > before).toBe(!renewedLive);
    expect(t.taints()).toEqual(
      renewedLive ? [] : [{ key: RUNTIME, value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' }],
    );
  });
});

describe('Reconciler leadership fence', () => {
  it('leadership lost mid-reconcile: the write does not go out', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    await t.reconciler.reconcile(NODE);
    t.sync();
    const before = t.api.writes().length;
    await t.clock.advance(LEASE_SECONDS * 1000 + 1);
    t.api.beforeNext('getLease', () => void (t.state.leading = false));
    await expect(t.reconciler.reconcile(NODE)).rejects.toBeInstanceOf(NotLeaderError);
    await settle();
    expect(t.api.writes()).toHaveLength(before);
    expect(t.taints()).toEqual([]);
  });
});

describe('Reconciler condition write', () => {
  it('carries the resourceVersion it was decided on; a 409 is re-read, re-decided and re-applied', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    // Someone else changes the node while our status patch is out: it meets a real 409 (stale version).
    t.api.beforeNext('patchNodeStatus', () => {
      const live = t.api.node(NODE)!;
      live.metadata!.labels = { ...live.metadata!.labels, 'example.com/theirs': 'x' };
      t.api.putNode(live);
    });
    await t.reconciler.reconcile(NODE);
    const statusPatches = t.api.calls.filter((c) => c.op === 'patchNodeStatus');
    expect(statusPatches).toHaveLength(2);
    expect(statusPatches[0]?.body).toMatchObject({ metadata: { resourceVersion: expect.any(String) } });
    expect(t.api.calls.map((c) => c.op)).toContain('getNode');
    const node = t.api.node(NODE)!;
    expect(node.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE)).toMatchObject({
      status: 'True',
    });
    expect(node.metadata?.labels?.['example.com/theirs']).toBe('x');
  });
});

describe('Reconciler write order (docs/adr/0008)', () => {
  it('patches the taints first, then the condition on the resourceVersion the taint patch returned', async () => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    await t.reconciler.reconcile(NODE);
    const writes = t.api.calls.filter((c) => c.op === 'patchNode' || c.op === 'patchNodeStatus');
    expect(writes.map((c) => c.op)).toEqual(['patchNode', 'patchNodeStatus']);
    const taintRv = Number(
      (writes[0]?.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion,
    );
    expect(writes[1]?.body).toMatchObject({ metadata: { resourceVersion: String(taintRv + 1) } });
    expect(t.taints()).toEqual([]);
  });

  it('a 409 on the condition after the taint patch went through: the taint event is recorded once, the condition written', async () => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    t.api.failNext('patchNodeStatus', FakeNodeApi.conflict());
    await t.reconciler.reconcile(NODE);
    await settle();
    expect(t.reasons()).toEqual(['BootstrapTaintRemoved']);
    expect(t.api.calls.filter((c) => c.op === 'patchNode')).toHaveLength(1);
    expect(t.api.node(NODE)?.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE)).toBeDefined();
  });
});

describe('Reconciler faults from the API', () => {
  const unavailable = () => new KubeError(KubeErrorCode.ServerError, 503, 'injected 503');
  it.each([
    {
      behaviour: 'conflict on the node patch, then success → re-read, re-decided, written once',
      inject: (api: FakeNodeApi) => api.failNext('patchNode', FakeNodeApi.conflict()),
      rejects: false,
      reasons: ['BootstrapTaintRemoved'],
    },
    {
      behaviour: 'conflict on the status patch, then success → written, one event',
      inject: (api: FakeNodeApi) => api.failNext('patchNodeStatus', FakeNodeApi.conflict()),
      rejects: false,
      reasons: ['BootstrapTaintRemoved'],
    },
    {
      behaviour: 'node deleted under the write (404) → nothing to do, no event',
      inject: (api: FakeNodeApi) => api.failNext('patchNodeStatus', FakeNodeApi.notFound()),
      rejects: false,
      reasons: [],
    },
    {
      behaviour: 'server error on the node patch → rejects (the queue backs off), no taint event',
      inject: (api: FakeNodeApi) => api.failNext('patchNode', unavailable()),
      rejects: true,
      reasons: [],
    },
    {
      behaviour: 'conflicts on every write → gives up after a few re-decisions and rejects',
      inject: (api: FakeNodeApi) => {
        for (let i = 0; i < 10; i++) api.failNext('patchNodeStatus', FakeNodeApi.conflict());
      },
      rejects: true,
      reasons: [],
    },
  ])('$behaviour', async ({ inject, rejects, reasons }) => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    inject(t.api);
    const reconciled = t.reconciler.reconcile(NODE);
    if (rejects) await expect(reconciled).rejects.toBeInstanceOf(KubeError);
    else await reconciled;
    await settle();
    expect(t.reasons()).toEqual(reasons);
  });
});

describe('lease durations (regression: a 25-day lease reconciled its node ~900 times a second)', () => {
  it('a lease of 2,147,484 s requeues its node no later than the longest duration believed', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    for (const ext of [undefined, 'web']) {
      const long = lease(ext, T0);
      long.spec = { ...long.spec, leaseDurationSeconds: 2_147_484 };
      t.cache.leases.added(toCachedLease(long)!);
    }
    const { requeueAfterMs } = await t.reconciler.reconcile(NODE);
    expect(requeueAfterMs).toBeGreaterThan(0);
    expect(requeueAfterMs).toBeLessThanOrEqual(MAX_LEASE_DURATION_SECONDS * 1000);
  });
});

describe('deadlines re-armed from renewed leases (docs/adr/0009)', () => {
  type Setup = ReturnType<typeof setup>;
  const RENEW_EVERY_MS = 30_000;
  const counter = async (metric: {
    get(): Promise<{ values: Array<{ value: number; metricName?: string }> }>;
  }) =>
    (await metric.get()).values.find((v) => v.metricName === undefined || v.metricName.endsWith('_count'))
      ?.value ?? 0;
  const rearms = (t: Setup) => counter(t.metrics.deadlineRearms);
  const decisions = (t: Setup) => counter(t.metrics.reconcileDuration);

  /** The agent renews `extensions` (undefined: its heartbeat) as the watch delivers it: renewTime only. */
  function renewal(
    t: Setup,
    extensions: Array<string | undefined>,
    atMs: number,
    state?: ExtensionState,
  ): void {
    for (const ext of extensions) {
      const renewed = lease(ext, atMs, state);
      t.api.putLease(renewed);
      const cached = toCachedLease(renewed)!;
      // Not a change for any node: nothing enqueues it (LeaseIndex.updated).
      expect(t.cache.leases.updated(cached, cached)).toBeUndefined();
    }
  }

  /**
   * Decides the node, then runs its deadlines as the work queue does (cause 'deadline') up to `untilMs`, the
   * agent renewing `renewed` every 30 s meanwhile.
   */
  async function runDeadlines(
    t: Setup,
    untilMs: number,
    renewed: Array<string | undefined>,
    state?: ExtensionState,
  ): Promise<void> {
    let { requeueAfterMs } = await t.reconciler.reconcile(NODE);
    let nextRenewalMs = t.clock.now() + RENEW_EVERY_MS;
    while (requeueAfterMs !== undefined && t.clock.now() + requeueAfterMs <= untilMs) {
      const dueMs = t.clock.now() + requeueAfterMs;
      for (; nextRenewalMs <= dueMs; nextRenewalMs += RENEW_EVERY_MS) {
        await t.clock.advance(nextRenewalMs - t.clock.now());
        renewal(t, renewed, nextRenewalMs, state);
      }
      await t.clock.advance(dueMs - t.clock.now());
      t.sync();
      ({ requeueAfterMs } = await t.reconciler.reconcile(NODE, 'deadline'));
    }
  }

  it('a lease expiry that a renewal moved: re-armed at the new expiry, with no decision and no request', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    expect((await t.reconciler.reconcile(NODE)).requeueAfterMs).toBe(LEASE_SECONDS * 1000);
    t.sync();
    const calls = t.api.calls.length;
    await t.clock.advance(25_000);
    renewal(t, [undefined, 'web'], T0 + 25_000);
    await t.clock.advance(15_000); // the expiry the decision saw
    expect(await t.reconciler.reconcile(NODE, 'deadline')).toEqual({ requeueAfterMs: 25_000 });
    expect(t.api.calls).toHaveLength(calls);
    expect(await rearms(t)).toBe(1);
    expect(await decisions(t)).toBe(1);
    // Nothing renewed since: the expiry really passed, and the node is decided (and the lease read live).
    await t.clock.advance(25_000);
    await t.reconciler.reconcile(NODE, 'deadline');
    expect(await decisions(t)).toBe(2);
    expect(t.api.calls.filter((c) => c.op === 'getLease').length).toBeGreaterThan(0);
    expect(t.taints()).toContainEqual(expect.objectContaining({ key: RUNTIME }));
  });

  it("an extension's lease not renewed while the heartbeat was: decided at its expiry and tainted", async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    await runDeadlines(t, T0 + LEASE_SECONDS * 1000, [undefined]);
    expect(await rearms(t)).toBe(0);
    expect(await decisions(t)).toBe(2);
    expect(t.taints()).toContainEqual(expect.objectContaining({ key: RUNTIME }));
  });

  it("a change always decides: the cause is the work queue's, never guessed", async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    await t.reconciler.reconcile(NODE);
    t.sync();
    await t.clock.advance(25_000);
    renewal(t, [undefined, 'web'], T0 + 25_000);
    await t.clock.advance(15_000);
    await t.reconciler.reconcile(NODE, 'change');
    expect(await rearms(t)).toBe(0);
    expect(await decisions(t)).toBe(2);
  });

  it('the missing-lease grace is not moved by renewals: decided when it ends', async () => {
    const t = setup(rawNode({ bootstrapped: true }));
    const web = toCachedLease(lease('web', T0))!;
    t.cache.leases.deleted(web);
    t.api.leases.delete(web.name);
    await runDeadlines(t, T0 + 120_000, [undefined]); // the heartbeat renews; no web lease ever comes
    expect(await rearms(t)).toBeGreaterThan(0);
    expect(await decisions(t)).toBe(2);
    expect([...t.reconciler.book.rollupPairs()][0]).toMatchObject({
      state: ExtensionState.Unknown,
      reason: ControllerReason.LeaseMissing,
    });
  });

  it('the bootstrap timeout is not moved by renewals: decided when it comes', async () => {
    // Created at T0 - 60 s with the bootstrap taint, its extension live but Unhealthy: bootstrap waits.
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    const unhealthy = lease('web', T0, ExtensionState.Unhealthy);
    t.api.putLease(unhealthy);
    t.cache.leases.added(toCachedLease(unhealthy)!);
    const timeoutAtMs = T0 - 60_000 + 900_000;
    await runDeadlines(t, timeoutAtMs - 1, [undefined, 'web'], ExtensionState.Unhealthy);
    await settle();
    expect(await decisions(t)).toBe(1);
    expect(t.reasons()).not.toContain('BootstrapTimeout');
    await runDeadlines(t, timeoutAtMs, [undefined, 'web'], ExtensionState.Unhealthy);
    await settle();
    expect(t.reasons()).toContain('BootstrapTimeout');
    expect(await rearms(t)).toBeGreaterThan(20); // one per heartbeat expiry for 14 minutes
  });

  it('a decision that failed leaves nothing to re-arm: its deadline decides again', async () => {
    const t = setup(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    expect((await t.reconciler.reconcile(NODE)).requeueAfterMs).toBe(LEASE_SECONDS * 1000);
    // The node changes (a reboot puts the bootstrap taint back); deciding it again fails to write.
    t.api.putNode(rawNode({ taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] }));
    t.sync();
    // Its taints stay, so the label and the condition go in one status patch (docs/adr/0008's addendum).
    t.api.failNext('patchNodeStatus', new KubeError(KubeErrorCode.ServerError, 500, 'injected'));
    await expect(t.reconciler.reconcile(NODE)).rejects.toBeInstanceOf(KubeError);
    const nodeWrites = () =>
      t.api.calls.filter((c) => c.op === 'patchNode' || c.op === 'patchNodeStatus').length;
    const patches = nodeWrites();
    renewal(t, [undefined, 'web'], T0 + 20_000);
    await t.clock.advance(LEASE_SECONDS * 1000);
    await t.reconciler.reconcile(NODE, 'deadline');
    expect(await rearms(t)).toBe(0);
    expect(nodeWrites()).toBeGreaterThan(patches);
  });
});
