// The correlated-failure breaker at the start of a leadership term (issue 7 item 9): the reconciler decides
// every node before the first write, so the breaker never sees partial counts, and nothing counted in an
// earlier term survives into the next. Over the fakes of the reconciler's ports (controller/testing.ts).

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildLease } from '../api/lease.ts';
import {
  DEFAULT_RUNTIME_TAINT_KEY,
  EXTENSION_ANNOTATION_PREFIX,
  ExtensionState,
  NodeAnnotation,
} from '../api/names.ts';
import { EventReason, ProbeReason } from '../api/reasons.ts';
import { parseSystemExtension } from '../api/registration.ts';
import { FakeClock } from '../lib/testing.ts';
import { createLogger } from '../lib/log.ts';
import { bookOf } from './book/index.ts';
import { toCachedLease } from './cache/index.ts';
import { loadControllerConfig, type ControllerConfig } from './config.ts';
import { MAX_UNDECLARED_EXTENSION_SERIES, OTHER_EXTENSION_LABEL } from '../lib/metric-labels.ts';
import { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { FakeCache, FakeNodeApi } from './testing.ts';
import { eventRecorder } from './writes/index.ts';

const BOOT = 'boot-1';
const DAY_MS = 24 * 60 * 60 * 1000;

function config(): ControllerConfig {
  const loaded = loadControllerConfig([], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  return loaded.config;
}

/** A fake cluster: nodes that bootstrapped long ago, one critical SystemExtension `gpu`, live leases. */
class Cluster {
  readonly clock = new FakeClock();
  readonly api = new FakeNodeApi();
  readonly cache = new FakeCache(this.clock);
  readonly breakerChanges: string[][] = [];
  readonly metrics = new ControllerMetrics(new Registry());
  readonly reconciler: Reconciler;
  private writes = 0;

  /** `null`: no SystemExtension gpu yet. */
  constructor(nodeSelector: Record<string, unknown> | null = {}) {
    if (nodeSelector) this.setGpu({ nodeSelector });

    const fence = (): void => undefined;
    const { cache, api, clock, metrics } = this;
    const log = createLogger({ level: 'silent', name: 'test' });
    const cfg = config();
    const book = bookOf({
      ...{ cache, api, fence, clock, log, metrics, config: cfg },
      onBreakerChange: () => this.breakerChanges.push([...book.tripped]),
    });
    this.reconciler = new Reconciler({
      ...{ cache, api, fence, clock, log, metrics, book, config: cfg },
      events: eventRecorder(this.api, 'test', this.clock, fence),
    });
  }

  /** Adds (or replaces) a bootstrapped node whose agent reports gpu with `state`. */
  node(
    name: string,
    state: ExtensionState,
    meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
  ): void {
    const uid = `uid-${name}`;
    this.cache.nodes.set(
      name,
      this.api.putNode({
        metadata: {
          name,
          uid,
          creationTimestamp: new Date(this.clock.now() - DAY_MS).toISOString(),
          ...(meta.labels ? { labels: meta.labels } : {}),
          annotations: { ...meta.annotations, [NodeAnnotation.bootstrappedBootId]: BOOT },
        },
        status: { nodeInfo: { bootID: BOOT } },
      }),
    );
    for (const extension of [undefined, 'gpu']) {
      const lease = toCachedLease(
        buildLease({
          node: { name, uid },
          extension,
          holderIdentity: `nodecare-agent-${name}`,
          leaseDurationSeconds: 40,
          // Each write of a lease gets a new renewTime, as the agent's would.
          renewTime: new Date(this.clock.now() + this.writes++),
          bootId: BOOT,
          record: extension
            ? {
                state,
                reason:
                  state === ExtensionState.Healthy
                    ? ProbeReason.ProbeSucceeded
                    : ProbeReason.ConnectionRefused,
                message: '',
                since: '',
              }
            : undefined,
        }),
      );
      if (!lease) throw new Error('expected a nodecare lease');
      this.cache.observeLive(lease);
    }
  }

  /** Puts SystemExtension gpu (tcp probe) with `spec` in the cache, a new generation of the one there. */
  setGpu(spec: Record<string, unknown>): void {
    const at = this.cache.systemExtensions.findIndex((sx) => sx.name === 'gpu');
    const generation = at < 0 ? 1 : this.cache.systemExtensions[at]!.generation + 1;
    const sx = parseSystemExtension({
      metadata: {
        name: 'gpu',
        generation,
        creationTimestamp: new Date(this.clock.now() - DAY_MS).toISOString(),
      },
      spec: { probe: { tcp: { port: 9400 } }, ...spec },
    });
    if (at < 0) this.cache.systemExtensions.push(sx);
    else this.cache.systemExtensions[at] = sx;
  }

  deleteNode(name: string): void {
    this.cache.nodes.delete(name);
    this.api.nodes.delete(name);
  }

  /** What the controller does on becoming leader, then one reconcile per node in `order`. */
  async lead(order: readonly string[]): Promise<Array<readonly string[]>> {
    this.cache.leases.refreshObservations();
    this.reconciler.reset();
    const trippedAfterEach: Array<readonly string[]> = [[...this.reconciler.book.tripped]];
    for (const name of order) {
      await this.reconciler.reconcile(name);
      trippedAfterEach.push([...this.reconciler.book.tripped]);
    }
    return trippedAfterEach;
  }
}

const NODES = Array.from({ length: 10 }, (_, i) => `node-${i}`);
const FAILING = new Set(['node-0', 'node-4', 'node-9']);

function tenNodesThreeFailing(): Cluster {
  const cluster = new Cluster();
  for (const name of NODES) {
    cluster.node(name, FAILING.has(name) ? ExtensionState.Unhealthy : ExtensionState.Healthy);
  }
  return cluster;
}

describe('breaker at the start of leadership (regression: tripped on partial counts)', () => {
  const failingFirst = [...NODES.filter((n) => FAILING.has(n)), ...NODES.filter((n) => !FAILING.has(n))];
  it.each([
    { name: 'failing nodes reconciled first', order: failingFirst },
    { name: 'failing nodes reconciled last', order: [...failingFirst].reverse() },
    { name: 'name order', order: NODES },
    { name: 'reverse name order', order: [...NODES].reverse() },
  ])('10 nodes, 3 failing gpu (30% < 50%): never tripped, $name', async ({ order }) => {
    const cluster = tenNodesThreeFailing();
    const trippedAfterEach = await cluster.lead(order);
    expect(trippedAfterEach).toEqual(Array.from({ length: order.length + 1 }, () => []));
    expect(cluster.breakerChanges).toEqual([]);
  });

  it('a real correlated failure (6 of 10) is tripped before the first reconcile', async () => {
    const cluster = new Cluster();
    NODES.forEach((name, i) => cluster.node(name, i < 6 ? ExtensionState.Unhealthy : ExtensionState.Healthy));
    const trippedAfterEach = await cluster.lead(NODES);
    expect(trippedAfterEach).toEqual(Array.from({ length: NODES.length + 1 }, () => ['gpu']));
  });

  it('a trip is recorded once as a CorrelatedFailure event regarding ClusterHealth cluster, not a node', async () => {
    const cluster = new Cluster();
    NODES.forEach((name, i) => cluster.node(name, i < 6 ? ExtensionState.Unhealthy : ExtensionState.Healthy));
    await cluster.lead(NODES);
    await new Promise((resolve) => setImmediate(resolve)); // events are recorded without awaiting
    const correlated = cluster.api.events.filter(
      (e) => (e.event as { reason: string }).reason === EventReason.CorrelatedFailure,
    );
    expect(correlated).toEqual([
      {
        namespace: 'default',
        event: expect.objectContaining({
          type: 'Warning',
          regarding: { apiVersion: 'nodecare.io/v1alpha1', kind: 'ClusterHealth', name: 'cluster' },
          note: 'Extension gpu fails on 6 of 10 nodes at once: treating it as a faulty rollout, not faulty nodes; holding back runtime taints for it.',
        }),
      },
    ]);
  });
});

describe('the nodes a term writes first', () => {
  it('reset() returns the nodes whose decision they do not show: every node at first, then only what changed between terms', async () => {
    const cluster = new Cluster();
    for (const name of NODES) cluster.node(name, ExtensionState.Healthy);
    cluster.cache.leases.refreshObservations();
    // Never written by a controller: no node shows its condition yet.
    expect(cluster.reconciler.reset().pressing).toEqual(NODES);
    await cluster.lead(NODES);

    // Between terms node-7's gpu fails; the next term finds it and only it.
    cluster.node('node-7', ExtensionState.Unhealthy);
    cluster.cache.leases.refreshObservations();
    expect(cluster.reconciler.reset().pressing).toEqual(['node-7']);
    await cluster.lead(['node-7']);
    expect(cluster.api.nodes.get('node-7')?.spec?.taints?.map((t) => t.key)).toEqual([
      DEFAULT_RUNTIME_TAINT_KEY,
    ]);
    cluster.cache.leases.refreshObservations();
    const start = cluster.reconciler.reset();
    expect(start.pressing).toEqual([]);
    expect(start.sweep).toEqual([]);
    // Every node already shows its decision: each waits for its deadline (its leases' expiry), not for a
    // second decision, and that deadline re-arms without deciding when the leases were renewed meanwhile.
    expect([...start.settled.keys()]).toEqual(NODES);
    for (const delayMs of start.settled.values()) expect(delayMs).toBeGreaterThan(0);
    const writesBefore = cluster.api.writes().length;
    expect(await cluster.reconciler.reconcile('node-7', 'deadline')).toEqual({
      requeueAfterMs: start.settled.get('node-7'),
    });
    expect(cluster.api.writes().length).toBe(writesBefore);
  });

  it('a breaker that the term start judges tripped sweeps the settled nodes: they were decided untripped', async () => {
    const cluster = new Cluster();
    for (const name of NODES) cluster.node(name, ExtensionState.Healthy);
    await cluster.lead(NODES);
    // Between terms 6 of 10 nodes fail at once: the new term's breaker trips over all of them.
    NODES.slice(0, 6).forEach((name) => cluster.node(name, ExtensionState.Unhealthy));
    cluster.cache.leases.refreshObservations();
    const start = cluster.reconciler.reset();
    expect([...cluster.reconciler.book.tripped]).toEqual(['gpu']);
    expect(start.pressing).toEqual(NODES.slice(0, 6));
    expect(start.settled.size).toBe(0);
    expect(start.sweep).toEqual(NODES.slice(6));
  });
});

describe('breaker while a requirement is added (regression: tripped on the first nodes decided, then flapped their taints)', () => {
  const failingFirst = [...NODES.filter((n) => FAILING.has(n)), ...NODES.filter((n) => !FAILING.has(n))];
  const pool = (name: string) => ({ labels: { pool: name === 'node-5' ? 'a' : 'b' } });
  it.each([
    { name: 'a new SystemExtension', before: undefined, after: {} },
    { name: 'critical false → true', before: { critical: false }, after: { critical: true } },
    {
      name: 'a wider nodeSelector',
      before: { nodeSelector: { matchLabels: { pool: 'a' } } },
      after: { nodeSelector: {} },
    },
    {
      name: 'rollout Observe → Enforce',
      before: { rollout: { existingNodes: 'Observe' } },
      after: { rollout: { existingNodes: 'Enforce' } },
    },
  ])(
    '$name over 10 nodes, 3 failing gpu (30%), reconciled failing first: never tripped, their runtime taints added once',
    async ({ before, after }) => {
      const cluster = new Cluster(null);
      if (before) cluster.setGpu(before);
      for (const name of NODES)
        cluster.node(name, FAILING.has(name) ? ExtensionState.Unhealthy : ExtensionState.Healthy, pool(name));
      await cluster.lead(NODES);
      expect(
        cluster.api.writes().filter((w) => JSON.stringify(w.body).includes(DEFAULT_RUNTIME_TAINT_KEY)),
      ).toEqual([]);

      cluster.setGpu(after);
      const trippedAfterEach: Array<readonly string[]> = [];
      for (const name of failingFirst) {
        await cluster.reconciler.reconcile(name);
        trippedAfterEach.push([...cluster.reconciler.book.tripped]);
      }
      expect(trippedAfterEach).toEqual(failingFirst.map(() => []));
      expect(cluster.breakerChanges).toEqual([]);
      await new Promise((resolve) => setImmediate(resolve)); // events are recorded without awaiting
      const taintEvents = cluster.api.events
        .map((e) => e.event as { reason: string; regarding: { name: string } })
        .filter(
          (e) => e.reason === EventReason.RuntimeTaintAdded || e.reason === EventReason.RuntimeTaintRemoved,
        )
        .map((e) => `${e.reason} ${e.regarding.name}`);
      expect(taintEvents).toEqual([...FAILING].sort().map((name) => `RuntimeTaintAdded ${name}`));
      for (const name of NODES)
        expect(cluster.api.nodes.get(name)?.spec?.taints?.map((t) => t.key) ?? []).toEqual(
          FAILING.has(name) ? [DEFAULT_RUNTIME_TAINT_KEY] : [],
        );
    },
  );
});

describe('rollout windows of SystemExtensions that are gone (regression: kept by name, never pruned)', () => {
  it('a deleted SystemExtension leaves no window behind: the next reconcile forgets it', async () => {
    const cluster = new Cluster(null);
    cluster.setGpu({ rollout: { existingNodes: 'Grace' } });
    cluster.setGpu({ rollout: { existingNodes: 'Grace' } }); // generation 2: its window starts when first seen
    cluster.node('node-0', ExtensionState.Healthy);
    await cluster.lead(['node-0']);
    const gpu = cluster.cache.systemExtensions[0]!;
    const openedMs = cluster.reconciler.book.rolloutStartMs(gpu);
    await cluster.clock.advance(60_000);
    expect(cluster.reconciler.book.rolloutStartMs(gpu)).toBe(openedMs);

    cluster.cache.systemExtensions.splice(0);
    await cluster.reconciler.reconcile('node-0');
    // Only a window still remembered would give the old start.
    expect(cluster.reconciler.book.rolloutStartMs(gpu)).toBe(cluster.clock.now());
  });
});

describe('breaker across leadership terms (regression: counts of an earlier term leaked)', () => {
  it('nodes deleted while another replica led are not counted in the next term', async () => {
    const cluster = new Cluster();
    for (const name of ['a', 'b', 'c']) cluster.node(name, ExtensionState.Healthy);
    for (const name of ['d', 'e', 'f']) cluster.node(name, ExtensionState.Unhealthy);
    expect((await cluster.lead(['a', 'b', 'c', 'd', 'e', 'f'])).flat()).toEqual([]);

    // Standby: d, e, f are deleted and g, h, i (also failing) join; still 3 of 6 failing.
    for (const name of ['d', 'e', 'f']) cluster.deleteNode(name);
    for (const name of ['g', 'h', 'i']) cluster.node(name, ExtensionState.Unhealthy);
    const trippedAfterEach = await cluster.lead(['g', 'h', 'i', 'a', 'b', 'c']);
    expect(trippedAfterEach.flat()).toEqual([]);
    expect([...cluster.reconciler.book.nodeStates().keys()].sort()).toEqual(['a', 'b', 'c', 'g', 'h', 'i']);
  });

  it('a breaker tripped in an earlier term is not inherited when the failure ended meanwhile', async () => {
    const cluster = new Cluster();
    for (const name of NODES) cluster.node(name, ExtensionState.Unhealthy);
    const first = await cluster.lead(NODES);
    expect(first.at(-1)).toEqual(['gpu']);

    // Standby: every node recovered.
    for (const name of NODES) cluster.node(name, ExtensionState.Healthy);
    const second = await cluster.lead(NODES);
    expect(second.flat()).toEqual([]);
  });
});

describe('breaker counts only what the admin declared (regression: annotations tripped it)', () => {
  it.each([
    { name: 'critical: false', critical: false },
    { name: 'critical: true', critical: true },
  ])(
    'gpu annotations ($name) failing on two unselected nodes do not trip it: the broken gpu node keeps its runtime taint',
    async ({ critical }) => {
      const cluster = new Cluster({ matchLabels: { gpu: 'true' } });
      const gpu = { labels: { gpu: 'true' } };
      cluster.node('gpu-broken', ExtensionState.Unhealthy, gpu);
      cluster.node('gpu-1', ExtensionState.Healthy, gpu);
      cluster.node('gpu-2', ExtensionState.Healthy, gpu);
      const annotation = {
        annotations: {
          [`${EXTENSION_ANNOTATION_PREFIX}gpu`]: JSON.stringify({ probe: { tcp: { port: 1 } }, critical }),
        },
      };
      cluster.node('cpu-1', ExtensionState.Unhealthy, annotation);
      cluster.node('cpu-2', ExtensionState.Unhealthy, annotation);

      const trippedAfterEach = await cluster.lead(['cpu-1', 'cpu-2', 'gpu-broken', 'gpu-1', 'gpu-2']);
      expect(trippedAfterEach.flat()).toEqual([]);
      expect(cluster.breakerChanges).toEqual([]);
      expect(cluster.api.nodes.get('gpu-broken')?.spec?.taints?.map((t) => t.key)).toEqual([
        DEFAULT_RUNTIME_TAINT_KEY,
      ]);
    },
  );
});

describe('extension metric series (regression: one series per annotation-chosen name, never removed)', () => {
  const series = async (cluster: Cluster): Promise<string[]> =>
    (await cluster.metrics.extensionNodes.get()).values
      .map((v) => `${v.labels.extension}/${v.labels.state}=${v.value}`)
      .sort();

  it('names no SystemExtension declares are bounded, the rest fold into one series, and gone names have none', async () => {
    const cluster = new Cluster({ matchLabels: { gpu: 'true' } });
    cluster.node('gpu-0', ExtensionState.Healthy, { labels: { gpu: 'true' } });
    // One node registers 200 made-up extensions by annotation (no lease: they are Unknown, missing).
    const annotations = Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [`${EXTENSION_ANNOTATION_PREFIX}junk-${i}`, 'tcp://127.0.0.1:1']),
    );
    cluster.node('noisy', ExtensionState.Healthy, { annotations });
    await cluster.lead(['gpu-0', 'noisy']);
    const withJunk = await series(cluster);
    const names = new Set(withJunk.map((s) => s.split('/')[0]));
    expect(names.size).toBe(1 + MAX_UNDECLARED_EXTENSION_SERIES + 1);
    expect(names.has('gpu')).toBe(true);
    expect(names.has(OTHER_EXTENSION_LABEL)).toBe(true);
    const total = (await cluster.metrics.extensionNodes.get()).values.reduce((sum, v) => sum + v.value, 0);
    expect(total).toBe(201);

    // The annotations go: so do their series.
    cluster.node('noisy', ExtensionState.Healthy);
    await cluster.reconciler.reconcile('noisy');
    expect(await series(cluster)).toEqual(['gpu/Healthy=1']);
  });
});
