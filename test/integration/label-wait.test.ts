// Late labels (issue 49 item 4, docs/adr/0019) against the real control plane: a SystemExtension with
// spec.labelWait selects GPU nodes by a label a labeler sets after registration (here the test, standing in for
// GPU Feature Discovery or node-feature-discovery). The real controller and one real agent per node decide;
// the "device plugin" is a loopback HTTP endpoint the agent probes.

import type { Server } from 'node:http';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  LEASE_NAMESPACE,
  extensionLeaseName,
} from '../../api/index.ts';
import {
  adminKubeConfig,
  createSystemExtension,
  eventually,
  FAST_PROBING,
  httpEndpoint,
  uniqueName,
} from './helpers.ts';
import { startAgent, startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const leasesApi = admin.makeApiClient(CoordinationV1Api);
const eventsApi = admin.makeApiClient(EventsV1Api);
const kubeconfig = inject('kubeconfig');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The label GPU Feature Discovery would set (a test key, so no other test's node is selected). */
const GPU_LABEL = 'nodecare.test/gpu.present';
/** The label a GPU node pool has at registration (Karpenter's karpenter.sh/nodepool, a node group label). */
const POOL_LABEL = 'nodecare.test/pool';

const processes: ProgramProcess[] = [];
const servers: Server[] = [];
const createdNodes: string[] = [];
const systemExtensions: string[] = [];

beforeAll(async () => {
  await applyBaseManifests();
});

afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill()));
  await Promise.all(createdNodes.splice(0).map((name) => core.deleteNode({ name }).catch(() => undefined)));
  for (const name of systemExtensions.splice(0))
    await custom
      .deleteClusterCustomObject({
        group: 'nodecare.io',
        version: 'v1alpha1',
        plural: 'systemextensions',
        name,
      })
      .catch(() => undefined);
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
});

/** A GPU device plugin's SystemExtension that waits up to `waitSeconds` on new nodes of pool `gpuPool`. */
async function gpuExtension(port: number, gpuPool: string, waitSeconds: number): Promise<string> {
  const name = uniqueName('gpu-plugin');
  systemExtensions.push(name);
  await createSystemExtension(custom, name, {
    nodeSelector: { matchLabels: { [GPU_LABEL]: 'true' } },
    probe: { http: { url: `http://127.0.0.1:${port}/` } },
    ...FAST_PROBING,
    labelWait: { waitSeconds, nodeSelector: { matchLabels: { [POOL_LABEL]: gpuPool } } },
  });
  return name;
}

/** A plain Node as a kubelet registers it: Ready, with its pool label, no GPU label yet. Returns its creation. */
async function createNode(name: string, pool: string): Promise<number> {
  createdNodes.push(name);
  const node = await core.createNode({
    body: {
      metadata: { name, labels: { 'kubernetes.io/hostname': name, [POOL_LABEL]: pool } },
      status: {
        allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
        nodeInfo: { bootID: 'boot-1' } as never,
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
      },
    },
  });
  return new Date(node.metadata?.creationTimestamp ?? Date.now()).getTime();
}

async function agentFor(nodeName: string): Promise<ProgramProcess> {
  const agent = await startAgent({
    kubeconfig,
    nodeName,
    extraArgs: ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'],
  });
  processes.push(agent);
  return agent;
}

async function controller(): Promise<ProgramProcess> {
  const proc = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    '--log-level=debug',
    `--identity=${uniqueName('controller')}`,
    '--missing-lease-grace-seconds=20',
    '--leader-election-lease-duration-seconds=6',
    '--leader-election-renew-deadline-seconds=4',
    '--leader-election-retry-period-seconds=1',
  ]);
  processes.push(proc);
  await proc.waitForLog('Started nodecare-controller');
  return proc;
}

const held = (n: V1Node): boolean => (n.spec?.taints ?? []).some((t) => t.key === BOOTSTRAP);
const extensionsReady = (n: V1Node) => n.status?.conditions?.find((c) => c.type === 'ExtensionsReady');

async function waitForNode(name: string, what: string, check: (n: V1Node) => boolean, timeoutMs = 30_000) {
  return eventually(
    async () => {
      const node = await core.readNode({ name });
      return check(node) ? node : undefined;
    },
    { what: `${name}: ${what}`, timeoutMs, intervalMs: 200 },
  );
}

/** Polls the node until `until` holds, failing if it is ever seen without the bootstrap taint before then. */
async function heldUntil(
  name: string,
  until: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const node = await core.readNode({ name });
    if (await until()) return;
    expect(held(node), `${name} released early: ${JSON.stringify(extensionsReady(node))}`).toBe(true);
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function leaseState(nodeName: string, extension: string): Promise<string | undefined> {
  const lease = await leasesApi
    .readNamespacedLease({ name: extensionLeaseName(nodeName, extension), namespace: LEASE_NAMESPACE })
    .catch(() => undefined);
  return lease?.metadata?.annotations?.['nodecare.io/state'];
}

async function eventsOf(nodeName: string) {
  const list = await eventsApi.listNamespacedEvent({
    namespace: 'default',
    fieldSelector: `regarding.name=${nodeName}`,
  });
  return list.items;
}

function log(line: string): void {
  process.stdout.write(`[label-wait] ${line}\n`);
}

describe('spec.labelWait: nodes whose labels come after registration', () => {
  it('the API server refuses a bad labelWait and says why', async () => {
    const refused = async (spec: Record<string, unknown>): Promise<string> => {
      const name = uniqueName('bad-wait');
      systemExtensions.push(name);
      try {
        await createSystemExtension(custom, name, { probe: { tcp: { port: 1 } }, ...spec });
      } catch (err) {
        return String((err as { body?: unknown }).body ?? err);
      }
      throw new Error(`created ${JSON.stringify(spec)}`);
    };
    const gpu = { nodeSelector: { matchLabels: { [GPU_LABEL]: 'true' } } };
    expect(await refused({ ...gpu, labelWait: { waitSeconds: 0 } })).toMatch(
      /spec\.labelWait\.waitSeconds: Invalid value: 0: spec\.labelWait\.waitSeconds in body should be greater than or equal to 1/,
    );
    expect(await refused({ ...gpu, labelWait: {} })).toMatch(/spec\.labelWait\.waitSeconds: Required value/);
    expect(await refused({ labelWait: { waitSeconds: 60 } })).toMatch(
      /spec\.labelWait: Invalid value: labelWait needs a nodeSelector that names a label a node could gain/,
    );
  });

  it('a GPU node labeled 20 s after registration stays held until its device plugin is Healthy', async () => {
    const run = uniqueName('lw');
    const plugin = await httpEndpoint(servers);
    await plugin.stop(); // the device plugin is not up yet
    const extension = await gpuExtension(plugin.port, `gpu-${run}`, 120);
    const nodeName = uniqueName('lw-gpu');
    const createdMs = await createNode(nodeName, `gpu-${run}`);
    await controller();
    await agentFor(nodeName);

    const waiting = await waitForNode(
      nodeName,
      'held, the condition naming the wait',
      (n) => held(n) && (extensionsReady(n)?.message ?? '').includes('spec.labelWait'),
    );
    log(`waiting: ExtensionsReady ${JSON.stringify(extensionsReady(waiting))}`);
    expect(extensionsReady(waiting)).toMatchObject({ status: 'False', reason: 'ExtensionsProgressing' });
    expect(extensionsReady(waiting)?.message).toContain(`${extension} waiting until `);
    expect(extensionsReady(waiting)?.message).toContain(`for node label ${GPU_LABEL}`);

    // Held until the labeler labels the node, 20 s after registration (its agent has long reported).
    await heldUntil(nodeName, () => Date.now() >= createdMs + 20_000, 40_000);
    await core.patchNode(
      { name: nodeName, body: { metadata: { labels: { [GPU_LABEL]: 'true' } } } },
      mergePatch,
    );
    log(`labeled ${GPU_LABEL}=true at +${((Date.now() - createdMs) / 1000).toFixed(1)} s`);

    // Now the extension is required: held while its Lease says it is not Healthy.
    await heldUntil(
      nodeName,
      async () => {
        const state = await leaseState(nodeName, extension);
        return state !== undefined && state !== 'Healthy';
      },
      30_000,
    );
    const failing = await leaseState(nodeName, extension);
    log(`device plugin down: lease ${failing}, node held`);
    const sawFailingMs = Date.now();
    await heldUntil(nodeName, () => Date.now() >= sawFailingMs + 5_000, 10_000);

    await plugin.start();
    const pluginUpMs = Date.now();
    // Two writes (docs/adr/0008): the taint patch, then the condition on the node it returned.
    const released = await waitForNode(
      nodeName,
      'released, the condition written after it',
      (n) => !held(n) && extensionsReady(n)?.status === 'True',
      30_000,
    );
    log(`released ${((Date.now() - pluginUpMs) / 1000).toFixed(1)} s after the plugin came up`);
    expect(await leaseState(nodeName, extension)).toBe('Healthy');
    expect(extensionsReady(released)).toMatchObject({ status: 'True', reason: 'AllExtensionsHealthy' });
    expect((await eventsOf(nodeName)).map((e) => e.reason)).not.toContain('LabelWaitEnded');
  });

  it('a node never labeled is released at the bound (a controller restart meanwhile changes nothing); a node of another pool does not wait', async () => {
    const run = uniqueName('lw');
    const plugin = await httpEndpoint(servers);
    const waitSeconds = 30;
    await gpuExtension(plugin.port, `gpu-${run}`, waitSeconds);
    const gpuNode = uniqueName('lw-never');
    const cpuNode = uniqueName('lw-cpu');
    const createdMs = await createNode(gpuNode, `gpu-${run}`);
    await createNode(cpuNode, `cpu-${run}`);
    const first = await controller();
    await agentFor(gpuNode);
    await agentFor(cpuNode);

    // The CPU pool is not in labelWait.nodeSelector: released at its agent's first report.
    await waitForNode(
      cpuNode,
      'released without waiting',
      (n) => extensionsReady(n)?.status === 'True' && !held(n),
    );
    log(`CPU-pool node released at +${((Date.now() - createdMs) / 1000).toFixed(1)} s`);
    await waitForNode(gpuNode, 'held for the label', held);

    // A new controller (restart, leader change) keeps the same bound: measured from the node's creation.
    await heldUntil(gpuNode, () => Date.now() >= createdMs + 10_000, 20_000);
    await first.stop();
    await controller();
    await heldUntil(gpuNode, () => Date.now() >= createdMs + (waitSeconds - 2) * 1000, 40_000);

    await waitForNode(gpuNode, 'released at the bound', (n) => !held(n), 20_000);
    const releasedAfterS = (Date.now() - createdMs) / 1000;
    const released = await waitForNode(
      gpuNode,
      'the condition',
      (n) => extensionsReady(n)?.status === 'True',
    );
    log(`never-labeled node released at +${releasedAfterS.toFixed(1)} s (waitSeconds ${waitSeconds})`);
    expect(releasedAfterS).toBeGreaterThanOrEqual(waitSeconds - 2);
    expect(extensionsReady(released)).toMatchObject({ status: 'True', reason: 'AllExtensionsHealthy' });
    const ended = await eventually(
      async () => (await eventsOf(gpuNode)).find((e) => e.reason === 'LabelWaitEnded'),
      { what: 'the LabelWaitEnded event', timeoutMs: 10_000 },
    );
    log(`event ${ended.type} ${ended.reason}: ${ended.note}`);
    expect(ended.note).toContain(
      `node label ${GPU_LABEL} not set within ${waitSeconds}s of the node's creation`,
    );
  });
});
