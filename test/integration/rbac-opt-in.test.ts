// The Pod read the default install does not grant (issue 50 item 6), with real ServiceAccount tokens on the
// real API server: an agent token (bound to a Pod on its node, as the DaemonSet's) may not list or watch
// Pods, not even its own node's, and the controller token may neither list Pods nor evict them while eviction
// is off (the default). Each right is the file of a kustomize component (the chart renders the same files):
// agent-pods-from-api-server for podReady's API-server fallback, controller-eviction for safe eviction; with
// it applied, what it is for works. And the real agent, on a node with no kubelet Pods API and no right to
// list pods, says so: in the podReady extension's Lease, in its log, and in nodecare_agent_pod_source.

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LEASE_NAMESPACE, LeaseAnnotation, extensionLeaseName } from '../../api/index.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { KubeErrorCode, type KubeError } from '../../lib/kube/errors.ts';
import { mintAgentTokenOnNode, mintServiceAccountToken } from '../controlplane/tokens.ts';
import { adminKubeConfig, createSystemExtension, eventually, FAST_PROBING, uniqueName } from './helpers.ts';
import { startAgent, type ProgramProcess } from './processes.ts';
import { kubectl } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const SYSTEM = 'nodecare-system';
const COMPONENTS = join(ROOT, 'manifests', 'components');
const AGENT_PODS = join(COMPONENTS, 'agent-pods-from-api-server', 'rbac.yaml');
const CONTROLLER_EVICTION = join(COMPONENTS, 'controller-eviction', 'rbac.yaml');

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const adminKubeconfigPath = inject('kubeconfig');
const scratch = mkdtempSync(join(tmpdir(), 'nodecare-rbac-'));
const node = uniqueName('rbac-node');
const sxName = uniqueName('sx-pods');
const clients: KubeClient[] = [];
const programs: ProgramProcess[] = [];
let agentKubeconfig = '';
let controllerKubeconfig = '';

function kubeconfigForToken(token: string, name: string): string {
  const doc = JSON.parse(readFileSync(adminKubeconfigPath, 'utf8')) as {
    users: Array<{ name: string; user: Record<string, unknown> }>;
  };
  for (const user of doc.users) user.user = { token };
  const path = join(scratch, `${name}.kubeconfig`);
  writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
  return path;
}

async function clientFor(kubeconfigPath: string): Promise<KubeClient> {
  const client = new KubeClient(await loadConnection(kubeconfigPath), { userAgent: 'nodecare-rbac-test' });
  clients.push(client);
  return client;
}

async function status(request: Promise<unknown>): Promise<string> {
  return request.then(
    () => 'ok',
    (err: KubeError) => err.code,
  );
}

/** Whether the authorizer allows `verb` on `resource` cluster-wide to the client's identity. */
async function allowed(client: KubeClient, verb: string, resource: string, group = ''): Promise<string> {
  const review = await client.request<{ status?: { allowed?: boolean } }>(
    'POST',
    '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
    {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: { verb, resource, group } },
      },
    },
  );
  return review.status?.allowed ? 'ok' : KubeErrorCode.Forbidden;
}

/**
 * What eviction reads of other remediators (controller/eviction/remediators.ts). The two reads are real
 * requests: one the authorizer refuses gets 403; one it allows gets 200, or 404 where the CRD or the object is
 * not there (other files of this run install the NodeHealthCheck CRD on the shared control plane, and none
 * installs NodeClaims), and both count as `ok`.
 */
async function remediatorRights(client: KubeClient): Promise<Record<string, string>> {
  return {
    'list nodehealthchecks': readAllowed(
      await status(client.request('GET', '/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks')),
    ),
    'get a nodeclaim': readAllowed(
      await status(client.request('GET', '/apis/karpenter.sh/v1/nodeclaims/claim-a')),
    ),
    'watch nodehealthchecks': await allowed(client, 'watch', 'nodehealthchecks', 'remediation.medik8s.io'),
    'list nodeclaims': await allowed(client, 'list', 'nodeclaims', 'karpenter.sh'),
    'update a nodeclaim': await allowed(client, 'update', 'nodeclaims', 'karpenter.sh'),
  };
}

/** A read the authorizer let through: answered, or 404 (no such CRD or object); anything else as it came. */
function readAllowed(answer: string): string {
  return answer === KubeErrorCode.NotFound ? 'ok' : answer;
}

const NO_REMEDIATOR_READ = {
  'list nodehealthchecks': KubeErrorCode.Forbidden,
  'get a nodeclaim': KubeErrorCode.Forbidden,
  'watch nodehealthchecks': KubeErrorCode.Forbidden,
  'list nodeclaims': KubeErrorCode.Forbidden,
  'update a nodeclaim': KubeErrorCode.Forbidden,
};

/** What the API server answers each request a component may make of Pods. */
async function podRights(client: KubeClient): Promise<Record<string, string>> {
  const own = { fieldSelector: `spec.nodeName=${node}` };
  return {
    'list pods on its node': await status(client.request('GET', '/api/v1/pods', { query: own })),
    // A watch is asked of the authorizer (SelfSubjectAccessReview): the stream itself is the reflector's.
    'watch pods': await allowed(client, 'watch', 'pods'),
    'list pods in kube-system': await status(client.request('GET', '/api/v1/namespaces/kube-system/pods')),
    'get a pod': await status(client.request('GET', `/api/v1/namespaces/${SYSTEM}/pods/agent-${node}`)),
    'evict a pod': await status(
      client.request('POST', `/api/v1/namespaces/${SYSTEM}/pods/nonexistent/eviction`, {
        body: {
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: 'nonexistent', namespace: SYSTEM },
        },
      }),
    ),
  };
}

const FORBIDDEN = KubeErrorCode.Forbidden;

beforeAll(async () => {
  await kubectl('apply', '--server-side', '--force-conflicts', '-k', join(ROOT, 'manifests'));
  await kubectl('delete', '--ignore-not-found', '-f', AGENT_PODS, '-f', CONTROLLER_EVICTION);
  await core.createNode({ body: { metadata: { name: node, labels: { 'nodecare-test': node } } } });
  const { token } = await mintAgentTokenOnNode(admin, {
    namespace: SYSTEM,
    nodeName: node,
    podName: `agent-${node}`,
  });
  agentKubeconfig = kubeconfigForToken(token, 'agent');
  controllerKubeconfig = kubeconfigForToken(
    await mintServiceAccountToken(admin, { namespace: SYSTEM, serviceAccount: 'nodecare-controller' }),
    'controller',
  );
});

afterAll(async () => {
  await Promise.all(programs.map((p) => p.kill()));
  await Promise.all(clients.map((c) => c.close()));
  await kubectl('delete', '--ignore-not-found', '-f', AGENT_PODS, '-f', CONTROLLER_EVICTION).catch(() => '');
  await custom
    .deleteClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'systemextensions',
      name: sxName,
    })
    .catch(() => undefined);
  await core
    .deleteNamespacedPod({ namespace: SYSTEM, name: `agent-${node}`, gracePeriodSeconds: 0 })
    .catch(() => undefined);
  await core.deleteNode({ name: node }).catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
});

describe('Pod read is opt-in, with real ServiceAccount tokens', () => {
  it('the default install: an agent token reads no Pod, not even on its own node; the controller lists and evicts none', async () => {
    const none = {
      'list pods on its node': FORBIDDEN,
      'watch pods': FORBIDDEN,
      'list pods in kube-system': FORBIDDEN,
      'get a pod': FORBIDDEN,
      'evict a pod': FORBIDDEN,
    };
    expect(await podRights(await clientFor(agentKubeconfig))).toEqual(none);
    expect(await podRights(await clientFor(controllerKubeconfig))).toEqual(none);
    // Nor does it read other remediators' objects: that is eviction's, and eviction is off.
    expect(await remediatorRights(await clientFor(controllerKubeconfig))).toEqual(NO_REMEDIATOR_READ);
    // What the controller reads to name DaemonSets kept off a node is their pod templates, not their Pods.
    const controller = await clientFor(controllerKubeconfig);
    expect(await status(controller.request('GET', '/apis/apps/v1/daemonsets'))).toBe('ok');
  });

  it("the real agent on a node without the kubelet's Pods API and without the right says why its podReady probe cannot answer: Lease, log, metric", async () => {
    await createSystemExtension(custom, sxName, {
      nodeSelector: { matchLabels: { 'nodecare-test': node } },
      probe: { podReady: { namespace: 'kube-system', selector: { matchLabels: { app: 'log-agent' } } } },
      ...FAST_PROBING,
    });
    const agent = await startAgent({
      kubeconfig: agentKubeconfig,
      nodeName: node,
      extraArgs: ['--kubelet-pods-api-socket=/nonexistent/pods-api/pods-api.sock'],
    });
    programs.push(agent);
    const atStart = await agent.waitForLog('Checked where podReady reads pods');
    expect(atStart).toMatchObject({ source: 'apiserver', socket: '/nonexistent/pods-api/pods-api.sock' });
    const refused = await agent.waitForLog(
      'podReady has no pod source: the API server refused the pod list',
      30_000,
    );
    expect(String(refused.problem)).toContain('agent-pods-from-api-server');
    const lease = await eventually(
      async () => {
        const found = JSON.parse(
          await kubectl(
            'get',
            'lease',
            '-n',
            LEASE_NAMESPACE,
            extensionLeaseName(node, sxName),
            '-o',
            'json',
          ).catch(() => '{}'),
        ) as { metadata?: { annotations?: Record<string, string> } };
        const message = found.metadata?.annotations?.[LeaseAnnotation.message] ?? '';
        return message.includes('no pod source') ? found.metadata!.annotations! : undefined;
      },
      { what: 'the podReady Lease saying it has no pod source', timeoutMs: 30_000 },
    );
    expect(lease[LeaseAnnotation.state]).toBe('Unknown');
    expect(lease[LeaseAnnotation.message]).toMatch(/agent-kubelet-pods-api .* or agent-pods-from-api-server/);
    const metrics = await (await fetch(`http://127.0.0.1:${agent.healthPort}/metrics`)).text();
    expect(metrics).toMatch(/^nodecare_agent_pod_source\{source="none"\} 1$/m);
    // Once: not a warning per retry.
    expect(
      agent.logs.filter((l) => l.msg === 'podReady has no pod source: the API server refused the pod list'),
    ).toHaveLength(1);
  });

  it('with its component applied, each right is what it is for, and nothing more', async () => {
    await kubectl('apply', '--server-side', '-f', AGENT_PODS, '-f', CONTROLLER_EVICTION);
    try {
      const agent = await clientFor(agentKubeconfig);
      const controller = await clientFor(controllerKubeconfig);
      await eventually(
        async () => ((await podRights(agent))['list pods on its node'] === 'ok' ? true : undefined),
        { what: 'the agent pods ClusterRoleBinding in effect' },
      );
      expect(await podRights(agent)).toEqual({
        'list pods on its node': 'ok',
        'watch pods': 'ok',
        // RBAC cannot narrow a list to one node: this is why the fallback is opt-in.
        'list pods in kube-system': 'ok',
        'get a pod': FORBIDDEN,
        'evict a pod': FORBIDDEN,
      });
      await eventually(
        async () => ((await podRights(controller))['list pods on its node'] === 'ok' ? true : undefined),
        { what: 'the controller eviction ClusterRoleBinding in effect' },
      );
      expect(await podRights(controller)).toEqual({
        'list pods on its node': 'ok',
        'watch pods': FORBIDDEN,
        'list pods in kube-system': 'ok',
        'get a pod': FORBIDDEN,
        // Allowed: the pod does not exist.
        'evict a pod': KubeErrorCode.NotFound,
      });
      // The reads of another remediator's objects, and no more.
      expect(await remediatorRights(controller)).toEqual({
        ...NO_REMEDIATOR_READ,
        'list nodehealthchecks': 'ok',
        'get a nodeclaim': 'ok',
      });
      expect(await remediatorRights(agent)).toEqual(NO_REMEDIATOR_READ);
    } finally {
      await kubectl('delete', '--ignore-not-found', '-f', AGENT_PODS, '-f', CONTROLLER_EVICTION);
    }
  });
});
