// The Cluster Autoscaler (its KWOK cloud provider, default flags for everything about taints) against
// nodecare on the real control plane, KWOK driving the nodes it adds, one nodecare-agent per node probing a
// loopback endpoint that stands in for a device plugin, and the real controller.
//
// Not part of `npm test`: the Cluster Autoscaler is not served by the Go module proxy, so no script here can
// build it (docs/autoscalers.md). `.ci/run` runs it after `npm test` with the binary CI has beside the
// repository (../shared/tools/cluster-autoscaler); run it yourself with a binary you built:
//   NODECARE_CLUSTER_AUTOSCALER=/path/to/cluster-autoscaler npm run test:cluster-autoscaler
// Without that variable every test fails with that explanation (it never skips).
//
// First the binary's version (its --v=1 start line) is checked against the one docs/autoscalers.md states.
// Then the runs (each with its own node group and its own Cluster Autoscaler process); each prints a
// `[ca]` line with the nodes the autoscaler added, and the file ends with a one-line summary of the contrasts:
//   1. the bootstrap taint with its default key (startup-taint prefix), on the node from creation (nodecare's
//      MutatingAdmissionPolicy): the held node counts as upcoming capacity, one node for the pod;
//   2. contrast, a key without the prefix (--bootstrap-taint-key): the autoscaler takes the node for ready
//      and, the pod still pending, adds more nodes;
//   3. the runtime taint (status-taint prefix) on the group's only node: the node still counts as ready, the
//      taint is left out of the group's template, and a pod that does not tolerate it gets a new node;
//      contrast with a key without the prefix: the template keeps the taint and no node is added.

import { existsSync } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  VersionApi,
  type V1Node,
} from '@kubernetes/client-node';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_NAMESPACE,
} from '../../api/index.ts';
import {
  adminKubeConfig,
  createSystemExtension,
  eventually,
  FAST_PROBING,
  uniqueName,
} from '../integration/helpers.ts';
import { startAgent, startProgram, type ProgramProcess } from '../integration/processes.ts';
import { applyBaseManifests, applyScopedBootstrapTaintPolicy, kubectl } from '../integration/setup.ts';
import { checkVersion, documentedVersion } from './cluster-autoscaler-version.ts';
import { ensureTool, extensionEndpoint, KWOK_NODE_ANNOTATION, startKwok, type ToolProcess } from './tools.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const coordination = admin.makeApiClient(CoordinationV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');
const CA = process.env.NODECARE_CLUSTER_AUTOSCALER ?? '';
const DOCS = join(import.meta.dirname, '..', '..', 'docs', 'autoscalers.md');
const GROUP_LABEL = 'nodecare.test/nodegroup';
/** A taint key the Cluster Autoscaler knows nothing about, for the contrast runs. */
const PLAIN_BOOTSTRAP = 'nodecare.test/meta-readiness-bootstrap';
const PLAIN_RUNTIME = 'nodecare.test/meta-readiness-runtime';
/** Window to observe the autoscaler in: longer than its 10 s scan interval, several rounds. */
const STARTING_MS = 40_000;
/** The Cluster Autoscaler's stabilization delay for template candidates (1 min), plus a margin. */
const TEMPLATE_STABILIZATION_MS = 70_000;
const AGENT_ARGS = ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'];

let logDir = '';
let kwok: ToolProcess | undefined;
const results: Record<string, unknown> = {};

beforeAll(async () => {
  if (!CA || !existsSync(CA)) {
    throw new Error(
      `NODECARE_CLUSTER_AUTOSCALER must name a cluster-autoscaler binary built with its KWOK provider (got '${CA}'); see docs/autoscalers.md`,
    );
  }
  const kwokDir = await ensureTool('kwok');
  await applyBaseManifests();
  logDir = await mkdtemp(join(tmpdir(), 'nodecare-ca-'));
  kwok = await startKwok(kwokDir, kubeconfig, logDir);
}, 45 * 60_000);

afterAll(async () => {
  await kwok?.stop();
  if (Object.keys(results).length > 0) {
    process.stderr.write(`[ca] results: ${JSON.stringify(results, null, 2)}\n`);
    console.log(`[ca] summary: ${summary()}`);
  }
  if (logDir) await rm(logDir, { recursive: true, force: true });
});

const nodes = (n: number) => `${n} node${n === 1 ? '' : 's'}`;
const added = (key: string) => {
  const run = results[key] as { nodesAdded?: number } | undefined;
  return run?.nodesAdded === undefined ? 'not run' : nodes(run.nodesAdded);
};
/** The contrasts of the runs that ran, one line. */
const summary = () =>
  `nodes added for one pending pod: bootstrap taint ${added('startupTaintPrefix')} with the startup-taint prefix vs ${added('plainBootstrapKey')} without it; ` +
  `runtime taint ${added('statusTaintPrefix')} with the status-taint prefix vs ${added('plainRuntimeKey')} without it`;
/** The autoscaler's node counts in its status line (the first, cluster-wide ones). */
const counts = (status: string) =>
  /notStarted: \d+ ready: \d+/.exec(status)?.[0] ?? `no counts in '${status}'`;

const taintKeys = (node: V1Node): string[] => (node.spec?.taints ?? []).map((t) => t.key);
const groupNodes = async (group: string) =>
  (await core.listNode({ labelSelector: `${GROUP_LABEL}=${group}` })).items;

/** A node group of the KWOK provider: one template node (4 CPU), up to 5 nodes, in its own namespace. */
async function nodeGroup(group: string): Promise<string> {
  const namespace = group;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const template = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: group,
      labels: { [GROUP_LABEL]: group, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
      annotations: { 'cluster-autoscaler.kwok.nodegroup/max-count': '5' },
    },
    status: {
      allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
      capacity: { cpu: '4', memory: '16Gi', pods: '110' },
    },
  };
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'kwok-provider-templates' },
      data: { templates: dump({ apiVersion: 'v1', kind: 'List', items: [template] }) },
    },
  });
  await core.createNamespacedConfigMap({
    namespace,
    body: {
      metadata: { name: 'kwok-provider-config' },
      data: {
        config: dump({
          apiVersion: 'v1alpha1',
          readNodesFrom: 'configmap',
          nodegroups: { fromNodeLabelKey: GROUP_LABEL },
          nodes: { skipTaint: true },
          configmap: { name: 'kwok-provider-templates' },
        }),
      },
    },
  });
  return namespace;
}

/**
 * The Cluster Autoscaler with its defaults, except what running outside a cluster needs: the KWOK provider
 * in local mode, a kubeconfig, no leader election (one process per run), metrics on a loopback port, and
 * its status ConfigMap in the run's namespace.
 */
async function startClusterAutoscaler(namespace: string, verbosity = 4): Promise<ToolProcess> {
  const logPath = join(logDir, `${namespace}-ca.log`);
  const out = await open(logPath, 'a');
  const child = spawn(
    CA,
    [
      '--cloud-provider=kwok',
      `--kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      `--namespace=${namespace}`,
      '--address=127.0.0.1:0',
      `--v=${verbosity}`,
    ],
    {
      env: { ...process.env, KUBECONFIG: kubeconfig, POD_NAMESPACE: namespace, KWOK_PROVIDER_MODE: 'local' },
      stdio: ['ignore', out.fd, out.fd],
    },
  );
  await out.close();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    name: 'cluster-autoscaler',
    child,
    logPath,
    logTail: async (lines = 30) =>
      (await readFile(logPath, 'utf8')).trimEnd().split('\n').slice(-lines).join('\n'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function leaseState(nodeName: string, extension: string): Promise<string> {
  const leases = await coordination.listNamespacedLease({
    namespace: LEASE_NAMESPACE,
    labelSelector: `nodecare.io/extension=${extension}`,
  });
  const lease = leases.items.find((l) => l.metadata?.annotations?.['nodecare.io/node'] === nodeName);
  return lease?.metadata?.annotations?.['nodecare.io/state'] ?? 'none';
}

/** The autoscaler's own view of the group (its status ConfigMap), compacted to one line. */
async function caStatus(namespace: string): Promise<string> {
  const cm = await core
    .readNamespacedConfigMap({ name: 'cluster-autoscaler-status', namespace })
    .catch(() => undefined);
  return (cm?.data?.status ?? '').replace(/\s+/g, ' ').slice(0, 1500);
}

interface Run {
  nodesAdded: number;
  podRunningMs: number | undefined;
  podRanWhileStarting: boolean;
  leaseStateAtPodRunning: string;
  statusWhileStarting: string;
}

/** A pending pod, the autoscaler adds a node, its extension starts for STARTING_MS, then turns healthy. */
async function scaleUpRun(options: { bootstrapKey: string }): Promise<Run> {
  const group = uniqueName('nc-ca');
  const extension = uniqueName('gpu-plugin');
  const endpoint = await extensionEndpoint();
  const agents = new Map<string, Promise<ProgramProcess>>();
  const nodesSeen = new Set<string>();
  let stopped = false;
  let starting = true;
  let podCreatedAt = 0;
  let podRunningAt: number | undefined;
  let podRanWhileStarting = false;
  let leaseStateAtPodRunning = '';
  const namespace = await nodeGroup(group);
  let ca: ToolProcess | undefined;
  let controller: ProgramProcess | undefined;

  const monitor = (async () => {
    while (!stopped) {
      try {
        for (const node of await groupNodes(group)) {
          const nodeName = node.metadata!.name!;
          nodesSeen.add(nodeName);
          if (!agents.has(nodeName)) {
            const agent = startAgent({ kubeconfig, nodeName, extraArgs: AGENT_ARGS });
            agent.catch(() => undefined);
            agents.set(nodeName, agent);
          }
        }
        if (podCreatedAt > 0 && podRunningAt === undefined) {
          const pod = await core.readNamespacedPod({ name: group, namespace });
          if (pod.status?.phase === 'Running') {
            const seenAt = Date.now();
            const whileStarting = starting;
            const state = await leaseState(pod.spec!.nodeName!, extension);
            // All three at once, podRunningAt last: the run returns as soon as podRunningAt is set, and a
            // lease read that failed leaves them unset for the next round to look again.
            leaseStateAtPodRunning = state;
            podRanWhileStarting = whileStarting;
            podRunningAt = seenAt;
          }
        }
      } catch {
        // the next round looks again
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();

  try {
    await applyScopedBootstrapTaintPolicy({
      name: group,
      label: { key: GROUP_LABEL, value: group },
      taintKey: options.bootstrapKey,
      dir: logDir,
      core,
    });
    await createSystemExtension(custom, extension, {
      nodeSelector: { matchLabels: { [GROUP_LABEL]: group } },
      probe: { http: { url: `http://127.0.0.1:${endpoint.port}/healthz` } },
      ...FAST_PROBING,
    });
    controller = startProgram('controller', [
      `--kubeconfig=${kubeconfig}`,
      '--health-port=0',
      '--health-address=127.0.0.1',
      `--identity=${uniqueName('controller')}`,
      `--bootstrap-taint-key=${options.bootstrapKey}`,
      '--leader-election-lease-duration-seconds=6',
      '--leader-election-renew-deadline-seconds=4',
      '--leader-election-retry-period-seconds=1',
    ]);
    await controller.waitForLog('Started nodecare-controller');
    ca = await startClusterAutoscaler(namespace);
    podCreatedAt = Date.now();
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: group },
        spec: {
          nodeSelector: { [GROUP_LABEL]: group },
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'workload',
              image: 'registry.invalid/gpu-workload',
              resources: { requests: { cpu: '3' } },
            },
          ],
        },
      },
    });
    await eventually(async () => ((await groupNodes(group)).length > 0 ? true : undefined), {
      timeoutMs: 90_000,
      intervalMs: 500,
      what: `the Cluster Autoscaler to add a node to ${group}`,
    }).catch(async (err: Error) => {
      throw new Error(`${err.message}\n--- cluster-autoscaler ---\n${await ca?.logTail(40)}`);
    });
    const holdUntil = Date.now() + STARTING_MS;
    while (Date.now() < holdUntil && podRunningAt === undefined) await new Promise((r) => setTimeout(r, 500));
    const statusWhileStarting = await caStatus(namespace);
    starting = false;
    endpoint.healthy();
    await eventually(() => (podRunningAt !== undefined ? true : undefined), {
      timeoutMs: 90_000,
      intervalMs: 500,
      what: `pod ${group} Running`,
    });
    return {
      nodesAdded: nodesSeen.size,
      podRunningMs: podRunningAt! - podCreatedAt,
      podRanWhileStarting,
      leaseStateAtPodRunning,
      statusWhileStarting,
    };
  } finally {
    stopped = true;
    await monitor;
    await ca?.stop();
    await controller?.kill();
    await cleanUp(group, namespace, extension);
    for (const agent of agents.values()) await (await agent.catch(() => undefined))?.kill();
    endpoint.close();
  }
}

async function cleanUp(group: string, namespace: string, extension: string): Promise<void> {
  const ignore = () => undefined;
  await kubectl(
    'delete',
    '--ignore-not-found',
    `mutatingadmissionpolicybinding/${group}`,
    `mutatingadmissionpolicy/${group}`,
  ).catch(ignore);
  await core.deleteNamespace({ name: namespace }).catch(ignore);
  for (const node of await groupNodes(group).catch(() => [])) {
    await core.deleteNode({ name: node.metadata!.name! }).catch(ignore);
  }
  await custom
    .deleteClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'systemextensions',
      name: extension,
    })
    .catch(ignore);
}

interface StatusRun {
  /** Nodes the autoscaler added next to the broken one. */
  nodesAdded: number;
  podRan: boolean;
  podNode: string;
  /** The autoscaler's status with the broken node in the group, before any scale-up. */
  statusBefore: string;
}

/**
 * The group's only node was ready and broke (runtime taint with `runtimeKey`); a pod that does not tolerate
 * the taint arrives. The broken node's extension is registered by its own annotation, so nodes the autoscaler
 * adds from the template need none and are ready at once.
 */
async function runtimeTaintRun(options: { runtimeKey: string }): Promise<StatusRun> {
  const group = uniqueName('nc-ca');
  const extension = uniqueName('gpu-plugin');
  const endpoint = await extensionEndpoint();
  endpoint.healthy();
  const namespace = await nodeGroup(group);
  const broken = `${group}-broken`;
  const agents: ProgramProcess[] = [];
  let ca: ToolProcess | undefined;
  let controller: ProgramProcess | undefined;
  try {
    controller = startProgram('controller', [
      `--kubeconfig=${kubeconfig}`,
      '--health-port=0',
      '--health-address=127.0.0.1',
      `--identity=${uniqueName('controller')}`,
      `--runtime-taint-key=${options.runtimeKey}`,
      '--leader-election-lease-duration-seconds=6',
      '--leader-election-renew-deadline-seconds=4',
      '--leader-election-retry-period-seconds=1',
    ]);
    await controller.waitForLog('Started nodecare-controller');
    const [kwokKey, kwokValue] = KWOK_NODE_ANNOTATION.split('=') as [string, string];
    await core.createNode({
      body: {
        metadata: {
          name: broken,
          labels: { [GROUP_LABEL]: group, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
          annotations: {
            [kwokKey]: kwokValue,
            'cluster-autoscaler.kwok.nodegroup/name': group,
            [`${EXTENSION_ANNOTATION_PREFIX}${extension}`]: JSON.stringify({
              probe: { http: { url: `http://127.0.0.1:${endpoint.port}/healthz` } },
              ...FAST_PROBING,
            }),
          },
        },
        spec: { providerID: `kwok:${broken}` },
        status: {
          allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
          capacity: { cpu: '4', memory: '16Gi', pods: '110' },
        },
      },
    });
    agents.push(await startAgent({ kubeconfig, nodeName: broken, extraArgs: AGENT_ARGS }));
    const taintsOf = async () => taintKeys(await core.readNode({ name: broken }));
    // Ready first (bootstrap done), then the extension breaks: the runtime taint goes on.
    await eventually(
      async () => {
        const node = await core.readNode({ name: broken });
        const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        return ready &&
          node.metadata?.annotations?.['nodecare.io/bootstrapped-boot-id'] !== undefined &&
          !taintKeys(node).includes(BOOTSTRAP)
          ? true
          : undefined;
      },
      { timeoutMs: 60_000, what: `${broken} bootstrapped` },
    );
    endpoint.restarting();
    await eventually(async () => ((await taintsOf()).includes(options.runtimeKey) ? true : undefined), {
      timeoutMs: 30_000,
      what: `the runtime taint ${options.runtimeKey} on ${broken}`,
    });

    // The autoscaler builds a group's template from a live node only once the node's Ready condition is a
    // minute old (before that it uses the provider's template, which has no taint either way).
    const created = Date.parse(String((await core.readNode({ name: broken })).metadata?.creationTimestamp));
    const stableAt = created + TEMPLATE_STABILIZATION_MS;
    if (Date.now() < stableAt) await new Promise((r) => setTimeout(r, stableAt - Date.now()));
    ca = await startClusterAutoscaler(namespace);
    await eventually(async () => ((await caStatus(namespace)).includes('nodeGroups') ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 1_000,
      what: 'the Cluster Autoscaler status',
    });
    const statusBefore = await caStatus(namespace);
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: group },
        spec: {
          nodeSelector: { [GROUP_LABEL]: group },
          terminationGracePeriodSeconds: 0,
          containers: [
            { name: 'workload', image: 'registry.invalid/workload', resources: { requests: { cpu: '3' } } },
          ],
        },
      },
    });
    let podNode = '';
    const holdUntil = Date.now() + STARTING_MS;
    while (Date.now() < holdUntil && !podNode) {
      const pod = await core.readNamespacedPod({ name: group, namespace });
      if (pod.status?.phase === 'Running') podNode = pod.spec?.nodeName ?? '';
      else await new Promise((r) => setTimeout(r, 500));
    }
    return {
      nodesAdded: (await groupNodes(group)).filter((n) => n.metadata?.name !== broken).length,
      podRan: podNode !== '',
      podNode,
      statusBefore,
    };
  } finally {
    await ca?.stop();
    await controller?.kill();
    for (const agent of agents) await agent.kill();
    await cleanUp(group, namespace, extension);
    endpoint.close();
  }
}

describe('Cluster Autoscaler (KWOK provider, default flags) with nodecare', () => {
  it('the binary is the Cluster Autoscaler release docs/autoscalers.md states (its start line at --v=1)', async () => {
    const documented = documentedVersion(await readFile(DOCS, 'utf8'));
    const namespace = await nodeGroup(uniqueName('nc-ca'));
    const ca = await startClusterAutoscaler(namespace, 1);
    try {
      // klog writes the version line first; a process that writes nothing (or dies silently) fails here.
      const log = await eventually(
        async () => {
          const text = await readFile(ca.logPath, 'utf8');
          return text.includes('\n') ? text : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200, what: `the first log line of ${CA}` },
      );
      const version = checkVersion(log, await readFile(DOCS, 'utf8'));
      const server = await admin.makeApiClient(VersionApi).getCode();
      console.log(
        `[ca] Cluster Autoscaler ${version} (docs/autoscalers.md states ${documented}) against kube-apiserver ${server.gitVersion}`,
      );
      expect(version).toBe(documented);
    } finally {
      await ca.stop();
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    }
  }, 60_000);

  it(
    'a node held by the bootstrap taint (startup-taint prefix) counts as upcoming capacity: one node for the pod, which lands once the extension is healthy',
    async () => {
      const run = await scaleUpRun({ bootstrapKey: BOOTSTRAP });
      results.startupTaintPrefix = run;
      console.log(
        `[ca] bootstrap taint, default key (startup-taint prefix): ${nodes(run.nodesAdded)} added for one pending pod; autoscaler's status while the extension was starting: ${counts(run.statusWhileStarting)}; pod Running after ${((run.podRunningMs ?? 0) / 1000).toFixed(1)} s, lease ${run.leaseStateAtPodRunning}`,
      );
      expect(run.nodesAdded).toBe(1);
      // The autoscaler's own status: the held node is "not started" (upcoming), not ready.
      expect(run.statusWhileStarting).toMatch(/notStarted: 1 ready: 0 /);
      expect(run.podRanWhileStarting).toBe(false);
      expect(run.leaseStateAtPodRunning).toBe('Healthy');
    },
    5 * 60_000,
  );

  it(
    'contrast: with a bootstrap key the autoscaler does not know, it takes the held node for ready and adds more nodes for the same pod',
    async () => {
      const run = await scaleUpRun({ bootstrapKey: PLAIN_BOOTSTRAP });
      results.plainBootstrapKey = run;
      console.log(
        `[ca] contrast, bootstrap key without the prefix: ${nodes(run.nodesAdded)} added for one pending pod; autoscaler's status while the extension was starting: ${counts(run.statusWhileStarting)}; pod Running after ${((run.podRunningMs ?? 0) / 1000).toFixed(1)} s`,
      );
      expect(run.statusWhileStarting).toMatch(/notStarted: 0 ready: [2-9] /);
      expect(run.podRanWhileStarting).toBe(false);
      expect(run.nodesAdded).toBeGreaterThanOrEqual(2);
    },
    5 * 60_000,
  );

  it(
    'a broken node (runtime taint, status-taint prefix) still counts as ready, the taint stays out of the template, and a pod that does not tolerate it gets a new node',
    async () => {
      const run = await runtimeTaintRun({ runtimeKey: RUNTIME });
      results.statusTaintPrefix = run;
      console.log(
        `[ca] runtime taint, default key (status-taint prefix): broken node counted as ${counts(run.statusBefore)}; ${nodes(run.nodesAdded)} added for one pending pod; pod ${run.podRan ? `Running on ${run.podNode}` : 'not Running'}`,
      );
      // The broken node counts as ready (not as unready or not started) in the autoscaler's status.
      expect(run.statusBefore).toMatch(
        /notStarted: 0 ready: 1 suspended: 0 total: 1 unready: resourceUnready: 0 total: 0/,
      );
      expect(run.nodesAdded).toBe(1);
      expect(run.podRan).toBe(true);
      expect(run.podNode).not.toMatch(/-broken$/);
    },
    5 * 60_000,
  );

  it(
    'contrast: with a runtime key the autoscaler does not know, the template built from the broken node keeps the taint and no node is added for the pod',
    async () => {
      const run = await runtimeTaintRun({ runtimeKey: PLAIN_RUNTIME });
      results.plainRuntimeKey = run;
      console.log(
        `[ca] contrast, runtime key without the prefix: ${nodes(run.nodesAdded)} added for one pending pod; pod ${run.podRan ? `Running on ${run.podNode}` : `still Pending after ${STARTING_MS / 1000} s`}`,
      );
      expect(run.nodesAdded).toBe(0);
      expect(run.podRan).toBe(false);
    },
    5 * 60_000,
  );
});
