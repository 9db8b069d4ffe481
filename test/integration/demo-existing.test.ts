// `npm start -- --kubeconfig <path> --once`: the demo's node story on a cluster the user already has. A local
// control plane of its own stands in for the user's cluster (not this run's shared one: the demo installs and
// then removes nodecare's CRDs, which the other test files use), with a Node, a namespace and a ConfigMap of
// "the user's" made beforehand. The demo plays every phase, leaves the user's objects alone (its KWOK does not
// take the user's KWOK-annotated Node, its controller writes nothing there) and removes everything it created.
// It refuses, exit 2, a cluster it cannot reach and one where nodecare already is, and then leaves that alone.

import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1Node,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_GROUP, COMPONENT_NAMESPACE, LEASE_NAMESPACE, NODE_CONDITION_TYPE } from '../../api/index.ts';
import { DEMO_NODE_PREFIX } from '../../demo/existing-cluster.ts';
import { EXISTING_CLUSTER_PHASES } from '../../demo/story.ts';
import { freePorts, startControlPlane, type ControlPlane } from '../controlplane/controlplane.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** Normally a minute or two; generous for 2 shared cores. */
const TIMEOUT_MS = 360_000;
const USER_NODE = 'user-node-1';
const USER_NAMESPACE = 'user-apps';

const children = new Set<ReturnType<typeof spawn>>();
let plane: ControlPlane;
let core: CoreV1Api;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodecare-demo-existing-'));
  plane = await startControlPlane({ log: () => undefined, auditPolicy: false });
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  core = kc.makeApiClient(CoreV1Api);
  // The user's own node: KWOK-annotated as a kwokctl cluster's are, so a KWOK that managed every such node
  // would take it over (turn it Ready).
  await core.createNode({
    body: {
      metadata: {
        name: USER_NODE,
        labels: { 'kubernetes.io/hostname': USER_NODE, team: 'user' },
        annotations: { 'kwok.x-k8s.io/node': 'fake' },
      },
    },
  });
  await core.createNamespace({ body: { metadata: { name: USER_NAMESPACE } } });
  await core.createNamespacedConfigMap({
    namespace: USER_NAMESPACE,
    body: { metadata: { name: 'settings' }, data: { mode: 'production' } },
  });
}, TIMEOUT_MS);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await plane?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Runs `npm start -- --kubeconfig <kubeconfig> --once` to its end; stdout and stderr together. With
 * `interruptAt`, sends SIGINT (Ctrl-C) once the output contains it.
 */
async function runDemo(
  kubeconfig: string,
  interruptAt?: string,
): Promise<{ code: number | null; output: string }> {
  const started = spawn(
    process.execPath,
    [join(ROOT, 'demo', 'main.ts'), '--kubeconfig', kubeconfig, '--once'],
    {
      cwd: ROOT,
      env: process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  children.add(started);
  let output = '';
  let interrupted = false;
  started.stdout.on('data', (d: Buffer) => {
    output += d.toString();
    // Once: a second Ctrl-C is the demo's "stop now", which leaves what it created (and says so).
    if (interruptAt && !interrupted && output.includes(interruptAt)) {
      interrupted = true;
      started.kill('SIGINT');
    }
  });
  started.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => started.once('exit', resolve));
  return { code, output };
}

async function nodecareCrds(): Promise<string[]> {
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const crds = await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition();
  return crds.items.map((c) => c.metadata?.name ?? '').filter((n) => n.endsWith(`.${API_GROUP}`));
}

/** Anything of nodecare's on a node: a label, annotation, taint or condition. */
function nodecareMarks(node: V1Node): string[] {
  const mine = (key: string): boolean => key.includes('nodecare') || key.includes('meta-readiness');
  return [
    ...Object.keys(node.metadata?.labels ?? {}).filter(mine),
    ...Object.keys(node.metadata?.annotations ?? {}).filter(mine),
    ...(node.spec?.taints ?? []).map((t) => t.key).filter(mine),
    ...(node.status?.conditions ?? []).map((c) => c.type).filter((t) => t === NODE_CONDITION_TYPE),
  ];
}

describe('demo on an existing cluster (npm start -- --kubeconfig <path> --once)', () => {
  it(
    "plays every phase on its own node, leaves the user's objects alone and removes all it created",
    async () => {
      const configMapBefore = await core.readNamespacedConfigMap({
        name: 'settings',
        namespace: USER_NAMESPACE,
      });

      const { code, output } = await runDemo(plane.kubeconfigPath);

      expect(code, output).toBe(0);
      const phases = Object.keys(EXISTING_CLUSTER_PHASES);
      const at = phases.map((phase) => output.indexOf(`✔ PHASE ${phase}:`));
      expect(
        phases.filter((_, i) => (at[i] ?? -1) < 0),
        output,
      ).toEqual([]);
      expect(at).toEqual([...at].sort((a, b) => a - b));
      expect(output).toContain(`Summary: ${phases.length} of ${phases.length} phases reached`);
      // The view showed the demo's node only, held with the bootstrap taint, then Ready.
      const rows = output.split('\n').filter((line) => /│ \S+ +(Bootstrapping|Ready|Degraded)/.test(line));
      expect(new Set(rows.map((row) => /│ (\S+)/.exec(row)?.[1])).size).toBe(1);
      expect(rows[0]).toContain(`│ ${DEMO_NODE_PREFIX}`);
      expect(output).not.toContain(USER_NODE);
      expect(output).toContain('Removed everything the demo created.');
      expect(output).toContain('Stopped.');

      // The user's Node: not taken over by the demo's KWOK (never Ready: nobody plays its kubelet), nothing of
      // nodecare's on it.
      const userNode = await core.readNode({ name: USER_NODE });
      expect(nodecareMarks(userNode)).toEqual([]);
      expect(userNode.status?.conditions?.find((c) => c.type === 'Ready')?.status).not.toBe('True');
      expect(userNode.metadata?.labels).toEqual({ 'kubernetes.io/hostname': USER_NODE, team: 'user' });
      const configMap = await core.readNamespacedConfigMap({ name: 'settings', namespace: USER_NAMESPACE });
      expect(configMap.metadata?.resourceVersion).toBe(configMapBefore.metadata?.resourceVersion);

      // Nothing of the demo's is left: no nodecare CRDs (so no SystemExtension, no ClusterHealth), namespaces,
      // demo nodes, their KWOK Leases, or the controller's events about them.
      expect(await nodecareCrds()).toEqual([]);
      const namespaces = (await core.listNamespace()).items.map((n) => n.metadata?.name);
      expect(namespaces).not.toContain(COMPONENT_NAMESPACE);
      expect(namespaces).not.toContain(LEASE_NAMESPACE);
      expect(namespaces).toContain(USER_NAMESPACE);
      const nodes = (await core.listNode()).items.map((n) => n.metadata?.name ?? '');
      expect(nodes).toEqual([USER_NODE]);
      const kc = new KubeConfig();
      kc.loadFromFile(plane.kubeconfigPath);
      const nodeLeases = await kc
        .makeApiClient(CoordinationV1Api)
        .listNamespacedLease({ namespace: 'kube-node-lease' });
      expect(
        nodeLeases.items.map((l) => l.metadata?.name).filter((n) => n?.startsWith(DEMO_NODE_PREFIX)),
      ).toEqual([]);
      const events = await core.listNamespacedEvent({ namespace: 'default' });
      expect(
        events.items.filter((e) => e.involvedObject.name?.startsWith(DEMO_NODE_PREFIX)).map((e) => e.reason),
      ).toEqual([]);
    },
    TIMEOUT_MS,
  );

  it(
    'on Ctrl-C in the middle of the story, removes what it created just the same',
    async () => {
      const { code, output } = await runDemo(plane.kubeconfigPath, '✔ PHASE bootstrap-taint:');

      // --once counts an interrupted story as failed.
      expect(code, output).toBe(1);
      expect(output).toContain('SIGINT: stopping the demo.');
      expect(output).toContain('Removed everything the demo created.');
      expect(await nodecareCrds()).toEqual([]);
      const namespaces = (await core.listNamespace()).items.map((n) => n.metadata?.name);
      expect(namespaces.filter((n) => n === COMPONENT_NAMESPACE || n === LEASE_NAMESPACE)).toEqual([]);
      expect((await core.listNode()).items.map((n) => n.metadata?.name)).toEqual([USER_NODE]);
    },
    TIMEOUT_MS,
  );

  it('refuses a cluster it cannot reach: exit 2, one line saying so', async () => {
    const [port] = await freePorts(1);
    const kubeconfig = join(dir, 'closed-port.kubeconfig');
    await writeFile(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: closed, cluster: {server: "https://127.0.0.1:${port}"}}]`,
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: closed, context: {cluster: closed, user: u}}]',
        'current-context: closed',
      ].join('\n'),
    );

    const { code, output } = await runDemo(kubeconfig);

    expect(code, output).toBe(2);
    expect(output.trim()).toBe(
      `demo: cannot reach the cluster at https://127.0.0.1:${port} (context closed): fetch failed: ECONNREFUSED`,
    );
  }, 60_000);

  it('refuses a cluster where nodecare already is (its CRDs), and leaves them', async () => {
    const applied = await plane.kubectl([
      'apply',
      '--server-side',
      '-f',
      join(ROOT, 'manifests', 'base', 'crds'),
    ]);
    expect(applied.code, applied.stderr).toBe(0);
    const before = await nodecareCrds();
    expect(before).toHaveLength(2);

    const { code, output } = await runDemo(plane.kubeconfigPath);

    expect(code, output).toBe(2);
    expect(output).toMatch(
      /^demo: nodecare is already on the cluster at https:\/\/127\.0\.0\.1:\d+ \(context \S+\) \(CustomResourceDefinition clusterhealths\.nodecare\.io, CustomResourceDefinition systemextensions\.nodecare\.io\); /,
    );
    expect(output.trim().split('\n')).toHaveLength(1);
    expect(await nodecareCrds()).toEqual(before);
    expect((await core.listNode()).items.map((n) => n.metadata?.name)).toEqual([USER_NODE]);
  }, 60_000);
});
