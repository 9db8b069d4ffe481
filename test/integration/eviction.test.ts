// Eviction passes (controller/eviction/evict.ts) against the real API server. Pods are created directly with
// spec.nodeName on plain Node objects. There is no kubelet, so an evicted pod that has a node is deleted
// gracefully and stays Terminating: an accepted eviction shows as a deletionTimestamp (or the pod gone).
// The guards of issue 54 run here too: the Evictor (runner.ts) with the real passes and the real read of the
// Node, its decided states given by the test (the reconciler's part is not the API server's story).

import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  PolicyV1Api,
  setHeaderOptions,
  type V1Pod,
  type V1Taint,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_RUNTIME_TAINT_KEY } from '../../api/names.ts';
import { loadControllerConfig } from '../../controller/config.ts';
import { NodeState } from '../../controller/decide/index.ts';
import {
  Evictor,
  evictNodePods,
  evictionNodeView,
  readNodeHold,
  type PodEvictionResult,
} from '../../controller/eviction/index.ts';
import { toCachedNode, type NodeObject } from '../../controller/ingest.ts';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { systemClock } from '../../lib/clock.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { adminKubeConfig, consistently, uniqueName } from './helpers.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const apps = admin.makeApiClient(AppsV1Api);
const policy = admin.makeApiClient(PolicyV1Api);
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const namespace = uniqueName('eviction');
let client: KubeClient;

beforeAll(async () => {
  client = new KubeClient(await loadConnection(inject('kubeconfig')));
  await core.createNamespace({ body: { metadata: { name: namespace } } });
});

afterAll(async () => {
  await client?.close();
});

async function createNode(
  extra: {
    prefix?: string;
    annotations?: Record<string, string>;
    taints?: V1Taint[];
    unschedulable?: boolean;
  } = {},
): Promise<string> {
  const name = uniqueName(extra.prefix ?? 'evict-node');
  await core.createNode({
    body: {
      metadata: { name, labels: { 'kubernetes.io/hostname': name }, annotations: extra.annotations },
      spec: {
        taints: [{ key: DEFAULT_RUNTIME_TAINT_KEY, effect: 'NoSchedule' }, ...(extra.taints ?? [])],
        unschedulable: extra.unschedulable,
      },
    },
  });
  return name;
}

async function createPod(nodeName: string, name: string, extra: Partial<V1Pod> = {}): Promise<V1Pod> {
  return core.createNamespacedPod({
    namespace,
    body: {
      ...extra,
      metadata: { name, namespace, ...extra.metadata },
      spec: { nodeName, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }], ...extra.spec },
    },
  });
}

/** No kubelet runs here: play its part and report the pod Running and Ready. */
async function markRunningAndReady(name: string): Promise<void> {
  await core.patchNamespacedPodStatus(
    {
      name,
      namespace,
      body: {
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date() }],
        },
      },
    },
    mergePatch,
  );
}

/** Accepted eviction: the pod is Terminating (deletionTimestamp) or already gone. */
async function evictionAccepted(name: string): Promise<boolean> {
  try {
    const pod = await core.readNamespacedPod({ name, namespace });
    return pod.metadata?.deletionTimestamp !== undefined;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return true;
    throw err;
  }
}

function evict(nodeName: string, dryRun = false): Promise<PodEvictionResult[]> {
  return evictNodePods({
    client,
    nodeName,
    runtimeTaintKey: DEFAULT_RUNTIME_TAINT_KEY,
    dryRun,
    log: pino({ level: 'silent' }),
    timeoutMs: 10_000,
  });
}

function outcomes(results: PodEvictionResult[]): Record<string, string> {
  return Object.fromEntries(
    results.map((r) => [
      r.pod.slice(namespace.length + 1),
      r.outcome === 'skipped' ? `skipped:${r.reason}` : r.outcome,
    ]),
  );
}

describe('evictNodePods against the real API server', () => {
  it('evicts a normal pod; never a DaemonSet pod, a mirror pod, a pod tolerating the runtime taint, or a pod on another node', async () => {
    const node = await createNode();
    const otherNode = await createNode();
    // A real DaemonSet object as owner: the garbage collector runs and would delete a pod whose owner is missing.
    const ds = await apps.createNamespacedDaemonSet({
      namespace,
      body: {
        metadata: { name: uniqueName('agent') },
        spec: {
          selector: { matchLabels: { app: 'agent' } },
          template: {
            metadata: { labels: { app: 'agent' } },
            spec: { containers: [{ name: 'agent', image: 'registry.k8s.io/pause:3.10' }] },
          },
        },
      },
    });
    await createPod(node, 'web');
    await createPod(node, 'ds-pod', {
      metadata: {
        labels: { app: 'agent' },
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'DaemonSet',
            name: ds.metadata?.name as string,
            uid: ds.metadata?.uid as string,
            controller: true,
          },
        ],
      },
    });
    await createPod(node, 'static-mirror', {
      metadata: { annotations: { 'kubernetes.io/config.mirror': 'hash' } },
    });
    await createPod(node, 'tolerant', {
      spec: {
        containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
        tolerations: [{ key: DEFAULT_RUNTIME_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' }],
      },
    });
    await createPod(otherNode, 'elsewhere');

    expect(outcomes(await evict(node))).toEqual({
      'ds-pod': 'skipped:DaemonSetPod',
      'static-mirror': 'skipped:MirrorPod',
      tolerant: 'skipped:ToleratesRuntimeTaint',
      web: 'evicted',
    });
    expect(await evictionAccepted('web')).toBe(true);
    for (const kept of ['ds-pod', 'static-mirror', 'tolerant', 'elsewhere']) {
      expect(await evictionAccepted(kept), kept).toBe(false);
    }

    // The next pass finds the evicted pod Terminating (or gone) and leaves it alone.
    const again = outcomes(await evict(node));
    expect(again.web === undefined || again.web === 'skipped:Terminating').toBe(true);
  });

  it('a PodDisruptionBudget with no disruptions allowed blocks eviction (429 → blockedByPDB); one allowed lets one pod go', async () => {
    const node = await createNode();
    const app = uniqueName('guarded');
    for (const name of [`${app}-1`, `${app}-2`]) {
      await createPod(node, name, { metadata: { labels: { app } } });
      // Pending pods bypass PDBs in the Eviction API (nothing to disrupt), so make them Running and Ready.
      await markRunningAndReady(name);
    }
    const pdb = await policy.createNamespacedPodDisruptionBudget({
      namespace,
      body: { metadata: { name: app }, spec: { minAvailable: 2, selector: { matchLabels: { app } } } },
    });
    // The disruption controller does not run in the test control plane (kube-controller-manager runs only
    // garbagecollector, namespace and serviceaccount), so nothing would compute the PDB's status, and the
    // Eviction API decides from status.disruptionsAllowed (and refuses while observedGeneration lags). Write
    // the status the disruption controller would write, through the status subresource, to be deterministic.
    const setAllowed = (disruptionsAllowed: number) =>
      policy.patchNamespacedPodDisruptionBudgetStatus(
        {
          name: app,
          namespace,
          body: {
            status: {
              observedGeneration: pdb.metadata?.generation,
              disruptionsAllowed,
              currentHealthy: 2,
              desiredHealthy: 2 - disruptionsAllowed,
              expectedPods: 2,
            },
          },
        },
        mergePatch,
      );

    await setAllowed(0);
    const blocked = await evict(node);
    expect(outcomes(blocked)).toEqual({ [`${app}-1`]: 'blockedByPDB', [`${app}-2`]: 'blockedByPDB' });
    expect(blocked[0]?.reason).toMatch(/disruption budget/);
    expect(await evictionAccepted(`${app}-1`)).toBe(false);
    expect(await evictionAccepted(`${app}-2`)).toBe(false);

    // One disruption allowed: the API server admits the first eviction and counts it against the budget.
    await setAllowed(1);
    expect(outcomes(await evict(node))).toEqual({ [`${app}-1`]: 'evicted', [`${app}-2`]: 'blockedByPDB' });
    expect(await evictionAccepted(`${app}-1`)).toBe(true);
    expect(await evictionAccepted(`${app}-2`)).toBe(false);
  });

  it('dry run reports what it would evict and evicts nothing', async () => {
    const node = await createNode();
    await createPod(node, 'dry-web');
    await createPod(node, 'dry-tolerant', {
      spec: {
        containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
        tolerations: [{ operator: 'Exists' }],
      },
    });
    expect(outcomes(await evict(node, true))).toEqual({
      'dry-tolerant': 'skipped:ToleratesRuntimeTaint',
      'dry-web': 'wouldEvict',
    });
    expect(await evictionAccepted('dry-web')).toBe(false);
  });
});

describe('never fight another owner (issue 54 item 2), against the real API server', () => {
  it('a pod annotated karpenter.sh/do-not-disrupt "true" is skipped (DoNotDisrupt); its neighbour is evicted', async () => {
    const node = await createNode();
    await createPod(node, 'dnd-keep', {
      metadata: { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } },
    });
    await createPod(node, 'dnd-false', {
      metadata: { annotations: { 'karpenter.sh/do-not-disrupt': 'false' } },
    });
    await createPod(node, 'dnd-neighbour');
    expect(outcomes(await evict(node))).toEqual({
      'dnd-false': 'evicted',
      'dnd-keep': 'skipped:DoNotDisrupt',
      'dnd-neighbour': 'evicted',
    });
    expect(await evictionAccepted('dnd-keep')).toBe(false);
    expect(await evictionAccepted('dnd-neighbour')).toBe(true);
  });

  it("readNodeHold reads the Node's annotations, taints, cordon and lifecycle conditions as the API server has them", async () => {
    const read = (nodeName: string) => readNodeHold({ client, nodeName, timeoutMs: 10_000 });
    const plain = await createNode();
    const dnd = await createNode({ annotations: { 'karpenter.sh/do-not-disrupt': 'true' } });
    const karpenter = await createNode({ taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }] });
    const snr = await createNode({
      taints: [{ key: 'medik8s.io/remediation', value: 'self-node-remediation', effect: 'NoExecute' }],
    });
    const cordoned = await createNode({ unschedulable: true });
    const draining = await createNode();
    await core.patchNodeStatus(
      {
        name: draining,
        body: { status: { conditions: [{ type: 'DrainInProgress', status: 'True', reason: 'NodeDrain' }] } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    expect(await read(plain)).toBeUndefined();
    expect(await read(dnd)).toBe('DoNotDisrupt');
    expect(await read(karpenter)).toBe('KarpenterDisruption');
    expect(await read(snr)).toBe('Medik8sRemediation');
    expect(await read(cordoned)).toBe('Maintenance');
    expect(await read(draining)).toBe('Maintenance');
    expect(await read(uniqueName('no-such-node'))).toBeUndefined();
    // The annotation taken off: the node is nodecare's to evict from again.
    await core.patchNode(
      { name: dnd, body: { metadata: { annotations: { 'karpenter.sh/do-not-disrupt': null } } } },
      mergePatch,
    );
    expect(await read(dnd)).toBeUndefined();
  });
});

describe('the Evictor with real passes (issue 54): the parallel cap and do-not-disrupt nodes', () => {
  it("--eviction-max-parallel-nodes=1: a node annotated do-not-disrupt is left alone and takes no place; one node at a time, the next once the first one's pods are gone", async () => {
    // Sorted by name, the held node comes first: if it took the one place, nothing else would ever go.
    const held = await createNode({
      prefix: 'a-held',
      annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
    });
    const first = await createNode({ prefix: 'b-first' });
    const second = await createNode({ prefix: 'c-second' });
    const podOf = (node: string) => `cap-${node}`;
    for (const node of [held, first, second]) await createPod(node, podOf(node));
    await createPod(first, `cap-keep-${first}`, {
      metadata: { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } },
    });

    const loaded = loadControllerConfig(
      [
        '--evict-after-seconds=1',
        '--eviction-rate=2',
        '--eviction-max-parallel-nodes=1',
        '--eviction-group-budget-percent=100',
      ],
      {},
    );
    if (!('config' in loaded)) throw new Error('expected a config');
    const states = new Map<string, NodeState>([
      ...Array.from({ length: 12 }, (_, i): [string, NodeState] => [`ready-${i}`, NodeState.Ready]),
      [held, NodeState.Degraded],
      [first, NodeState.Degraded],
      [second, NodeState.Degraded],
    ]);
    const metrics = new ControllerMetrics(new Registry());
    const events: Array<{ node: string; reason: string; message: string }> = [];
    const log = pino({ level: 'silent' });
    const evictor = new Evictor({
      evict: (nodeName, dryRun) =>
        evictNodePods({
          client,
          nodeName,
          dryRun,
          runtimeTaintKey: DEFAULT_RUNTIME_TAINT_KEY,
          log,
          timeoutMs: 10_000,
        }),
      hold: (nodeName) => readNodeHold({ client, nodeName, timeoutMs: 10_000 }),
      clock: systemClock,
      log,
      metrics,
      events: {
        nodeEvent: async (node, event) => void events.push({ node: node.name, ...event }),
      },
      config: loaded.config,
      node: (name) => ({ name, uid: `uid-${name}`, zone: 'z' }),
      states: () => states,
      breakerTripped: () => false,
    });
    const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    evictor.start();
    try {
      await until('the first node evicted', () => evictionAccepted(podOf(first)));
      // Its pod stays Terminating (no kubelet here): the node is being evicted and holds the one place.
      await consistently(
        async () => {
          expect(await evictionAccepted(podOf(second))).toBe(false);
          expect(await evictionAccepted(podOf(held))).toBe(false);
          expect(await evictionAccepted(`cap-keep-${first}`)).toBe(false);
        },
        3_000,
        { intervalMs: 250, what: 'no second eviction while the first node holds the one place' },
      );
      const gauge = async (name: 'evictionHeldNodes', reason: string) =>
        (await metrics[name].get()).values.find((v) => v.labels.reason === reason)?.value;
      expect(await gauge('evictionHeldNodes', 'ParallelCap')).toBe(1);
      expect((await metrics.evictionEvictingNodes.get()).values[0]?.value).toBe(1);

      // The kubelet's part: the pod is gone. The next pass finds the node empty; the second node goes.
      await core.deleteNamespacedPod({ name: podOf(first), namespace, gracePeriodSeconds: 0 });
      await until('the second node evicted', () => evictionAccepted(podOf(second)), 15_000);
      expect(await evictionAccepted(podOf(held))).toBe(false);
    } finally {
      await evictor.stop();
    }
    const skipped = (await metrics.evictionSkipped.get()).values.map((v) => [
      v.labels.subject,
      v.labels.reason,
      v.value,
    ]);
    expect(skipped).toEqual(
      expect.arrayContaining([
        ['node', 'DoNotDisrupt', 1],
        ['pod', 'DoNotDisrupt', 1],
      ]),
    );
    expect(
      events
        .filter((e) => e.reason === 'EvictionSkipped')
        .map((e) => e.node)
        .sort(),
    ).toEqual([held, first].sort());
    expect(events.find((e) => e.node === held)?.message).toMatch(
      /annotated karpenter.sh\/do-not-disrupt=true/,
    );
  });
});

/**
 * An Evictor over real passes and the real read of the Node; node() is the evictor's view of each Node as the
 * API server has it (read once, as the controller's cache would keep it).
 */
async function realEvictor(opts: {
  argv: string[];
  states: Map<string, NodeState>;
  breakerTripped?: () => boolean;
}) {
  const loaded = loadControllerConfig(['--evict-after-seconds=1', '--eviction-rate=2', ...opts.argv], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  const { config } = loaded;
  const views = new Map<string, ReturnType<typeof evictionNodeView>>();
  for (const name of opts.states.keys()) {
    const node = await core.readNode({ name }).catch(() => undefined);
    if (node)
      views.set(
        name,
        evictionNodeView(
          toCachedNode(JSON.parse(JSON.stringify(node)) as NodeObject),
          config.eviction.groupLabel,
        ),
      );
  }
  const metrics = new ControllerMetrics(new Registry());
  const events: Array<{ node: string; reason: string; message: string }> = [];
  const log = pino({ level: 'silent' });
  const evictor = new Evictor({
    evict: (nodeName, dryRun) =>
      evictNodePods({
        client,
        nodeName,
        dryRun,
        runtimeTaintKey: DEFAULT_RUNTIME_TAINT_KEY,
        log,
        timeoutMs: 10_000,
      }),
    hold: (nodeName) => readNodeHold({ client, nodeName, timeoutMs: 10_000 }),
    clock: systemClock,
    log,
    metrics,
    events: { nodeEvent: async (node, event) => void events.push({ node: node.name, ...event }) },
    config,
    node: (name) => views.get(name),
    states: () => opts.states,
    breakerTripped: opts.breakerTripped ?? (() => false),
  });
  evictor.start();
  return { evictor, metrics, events };
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the Evictor with real passes (issue 54): group budgets, another remediator, the storm cooldown', () => {
  it('per NodePool at 10%: one node of each pool at a time (karpenter.sh/nodepool on the Nodes); a node self-node-remediation tainted is left alone', async () => {
    const pool = (name: string) => ({ 'karpenter.sh/nodepool': name });
    const make = async (prefix: string, labels: Record<string, string>, taints: V1Taint[] = []) => {
      const name = await createNode({ prefix, taints });
      await core.patchNode({ name, body: { metadata: { labels } } }, mergePatch);
      return name;
    };
    const poolA = uniqueName('pool-a');
    const poolB = uniqueName('pool-b');
    const a1 = await make('ga1', pool(poolA));
    const a2 = await make('ga2', pool(poolA));
    const b1 = await make('gb1', pool(poolB));
    const remediated = await make('gsnr', pool(poolB), [
      { key: 'medik8s.io/remediation', value: 'self-node-remediation', effect: 'NoExecute' },
    ]);
    const readyA = [await make('gra', pool(poolA)), await make('gra', pool(poolA))];
    const readyB = [await make('grb', pool(poolB)), await make('grb', pool(poolB))];
    const podOf = (node: string) => `grp-${node}`;
    for (const node of [a1, a2, b1, remediated]) await createPod(node, podOf(node));
    const states = new Map<string, NodeState>([
      ...[...readyA, ...readyB].map((n): [string, NodeState] => [n, NodeState.Ready]),
      ...[a1, a2, b1, remediated].map((n): [string, NodeState] => [n, NodeState.Degraded]),
    ]);
    const { evictor, metrics, events } = await realEvictor({ argv: [], states });
    try {
      // One of pool A's two (its pods stay Terminating: no kubelet), and pool B's b1: each pool its own budget.
      await waitFor('one node of each pool evicted', async () => {
        const a = [await evictionAccepted(podOf(a1)), await evictionAccepted(podOf(a2))];
        return a.some(Boolean) && (await evictionAccepted(podOf(b1)));
      });
      await consistently(
        async () => {
          const a = [await evictionAccepted(podOf(a1)), await evictionAccepted(podOf(a2))];
          expect(a.filter(Boolean)).toHaveLength(1);
          expect(await evictionAccepted(podOf(remediated))).toBe(false);
        },
        3_000,
        { intervalMs: 250, what: "one of pool A's nodes evicted, the remediated node not" },
      );
      const held = (await metrics.evictionHeldNodes.get()).values;
      expect(held.find((v) => v.labels.reason === 'GroupBudget')?.value).toBe(1);
      expect(held.find((v) => v.labels.reason === 'Medik8sRemediation')?.value).toBe(1);
    } finally {
      await evictor.stop();
    }
    expect(
      (await metrics.evictionSkipped.get()).values.map((v) => [v.labels.subject, v.labels.reason, v.value]),
    ).toEqual([['node', 'Medik8sRemediation', 1]]);
    expect(events.filter((e) => e.reason === 'EvictionSkipped').map((e) => e.node)).toEqual([remediated]);
  });

  it('--eviction-storm-cooldown-seconds=3: nothing while the breaker trips, nothing for 3 s once a pass sees it stopped, then the eviction', async () => {
    const node = await createNode({ prefix: 'storm' });
    await createPod(node, `storm-${node}`);
    const states = new Map<string, NodeState>([
      ...Array.from({ length: 6 }, (_, i): [string, NodeState] => [`storm-ready-${i}`, NodeState.Ready]),
      [node, NodeState.Degraded],
    ]);
    let tripped = true;
    const { evictor, metrics } = await realEvictor({
      argv: ['--eviction-storm-cooldown-seconds=3'],
      states,
      breakerTripped: () => tripped,
    });
    try {
      await consistently(async () => expect(await evictionAccepted(`storm-${node}`)).toBe(false), 2_000, {
        intervalMs: 250,
        what: 'no eviction while the breaker is tripped',
      });
      tripped = false;
      // The next pass (within 5 s) sees the breaker stopped and starts the cooldown.
      const cooling = async () =>
        (await metrics.evictionBlockedZones.get()).values.find((v) => v.labels.reason === 'StormCooldown')
          ?.value === 1;
      await waitFor('the cooldown to start', cooling, 10_000);
      const coolingAt = Date.now();
      await consistently(
        async () => {
          expect(await evictionAccepted(`storm-${node}`)).toBe(false);
          expect(await cooling()).toBe(true);
        },
        2_000,
        { intervalMs: 250, what: 'no eviction in the cooldown' },
      );
      await waitFor('the eviction after the cooldown', () => evictionAccepted(`storm-${node}`), 10_000);
      expect(Date.now() - coolingAt).toBeGreaterThanOrEqual(2_800);
    } finally {
      await evictor.stop();
    }
  });
});
