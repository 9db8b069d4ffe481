// Two nodecare-controller replicas on the real control plane, one of which cannot sync its caches: its
// ServiceAccount has every right of the controller's but the list of the extension Leases (a lease LIST that
// always fails, as a page that does not decode or an MTU blackhole on big LISTs would). It must never hold the
// leader Lease, whoever starts first; the replica that syncs leads; and the stuck one fails liveness once
// --startup-sync-timeout-seconds passed (regression: issue 50 item 5). Real ServiceAccount tokens, real RBAC.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPONENT_NAMESPACE } from '../../api/index.ts';
import { kubeConfigForToken, mintServiceAccountToken } from '../controlplane/tokens.ts';
import { adminKubeConfig, consistently, eventually, uniqueName } from './helpers.ts';
import { startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests, kubectl } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
const coordination = admin.makeApiClient(CoordinationV1Api);
const ROOT = join(import.meta.dirname, '..', '..');
const STUCK_SA = 'nodecare-controller-no-lease-list';
/** The default name: the leader-election Role grants only it (resourceNames). */
const LEADER_LEASE = 'nodecare-controller';

const processes: ProgramProcess[] = [];
let dir = '';

/** A kubeconfig file that authenticates as the ServiceAccount `name` in nodecare-system. */
async function kubeconfigFor(name: string): Promise<string> {
  const token = await mintServiceAccountToken(admin, {
    namespace: COMPONENT_NAMESPACE,
    serviceAccount: name,
  });
  const path = join(dir, `${name}.kubeconfig`);
  await writeFile(path, kubeConfigForToken(admin, token, name).exportConfig());
  return path;
}

async function replica(kubeconfig: string, identity: string, extra: string[] = []): Promise<ProgramProcess> {
  const proc = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    '--log-level=debug',
    `--identity=${identity}`,
    '--leader-election-lease-duration-seconds=6',
    '--leader-election-renew-deadline-seconds=4',
    '--leader-election-retry-period-seconds=1',
    ...extra,
  ]);
  processes.push(proc);
  await proc.waitForLog('Started nodecare-controller');
  return proc;
}

async function holder(): Promise<string | undefined> {
  try {
    const lease = await coordination.readNamespacedLease({
      name: LEADER_LEASE,
      namespace: COMPONENT_NAMESPACE,
    });
    return lease.spec?.holderIdentity ?? '';
  } catch {
    return undefined;
  }
}

async function healthz(proc: ProgramProcess): Promise<number> {
  const started = await proc.waitForLog('Started nodecare-controller');
  return (await fetch(`http://127.0.0.1:${String(started.port)}/healthz`)).status;
}

const messages = (proc: ProgramProcess): string[] => proc.logs.map((l) => String(l.msg));

beforeAll(async () => {
  await applyBaseManifests();
  const base = join(ROOT, 'manifests', 'base');
  await kubectl(
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(base, 'serviceaccounts.yaml'),
    '-f',
    join(base, 'rbac-controller.yaml'),
  );
  // Everything the controller may do, bound to a second ServiceAccount, except the Role in nodecare-leases.
  await core.createNamespacedServiceAccount({
    namespace: COMPONENT_NAMESPACE,
    body: { metadata: { name: STUCK_SA } },
  });
  const subjects = [{ kind: 'ServiceAccount', name: STUCK_SA, namespace: COMPONENT_NAMESPACE }];
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: STUCK_SA },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'nodecare-controller' },
      subjects,
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: COMPONENT_NAMESPACE,
    body: {
      metadata: { name: STUCK_SA },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: 'nodecare-controller-leader-election',
      },
      subjects,
    },
  });
  // No holder left by an earlier file's controllers.
  await coordination
    .deleteNamespacedLease({ name: LEADER_LEASE, namespace: COMPONENT_NAMESPACE })
    .catch(() => undefined);
  dir = await mkdtemp(join(tmpdir(), 'nodecare-leader-sync-'));
});

afterAll(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill()));
  await rbac.deleteClusterRoleBinding({ name: STUCK_SA }).catch(() => undefined);
  await rbac
    .deleteNamespacedRoleBinding({ name: STUCK_SA, namespace: COMPONENT_NAMESPACE })
    .catch(() => undefined);
  await core
    .deleteNamespacedServiceAccount({ name: STUCK_SA, namespace: COMPONENT_NAMESPACE })
    .catch(() => undefined);
  await coordination
    .deleteNamespacedLease({ name: LEADER_LEASE, namespace: COMPONENT_NAMESPACE })
    .catch(() => undefined);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a controller replica that cannot sync its caches (regression: issue 50 item 5)', () => {
  it('started first, it never takes the leader Lease; the replica that syncs leads; the stuck one fails liveness', async () => {
    const stuckIdentity = uniqueName('stuck');
    const healthyIdentity = uniqueName('healthy');
    const stuck = await replica(await kubeconfigFor(STUCK_SA), stuckIdentity, [
      '--startup-sync-timeout-seconds=8',
    ]);
    // Time for several campaign rounds: it lists, is refused, and stays out of the election.
    await consistently(
      async () => {
        expect(await holder()).toBeUndefined();
        expect(messages(stuck)).not.toContain('Acquired leadership');
      },
      4_000,
      { intervalMs: 250, what: 'the unsynced replica out of the election' },
    );

    const healthy = await replica(await kubeconfigFor('nodecare-controller'), healthyIdentity);
    await healthy.waitForLog('Reconciling as leader', 30_000);
    expect(await holder()).toBe(healthyIdentity);
    expect(await healthz(healthy)).toBe(200);

    await eventually(async () => ((await healthz(stuck)) === 503 ? true : undefined), {
      timeoutMs: 20_000,
      what: 'the stuck replica to fail liveness',
    });
    expect(messages(stuck)).not.toContain('Acquired leadership');
    expect(messages(stuck)).not.toContain('Caches synced');
    expect(await holder()).toBe(healthyIdentity);
  });
});
