// Smoke tests of the local control plane itself: what every other integration test relies on.

import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
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
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { API_FEATURES, detectFeatures } from '../../lib/kube/features.ts';
import { killLeftovers } from '../controlplane/controlplane.ts';
import { kubeConfigForToken, mintServiceAccountToken } from '../controlplane/tokens.ts';
import { adminKubeConfig, eventually, kubernetesMinor, uniqueName } from './helpers.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);

function pinnedVersion(): string {
  const dir = process.env.NODECARE_KUBE_DIR ?? join(import.meta.dirname, '../controlplane/kube');
  const gomod = readFileSync(join(dir, 'go.mod'), 'utf8');
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

/** Running: its /proc entry exists and it is not a zombie waiting to be reaped. */
async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
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
  it("the next run kills what a killed run left, also a component it started but had not recorded yet, and not a live run's", async () => {
    // A killed run: its directory, its pids file naming a process that is gone, and a component it had
    // started but not yet recorded (orphaned: its parent is gone), as when a run is killed right after a spawn.
    const dir = await mkdtemp('/dev/shm/nodecare-cp-');
    const gone = spawn('true');
    await new Promise((resolve) => gone.on('exit', resolve));
    await writeFile(join(dir, 'pids'), `${gone.pid}\n`);
    const idle = ['-e', 'setTimeout(() => undefined, 600_000)'];
    const { stdout } = await promisify(execFile)('sh', [
      '-c',
      `"$0" "$1" "$2" ${dir}/kube-apiserver </dev/null >/dev/null 2>&1 & echo $!`,
      process.execPath,
      ...idle,
    ]);
    const orphan = Number(stdout.trim());
    // A process naming the same directory whose parent is alive (this test): a run still starting; left alone.
    const live = spawn(process.execPath, [...idle, `${dir}/etcd`], { stdio: 'ignore' });
    try {
      expect(await running(orphan)).toBe(true);
      const lines: string[] = [];
      await killLeftovers((line) => lines.push(line));
      expect(lines).toContain(`[controlplane] removed leftovers of an earlier run: ${dir}`);
      expect(existsSync(dir)).toBe(false);
      await eventually(async () => !(await running(orphan)) || undefined, {
        what: 'the unrecorded component killed',
        timeoutMs: 5_000,
      });
      expect(await running(live.pid!)).toBe(true);
    } finally {
      live.kill('SIGKILL');
      if (await running(orphan)) process.kill(orphan, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('serves the optional features nodecare checks at start (lib/kube/features.ts) from the version each needs', async () => {
    const minor = kubernetesMinor();
    const client = new KubeClient(await loadConnection(inject('kubeconfig')));
    try {
      const reports = await detectFeatures(client, Object.values(API_FEATURES));
      expect(reports.map((r) => `${r.feature.name}: ${r.available}`)).toEqual(
        Object.values(API_FEATURES).map((f) => `${f.name}: ${minor >= Number(f.since.split('.')[1])}`),
      );
      // A group-version this API server does not serve is "not served", not a failure.
      const [missing] = await detectFeatures(client, [
        { ...API_FEATURES.resourceSlices, groupVersion: 'resource.k8s.io/v9' },
      ]);
      expect(missing).toMatchObject({ available: false });
      expect(missing?.error).toBeUndefined();
    } finally {
      await client.close();
    }
  });

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
