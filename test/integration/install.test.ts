// nodecare installed from manifests/ on the real control plane (docs/design.md section 7): server-side apply
// of `kubectl apply -k manifests/`, every object accepted and its CEL type-checked; then the agent and the
// controller run as real processes authenticated as their own ServiceAccounts with real tokens (an agent's
// bound to a Pod on its Node, so it carries the node claim the lease admission policy checks) through
// bootstrap, runtime failure, the breaker and agent death; the same tokens are refused what they must not do;
// the API server's audit log shows the components used nothing beyond their RBAC; and `kubectl nodecare
// uninstall` leaves no taint, condition, label, annotation or Lease of nodecare's on three nodes.
// The tests of this file run in order and share the nodes and processes they set up.

import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type V1Node,
} from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  BOOTSTRAP_TAINT_VALUE,
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_NAMESPACE,
  NODE_CONDITION_TYPE,
  NODE_STATUS_LABEL,
  MAX_LEASE_DURATION_SECONDS,
  agentLeaseName,
  buildLease,
  extensionLeaseName,
  type LeaseObject,
} from '../../api/index.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { toCachedLease } from '../../controller/cache/index.ts';
import { mintAgentTokenOnNode, mintServiceAccountToken } from '../controlplane/tokens.ts';
import {
  adminKubeConfig,
  createSystemExtension,
  eventually,
  FAST_PROBING,
  needsKubernetes,
  uniqueName,
} from './helpers.ts';
import { startAgent, startProgram, type ProgramProcess } from './processes.ts';
import { kubectl } from './setup.ts';
import { leasesPath } from '../../lib/kube/paths.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const MANIFESTS = join(ROOT, 'manifests');
const SYSTEM = 'nodecare-system';
const AGENT_USER = 'system:serviceaccount:nodecare-system:nodecare-agent';
const CONTROLLER_USER = 'system:serviceaccount:nodecare-system:nodecare-controller';
const LEASE_POLICY = 'nodecare-agent-own-node-leases';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const coordination = admin.makeApiClient(CoordinationV1Api);
const adminKubeconfigPath = inject('kubeconfig');
const scratch = mkdtempSync(join(tmpdir(), 'nodecare-install-'));
/** When this file started (less a second of clock granularity): the audit check reads only what came after. */
const FILE_STARTED_MS = Date.now() - 1_000;
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const AGENT_ARGS = ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'];
const CONTROLLER_ARGS = [
  '--missing-lease-grace-seconds=20',
  '--leader-election-lease-duration-seconds=6',
  '--leader-election-renew-deadline-seconds=4',
  '--leader-election-retry-period-seconds=1',
];

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; uid?: string };
  [key: string]: unknown;
}

/** What `kubectl kustomize` renders for `dir` (the bundled kubectl's kustomize). */
async function render(dir: string): Promise<K8sObject[]> {
  return (loadAll(await kubectl('kustomize', dir)) as Array<K8sObject | null>).filter(
    (doc): doc is K8sObject => doc !== null,
  );
}

/** A kubeconfig file for the test server that authenticates with `token` only. */
function kubeconfigForToken(token: string, name: string): string {
  const doc = JSON.parse(readFileSync(adminKubeconfigPath, 'utf8')) as {
    users: Array<{ name: string; user: Record<string, unknown> }>;
  };
  for (const user of doc.users) user.user = { token };
  const path = join(scratch, `${name}.kubeconfig`);
  writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
  return path;
}

/** A client that authenticates with `kubeconfigPath` and says it is this test (the audit check tells them apart). */
async function clientFor(kubeconfigPath: string): Promise<KubeClient> {
  return new KubeClient(await loadConnection(kubeconfigPath), { userAgent: 'nodecare-install-test' });
}

/** One raw request with the credentials of a kubeconfig written by kubeconfigForToken (or the admin's): status and headers. */
async function rawRequest(
  kubeconfigPath: string,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  options: { body?: unknown; accept?: string } = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: unknown }> {
  const doc = JSON.parse(readFileSync(kubeconfigPath, 'utf8')) as {
    clusters: Array<{ cluster: { server: string; 'certificate-authority-data': string } }>;
    users: Array<{ user: { token: string } }>;
  };
  const { server, 'certificate-authority-data': ca } = doc.clusters[0]!.cluster;
  const dispatcher = new Agent({ connect: { ca: Buffer.from(ca, 'base64').toString('utf8') } });
  try {
    const res = await request(`${server}${path}`, {
      method,
      dispatcher,
      headers: {
        authorization: `Bearer ${doc.users[0]!.user.token}`,
        accept: options.accept ?? 'application/json',
        ...(options.body ? { 'content-type': 'application/json' } : {}),
      },
      body: options.body ? JSON.stringify(options.body) : undefined,
    });
    return { status: res.statusCode, headers: res.headers, body: await res.body.json() };
  } finally {
    await dispatcher.close();
  }
}

/** The JWT payload of a ServiceAccount token (not verified: the API server does that). */
function claims(token: string): { 'kubernetes.io'?: { node?: { name?: string }; pod?: { name?: string } } } {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as never;
}

/** Resolves with the KubeError the request failed with; fails the test if it succeeded. */
async function rejection(request: Promise<unknown>): Promise<KubeError> {
  const outcome = await request.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(outcome instanceof KubeError))
    throw new Error(`expected the request to be refused, got ${String(outcome)}`);
  return outcome;
}

/** Refused by RBAC (403 from the authorizer), not by something else. */
async function expectRbacDenied(request: Promise<unknown>): Promise<void> {
  const err = await rejection(request);
  expect(err.code, err.message).toBe(KubeErrorCode.Forbidden);
  expect(err.message).toMatch(/cannot (get|list|watch|create|update|patch|delete)/);
}

/** Refused by the lease admission policy (authorized by RBAC, then denied at admission). */
async function expectPolicyDenied(request: Promise<unknown>, text?: string): Promise<void> {
  const err = await rejection(request);
  expect(err.code, err.message).toBe(KubeErrorCode.Forbidden);
  expect(err.message).toContain(LEASE_POLICY);
  if (text) expect(err.message).toContain(text);
}

function leasePath(name?: string, namespace = LEASE_NAMESPACE): string {
  return leasesPath(namespace, name);
}

function leaseFor(node: { name: string; uid: string }, extension: string | undefined): LeaseObject {
  return buildLease({
    node,
    extension,
    holderIdentity: 'install-test',
    leaseDurationSeconds: 30,
    renewTime: new Date(),
    bootId: 'boot-1',
    record: extension
      ? { state: 'Healthy', reason: 'ProbeSucceeded', message: 'ok', since: new Date().toISOString() }
      : undefined,
  });
}

function taintKeys(node: V1Node): string[] {
  return (node.spec?.taints ?? []).map((t) => t.key);
}

function condition(node: V1Node): { status?: string; reason?: string } | undefined {
  return node.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE);
}

// ---------------------------------------------------------------------------------------------------------

describe('manifests on the real API server', () => {
  let rendered: K8sObject[] = [];

  beforeAll(async () => {
    rendered = await render(MANIFESTS);
  });

  it('kubectl apply --server-side -k manifests/ installs every object', async () => {
    const out = await kubectl('apply', '--server-side', '-k', MANIFESTS);
    const path = join(scratch, 'rendered.yaml');
    writeFileSync(path, await kubectl('kustomize', MANIFESTS));
    const live = JSON.parse(await kubectl('get', '-f', path, '-o', 'json')) as { items: K8sObject[] };
    const key = (o: K8sObject): string => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    expect(live.items.map(key).sort()).toEqual(rendered.map(key).sort());
    for (const kind of ['DaemonSet', 'Deployment', 'ValidatingAdmissionPolicy', 'FlowSchema'])
      expect(out).toContain(kind.toLowerCase());
  });

  it('renders the workloads as designed: hardened, probes on the pod IP, one image', () => {
    const ds = rendered.find((o) => o.kind === 'DaemonSet') as never as {
      spec: { template: { spec: unknown } };
    };
    const dsPod = ds.spec.template.spec as {
      hostNetwork: boolean;
      priorityClassName: string;
      tolerations: Array<{ operator: string; key?: string }>;
      volumes: Array<{ hostPath?: { path: string } }>;
      containers: Array<{
        image: string;
        args: string[];
        securityContext: Record<string, unknown>;
        volumeMounts: Array<{ mountPath: string; readOnly?: boolean }>;
      }>;
    };
    expect(dsPod.hostNetwork).toBe(true);
    expect(dsPod.priorityClassName).toBe('system-node-critical');
    expect(dsPod.tolerations).toContainEqual({ operator: 'Exists' });
    const agent = dsPod.containers[0]!;
    expect(agent.args).toContain('--health-address=$(POD_IP)');
    expect(agent.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    const hostMounts = dsPod.volumes.filter((v) => v.hostPath).length;
    expect(agent.volumeMounts.filter((m) => m.readOnly === true)).toHaveLength(hostMounts);
    const deploy = rendered.find((o) => o.kind === 'Deployment') as never as {
      spec: {
        replicas: number;
        template: { spec: { containers: Array<{ image: string; args: string[] }> } };
      };
    };
    expect(deploy.spec.replicas).toBe(2);
    const controller = deploy.spec.template.spec.containers[0]!;
    expect(controller.args).toContain('--health-address=$(POD_IP)');
    expect(controller.image).toBe(agent.image);
    expect(agent.image).toMatch(/^nodecare:\d+\.\d+\.\d+$/);
  });

  it('grants no wildcard in any RBAC rule', () => {
    const rules = rendered
      .filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')
      .flatMap((o) => (o as never as { rules: Array<Record<string, string[]>> }).rules);
    expect(rules.length).toBeGreaterThan(0);
    for (const rule of rules) {
      for (const field of ['apiGroups', 'resources', 'verbs', 'resourceNames'])
        expect(rule[field] ?? [], JSON.stringify(rule)).not.toContain('*');
    }
  });

  it('the API server type-checks the admission policy without a warning', async () => {
    const vap = await eventually(
      async () => {
        const obj = JSON.parse(
          await kubectl('get', 'validatingadmissionpolicy', LEASE_POLICY, '-o', 'json'),
        ) as {
          metadata: { generation: number };
          status?: { observedGeneration?: number; typeChecking?: object };
        };
        return obj.status?.observedGeneration === obj.metadata.generation ? obj : undefined;
      },
      { what: 'the policy type-checked', timeoutMs: 30_000 },
    );
    expect(vap.status?.typeChecking ?? {}).toEqual({});
  });

  it('every FlowSchema finds its priority level', async () => {
    const schemas = rendered.filter((o) => o.kind === 'FlowSchema').map((o) => o.metadata.name);
    expect(schemas.sort()).toEqual(['nodecare-agent', 'nodecare-agent-renewals', 'nodecare-controller']);
    for (const name of schemas) {
      await eventually(
        async () => {
          const fs = JSON.parse(await kubectl('get', 'flowschema', name, '-o', 'json')) as {
            status?: { conditions?: Array<{ type: string; status: string }> };
          };
          return (
            fs.status?.conditions?.some((c) => c.type === 'Dangling' && c.status === 'False') || undefined
          );
        },
        { what: `FlowSchema ${name} not dangling` },
      );
    }
  });

  it('the CRDs serve their printer columns', async () => {
    for (const crd of rendered.filter((o) => o.kind === 'CustomResourceDefinition')) {
      const spec = crd.spec as {
        group: string;
        names: { plural: string };
        versions: Array<{
          name: string;
          served: boolean;
          additionalPrinterColumns?: Array<{ name: string }>;
        }>;
      };
      for (const version of spec.versions.filter((v) => v.served)) {
        const table = await eventually(
          async () => {
            const res = await rawRequest(
              adminKubeconfigPath,
              'GET',
              `/apis/${spec.group}/${version.name}/${spec.names.plural}`,
              { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
            );
            return res.status === 200
              ? (res.body as { columnDefinitions: Array<{ name: string }> })
              : undefined;
          },
          { what: `${crd.metadata.name} served` },
        );
        const columns = table.columnDefinitions.map((c) => c.name);
        expect(columns[0]).toBe('Name');
        for (const column of version.additionalPrinterColumns ?? []) expect(columns).toContain(column.name);
        expect(version.additionalPrinterColumns?.length ?? 0, crd.metadata.name).toBeGreaterThan(0);
      }
    }
  });

  const noAdmissionPolicy = needsKubernetes(36, 'the MutatingAdmissionPolicy of the bootstrap-taint overlay');
  it.skipIf(noAdmissionPolicy !== '')(
    `the bootstrap-taint overlay adds the taint at Node creation, keeping taints the kubelet registers${noAdmissionPolicy ? ` (NOT RUN: ${noAdmissionPolicy})` : ''}`,
    async () => {
      const overlay = await render(join(MANIFESTS, 'overlays', 'bootstrap-taint-at-registration'));
      const policy = overlay.find((o) => o.kind === 'MutatingAdmissionPolicy');
      const binding = overlay.find((o) => o.kind === 'MutatingAdmissionPolicyBinding') as K8sObject & {
        spec: Record<string, unknown>;
      };
      expect(policy && binding).toBeTruthy();
      // Only this test's Nodes: the control plane is shared with other test files.
      const label = uniqueName('map');
      binding.spec.matchResources = { objectSelector: { matchLabels: { 'nodecare-test/map': label } } };
      const path = join(scratch, 'map.json');
      writeFileSync(path, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }));
      await kubectl('apply', '--server-side', '-f', path);
      const plain = uniqueName('map-plain');
      const tainted = uniqueName('map-tainted');
      try {
        // The policy is in force once the API server has loaded it: retry creating a throw-away node until then.
        await eventually(
          async () => {
            const probe = uniqueName('map-probe');
            const created = await core.createNode({
              body: { metadata: { name: probe, labels: { 'nodecare-test/map': label } } },
            });
            await core.deleteNode({ name: probe });
            return taintKeys(created).includes(BOOTSTRAP) || undefined;
          },
          { what: 'the MutatingAdmissionPolicy in force', timeoutMs: 30_000, intervalMs: 500 },
        );
        const a = await core.createNode({
          body: { metadata: { name: plain, labels: { 'nodecare-test/map': label } } },
        });
        expect(a.spec?.taints).toEqual([
          { key: BOOTSTRAP, value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' },
        ]);
        const b = await core.createNode({
          body: {
            metadata: { name: tainted, labels: { 'nodecare-test/map': label } },
            spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
          },
        });
        expect(b.spec?.taints).toEqual([
          { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
          { key: BOOTSTRAP, value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' },
        ]);
        // Registered with the taint already (kubelet --register-with-taints), here without a value: not added
        // twice, kept as it is.
        const c = await core.createNode({
          body: {
            metadata: { name: uniqueName('map-registered'), labels: { 'nodecare-test/map': label } },
            spec: { taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] },
          },
        });
        await core.deleteNode({ name: c.metadata!.name! });
        expect(c.spec?.taints).toEqual([{ key: BOOTSTRAP, effect: 'NoSchedule' }]);
        // Nodes nodecare does not manage (no agent runs there): no taint. A Linux node's labels, as a kubelet
        // registers them, get it.
        for (const [what, labels, taints] of [
          ['windows', { 'kubernetes.io/os': 'windows' }, undefined],
          ['virtual-kubelet', { 'kubernetes.io/os': 'linux', type: 'virtual-kubelet' }, undefined],
          [
            'linux',
            { 'kubernetes.io/os': 'linux', type: 'worker' },
            [{ key: BOOTSTRAP, value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' }],
          ],
        ] as const) {
          const node = await core.createNode({
            body: {
              metadata: {
                name: uniqueName(`map-${what}`),
                labels: { 'nodecare-test/map': label, ...labels },
              },
            },
            dryRun: 'All',
          });
          expect(node.spec?.taints, what).toEqual(taints);
        }
      } finally {
        await kubectl('delete', '--ignore-not-found', '-f', path);
        await Promise.all([plain, tainted].map((name) => core.deleteNode({ name }).catch(() => undefined)));
      }
    },
  );
});

// ---------------------------------------------------------------------------------------------------------

const extension = uniqueName('web');
/**
 * An administrator's extension on all three nodes, one shared endpoint: what the correlated-failure breaker
 * guards (a bad rollout of a SystemExtension). Only SystemExtension-selected, critical registrations feed it.
 */
const rollout = uniqueName('rollout');
const TEST_NODE_LABEL = 'nodecare-test/install';
let shared: { port: number; server: Server } | undefined;

async function startShared(port = 0): Promise<void> {
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  shared = { port: (server.address() as AddressInfo).port, server };
}

async function stopShared(): Promise<void> {
  if (!shared) return;
  shared.server.closeAllConnections();
  await new Promise<void>((resolve) => shared!.server.close(() => resolve()));
}
const nodeNames = ['a', 'b', 'c'].map((n) => uniqueName(`install-${n}`));
const nodes = new Map<string, { uid: string; pod: { name: string; uid: string }; kubeconfig: string }>();
let controllerKubeconfig = '';
let unboundAgentKubeconfig = '';
const endpoints = new Map<string, { port: number; server: Server }>();
const agents = new Map<string, ProgramProcess>();
let controller: ProgramProcess | undefined;

async function startEndpoint(node: string, port = 0): Promise<void> {
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  endpoints.set(node, { port: (server.address() as AddressInfo).port, server });
}

async function stopEndpoint(node: string): Promise<void> {
  const { server } = endpoints.get(node)!;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function startAgentAs(node: string): Promise<void> {
  const agent = await startAgent({
    kubeconfig: nodes.get(node)!.kubeconfig,
    nodeName: node,
    extraArgs: AGENT_ARGS,
  });
  agents.set(node, agent);
}

async function readNode(name: string): Promise<V1Node> {
  return core.readNode({ name });
}

/** Log lines in which a component reports that the API server refused it. */
function refusals(proc: ProgramProcess): string[] {
  return proc.logs
    .filter((l) => /Forbidden/.test(JSON.stringify(l)))
    .map((l) => JSON.stringify(l).slice(0, 400));
}

describe('the components as their own ServiceAccounts, with real tokens', () => {
  beforeAll(async () => {
    await startShared();
    await createSystemExtension(admin.makeApiClient(CustomObjectsApi), rollout, {
      nodeSelector: { matchLabels: { [TEST_NODE_LABEL]: 'true' } },
      probe: { http: { url: `http://127.0.0.1:${shared!.port}/` } },
      ...FAST_PROBING,
    });
    for (const node of nodeNames) {
      await startEndpoint(node);
      const probe = {
        probe: { http: { url: `http://127.0.0.1:${endpoints.get(node)!.port}/` } },
        ...FAST_PROBING,
      };
      const created = await core.createNode({
        body: {
          metadata: {
            name: node,
            labels: { 'kubernetes.io/hostname': node, [TEST_NODE_LABEL]: 'true' },
            annotations: { [`${EXTENSION_ANNOTATION_PREFIX}${extension}`]: JSON.stringify(probe) },
          },
          status: {
            allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
            capacity: { cpu: '4', memory: '8Gi', pods: '110' },
            nodeInfo: { bootID: 'boot-1' } as never,
            conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
          },
        },
      });
      // The Pod the agent's token is bound to, on its node, as the DaemonSet would create it (no kubelet runs
      // it here). Not labelled like the DaemonSet's pods, so uninstall does not wait for it.
      const { token, pod: podRef } = await mintAgentTokenOnNode(admin, {
        namespace: SYSTEM,
        nodeName: node,
        podName: `agent-${node}`,
        labels: { 'nodecare-test': 'install' },
      });
      expect(claims(token)['kubernetes.io']?.node?.name).toBe(node);
      nodes.set(node, {
        uid: created.metadata!.uid!,
        pod: podRef,
        kubeconfig: kubeconfigForToken(token, node),
      });
    }
    controllerKubeconfig = kubeconfigForToken(
      await mintServiceAccountToken(admin, { namespace: SYSTEM, serviceAccount: 'nodecare-controller' }),
      'controller',
    );
    unboundAgentKubeconfig = kubeconfigForToken(
      await mintServiceAccountToken(admin, { namespace: SYSTEM, serviceAccount: 'nodecare-agent' }),
      'agent-unbound',
    );
  });

  afterAll(async () => {
    await Promise.all([...agents.values(), ...(controller ? [controller] : [])].map((p) => p.kill()));
    for (const node of endpoints.keys()) await stopEndpoint(node).catch(() => undefined);
    await stopShared().catch(() => undefined);
    await admin
      .makeApiClient(CustomObjectsApi)
      .deleteClusterCustomObject({
        group: 'nodecare.io',
        version: 'v1alpha1',
        plural: 'systemextensions',
        name: rollout,
      })
      .catch(() => undefined);
    for (const node of nodeNames) {
      await core
        .deleteNamespacedPod({ namespace: SYSTEM, name: `agent-${node}`, gracePeriodSeconds: 0 })
        .catch(() => undefined);
      await core.deleteNode({ name: node }).catch(() => undefined);
    }
  });

  describe('the agent token of node A', () => {
    const [a, b] = nodeNames as [string, string];

    it('its Lease renewals (updates) have a priority level of their own; its other requests share another', async () => {
      const uid = async (name: string): Promise<string | undefined> =>
        (JSON.parse(await kubectl('get', 'flowschema', name, '-o', 'json')) as K8sObject).metadata.uid;
      const renewals = await uid('nodecare-agent-renewals');
      const rest = await uid('nodecare-agent');
      const lease = leaseFor({ name: a, uid: nodes.get(a)!.uid }, 'apf-check');
      const kubeconfigPath = nodes.get(a)!.kubeconfig;
      const created = await rawRequest(kubeconfigPath, 'POST', leasePath(), { body: lease });
      expect(created.status).toBe(201);
      expect(created.headers['x-kubernetes-pf-flowschema-uid']).toBe(rest);
      const updated = await rawRequest(kubeconfigPath, 'PUT', leasePath(lease.metadata.name), {
        body: created.body,
      });
      expect(updated.status).toBe(200);
      expect(updated.headers['x-kubernetes-pf-flowschema-uid']).toBe(renewals);
      // Refused by RBAC, still classified (priority and fairness comes before authorization): not in the
      // renewals' level, nor in one other tenants depend on.
      const secrets = await rawRequest(kubeconfigPath, 'GET', '/api/v1/namespaces/default/secrets');
      expect(secrets.status).toBe(403);
      expect(secrets.headers['x-kubernetes-pf-flowschema-uid']).toBe(rest);
      const deleted = await rawRequest(kubeconfigPath, 'DELETE', leasePath(lease.metadata.name));
      expect(deleted.status).toBe(200);
      expect(deleted.headers['x-kubernetes-pf-flowschema-uid']).toBe(rest);
    });

    it('lists and watches the ResourceSlices of its node (resourceSlices probes), and writes none', async () => {
      const kubeconfigPath = nodes.get(a)!.kubeconfig;
      const slices = '/apis/resource.k8s.io/v1/resourceslices';
      const mine = `${slices}?fieldSelector=${encodeURIComponent(`spec.nodeName=${a}`)}`;
      expect((await rawRequest(kubeconfigPath, 'GET', mine)).status).toBe(200);
      const review = await rawRequest(
        kubeconfigPath,
        'POST',
        '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
        {
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: {
              resourceAttributes: { group: 'resource.k8s.io', resource: 'resourceslices', verb: 'watch' },
            },
          },
        },
      );
      expect((review.body as { status?: { allowed?: boolean } }).status?.allowed).toBe(true);
      const slice = {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: { name: `${a}-forged` },
        spec: {
          driver: 'gpu.example.com',
          nodeName: a,
          pool: { name: a, generation: 1, resourceSliceCount: 1 },
        },
      };
      expect((await rawRequest(kubeconfigPath, 'POST', slices, { body: slice })).status).toBe(403);
    });

    it("writes its own node's extension and heartbeat Leases: create, update, delete", async () => {
      const client = await clientFor(nodes.get(a)!.kubeconfig);
      try {
        const node = { name: a, uid: nodes.get(a)!.uid };
        for (const lease of [leaseFor(node, 'own-check'), leaseFor(node, undefined)]) {
          const created = await client.request<LeaseObject>('POST', leasePath(), { body: lease });
          expect(created.metadata.name).toBe(lease.metadata.name);
          const updated = await client.request<LeaseObject>('PUT', leasePath(lease.metadata.name), {
            body: { ...created, spec: { ...created.spec, leaseDurationSeconds: 60 } },
          });
          expect(updated.spec?.leaseDurationSeconds).toBe(60);
          await client.request('DELETE', leasePath(lease.metadata.name));
        }
      } finally {
        await client.close();
      }
    });

    it("cannot create, update or delete node B's Lease, nor take a name nodecare derives for B", async () => {
      const client = await clientFor(nodes.get(a)!.kubeconfig);
      const clientB = await clientFor(nodes.get(b)!.kubeconfig);
      try {
        const nodeB = { name: b, uid: nodes.get(b)!.uid };
        const leaseB = leaseFor(nodeB, 'theirs');
        await expectPolicyDenied(client.request('POST', leasePath(), { body: leaseB }), `node ${a}`);
        // B's own agent creates it; A can neither rewrite nor delete it.
        const created = await clientB.request<LeaseObject>('POST', leasePath(), { body: leaseB });
        await expectPolicyDenied(
          client.request('PUT', leasePath(created.metadata.name), {
            body: { ...created, metadata: { ...created.metadata, annotations: { 'nodecare.io/node': a } } },
          }),
        );
        await expectPolicyDenied(client.request('PUT', leasePath(created.metadata.name), { body: created }));
        await expectPolicyDenied(client.request('DELETE', leasePath(created.metadata.name)));
        // Annotated for A but named as B's Lease of that extension: would block B's agent.
        const squat = leaseFor({ name: a, uid: nodes.get(a)!.uid }, 'squat');
        squat.metadata.name = extensionLeaseName(b, 'squat');
        await expectPolicyDenied(client.request('POST', leasePath(), { body: squat }), 'is not the name');
        // Owned by B's Node.
        const owned = leaseFor({ name: a, uid: nodes.get(a)!.uid }, 'owned');
        owned.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: b, uid: nodeB.uid }];
        await expectPolicyDenied(client.request('POST', leasePath(), { body: owned }), 'owner');
        await clientB.request('DELETE', leasePath(created.metadata.name));
      } finally {
        await client.close();
        await clientB.close();
      }
    });

    it("with a name too long for <extension>.<node>, a node's Leases are named after its UID, which admission checks exactly (issue 20 item 5)", async () => {
      // Two nodes whose names agree in their first 247 characters: the hashed form of earlier releases let one
      // take the other's Lease name (admission could check only that prefix), so the other's agent was locked out.
      const stem = `${'l'.repeat(63)}.${'o'.repeat(63)}.${'n'.repeat(63)}.${'g'.repeat(55)}`; // + 6: 253
      const long = [`${stem}-first`, `${stem}-other`];
      const made: Array<{ name: string; uid: string; kubeconfig: string }> = [];
      try {
        for (const name of long) {
          const created = await core.createNode({ body: { metadata: { name } } });
          const { token } = await mintAgentTokenOnNode(admin, {
            namespace: SYSTEM,
            nodeName: name,
            podName: `agent-long-${made.length}`,
            labels: { 'nodecare-test': 'install' },
          });
          made.push({
            name,
            uid: created.metadata!.uid!,
            kubeconfig: kubeconfigForToken(token, `long-${made.length}`),
          });
        }
        const [first, other] = made as [(typeof made)[0], (typeof made)[0]];
        const client = await clientFor(first.kubeconfig);
        const clientOther = await clientFor(other.kubeconfig);
        try {
          // The other node's name for the extension, annotated for the first and owned by it: denied.
          const squat = leaseFor(first, 'gpu');
          squat.metadata.name = extensionLeaseName(other.name, 'gpu', other.uid);
          await expectPolicyDenied(client.request('POST', leasePath(), { body: squat }), 'is not the name');
          // A hashed name as earlier releases derived it (their prefix, any 10 hex digits): denied too.
          const hashed = leaseFor(first, 'gpu');
          hashed.metadata.name = `${`gpu.${first.name}`.slice(0, 242).replace(/[.-]+$/, '')}-0123456789`;
          await expectPolicyDenied(client.request('POST', leasePath(), { body: hashed }), 'is not the name');
          // Each node's own, named after its UID: admitted, and the other node's is still free for it.
          const own = await client.request<LeaseObject>('POST', leasePath(), {
            body: leaseFor(first, 'gpu'),
          });
          expect(own.metadata.name).toBe(`gpu.${first.uid}`);
          const theirs = await clientOther.request<LeaseObject>('POST', leasePath(), {
            body: leaseFor(other, 'gpu'),
          });
          expect(theirs.metadata.name).toBe(`gpu.${other.uid}`);
          // The controller believes both, each for its own node.
          expect(toCachedLease(own)?.problem).toBeUndefined();
          expect(toCachedLease(theirs)?.problem).toBeUndefined();
        } finally {
          await client.close();
          await clientOther.close();
        }
      } finally {
        for (const [i, node] of made.entries()) {
          await coordination
            .deleteNamespacedLease({ name: `gpu.${node.uid}`, namespace: LEASE_NAMESPACE })
            .catch(() => undefined);
          await core
            .deleteNamespacedPod({ namespace: SYSTEM, name: `agent-long-${i}`, gracePeriodSeconds: 0 })
            .catch(() => undefined);
          await core.deleteNode({ name: node.name }).catch(() => undefined);
        }
      }
    });

    it('must write Leases the controller would believe: its own Node as the one owner, a DNS-label extension, no relabeling', async () => {
      const client = await clientFor(nodes.get(a)!.kubeconfig);
      const node = { name: a, uid: nodes.get(a)!.uid };
      try {
        // No owner reference: the controller would ignore it and no garbage collector would ever remove it.
        const unowned = leaseFor(node, 'unowned');
        delete unowned.metadata.ownerReferences;
        await expectPolicyDenied(client.request('POST', leasePath(), { body: unowned }), 'one owner');
        // Its own node's name with another UID (an earlier incarnation of the node, or a made-up one).
        const stale = leaseFor({ name: a, uid: '00000000-0000-0000-0000-000000000000' }, 'stale-owner');
        await expectPolicyDenied(client.request('POST', leasePath(), { body: stale }), 'one owner');
        // Two owners: its Node and node B's.
        const twice = leaseFor(node, 'two-owners');
        twice.metadata.ownerReferences!.push({
          apiVersion: 'v1',
          kind: 'Node',
          name: b,
          uid: nodes.get(b)!.uid,
        });
        await expectPolicyDenied(client.request('POST', leasePath(), { body: twice }), 'one owner');
        // A dotted extension label makes `<extension>.<node>` ambiguous: node `b.c`'s heartbeat is
        // `nodecare-agent.b.c`, which the agent of node `c` could write as extension `nodecare-agent.b`.
        // (The API server's own validation of names and label values leaves dots as the one way out of a DNS
        // label.)
        const dotted = leaseFor(node, 'nodecare-agent.b');
        await expectPolicyDenied(client.request('POST', leasePath(), { body: dotted }), 'DNS label');
        const noRole = leaseFor(node, 'no-role');
        delete noRole.metadata.labels!['nodecare.io/role'];
        await expectPolicyDenied(client.request('POST', leasePath(), { body: noRole }), 'nodecare.io/role');
        // Relabeling its own Lease to another extension (keeping the name) is refused on update.
        const created = await client.request<LeaseObject>('POST', leasePath(), {
          body: leaseFor(node, 'relabel'),
        });
        try {
          await expectPolicyDenied(
            client.request('PUT', leasePath(created.metadata.name), {
              body: {
                ...created,
                metadata: {
                  ...created.metadata,
                  labels: { ...created.metadata.labels, 'nodecare.io/extension': 'other' },
                },
              },
            }),
          );
          // Re-owning it is refused too.
          await expectPolicyDenied(
            client.request('PUT', leasePath(created.metadata.name), {
              body: { ...created, metadata: { ...created.metadata, ownerReferences: [] } },
            }),
            'one owner',
          );
          // A duration the controller would not believe (issue 20 item 4): 2,147,484 s overflowed a timer.
          await expectPolicyDenied(
            client.request('PUT', leasePath(created.metadata.name), {
              body: { ...created, spec: { ...created.spec, leaseDurationSeconds: 2_147_484 } },
            }),
            'leaseDurationSeconds',
          );
          const longest = await client.request<LeaseObject>('PUT', leasePath(created.metadata.name), {
            body: { ...created, spec: { ...created.spec, leaseDurationSeconds: MAX_LEASE_DURATION_SECONDS } },
          });
          expect(longest.spec?.leaseDurationSeconds).toBe(MAX_LEASE_DURATION_SECONDS);
        } finally {
          await client.request('DELETE', leasePath(created.metadata.name));
        }
      } finally {
        await client.close();
      }
    });

    it('cannot patch Node taints or conditions, read Secrets, or write Leases elsewhere', async () => {
      const client = await clientFor(nodes.get(a)!.kubeconfig);
      try {
        const merge = { contentType: 'application/merge-patch+json' };
        await expectRbacDenied(
          client.request('PATCH', `/api/v1/nodes/${a}`, { ...merge, body: { spec: { taints: [] } } }),
        );
        await expectRbacDenied(
          client.request('PATCH', `/api/v1/nodes/${b}`, {
            ...merge,
            body: { spec: { taints: [{ key: RUNTIME, effect: 'NoSchedule' }] } },
          }),
        );
        await expectRbacDenied(
          client.request('PATCH', `/api/v1/nodes/${a}/status`, {
            contentType: 'application/strategic-merge-patch+json',
            body: { status: { conditions: [{ type: NODE_CONDITION_TYPE, status: 'True' }] } },
          }),
        );
        await expectRbacDenied(client.request('GET', '/api/v1/secrets'));
        await expectRbacDenied(client.request('GET', `/api/v1/namespaces/${SYSTEM}/secrets`));
        await expectRbacDenied(client.request('GET', '/api/v1/namespaces/kube-system/secrets'));
        await expectRbacDenied(client.request('GET', `/api/v1/nodes/${a}`)); // list+watch only, no get
        const own = leaseFor({ name: a, uid: nodes.get(a)!.uid }, 'elsewhere');
        await expectRbacDenied(
          client.request('POST', leasePath(undefined, 'default'), {
            body: { ...own, metadata: { ...own.metadata, namespace: 'default' } },
          }),
        );
        await expectRbacDenied(client.request('GET', leasePath())); // no list of other nodes' Leases
      } finally {
        await client.close();
      }
    });

    it('without the node claim (a token not bound to a Pod) it writes no Lease at all', async () => {
      const client = await clientFor(unboundAgentKubeconfig);
      try {
        const lease = leaseFor({ name: a, uid: nodes.get(a)!.uid }, 'unbound');
        await expectPolicyDenied(client.request('POST', leasePath(), { body: lease }), 'node name');
      } finally {
        await client.close();
      }
    });
  });

  describe('the controller token', () => {
    it('cannot read Secrets nor write Leases outside its namespaces, nor write extension Leases', async () => {
      const client = await clientFor(controllerKubeconfig);
      try {
        await expectRbacDenied(client.request('GET', '/api/v1/secrets'));
        await expectRbacDenied(client.request('GET', `/api/v1/namespaces/${SYSTEM}/secrets`));
        await expectRbacDenied(client.request('GET', `/api/v1/namespaces/${SYSTEM}/secrets/anything`));
        const lease = {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: 'x' },
          spec: {},
        };
        for (const ns of ['default', 'kube-system'])
          await expectRbacDenied(client.request('POST', leasePath(undefined, ns), { body: lease }));
        await expectRbacDenied(client.request('POST', leasePath(), { body: lease }));
        await expectRbacDenied(client.request('DELETE', leasePath(agentLeaseName(nodeNames[0]!))));
        // Leader election: only its own Lease by name (listed and watched only with a field selector on it).
        await expectRbacDenied(client.request('GET', leasePath('someone-elses-lock', SYSTEM)));
        await expectRbacDenied(client.request('GET', leasePath(undefined, SYSTEM)));
        await expectRbacDenied(
          client.request('GET', leasePath(undefined, SYSTEM), {
            query: { fieldSelector: 'metadata.name=someone-elses-lock' },
          }),
        );
        const own = await client.request<{ items: unknown[] }>('GET', leasePath(undefined, SYSTEM), {
          query: { fieldSelector: 'metadata.name=nodecare-controller' },
        });
        expect(Array.isArray(own.items)).toBe(true);
        await expectRbacDenied(client.request('DELETE', `/api/v1/nodes/${nodeNames[0]}`));
        await expectRbacDenied(
          client.request('DELETE', `/api/v1/namespaces/${SYSTEM}/pods/agent-${nodeNames[0]}`),
        );
      } finally {
        await client.close();
      }
    });

    it('reads and writes the ClusterHealth singleton and reads Gardener Cluster objects', async () => {
      const client = await clientFor(controllerKubeconfig);
      try {
        // Allowed by RBAC: the answer is the object or NotFound, never Forbidden.
        for (const path of [
          '/apis/nodecare.io/v1alpha1/clusterhealths/cluster',
          '/apis/nodecare.io/v1alpha1/clusterhealths/cluster/status',
        ]) {
          const outcome = await client.request('GET', path).then(
            () => 'ok',
            (err: KubeError) => err.code,
          );
          expect(['ok', KubeErrorCode.NotFound]).toContain(outcome);
        }
        await expectRbacDenied(client.request('GET', '/apis/nodecare.io/v1alpha1/clusterhealths/other'));
        await expectRbacDenied(client.request('DELETE', '/apis/nodecare.io/v1alpha1/clusterhealths/cluster'));
        await expectRbacDenied(
          client.request('DELETE', `/apis/nodecare.io/v1alpha1/systemextensions/${extension}`),
        );
      } finally {
        await client.close();
      }
    });
  });

  describe('the real programs', () => {
    it('bootstrap: agents and controller on their own tokens take every node out of bootstrap', async () => {
      // The environment the Deployment gives the controller (its literal values; the downward API ones are
      // flags here), so what the manifest sets is what runs.
      const deployment = (await render(MANIFESTS)).find((o) => o.kind === 'Deployment') as never as {
        spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } };
      };
      const env = Object.fromEntries(
        deployment.spec.template.spec.containers[0]!.env.flatMap((e) =>
          e.value === undefined ? [] : [[e.name, e.value]],
        ),
      );
      // The binary sets its own V8 flags (controller/runtime-flags.ts): no NODE_OPTIONS to override them.
      expect(Object.keys(env)).not.toContain('NODE_OPTIONS');
      controller = startProgram(
        'controller',
        [
          `--kubeconfig=${controllerKubeconfig}`,
          '--health-port=0',
          '--health-address=127.0.0.1',
          '--log-level=debug',
          `--identity=${uniqueName('install-controller')}`,
          ...CONTROLLER_ARGS,
        ],
        env,
      );
      await controller.waitForLog('Started nodecare-controller');
      for (const node of nodeNames) await startAgentAs(node);
      for (const node of nodeNames) {
        await eventually(
          async () => {
            const n = await readNode(node);
            return !taintKeys(n).includes(BOOTSTRAP) &&
              n.metadata?.labels?.[NODE_STATUS_LABEL] === 'healthy' &&
              condition(n)?.status === 'True'
              ? n
              : undefined;
          },
          { what: `${node} Ready`, timeoutMs: 60_000 },
        );
      }
      const lease = JSON.parse(
        await kubectl(
          'get',
          'lease',
          '-n',
          LEASE_NAMESPACE,
          extensionLeaseName(nodeNames[0]!, extension),
          '-o',
          'json',
        ),
      ) as LeaseObject;
      expect(lease.metadata.annotations?.['nodecare.io/state']).toBe('Healthy');
    });

    it('runtime failure on one node: runtime taint, its condition naming a DaemonSet kept off by it; recovery: gone', async () => {
      const [a] = nodeNames as [string];
      const { port } = endpoints.get(a)!;
      // A DaemonSet for node a with NVIDIA's stock tolerations only: the controller (its own token, so its
      // list and watch of DaemonSets are RBAC's) names it in the message while nodecare's taint is there.
      const ds = uniqueName('stock-plugin');
      await admin.makeApiClient(AppsV1Api).createNamespacedDaemonSet({
        namespace: 'default',
        body: {
          metadata: { name: ds },
          spec: {
            selector: { matchLabels: { app: ds } },
            template: {
              metadata: { labels: { app: ds } },
              spec: {
                tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
                affinity: {
                  nodeAffinity: {
                    requiredDuringSchedulingIgnoredDuringExecution: {
                      nodeSelectorTerms: [
                        { matchFields: [{ key: 'metadata.name', operator: 'In', values: [a] }] },
                      ],
                    },
                  },
                },
                containers: [{ name: 'plugin', image: 'registry.invalid/device-plugin:stock' }],
              },
            },
          },
        },
      });
      await stopEndpoint(a);
      await eventually(async () => taintKeys(await readNode(a)).includes(RUNTIME) || undefined, {
        what: `runtime taint on ${a}`,
      });
      const named = `DaemonSet default/${ds} does not tolerate ${RUNTIME}: its pod cannot start here`;
      await eventually(
        async () =>
          (await readNode(a)).status?.conditions
            ?.find((c) => c.type === NODE_CONDITION_TYPE)
            ?.message?.includes(named) || undefined,
        { what: `ExtensionsReady of ${a} naming ${ds}` },
      );
      await admin.makeApiClient(AppsV1Api).deleteNamespacedDaemonSet({ name: ds, namespace: 'default' });
      await startEndpoint(a, port);
      await eventually(async () => !taintKeys(await readNode(a)).includes(RUNTIME) || undefined, {
        what: `runtime taint gone from ${a}`,
      });
    });

    it("breaker: the administrator's extension failing on every node taints none and raises CorrelatedFailure", async () => {
      const port = shared!.port;
      await stopShared();
      await eventually(
        () =>
          controller!.logs.find(
            (l) => l.msg === 'Correlated failure: breaker tripped' && l.extension === rollout,
          ),
        { what: 'the breaker tripped' },
      );
      await eventually(
        async () => {
          const all = await Promise.all(nodeNames.map(readNode));
          return all.every((n) => !taintKeys(n).includes(RUNTIME)) || undefined;
        },
        { what: 'no runtime taint on any node' },
      );
      await startShared(port);
      await eventually(
        async () => {
          const all = await Promise.all(nodeNames.map(readNode));
          return all.every((n) => n.metadata?.labels?.[NODE_STATUS_LABEL] === 'healthy') || undefined;
        },
        { what: 'every node healthy again' },
      );
    });

    it('agent death: its node turns Unknown and gets the runtime taint', async () => {
      const [, , c] = nodeNames as [string, string, string];
      await agents.get(c)!.kill();
      const node = await eventually(
        async () => {
          const n = await readNode(c);
          return condition(n)?.reason === 'AgentNotReporting' && taintKeys(n).includes(RUNTIME)
            ? n
            : undefined;
        },
        { what: `${c} AgentNotReporting with the runtime taint`, timeoutMs: 60_000 },
      );
      expect(condition(node)?.status).toBe('Unknown');
      await startAgentAs(c);
      await eventually(async () => !taintKeys(await readNode(c)).includes(RUNTIME) || undefined, {
        what: `${c} recovered`,
      });
    });

    it('no component was ever refused by the API server', () => {
      for (const proc of [controller!, ...agents.values()]) expect(refusals(proc)).toEqual([]);
    });
  });

  describe("the API server's audit log", () => {
    interface AuditEvent {
      verb: string;
      user: { username: string };
      userAgent?: string;
      objectRef?: {
        resource?: string;
        subresource?: string;
        namespace?: string;
        name?: string;
        apiGroup?: string;
      };
      requestURI: string;
      responseStatus?: { code?: number };
      stage: string;
      requestReceivedTimestamp?: string;
    }

    function componentEvents(): AuditEvent[] {
      const path = join(dirname(adminKubeconfigPath), 'audit.log');
      return (
        readFileSync(path, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as AuditEvent)
          .filter((e) => e.stage === 'ResponseComplete' || e.stage === 'ResponseStarted')
          .filter((e) => /^nodecare-(agent|controller)\//.test(e.userAgent ?? ''))
          // This file's programs only: the log is the whole run's, and another file may run a component
          // that is refused on purpose (test/integration/rbac-opt-in.test.ts: an agent without pod rights).
          .filter((e) => Date.parse(e.requestReceivedTimestamp ?? '') >= FILE_STARTED_MS)
      );
    }

    it('shows each component used nothing beyond its RBAC rules, and was refused nothing', async () => {
      const rendered = await render(MANIFESTS);
      const events = componentEvents();
      expect(events.length).toBeGreaterThan(0);
      const used = new Set<string>();
      for (const e of events) {
        const who =
          e.user.username === AGENT_USER
            ? 'nodecare-agent'
            : e.user.username === CONTROLLER_USER
              ? 'nodecare-controller'
              : '';
        expect(who, `${e.user.username} ${e.verb} ${e.requestURI}`).not.toBe('');
        expect(e.responseStatus?.code, `${who} ${e.verb} ${e.requestURI}`).not.toBe(403);
        // Discovery documents (the feature check at start, lib/kube/features.ts) are every authenticated user's
        // to read (Kubernetes' own system:discovery role); nothing else may come from outside nodecare's RBAC.
        const rule = isDiscovery(e) ? 'system:discovery' : grantingRule(rendered, who, e);
        expect(rule, `${who} ${e.verb} ${e.requestURI} is not granted by nodecare's own RBAC`).toBeDefined();
        used.add(
          `${who}: ${e.verb} ${e.objectRef?.resource ?? e.requestURI}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`,
        );
      }
      // The rules the core scenarios exercise, so this check cannot pass on an empty log.
      for (const expected of [
        'nodecare-agent: list nodes',
        'nodecare-agent: watch nodes',
        'nodecare-agent: create leases',
        'nodecare-agent: update leases',
        'nodecare-controller: list nodes',
        'nodecare-controller: patch nodes',
        'nodecare-controller: patch nodes/status',
        'nodecare-controller: list leases',
        'nodecare-controller: watch leases',
        'nodecare-controller: create events',
        'nodecare-controller: list daemonsets',
        'nodecare-controller: watch daemonsets',
      ])
        expect([...used]).toContain(expected);
    });
  });

  describe('kubectl nodecare uninstall', () => {
    it('leaves no nodecare taint, condition, label, annotation or Lease on a cluster of 3 nodes', async () => {
      // Stopped first, as docs/install.md says (uninstall also deletes the workloads; these run as processes).
      await Promise.all([...agents.values(), controller!].map((p) => p.stop()));
      const [a] = nodeNames as [string];
      // Something of each kind to remove: the runtime taint, which a stopped controller leaves in place.
      await kubectl('taint', 'nodes', a, `${RUNTIME}:NoSchedule`);
      const before = await Promise.all(nodeNames.map(readNode));
      for (const n of before) {
        expect(n.metadata?.labels?.[NODE_STATUS_LABEL]).toBeDefined();
        expect(condition(n)).toBeDefined();
        expect(Object.keys(n.metadata?.annotations ?? {}).some((k) => k.includes('nodecare.io/'))).toBe(true);
      }
      expect(taintKeys(before[0]!)).toContain(RUNTIME);

      // A Lease in the same namespace that is not nodecare's (no role label) is not uninstall's to delete.
      await coordination.createNamespacedLease({
        namespace: LEASE_NAMESPACE,
        body: { metadata: { name: 'not-nodecare' }, spec: { holderIdentity: 'someone-else' } },
      });

      // Without --yes: it names the cluster, says what it would do, and changes nothing.
      const dryRun = await runUninstall([`--kubeconfig=${adminKubeconfigPath}`]);
      expect(dryRun.code, dryRun.stderr + dryRun.stdout).toBe(0);
      expect(dryRun.stdout.split('\n')[0]).toMatch(
        new RegExp(`^cluster: https://\\S+ \\(kubeconfig ${adminKubeconfigPath} context \\S+\\)$`),
      );
      for (const node of nodeNames) expect(dryRun.stdout).toContain(`would clean node ${node}:`);
      expect(dryRun.stdout).toContain('nothing was changed (run again with --yes to do it)');
      expect(await Promise.all(nodeNames.map(readNode))).toEqual(
        expect.arrayContaining(
          before.map((n) => expect.objectContaining({ metadata: n.metadata, spec: n.spec })),
        ),
      );

      const result = await runUninstall([
        `--kubeconfig=${adminKubeconfigPath}`,
        '--yes',
        '--wait-timeout-seconds=10',
      ]);
      expect(result.code, result.stderr + result.stdout).toBe(0);
      for (const node of nodeNames) expect(result.stdout).toContain(`clean node ${node}:`);

      for (const n of await Promise.all(nodeNames.map(readNode))) {
        const keys = [
          ...taintKeys(n),
          ...Object.keys(n.metadata?.labels ?? {}),
          ...Object.keys(n.metadata?.annotations ?? {}),
        ];
        expect(
          keys.filter((k) => k === BOOTSTRAP || k === RUNTIME || /(^|\.)nodecare\.io\//.test(k)),
        ).toEqual([]);
        expect(condition(n)).toBeUndefined();
        // Everything else is kept.
        expect(n.metadata?.labels?.['kubernetes.io/hostname']).toBe(n.metadata?.name);
        expect(n.status?.conditions?.map((c) => c.type)).toContain('Ready');
      }
      const leases = JSON.parse(await kubectl('get', 'leases', '-n', LEASE_NAMESPACE, '-o', 'json')) as {
        items: Array<{ metadata: { name: string } }>;
      };
      expect(leases.items.map((l) => l.metadata.name)).toEqual(['not-nodecare']);
      await coordination.deleteNamespacedLease({ namespace: LEASE_NAMESPACE, name: 'not-nodecare' });
      const workloads = await kubectl('get', 'deployments,daemonsets', '-n', SYSTEM, '-o', 'name');
      expect(workloads.trim()).toBe('');
    });
  });
});

/** The rule of nodecare's own rendered RBAC that allows the audited request `e` to component `who`, if any. */
/** A GET of an API discovery document (`/api`, `/apis`, `/apis/<group>`, `/apis/<group>/<version>`). */
function isDiscovery(e: { verb: string; requestURI?: string; objectRef?: object }): boolean {
  return (
    e.verb === 'get' &&
    e.objectRef === undefined &&
    /^\/(api|apis(\/[a-z0-9.-]+(\/v[0-9a-z]+)?)?)$/.test(e.requestURI ?? '')
  );
}

function grantingRule(
  rendered: K8sObject[],
  who: string,
  e: { verb: string; objectRef?: Record<string, string | undefined> },
): object | undefined {
  const ref = e.objectRef;
  if (!ref?.resource) return undefined;
  const resource = ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource;
  const bindings = rendered.filter(
    (o) =>
      (o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding') &&
      (o as never as { subjects: Array<{ name: string }> }).subjects.some((s) => s.name === who),
  ) as never as Array<{
    kind: string;
    metadata: { namespace?: string };
    roleRef: { kind: string; name: string };
  }>;
  for (const binding of bindings) {
    if (binding.kind === 'RoleBinding' && binding.metadata.namespace !== ref.namespace) continue;
    const role = rendered.find(
      (o) =>
        o.kind === binding.roleRef.kind &&
        o.metadata.name === binding.roleRef.name &&
        (o.kind === 'ClusterRole' || o.metadata.namespace === binding.metadata.namespace),
    ) as never as {
      rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }>;
    };
    const rule = role?.rules.find(
      (r) =>
        r.apiGroups.includes(ref.apiGroup ?? '') &&
        r.resources.includes(resource) &&
        r.verbs.includes(e.verb) &&
        (!r.resourceNames || (ref.name !== undefined && r.resourceNames.includes(ref.name))),
    );
    if (rule) return rule;
  }
  return undefined;
}

function runUninstall(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'cli', 'main.ts'), 'uninstall', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
