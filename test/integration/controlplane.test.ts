// Smoke tests of the local control plane itself: what every other integration test relies on.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  RbacAuthorizationV1Api,
  VersionApi,
  setHeaderOptions,
  V1MicroTime,
  type V1Node,
} from '@kubernetes/client-node';
import { describe, expect, inject, it } from 'vitest';
import { kubeConfigForToken, mintServiceAccountToken } from '../controlplane/tokens.ts';
import { adminKubeConfig, eventually, uniqueName } from './helpers.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);

function pinnedVersion(): string {
  const gomod = readFileSync(join(import.meta.dirname, '../controlplane/kube/go.mod'), 'utf8');
  const match = /k8s\.io\/kubernetes (v[0-9.]+)/.exec(gomod);
  if (!match?.[1]) throw new Error('no k8s.io/kubernetes pin in go.mod');
  return match[1];
}

function testNode(name: string, labels: Record<string, string> = {}): V1Node {
  return {
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    status: {
      allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
      capacity: { cpu: '4', memory: '8Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
    },
  };
}

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

describe('local control plane', () => {
  it('serves the pinned Kubernetes version, backed by etcd', async () => {
    const info = await admin.makeApiClient(VersionApi).getCode();
    expect(info.gitVersion).toBe(pinnedVersion());
    expect(inject('kubernetesVersion')).toBe(pinnedVersion());
  });

  it('adds and removes a taint with a resourceVersion precondition, and rejects a stale one with 409', async () => {
    const name = uniqueName('smoke-taint');
    const created = await core.createNode({ body: testNode(name) });
    const rv = created.metadata?.resourceVersion as string;
    const taint = { key: 'example.com/smoke', effect: 'NoSchedule' };
    const patch = (resourceVersion: string, taints: object[]) =>
      core.patchNode(
        { name, body: { metadata: { resourceVersion }, spec: { taints } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );

    const tainted = await patch(rv, [taint]);
    expect(tainted.spec?.taints).toEqual([taint]);
    expect(await statusOf(patch(rv, []))).toBe(409);

    const cleared = await patch(tainted.metadata?.resourceVersion as string, []);
    expect(cleared.spec?.taints ?? []).toEqual([]);
  });

  it('creates, renews and reads back a Lease', async () => {
    const coordination = admin.makeApiClient(CoordinationV1Api);
    const name = uniqueName('smoke-lease');
    const first = new V1MicroTime('2026-01-01T00:00:00.000Z');
    await coordination.createNamespacedLease({
      namespace: 'default',
      body: {
        metadata: { name },
        spec: { holderIdentity: 'smoke', leaseDurationSeconds: 40, renewTime: first },
      },
    });
    const read = await coordination.readNamespacedLease({ name, namespace: 'default' });
    const renewed = await coordination.replaceNamespacedLease({
      name,
      namespace: 'default',
      body: { ...read, spec: { ...read.spec, renewTime: new V1MicroTime(first.getTime() + 10_000) } },
    });
    const again = await coordination.readNamespacedLease({ name, namespace: 'default' });
    expect(new Date(String(again.spec?.renewTime)).getTime()).toBe(first.getTime() + 10_000);
    expect(again.metadata?.resourceVersion).toBe(renewed.metadata?.resourceVersion);
    expect(again.spec?.holderIdentity).toBe('smoke');
  });

  it('denies a ServiceAccount token without RBAC (403) and allows it once a Role is bound (2xx)', async () => {
    const namespace = uniqueName('smoke-rbac');
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'reader' } } });
    const token = await mintServiceAccountToken(admin, { namespace, serviceAccount: 'reader' });
    const asReader = kubeConfigForToken(admin, token).makeApiClient(CoreV1Api);

    expect(await statusOf(asReader.listNamespacedConfigMap({ namespace }))).toBe(403);

    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'read-configmaps' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace }],
      },
    });
    await eventually(
      async () =>
        (await statusOf(asReader.listNamespacedConfigMap({ namespace }))) === 200 ? true : undefined,
      {
        what: 'the RoleBinding to take effect',
      },
    );
    expect(await statusOf(asReader.listNamespacedSecret({ namespace }))).toBe(403);
  });

  it('mints a Pod-bound token that carries the node name', async () => {
    const namespace = uniqueName('smoke-bound');
    const nodeName = uniqueName('smoke-bound-node');
    await core.createNode({ body: testNode(nodeName) });
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'agent' } } });
    const pod = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'agent' },
        spec: {
          nodeName,
          serviceAccountName: 'agent',
          containers: [{ name: 'agent', image: 'example.invalid/agent' }],
        },
      },
    });
    const token = await mintServiceAccountToken(admin, {
      namespace,
      serviceAccount: 'agent',
      boundPod: { name: 'agent', uid: pod.metadata?.uid as string },
    });
    const claims = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()) as {
      'kubernetes.io': { node?: { name: string }; pod?: { name: string } };
    };
    expect(claims['kubernetes.io'].node?.name).toBe(nodeName);
    expect(claims['kubernetes.io'].pod?.name).toBe('agent');
  });

  it('kube-scheduler binds a pod to an untainted node and leaves it Pending while the node is tainted', async () => {
    const namespace = uniqueName('smoke-sched');
    const group = uniqueName('g');
    const nodeName = uniqueName('smoke-sched-node');
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const node = testNode(nodeName, { 'smoke-group': group });
    node.spec = { taints: [{ key: 'example.com/not-ready', effect: 'NoSchedule' }] };
    await core.createNode({ body: node });
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          nodeSelector: { 'smoke-group': group },
          containers: [{ name: 'web', image: 'example.invalid/web' }],
        },
      },
    });

    const unschedulable = await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'web', namespace });
        const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
        return scheduled?.status === 'False' ? pod : undefined;
      },
      { what: 'the scheduler to report the pod unschedulable' },
    );
    expect(unschedulable.spec?.nodeName).toBeUndefined();
    expect(unschedulable.status?.conditions?.find((c) => c.type === 'PodScheduled')?.reason).toBe(
      'Unschedulable',
    );

    await core.patchNode(
      { name: nodeName, body: [{ op: 'remove', path: '/spec/taints' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    const bound = await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'web', namespace });
        return pod.spec?.nodeName ? pod : undefined;
      },
      { what: 'the scheduler to bind the pod', timeoutMs: 60_000 },
    );
    expect(bound.spec?.nodeName).toBe(nodeName);
  });
});
