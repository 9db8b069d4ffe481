// The ClusterRoles for people (manifests/base/rbac-aggregated.yaml, issue 51 item 4) with a real ServiceAccount
// token on the real API server: bound to kubectl's built-in `view` and nothing else, `kubectl nodecare status`
// works (nodes, the Leases in nodecare-leases, SystemExtensions, ClusterHealth), while writes stay denied;
// `edit` gains nodecare's reads but not the right to register a SystemExtension (an exec probe runs on nodes).

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mintServiceAccountToken } from '../controlplane/tokens.ts';
import { adminKubeConfig, createSystemExtension, eventually, uniqueName } from './helpers.ts';
import { applyBaseManifests, kubectl } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const NAMESPACE = 'default';
const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const adminKubeconfigPath = inject('kubeconfig');
const scratch = mkdtempSync(join(tmpdir(), 'nodecare-view-'));
const run = uniqueName('viewer');
const node = `${run}-node`;
const sxName = `${run}-sx`;
const LABEL = 'nodecare.io/rbac-aggregated-test';
let viewerKubeconfig = '';

function kubeconfigForToken(token: string): string {
  const doc = JSON.parse(readFileSync(adminKubeconfigPath, 'utf8')) as {
    users: Array<{ name: string; user: Record<string, unknown> }>;
  };
  for (const user of doc.users) user.user = { token };
  const path = join(scratch, 'viewer.kubeconfig');
  writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
  return path;
}

function runPlugin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'cli', 'main.ts'), ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: viewerKubeconfig },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `kubectl auth can-i` as the viewer: yes or no. */
async function viewerCan(...args: string[]): Promise<string> {
  const bin = join(inject('binDir'), 'kube-testenv');
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['kubectl', `--kubeconfig=${viewerKubeconfig}`, 'auth', 'can-i', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.once('error', reject);
    child.once('exit', () => resolve(stdout.trim()));
  });
}

beforeAll(async () => {
  await applyBaseManifests();
  await kubectl('apply', '--server-side', '-f', join(ROOT, 'manifests', 'base', 'rbac-aggregated.yaml'));
  await core.createNamespacedServiceAccount({ namespace: NAMESPACE, body: { metadata: { name: run } } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: run },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: run, namespace: NAMESPACE }],
    },
  });
  viewerKubeconfig = kubeconfigForToken(
    await mintServiceAccountToken(admin, { namespace: NAMESPACE, serviceAccount: run }),
  );
  await core.createNode({ body: { metadata: { name: node, labels: { [LABEL]: run } } } });
  await createSystemExtension(custom, sxName, {
    nodeSelector: { matchLabels: { [LABEL]: run } },
    probe: { tcp: { port: 1 } },
  });
}, 120_000);

afterAll(async () => {
  await rbac.deleteClusterRoleBinding({ name: run }).catch(() => undefined);
  await core.deleteNamespacedServiceAccount({ namespace: NAMESPACE, name: run }).catch(() => undefined);
  await core.deleteNode({ name: node }).catch(() => undefined);
  await custom
    .deleteClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'systemextensions',
      name: sxName,
    })
    .catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
});

describe('kubectl nodecare for people bound to view', () => {
  it('a token bound to view alone runs kubectl nodecare status; writes stay denied', async () => {
    // The aggregation controller fills `view` from the labelled ClusterRoles shortly after they exist.
    await eventually(
      async () => {
        expect(await viewerCan('list', 'systemextensions.nodecare.io')).toBe('yes');
        expect(await viewerCan('list', 'leases', '-n', 'nodecare-leases')).toBe('yes');
        expect(await viewerCan('list', 'nodes')).toBe('yes');
        return true;
      },
      { timeoutMs: 60_000, what: 'view to aggregate nodecare-view and nodecare-view-leases' },
    );

    const status = await runPlugin(['status', '--selector', `${LABEL}=${run}`, '-o', 'json']);
    expect(status.stderr).toBe('');
    // 1: the node is not healthy (no agent reports for it); 2 would be an error such as "not allowed".
    expect(status.code).toBe(1);
    const view = JSON.parse(status.stdout) as { nodes: Array<{ name: string }> };
    expect(view.nodes.map((n) => n.name)).toEqual([node]);

    const text = await runPlugin(['status', '--selector', `${LABEL}=${run}`]);
    expect(text.stderr).toBe('');
    expect(text.stdout).toContain(node);

    expect({
      'create systemextensions': await viewerCan('create', 'systemextensions.nodecare.io'),
      'patch systemextensions/status': await viewerCan(
        'patch',
        'systemextensions.nodecare.io',
        '--subresource=status',
      ),
      'patch clusterhealths': await viewerCan('patch', 'clusterhealths.nodecare.io/cluster'),
      'patch nodes': await viewerCan('patch', 'nodes'),
      'update leases in nodecare-leases': await viewerCan('update', 'leases', '-n', 'nodecare-leases'),
      'list secrets': await viewerCan('list', 'secrets', '-n', 'nodecare-system'),
    }).toEqual({
      'create systemextensions': 'no',
      'patch systemextensions/status': 'no',
      'patch clusterhealths': 'no',
      'patch nodes': 'no',
      'update leases in nodecare-leases': 'no',
      'list secrets': 'no',
    });
  });

  it('edit and admin gain the reads, not the right to register a SystemExtension (nodecare-edit is bound by name)', async () => {
    for (const role of ['edit', 'admin']) {
      const { rules } = await rbac.readClusterRole({ name: role });
      const nodecare = (rules ?? []).filter((r) => r.apiGroups?.includes('nodecare.io'));
      expect(nodecare.length, role).toBeGreaterThan(0);
      for (const rule of nodecare) expect(rule.verbs.sort(), role).toEqual(['get', 'list', 'watch']);
    }
    const { metadata } = await rbac.readClusterRole({ name: 'nodecare-edit' });
    expect(Object.keys(metadata?.labels ?? {}).filter((l) => l.includes('aggregate-to'))).toEqual([]);
  });
});
