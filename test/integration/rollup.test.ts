// The ClusterHealth roll-up against the real control plane: real agents (local processes) probing real loopback
// HTTP servers, the real controller, and the roll-up read back from the API server — conditions, timestamps,
// resourceVersion, SystemExtension counts and the printer columns of the API's Table output.
//
// ClusterHealth is a cluster-wide singleton: this file starts from a cluster with no nodes, SystemExtensions or
// ClusterHealth left by earlier files (integration files run one after the other).

import type { Server } from 'node:http';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { EXTENSION_ANNOTATION_PREFIX, NODE_STATUS_LABEL } from '../../api/index.ts';
import type { RollupCondition } from '../../controller/rollup/condition.ts';
import type { ClusterHealthObject } from '../../controller/rollup/store.ts';
import {
  adminKubeConfig,
  createSystemExtension,
  eventually,
  FAST_PROBING,
  httpEndpoint,
  uniqueName,
  type HttpEndpoint,
} from './helpers.ts';
import { startAgent, startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests, kubectl } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const GARDENER_CRD = new URL('../fixtures/gardener-cluster-crd.yaml', import.meta.url).pathname;

/** Short thresholds so Progressing → False is seen in seconds. */
const THRESHOLD_SECONDS = 6;
const CONTROLLER_ARGS = [
  '--missing-lease-grace-seconds=20',
  '--leader-election-lease-duration-seconds=6',
  '--leader-election-renew-deadline-seconds=4',
  '--leader-election-retry-period-seconds=1',
  `--rollup-threshold=EveryNodeReady=${THRESHOLD_SECONDS}`,
  `--rollup-threshold=ObservabilityComponentsHealthy=${THRESHOLD_SECONDS}`,
];
const AGENT_ARGS = ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'];

const processes: ProgramProcess[] = [];
const servers: Server[] = [];
const createdNodes: string[] = [];
const createdSx: string[] = [];

async function deleteAll(): Promise<void> {
  const nodes = await core.listNode();
  await Promise.all(
    nodes.items.map((n) => core.deleteNode({ name: n.metadata!.name! }).catch(() => undefined)),
  );
  const sx = (await custom.listClusterCustomObject({
    group: 'nodecare.io',
    version: 'v1alpha1',
    plural: 'systemextensions',
  })) as { items: Array<{ metadata: { name: string } }> };
  await Promise.all(sx.items.map((o) => deleteSx(o.metadata.name)));
  await deleteClusterHealth();
}

function deleteClusterHealth(): Promise<unknown> {
  return custom
    .deleteClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'clusterhealths',
      name: 'cluster',
    })
    .catch(() => undefined);
}

function deleteSx(name: string): Promise<unknown> {
  return custom
    .deleteClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'systemextensions',
      name,
    })
    .catch(() => undefined);
}

beforeAll(async () => {
  await applyBaseManifests();
  await kubectl('apply', '--server-side', '-f', GARDENER_CRD);
  await kubectl(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/clusters.extensions.gardener.cloud',
  );
  // Right after a CRD changes, its storage may answer 429 "storage is (re)initializing" for a moment.
  await eventually(async () => (await deleteAll(), true), { what: 'a clean cluster', timeoutMs: 30_000 });
});

afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill()));
  await Promise.all(createdNodes.splice(0).map((name) => core.deleteNode({ name }).catch(() => undefined)));
  await Promise.all(createdSx.splice(0).map(deleteSx));
  await deleteClusterHealth();
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
});

const endpoint = (): Promise<HttpEndpoint> => httpEndpoint(servers);

function httpProbe(port: number): object {
  return { probe: { http: { url: `http://127.0.0.1:${port}/` } }, ...FAST_PROBING };
}

async function createNode(name: string, annotations: Record<string, string>, labels: Record<string, string>) {
  createdNodes.push(name);
  await core.createNode({
    body: {
      metadata: {
        name,
        labels: { 'kubernetes.io/hostname': name, ...labels },
        annotations: Object.fromEntries(
          Object.entries(annotations).map(([ext, value]) => [`${EXTENSION_ANNOTATION_PREFIX}${ext}`, value]),
        ),
      },
      status: {
        nodeInfo: { bootID: 'boot-1' } as never,
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
      },
    },
  });
  const agent = await startAgent({ kubeconfig, nodeName: name, extraArgs: AGENT_ARGS });
  processes.push(agent);
}

async function systemExtension(name: string, spec: Record<string, unknown>): Promise<void> {
  createdSx.push(name);
  await createSystemExtension(custom, name, spec);
}

async function controller(extra: string[] = []): Promise<ProgramProcess> {
  const proc = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    '--log-level=debug',
    `--identity=${uniqueName('controller')}`,
    ...CONTROLLER_ARGS,
    ...extra,
  ]);
  processes.push(proc);
  await proc.waitForLog('Started nodecare-controller');
  return proc;
}

async function readClusterHealth(): Promise<ClusterHealthObject | undefined> {
  try {
    return (await custom.getClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'clusterhealths',
      name: 'cluster',
    })) as ClusterHealthObject;
  } catch {
    return undefined;
  }
}

function conditionOf(object: ClusterHealthObject | undefined, type: string): RollupCondition | undefined {
  return object?.status?.conditions?.find((c) => c.type === type);
}

/** Polls ClusterHealth until `check` holds; every condition status seen on the way is kept in `seen`. */
async function waitForRollup(
  what: string,
  check: (object: ClusterHealthObject) => boolean,
  seen?: Map<string, string[]>,
  timeoutMs = 45_000,
): Promise<ClusterHealthObject> {
  return eventually(
    async () => {
      const object = await readClusterHealth();
      if (!object) return undefined;
      for (const c of object.status?.conditions ?? []) {
        const statuses = seen?.get(c.type);
        if (statuses && statuses.at(-1) !== c.status) statuses.push(c.status);
      }
      return check(object) ? object : undefined;
    },
    { what: `ClusterHealth: ${what}`, timeoutMs, intervalMs: 100 },
  );
}

const status = (object: ClusterHealthObject, type: string): string | undefined =>
  conditionOf(object, type)?.status;

async function readSx(name: string): Promise<{ status?: Record<string, number> }> {
  return (await custom.getClusterCustomObject({
    group: 'nodecare.io',
    version: 'v1alpha1',
    plural: 'systemextensions',
    name,
  })) as { status?: Record<string, number> };
}

interface Table {
  columnDefinitions: Array<{ name: string }>;
  rows: Array<{ cells: unknown[]; object: { metadata: { name: string } } }>;
}

/** The API server's Table rendering of a resource: what `kubectl get` prints. */
async function table(path: string): Promise<Table> {
  const cluster = admin.getCurrentCluster()!;
  const dispatcher = new Agent({ connect: { ca: Buffer.from(cluster.caData!, 'base64').toString() } });
  try {
    const response = await request(`${cluster.server}${path}`, {
      dispatcher,
      headers: {
        accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
        authorization: `Bearer ${admin.getCurrentUser()!.token!}`,
      },
    });
    const body = (await response.body.json()) as Table;
    expect(response.statusCode).toBe(200);
    return body;
  } finally {
    await dispatcher.close();
  }
}

function cell(t: Table, row: string, column: string): unknown {
  const index = t.columnDefinitions.findIndex((c) => c.name === column);
  return t.rows.find((r) => r.object.metadata.name === row)?.cells[index];
}

describe('ClusterHealth roll-up', () => {
  it('EveryNodeReady: Progressing at once on a failure, False after its threshold, True at once on recovery; a logging extension moves only ObservabilityComponentsHealthy; counts and printer columns follow', async () => {
    const group = uniqueName('g');
    const gpuA = await endpoint();
    const gpuB = await endpoint();
    const logs = await endpoint();
    const logsSx = uniqueName('fluent-bit');
    await systemExtension(logsSx, {
      nodeSelector: { matchLabels: { 'test-group': group } },
      critical: false,
      conditionType: 'ObservabilityComponentsHealthy',
      ...httpProbe(logs.port),
    });
    const nodeA = uniqueName('rollup-a');
    const nodeB = uniqueName('rollup-b');
    await createNode(nodeA, { gpu: JSON.stringify(httpProbe(gpuA.port)) }, { 'test-group': group });
    await createNode(nodeB, { gpu: JSON.stringify(httpProbe(gpuB.port)) }, { 'test-group': group });
    await controller();

    const healthy = await waitForRollup(
      'every condition True',
      (o) =>
        status(o, 'EveryNodeReady') === 'True' &&
        status(o, 'ObservabilityComponentsHealthy') === 'True' &&
        o.metadata.labels?.[NODE_STATUS_LABEL] === 'healthy',
    );
    expect(conditionOf(healthy, 'EveryNodeReady')).toMatchObject({
      reason: 'HealthCheckSuccessful',
      message: 'All health checks successful',
      codes: [],
    });
    expect(healthy.status?.extensions).toEqual(
      expect.arrayContaining([
        {
          name: 'gpu',
          conditionType: 'EveryNodeReady',
          healthy: 2,
          progressing: 0,
          unhealthy: 0,
          unknown: 0,
        },
      ]),
    );
    await eventually(async () => ((await readSx(logsSx)).status?.healthy === 2 ? true : undefined), {
      what: `${logsSx} status counts 2 healthy`,
    });
    const sxTable = await table('/apis/nodecare.io/v1alpha1/systemextensions');
    expect(sxTable.columnDefinitions.map((c) => c.name)).toEqual(
      expect.arrayContaining(['Name', 'Nodes', 'Healthy', 'Failing', 'Age']),
    );
    expect(cell(sxTable, logsSx, 'Nodes')).toBe(2);
    expect(cell(sxTable, logsSx, 'Healthy')).toBe(2);
    expect(cell(sxTable, logsSx, 'Failing')).toBe(0);

    // The GPU endpoint of node A fails: Progressing at once (never False first), False after the threshold.
    const trueSince = conditionOf(healthy, 'EveryNodeReady')!.lastTransitionTime;
    const seen = new Map([
      ['EveryNodeReady', ['True']],
      ['ObservabilityComponentsHealthy', ['True']],
    ]);
    await gpuA.stop();
    const progressing = await waitForRollup(
      'EveryNodeReady Progressing',
      (o) => status(o, 'EveryNodeReady') === 'Progressing',
      seen,
    );
    expect(conditionOf(progressing, 'EveryNodeReady')).toMatchObject({
      reason: 'HealthCheckUnsuccessful',
      message: `${nodeA}: gpu Unhealthy (ConnectionRefused).`,
    });
    expect(conditionOf(progressing, 'EveryNodeReady')!.lastTransitionTime >= trueSince).toBe(true);
    expect(progressing.metadata.labels?.[NODE_STATUS_LABEL]).toBe('progressing');
    const failed = await waitForRollup(
      'EveryNodeReady False',
      (o) => status(o, 'EveryNodeReady') === 'False',
      seen,
    );
    const since = Date.parse(conditionOf(progressing, 'EveryNodeReady')!.lastTransitionTime);
    expect(
      Date.parse(conditionOf(failed, 'EveryNodeReady')!.lastTransitionTime) - since,
    ).toBeGreaterThanOrEqual(THRESHOLD_SECONDS * 1000);
    expect(failed.metadata.labels?.[NODE_STATUS_LABEL]).toBe('unhealthy');
    expect(seen.get('EveryNodeReady')).toEqual(['True', 'Progressing', 'False']);
    expect(seen.get('ObservabilityComponentsHealthy')).toEqual(['True']);
    expect(failed.status?.extensions).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'gpu', healthy: 1, unhealthy: 1 })]),
    );

    // Recovery: True at once (no threshold on the way up).
    await gpuA.start();
    await waitForRollup('EveryNodeReady True again', (o) => status(o, 'EveryNodeReady') === 'True', seen);
    expect(seen.get('EveryNodeReady')).toEqual(['True', 'Progressing', 'False', 'True']);

    // The logging agent fails: only ObservabilityComponentsHealthy moves, and the SystemExtension counts it.
    await logs.stop();
    // Both nodes' agents notice within a probe period of each other: wait for the message naming both.
    const observability = await waitForRollup(
      'ObservabilityComponentsHealthy Progressing on both nodes',
      (o) =>
        status(o, 'ObservabilityComponentsHealthy') === 'Progressing' &&
        (conditionOf(o, 'ObservabilityComponentsHealthy')?.message.startsWith('1) ') ?? false),
      seen,
    );
    expect(conditionOf(observability, 'ObservabilityComponentsHealthy')?.message).toBe(
      [nodeA, nodeB]
        .sort()
        .map((n, i) => `${i + 1}) ${n}: ${logsSx} Unhealthy (ConnectionRefused).`)
        .join(' '),
    );
    expect(seen.get('ObservabilityComponentsHealthy')).toEqual(['True', 'Progressing']);
    await eventually(async () => ((await readSx(logsSx)).status?.failing === 2 ? true : undefined), {
      what: `${logsSx} status counts 2 failing`,
    });
    expect(seen.get('EveryNodeReady')).toEqual(['True', 'Progressing', 'False', 'True']);
    const chTable = await table('/apis/nodecare.io/v1alpha1/clusterhealths');
    expect(chTable.columnDefinitions.map((c) => c.name)).toEqual(
      expect.arrayContaining(['Name', 'Status', 'NodesReady', 'Observability', 'Age']),
    );
    // Headed short so that the default columns fit 120 (NodesReady is EveryNodeReady; crd-explain.test.ts).
    expect(cell(chTable, 'cluster', 'NodesReady')).toBe('True');
    expect(cell(chTable, 'cluster', 'Observability')).toBe('Progressing');
    expect(cell(chTable, 'cluster', 'Status')).toBe('progressing');
  });

  it('an invalid registration shows ERR_CONFIGURATION_PROBLEM', async () => {
    const node = uniqueName('rollup-invalid');
    const ok = await endpoint();
    await createNode(
      node,
      {
        gpu: JSON.stringify(httpProbe(ok.port)),
        // exec is refused from annotations: the registration is invalid as written.
        tool: JSON.stringify({ probe: { exec: { command: ['/bin/true'] } } }),
      },
      {},
    );
    await controller();
    const failed = await waitForRollup('EveryNodeReady with a configuration problem', (o) =>
      (conditionOf(o, 'EveryNodeReady')?.codes ?? []).includes('ERR_CONFIGURATION_PROBLEM'),
    );
    expect(conditionOf(failed, 'EveryNodeReady')).toMatchObject({ reason: 'HealthCheckUnsuccessful' });
    expect(conditionOf(failed, 'EveryNodeReady')?.message).toContain(`${node}: tool`);
  });

  it('writes nothing while nothing changes (30 s), and a leader hand-over neither moves lastTransitionTime nor flaps a condition', async () => {
    const group = uniqueName('g');
    const gpu = await endpoint();
    const broken = await endpoint();
    await broken.stop();
    const node = uniqueName('rollup-steady');
    await createNode(node, { gpu: JSON.stringify(httpProbe(gpu.port)) }, { 'test-group': group });
    const logsSx = uniqueName('logs');
    await systemExtension(logsSx, {
      nodeSelector: { matchLabels: { 'test-group': group } },
      critical: false,
      conditionType: 'ObservabilityComponentsHealthy',
      ...httpProbe(broken.port),
    });
    await controller();
    await controller();
    // One condition True, one False: both must survive the hand-over exactly.
    const steady = await waitForRollup(
      'EveryNodeReady True and ObservabilityComponentsHealthy False',
      (o) =>
        status(o, 'EveryNodeReady') === 'True' && status(o, 'ObservabilityComponentsHealthy') === 'False',
      undefined,
      60_000,
    );
    await eventually(async () => ((await readSx(logsSx)).status?.failing === 1 ? true : undefined), {
      what: `${logsSx} status counts 1 failing`,
    });
    const settled = (await readClusterHealth())!;
    const seen = new Map([
      ['EveryNodeReady', ['True']],
      ['ObservabilityComponentsHealthy', ['False']],
    ]);
    const stableUntil = Date.now() + 30_000;
    await eventually(
      async () => {
        const now = await readClusterHealth();
        expect(now?.metadata.resourceVersion).toBe(settled.metadata.resourceVersion);
        return Date.now() > stableUntil ? true : undefined;
      },
      { what: 'nothing written for 30 s', timeoutMs: 40_000, intervalMs: 1_000 },
    );
    expect((await readClusterHealth())?.metadata.resourceVersion).toBe(settled.metadata.resourceVersion);

    // Hand-over: the leader is killed (no release); the standby takes over after the lease runs out.
    const leader = processes.find((p) => p.logs.some((l) => l.msg === 'Became leader'))!;
    expect(leader).toBeDefined();
    const standby = processes.find(
      (p) => p !== leader && p.logs.some((l) => l.msg === 'Started nodecare-controller'),
    )!;
    await leader.kill();
    await standby.waitForLog('Reconciling as leader', 30_000);
    const deadline = Date.now() + 10_000;
    await eventually(
      async () => {
        await waitForRollup('conditions as before', () => true, seen, 5_000);
        return Date.now() > deadline ? true : undefined;
      },
      { what: 'ten seconds under the new leader', timeoutMs: 20_000, intervalMs: 250 },
    );
    const after = (await readClusterHealth())!;
    expect(seen.get('EveryNodeReady')).toEqual(['True']);
    expect(seen.get('ObservabilityComponentsHealthy')).toEqual(['False']);
    for (const type of ['EveryNodeReady', 'ObservabilityComponentsHealthy']) {
      expect(conditionOf(after, type)?.lastTransitionTime).toBe(
        conditionOf(steady, type)?.lastTransitionTime,
      );
    }
    expect(after.metadata.resourceVersion).toBe(settled.metadata.resourceVersion);
  });

  it('Gardener awareness: a hibernated shoot reports every condition healthy; on wake-up the failure shows; a workerless shoot has no EveryNodeReady', async () => {
    const shootName = uniqueName('shoot--dev');
    const shoot = (hibernated: boolean, workers: object[]) => ({
      spec: {
        shoot: { spec: { hibernation: { enabled: hibernated }, provider: { type: 'local', workers } } },
      },
    });
    await custom.createClusterCustomObject({
      group: 'extensions.gardener.cloud',
      version: 'v1alpha1',
      plural: 'clusters',
      body: {
        apiVersion: 'extensions.gardener.cloud/v1alpha1',
        kind: 'Cluster',
        metadata: { name: shootName },
        ...shoot(true, [{ name: 'worker' }]),
      },
    });
    try {
      const broken = await endpoint();
      await broken.stop();
      const logs = await endpoint();
      const node = uniqueName('rollup-shoot');
      await createNode(
        node,
        {
          gpu: JSON.stringify(httpProbe(broken.port)),
          logs: JSON.stringify({
            ...httpProbe(logs.port),
            critical: false,
            conditionType: 'SystemComponentsHealthy',
          }),
        },
        {},
      );
      await controller([`--gardener-cluster=${shootName}`, '--gardener-resync-seconds=2']);
      const hibernated = await waitForRollup(
        'hibernated',
        (o) => status(o, 'SystemComponentsHealthy') === 'True',
      );
      for (const type of ['EveryNodeReady', 'SystemComponentsHealthy']) {
        expect(conditionOf(hibernated, type)).toMatchObject({
          status: 'True',
          reason: 'HealthCheckSuccessful',
          message: 'Shoot is hibernated',
        });
      }

      // Woken up: the GPU failure shows (True → Progressing, as after any healthy state).
      await custom.patchClusterCustomObject(
        {
          group: 'extensions.gardener.cloud',
          version: 'v1alpha1',
          plural: 'clusters',
          name: shootName,
          body: shoot(false, [{ name: 'worker' }]),
        },
        mergePatch,
      );
      const awake = await waitForRollup(
        'awake and failing',
        (o) => status(o, 'EveryNodeReady') === 'Progressing',
      );
      expect(conditionOf(awake, 'EveryNodeReady')?.message).toContain(`${node}: gpu Unhealthy`);
      expect(conditionOf(awake, 'SystemComponentsHealthy')?.message).toBe('All health checks successful');

      // Workerless: no EveryNodeReady at all; the other types stay.
      await custom.patchClusterCustomObject(
        {
          group: 'extensions.gardener.cloud',
          version: 'v1alpha1',
          plural: 'clusters',
          name: shootName,
          body: { spec: { shoot: { spec: { provider: { workers: [] } } } } },
        },
        mergePatch,
      );
      const workerless = await waitForRollup(
        'no EveryNodeReady',
        (o) => conditionOf(o, 'EveryNodeReady') === undefined,
      );
      expect(status(workerless, 'SystemComponentsHealthy')).toBe('True');
    } finally {
      await custom
        .deleteClusterCustomObject({
          group: 'extensions.gardener.cloud',
          version: 'v1alpha1',
          plural: 'clusters',
          name: shootName,
        })
        .catch(() => undefined);
    }
  });

  it('a missing Gardener Cluster object is not an error: the roll-up works as on any cluster', async () => {
    const ok = await endpoint();
    const node = uniqueName('rollup-nocluster');
    await createNode(node, { gpu: JSON.stringify(httpProbe(ok.port)) }, {});
    const proc = await controller([
      `--gardener-cluster=${uniqueName('absent')}`,
      '--gardener-resync-seconds=2',
    ]);
    await waitForRollup('EveryNodeReady True', (o) => status(o, 'EveryNodeReady') === 'True');
    expect(proc.logs.filter((l) => l.msg === 'Failed to write the roll-up; retrying')).toEqual([]);
  });
});
