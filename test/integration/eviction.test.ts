// Eviction passes (controller/eviction/evict.ts) against the real API server. Pods are created directly with
// spec.nodeName on plain Node objects. There is no kubelet, so an evicted pod that has a node is deleted
// gracefully and stays Terminating: an accepted eviction shows as a deletionTimestamp (or the pod gone).

import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  PolicyV1Api,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_RUNTIME_TAINT_KEY } from '../../api/names.ts';
import { evictNodePods, type PodEvictionResult } from '../../controller/eviction/index.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { adminKubeConfig, uniqueName } from './helpers.ts';

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

async function createNode(): Promise<string> {
  const name = uniqueName('evict-node');
  await core.createNode({
    body: {
      metadata: { name, labels: { 'kubernetes.io/hostname': name } },
      spec: { taints: [{ key: DEFAULT_RUNTIME_TAINT_KEY, effect: 'NoSchedule' }] },
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
