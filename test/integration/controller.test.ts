// nodecare-controller against the real control plane (kube-apiserver, kube-scheduler), with real agents as
// local processes probing real loopback HTTP servers.

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
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_NAMESPACE,
  NODE_STATUS_LABEL,
  agentLeaseName,
  extensionLeaseName,
} from '../../api/index.ts';
import {
  adminKubeConfig,
  createSystemExtension,
  consistently,
  eventually,
  uniqueName,
  FAST_PROBING,
  httpEndpoint,
  type HttpEndpoint,
} from './helpers.ts';
import { startAgent, startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const eventsApi = admin.makeApiClient(EventsV1Api);
const kubeconfig = inject('kubeconfig');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Agents renew fast so that a killed agent is noticed in seconds, not minutes. */
const AGENT_ARGS = ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'];
const CONTROLLER_ARGS = [
  '--missing-lease-grace-seconds=20',
  '--leader-election-lease-duration-seconds=6',
  '--leader-election-renew-deadline-seconds=4',
  '--leader-election-retry-period-seconds=1',
];
const fast = FAST_PROBING;

const processes: ProgramProcess[] = [];
const servers: Server[] = [];
/** Nodes a test created: deleted after it, so one test's failing nodes never weigh on the next (breaker, zones). */
const createdNodes: string[] = [];
/** SystemExtensions a test created: deleted after it. */
const systemExtensions: string[] = [];

beforeAll(async () => {
  await applyBaseManifests();
});

afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill()));
  await Promise.all(createdNodes.splice(0).map((name) => core.deleteNode({ name }).catch(() => undefined)));
  const custom = admin.makeApiClient(CustomObjectsApi);
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

const endpoint = (): Promise<HttpEndpoint> => httpEndpoint(servers);

function httpExtension(port: number, extra: object = {}): string {
  return JSON.stringify({ probe: { http: { url: `http://127.0.0.1:${port}/` } }, ...fast, ...extra });
}

async function createNode(
  name: string,
  extensions: Record<string, string>,
  labels: Record<string, string> = {},
  bootId = 'boot-1',
) {
  createdNodes.push(name);
  const annotations = Object.fromEntries(
    Object.entries(extensions).map(([ext, value]) => [`${EXTENSION_ANNOTATION_PREFIX}${ext}`, value]),
  );
  await core.createNode({
    body: {
      metadata: { name, annotations, labels: { 'kubernetes.io/hostname': name, ...labels } },
      status: {
        allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
        nodeInfo: { bootID: bootId } as never,
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
      },
    },
  });
}

async function agentFor(nodeName: string): Promise<ProgramProcess> {
  const agent = await startAgent({ kubeconfig, nodeName, extraArgs: AGENT_ARGS });
  processes.push(agent);
  return agent;
}

async function controller(
  extra: string[] = [],
  identity = uniqueName('controller'),
): Promise<ProgramProcess & { identity: string }> {
  const proc = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    '--log-level=debug',
    `--identity=${identity}`,
    ...CONTROLLER_ARGS,
    ...extra,
  ]);
  processes.push(proc);
  await proc.waitForLog('Started nodecare-controller');
  return Object.assign(proc, { identity });
}

async function readNode(name: string): Promise<V1Node> {
  return core.readNode({ name });
}

function taintKeys(node: V1Node): string[] {
  return (node.spec?.taints ?? []).map((t) => t.key).sort();
}

function condition(node: V1Node) {
  return node.status?.conditions?.find((c) => c.type === 'ExtensionsReady');
}

async function waitForNode(
  name: string,
  what: string,
  check: (node: V1Node) => boolean,
  timeoutMs = 30_000,
): Promise<V1Node> {
  return eventually(
    async () => {
      const node = await readNode(name);
      return check(node) ? node : undefined;
    },
    { what: `${name}: ${what}`, timeoutMs, intervalMs: 100 },
  );
}

async function eventReasons(nodeName: string): Promise<string[]> {
  const list = await eventsApi.listNamespacedEvent({
    namespace: 'default',
    fieldSelector: `regarding.name=${nodeName}`,
  });
  return list.items.map((e) => e.reason ?? '');
}

/** Events are recorded after the writes they describe: wait for them rather than race them. */
async function expectEvents(nodeNames: string[], reasons: string[]): Promise<void> {
  await eventually(
    async () => {
      const seen = (await Promise.all(nodeNames.map((n) => eventReasons(n)))).flat();
      return reasons.every((r) => seen.includes(r)) ? true : undefined;
    },
    { what: `events ${reasons.join(', ')} on ${nodeNames.join(', ')}`, timeoutMs: 10_000 },
  );
}

describe('nodecare-controller', () => {
  it('holds a new node with the bootstrap taint until both extensions are Healthy; the scheduler places the pod only then', async () => {
    const nodeName = uniqueName('ctl-boot');
    const group = uniqueName('g');
    const a = await endpoint();
    const b = await endpoint();
    await b.stop();
    await createNode(
      nodeName,
      { 'ext-a': httpExtension(a.port), 'ext-b': httpExtension(b.port) },
      { 'test-group': group },
    );
    await controller();
    await waitForNode(nodeName, 'bootstrap taint', (n) => taintKeys(n).includes(BOOTSTRAP));

    const namespace = uniqueName('ctl-boot-ns');
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'web' },
        spec: {
          nodeSelector: { 'test-group': group },
          containers: [{ name: 'web', image: 'example.invalid/web' }],
        },
      },
    });
    await agentFor(nodeName);
    await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'web', namespace });
        return pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False')
          ? pod
          : undefined;
      },
      { what: 'the scheduler to refuse the tainted node' },
    );
    const held = await readNode(nodeName);
    expect(taintKeys(held)).toContain(BOOTSTRAP);
    expect(condition(held)?.status).toBe('False');
    expect(held.metadata?.labels?.[NODE_STATUS_LABEL]).toMatch(/progressing|unhealthy/);

    await b.start();
    // Two writes (docs/adr/0008): the taint patch, then the condition on the node it returned.
    const ready = await waitForNode(
      nodeName,
      'bootstrap taint removed and the condition written after it',
      (n) => !taintKeys(n).includes(BOOTSTRAP) && condition(n)?.status === 'True',
    );
    expect(taintKeys(ready)).not.toContain(RUNTIME);
    expect(condition(ready)).toMatchObject({ status: 'True', reason: 'AllExtensionsHealthy' });
    expect(ready.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('healthy');
    const bound = await eventually(
      async () => {
        const pod = await core.readNamespacedPod({ name: 'web', namespace });
        return pod.spec?.nodeName ? pod : undefined;
      },
      { what: 'the scheduler to bind the pod', timeoutMs: 60_000 },
    );
    expect(bound.spec?.nodeName).toBe(nodeName);
    await expectEvents([nodeName], ['BootstrapTaintRemoved']);
  });

  it('puts the runtime taint on when an extension fails later, removes it on recovery, and never writes while nothing changes; a repeat of the same failure is counted on the first Events (series)', async () => {
    const nodeName = uniqueName('ctl-runtime');
    const web = await endpoint();
    await createNode(nodeName, { web: httpExtension(web.port) });
    await agentFor(nodeName);
    await controller();
    await waitForNode(nodeName, 'Ready', (n) => condition(n)?.status === 'True' && taintKeys(n).length === 0);

    // Nothing changes: the controller must not write the node (no heartbeat writes).
    const before = (await readNode(nodeName)).metadata?.resourceVersion;
    await consistently(
      async () => expect((await readNode(nodeName)).metadata?.resourceVersion).toBe(before),
      6_000,
      { intervalMs: 500, what: `${nodeName} unwritten` },
    );

    await web.stop();
    // Taints first, then the condition (docs/adr/0008): wait for both writes.
    const degraded = await waitForNode(
      nodeName,
      'runtime taint and the condition after it',
      (n) => taintKeys(n).includes(RUNTIME) && condition(n)?.status === 'False',
    );
    expect(taintKeys(degraded)).not.toContain(BOOTSTRAP);
    expect(condition(degraded)).toMatchObject({ status: 'False', reason: 'ExtensionsUnhealthy' });
    expect(condition(degraded)?.message).toMatch(/web Unhealthy \(ConnectionRefused\)/);
    expect(degraded.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('unhealthy');

    await web.start();
    const recovered = await waitForNode(
      nodeName,
      'runtime taint removed and the condition after it',
      (n) => !taintKeys(n).includes(RUNTIME) && condition(n)?.status === 'True',
    );
    expect(recovered.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('healthy');
    await expectEvents([nodeName], ['RuntimeTaintAdded', 'RuntimeTaintRemoved', 'ExtensionUnhealthy']);

    // The same failure again within minutes: no new Event objects, the first ones count a series of 2.
    await web.stop();
    await waitForNode(nodeName, 'runtime taint again', (n) => taintKeys(n).includes(RUNTIME));
    await web.start();
    await waitForNode(nodeName, 'runtime taint removed again', (n) => !taintKeys(n).includes(RUNTIME));
    const series = await eventually(
      async () => {
        const list = await eventsApi.listNamespacedEvent({
          namespace: 'default',
          fieldSelector: `regarding.name=${nodeName}`,
        });
        const byReason = new Map<string, number[]>();
        for (const e of list.items) {
          const counts = byReason.get(e.reason ?? '') ?? [];
          counts.push(e.series?.count ?? 1);
          byReason.set(e.reason ?? '', counts);
        }
        return ['RuntimeTaintAdded', 'RuntimeTaintRemoved', 'ExtensionUnhealthy'].every(
          (r) => byReason.get(r)?.[0] === 2,
        )
          ? byReason
          : undefined;
      },
      { what: 'each repeated event counted in a series of 2 on its first Event', timeoutMs: 10_000 },
    );
    for (const reason of ['RuntimeTaintAdded', 'RuntimeTaintRemoved', 'ExtensionUnhealthy'])
      expect(series.get(reason)).toEqual([2]);
  });

  it('taints a node whose agent died once its leases expire, while a controller restart alone never taints a healthy node', async () => {
    const healthyNode = uniqueName('ctl-alive');
    const dyingNode = uniqueName('ctl-dying');
    const a = await endpoint();
    await createNode(healthyNode, { web: httpExtension(a.port) });
    await createNode(dyingNode, { web: httpExtension(a.port) });
    await agentFor(healthyNode);
    const doomed = await agentFor(dyingNode);
    const first = await controller();
    for (const n of [healthyNode, dyingNode])
      await waitForNode(
        n,
        'Ready',
        (node) => condition(node)?.status === 'True' && taintKeys(node).length === 0,
      );

    // Restart the controller: the healthy node keeps its state, nothing is written to it.
    await first.stop();
    const rv = (await readNode(healthyNode)).metadata?.resourceVersion;
    const second = await controller();
    await second.waitForLog('Reconciling as leader', 30_000);
    await consistently(
      async () => {
        const after = await readNode(healthyNode);
        expect(taintKeys(after)).toEqual([]);
        expect(after.metadata?.resourceVersion).toBe(rv);
      },
      3_000,
      { intervalMs: 500, what: `${healthyNode} untouched by the new leader` },
    );

    await doomed.kill();
    const killedAt = Date.now();
    const tainted = await waitForNode(
      dyingNode,
      'runtime taint after the heartbeat lease expired, and the condition after it',
      (n) => taintKeys(n).includes(RUNTIME) && condition(n)?.status === 'Unknown',
      40_000,
    );
    // The heartbeat lease lasts 8 s; the taint must not come before it could have expired.
    expect(Date.now() - killedAt).toBeGreaterThan(4_000);
    expect(condition(tainted)).toMatchObject({ status: 'Unknown', reason: 'AgentNotReporting' });
    expect(taintKeys(await readNode(healthyNode))).toEqual([]);

    // The agent comes back: the node recovers without any controller restart.
    await agentFor(dyingNode);
    await waitForNode(
      dyingNode,
      'recovered once its agent is back',
      (n) => !taintKeys(n).includes(RUNTIME) && condition(n)?.status === 'True',
    );
  });

  it('a node registered with the bootstrap taint that stays held gets its label and condition in one status write, which the API server keeps', async () => {
    const nodeName = uniqueName('ctl-held');
    const web = await endpoint();
    await web.stop();
    await createNode(nodeName, { web: httpExtension(web.port) });
    // Registered with the taint, as --register-with-taints or the admission policy does.
    await core.patchNode(
      { name: nodeName, body: { spec: { taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] } } },
      mergePatch,
    );
    await agentFor(nodeName);
    const ctl = await controller();
    const held = await waitForNode(
      nodeName,
      'label and condition written',
      (n) => condition(n)?.status === 'False' && n.metadata?.labels?.[NODE_STATUS_LABEL] !== undefined,
    );
    expect(taintKeys(held)).toEqual([BOOTSTRAP]);
    // docs/adr/0008's addendum: no taint changes, so the label went through nodes/status with the condition.
    const owners = (held.metadata?.managedFields ?? []).filter((f) =>
      JSON.stringify(f.fieldsV1 ?? {}).includes(`"f:${NODE_STATUS_LABEL}"`),
    );
    expect(owners.map((f) => f.subresource)).toEqual(['status']);
    expect(JSON.stringify(owners[0]!.fieldsV1)).toContain('"k:{\\"type\\":\\"ExtensionsReady\\"}"');
    expect(ctl.logs.map((l) => l.msg)).not.toContain('Changing taints');
  });

  it('sends a Ready node back to Bootstrapping when its bootID changes', async () => {
    const nodeName = uniqueName('ctl-reboot');
    const web = await endpoint();
    await createNode(nodeName, { web: httpExtension(web.port) });
    await agentFor(nodeName);
    await controller();
    await waitForNode(nodeName, 'Ready', (n) => condition(n)?.status === 'True');

    await web.stop();
    await core.patchNodeStatus(
      { name: nodeName, body: { status: { nodeInfo: { bootID: 'boot-2' } } } },
      mergePatch,
    );
    const rebooted = await waitForNode(nodeName, 'bootstrap taint after reboot', (n) =>
      taintKeys(n).includes(BOOTSTRAP),
    );
    expect(taintKeys(rebooted)).not.toContain(RUNTIME);

    await web.start();
    const ready = await waitForNode(
      nodeName,
      'Ready again',
      (n) => taintKeys(n).length === 0 && condition(n)?.status === 'True',
    );
    expect(ready.metadata?.annotations?.['nodecare.io/bootstrapped-boot-id']).toBe('boot-2');
  });

  it('trips the correlated-failure breaker: one extension failing on most nodes removes rather than adds runtime taints', async () => {
    // The breaker guards an administrator's rollout: a SystemExtension (only those feed it, docs/controller.md)
    // on four nodes, probing a node condition each node's test double flips on its own.
    const ext = uniqueName('rollout');
    const group = uniqueName('breaker-group');
    const CHECK = 'RolloutCheckReady';
    await createSystemExtension(admin.makeApiClient(CustomObjectsApi), ext, {
      nodeSelector: { matchLabels: { 'breaker-group': group } },
      probe: { nodeCondition: { type: CHECK, status: 'True' } },
      ...fast,
    });
    systemExtensions.push(ext);
    const nodes = Array.from({ length: 4 }, () => uniqueName('ctl-breaker'));
    const setCheck = async (node: string, status: 'True' | 'False'): Promise<void> => {
      await core.patchNodeStatus(
        {
          name: node,
          body: {
            status: { conditions: [{ type: CHECK, status, reason: 'Test', message: 'flipped by the test' }] },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
    };
    for (const n of nodes) {
      await createNode(n, {}, { 'breaker-group': group });
      await setCheck(n, 'True');
    }
    for (const n of nodes) await agentFor(n);
    const ctl = await controller();
    for (const n of nodes)
      await waitForNode(
        n,
        'Ready',
        (node) => condition(node)?.status === 'True' && taintKeys(node).length === 0,
      );
    const endpoints = nodes.map((n) => ({ stop: () => setCheck(n, 'False') }));

    // One node fails first: that is a node problem, it gets the runtime taint.
    await (endpoints[0] as { stop(): Promise<void> }).stop();
    await waitForNode(nodes[0] as string, 'runtime taint on the first failing node', (n) =>
      taintKeys(n).includes(RUNTIME),
    );
    // Then the same extension fails on the others: a bad rollout. The breaker trips and the taints come off.
    for (const e of endpoints.slice(1)) await e.stop();
    await ctl.waitForLog('Correlated failure: breaker tripped', 30_000);
    for (const n of nodes) {
      // Reported as failing (condition False), yet not tainted: the breaker holds the runtime taint back.
      await waitForNode(
        n,
        'failing but untainted while the breaker is tripped',
        (x) => condition(x)?.status === 'False' && !taintKeys(x).includes(RUNTIME),
        30_000,
      );
    }
    // The correlated failure is the cluster's, not a node's: one event regarding ClusterHealth `cluster`
    // (which need not exist), none on the nodes.
    const correlated = await eventually(
      async () => {
        const list = await eventsApi.listNamespacedEvent({
          namespace: 'default',
          fieldSelector: 'regarding.name=cluster,reason=CorrelatedFailure',
        });
        const ours = list.items.filter((e) => e.note?.startsWith(`Extension ${ext} `));
        return ours.length > 0 ? ours : undefined;
      },
      { what: `a CorrelatedFailure event for ${ext} regarding ClusterHealth cluster`, timeoutMs: 10_000 },
    );
    expect(correlated.map((e) => [e.type, e.regarding?.apiVersion, e.regarding?.kind])).toEqual([
      ['Warning', 'nodecare.io/v1alpha1', 'ClusterHealth'],
    ]);
    const onNodes = (await Promise.all(nodes.map((n) => eventReasons(n)))).flat();
    expect(onNodes).not.toContain('CorrelatedFailure');
  });

  it('preserves taints and labels other writers own, including a change made between its read and its write (409 path)', async () => {
    const nodeName = uniqueName('ctl-others');
    const web = await endpoint();
    await createNode(nodeName, { web: httpExtension(web.port) });
    await core.patchNode(
      { name: nodeName, body: { spec: { taints: [{ key: 'example.com/theirs', effect: 'NoSchedule' }] } } },
      mergePatch,
    );
    const ctl = await controller(['--log-level=debug']);
    await waitForNode(nodeName, 'bootstrap taint next to the foreign one', (n) =>
      taintKeys(n).includes(BOOTSTRAP),
    );
    expect(taintKeys(await readNode(nodeName))).toContain('example.com/theirs');

    // Race a foreign writer against the controller's removal of the bootstrap taint: start the agent and,
    // at the same moment, keep changing the node's taints so some controller writes meet a stale version.
    await agentFor(nodeName);
    for (let i = 0; i < 20; i++) {
      const node = await readNode(nodeName);
      const others = (node.spec?.taints ?? []).filter((t) => t.key.startsWith('example.com/'));
      await core
        .patchNode(
          {
            name: nodeName,
            body: {
              metadata: { resourceVersion: node.metadata?.resourceVersion },
              spec: {
                taints: [
                  ...(node.spec?.taints ?? []),
                  { key: `example.com/extra-${i}`, effect: 'PreferNoSchedule' },
                ],
              },
            },
          },
          mergePatch,
        )
        .catch(() => undefined);
      if (others.length > 3 && !taintKeys(node).includes(BOOTSTRAP)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // Two writes (docs/adr/0008): the taint patch, then the condition on the node it returned.
    const ready = await waitForNode(
      nodeName,
      'bootstrap taint removed and the condition written after it',
      (n) => !taintKeys(n).includes(BOOTSTRAP) && condition(n)?.status === 'True',
    );
    const keys = taintKeys(ready);
    expect(keys).toContain('example.com/theirs');
    expect(keys.filter((k) => k.startsWith('example.com/extra-')).length).toBeGreaterThan(0);
    // Logs go to stdout as JSON: no error was logged, nothing was written to stderr.
    expect(ctl.logs.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
    expect(ctl.stderr).toEqual([]);
  });

  it('records each taint change once: bootstrapping three nodes gives one BootstrapTaintAdded and one BootstrapTaintRemoved per node, and the events metric agrees', async () => {
    const web = await endpoint();
    const nodes = Array.from({ length: 3 }, () => uniqueName('ctl-once'));
    for (const n of nodes) await createNode(n, { web: httpExtension(web.port) });
    const ctl = await controller();
    for (const n of nodes) await waitForNode(n, 'bootstrap taint', (x) => taintKeys(x).includes(BOOTSTRAP));
    for (const n of nodes) await agentFor(n);
    for (const n of nodes)
      await waitForNode(
        n,
        'bootstrap taint removed',
        (x) => condition(x)?.status === 'True' && !taintKeys(x).includes(BOOTSTRAP),
      );
    await expectEvents(nodes, ['BootstrapTaintRemoved']);
    // Duplicates came milliseconds apart: give any second event ample time to show.
    await consistently(
      async () => {
        for (const n of nodes) {
          const reasons = await eventReasons(n);
          expect(
            reasons.filter((r) => r === 'BootstrapTaintAdded'),
            n,
          ).toHaveLength(1);
          expect(
            reasons.filter((r) => r === 'BootstrapTaintRemoved'),
            n,
          ).toHaveLength(1);
        }
      },
      3_000,
      { intervalMs: 500, what: 'one event of each kind per node' },
    );
    const port = (await ctl.waitForLog('Started nodecare-controller')).port as number;
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('nodecare_controller_events_total{reason="BootstrapTaintAdded"} 3');
    expect(metrics).toContain('nodecare_controller_events_total{reason="BootstrapTaintRemoved"} 3');
  });

  it("keeps another owner's NoExecute taint exactly, timeAdded included, while adding and removing its own", async () => {
    const nodeName = uniqueName('ctl-time-added');
    const web = await endpoint();
    await createNode(nodeName, { web: httpExtension(web.port) });
    const unreachable = {
      key: 'node.kubernetes.io/unreachable',
      effect: 'NoExecute',
      timeAdded: '2026-01-01T00:00:00Z',
    };
    await core.patchNode({ name: nodeName, body: { spec: { taints: [unreachable] } } }, mergePatch);
    const timeAdded = (n: V1Node) =>
      n.spec?.taints?.find((t) => t.key === unreachable.key)?.timeAdded?.toISOString();
    const original = timeAdded(await readNode(nodeName));
    expect(original).toBe('2026-01-01T00:00:00.000Z');
    await controller();
    const held = await waitForNode(nodeName, 'bootstrap taint', (n) => taintKeys(n).includes(BOOTSTRAP));
    expect(timeAdded(held)).toBe(original);
    await agentFor(nodeName);
    // Two writes (docs/adr/0008): the taint patch, then the condition on the node it returned.
    const ready = await waitForNode(
      nodeName,
      'bootstrap taint removed and the condition written after it',
      (n) => !taintKeys(n).includes(BOOTSTRAP) && condition(n)?.status === 'True',
    );
    expect(taintKeys(ready)).toEqual([unreachable.key]);
    expect(timeAdded(ready)).toBe(original);
  });

  it('ignores a hand-made Lease that claims a node under a name or owner the agent would not use; the right one counts', async () => {
    const { buildLease, extensionLeaseName } = await import('../../api/lease.ts');
    const coordination = admin.makeApiClient(CoordinationV1Api);
    const nodeName = uniqueName('ctl-forged');
    await createNode(nodeName, { web: 'http://127.0.0.1:1/' });
    const uid = (await readNode(nodeName)).metadata?.uid ?? '';
    const lease = (extension: string | undefined, name?: string, owned = true) => {
      const body = buildLease({
        node: { name: nodeName, uid },
        extension,
        holderIdentity: 'someone',
        leaseDurationSeconds: 600,
        renewTime: new Date(),
        bootId: 'boot-1',
        record: extension
          ? { state: 'Healthy', reason: 'ProbeSucceeded', message: '', since: '' }
          : undefined,
      });
      if (name) body.metadata.name = name;
      if (!owned) delete body.metadata.ownerReferences;
      return coordination.createNamespacedLease({ namespace: 'nodecare-leases', body: body as never });
    };
    // A heartbeat as the agent writes it, and two forged "web is Healthy" leases for this node.
    await lease(undefined);
    await lease('web', uniqueName('forged'));
    await lease('web', extensionLeaseName(nodeName, 'web'), false);
    const ctl = await controller();
    await waitForNode(nodeName, 'held by the bootstrap taint', (n) => taintKeys(n).includes(BOOTSTRAP));
    const ignored = await eventually(
      () => {
        const lines = ctl.logs.filter((l) => l.msg === "Ignored a lease that is not the agent's");
        return lines.length >= 2 ? lines : undefined;
      },
      { what: 'both forged leases reported' },
    );
    expect(ignored.map((l) => l.problem).sort()).toEqual(['NameMismatch', 'OwnerMismatch']);
    const port = (await ctl.waitForLog('Started nodecare-controller')).port as number;
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/nodecare_controller_leases_ignored\{reason="NameMismatch"\} [1-9]/);
    await consistently(
      async () => {
        const held = await readNode(nodeName);
        expect(taintKeys(held)).toContain(BOOTSTRAP);
        expect(condition(held)?.status).not.toBe('True');
      },
      2_000,
      { intervalMs: 250, what: `${nodeName} held despite the forged leases` },
    );

    // The lease the agent would write (its name, owned by the node) is believed: the node becomes Ready.
    await coordination.deleteNamespacedLease({
      namespace: 'nodecare-leases',
      name: extensionLeaseName(nodeName, 'web'),
    });
    await lease('web');
    await waitForNode(
      nodeName,
      'Ready on the real lease',
      (n) => condition(n)?.status === 'True' && taintKeys(n).length === 0,
    );
  });

  it('leaves the nodes its --node-selector does not select alone (by default Windows and virtual-kubelet nodes)', async () => {
    const linux = uniqueName('ctl-linux');
    const windows = uniqueName('ctl-windows');
    const virtual = uniqueName('ctl-virtual');
    const web = await endpoint();
    await createNode(linux, { web: httpExtension(web.port) }, { 'kubernetes.io/os': 'linux' });
    await createNode(windows, { web: httpExtension(web.port) }, { 'kubernetes.io/os': 'windows' });
    await createNode(virtual, {}, { 'kubernetes.io/os': 'linux', type: 'virtual-kubelet' });
    const ctl = await controller();
    expect((await ctl.waitForLog('Started nodecare-controller')).nodeSelector).toBe(
      'kubernetes.io/os!=windows,type!=virtual-kubelet',
    );
    // The Linux node is managed: a new node with no agent is held by the bootstrap taint, with its condition.
    await waitForNode(
      linux,
      'managed',
      (n) => taintKeys(n).includes(BOOTSTRAP) && condition(n) !== undefined,
    );
    // Its decision was written after the controller had listed every node: the others were seen and skipped.
    for (const name of [windows, virtual]) {
      const node = await readNode(name);
      expect(taintKeys(node), name).toEqual([]);
      expect(condition(node), name).toBeUndefined();
      expect(node.metadata?.labels?.[NODE_STATUS_LABEL], name).toBeUndefined();
    }
    // Every node, as an operator may choose: the Windows node is then held like any other node with no agent.
    await ctl.stop();
    await controller(['--node-selector=']);
    await waitForNode(windows, 'managed with an empty selector', (n) => taintKeys(n).includes(BOOTSTRAP));
  });

  it("a node's Leases go with it: the agent makes its Node their owner, and the garbage collector deletes them", async () => {
    const nodeName = uniqueName('ctl-gc');
    const web = await endpoint();
    await createNode(nodeName, { web: httpExtension(web.port) });
    const agent = await agentFor(nodeName);
    const coordination = admin.makeApiClient(CoordinationV1Api);
    const names = [agentLeaseName(nodeName), extensionLeaseName(nodeName, 'web')];
    const leases = await eventually(
      async () => {
        const found = await Promise.all(
          names.map((name) =>
            coordination.readNamespacedLease({ namespace: LEASE_NAMESPACE, name }).catch(() => undefined),
          ),
        );
        return found.every(Boolean) ? found : undefined;
      },
      { what: `${nodeName}: heartbeat and extension Leases written`, timeoutMs: 30_000 },
    );
    const uid = (await readNode(nodeName)).metadata!.uid;
    for (const lease of leases)
      expect(lease!.metadata?.ownerReferences).toEqual([
        expect.objectContaining({ apiVersion: 'v1', kind: 'Node', name: nodeName, uid }),
      ]);
    // The agent stops first (as a drained node's would); then the Node is deleted.
    await agent.stop();
    await core.deleteNode({ name: nodeName });
    await eventually(
      async () => {
        const left = await Promise.all(
          names.map((name) =>
            coordination
              .readNamespacedLease({ namespace: LEASE_NAMESPACE, name })
              .then(() => name)
              .catch(() => undefined),
          ),
        );
        return left.every((name) => name === undefined) || undefined;
      },
      { what: `${nodeName}: its Leases garbage-collected`, timeoutMs: 60_000 },
    );
  });

  it('in --dry-run computes and reports everything but writes no taint', async () => {
    const nodeName = uniqueName('ctl-dry');
    const web = await endpoint();
    await web.stop();
    await createNode(nodeName, { web: httpExtension(web.port) });
    await agentFor(nodeName);
    const ctl = await controller(['--dry-run']);
    const node = await waitForNode(
      nodeName,
      'condition and label written',
      (n) => condition(n)?.status === 'False' && n.metadata?.labels?.[NODE_STATUS_LABEL] !== undefined,
    );
    expect(taintKeys(node)).toEqual([]);
    await ctl.waitForLog('Would change taints (dry run)');
    expect(node.metadata?.labels?.[NODE_STATUS_LABEL]).toMatch(/progressing|unhealthy/);
  });
});

describe('node writes against the real API server', () => {
  const UNREACHABLE = {
    key: 'node.kubernetes.io/unreachable',
    effect: 'NoExecute',
    timeAdded: '2026-01-01T00:00:00Z',
  };

  async function realApi() {
    const { KubeClient } = await import('../../lib/kube/client.ts');
    const { loadConnection } = await import('../../lib/kube/config.ts');
    const { KubePort } = await import('../../controller/port.ts');
    const client = new KubeClient(await loadConnection(kubeconfig));
    return { client, api: new KubePort(client, { timeoutMs: 10_000 }) };
  }

  it('a write decided on a stale read meets a real 409; the reconciler re-reads, re-decides and keeps what another writer did', async () => {
    const { Registry } = await import('prom-client');
    const { systemClock } = await import('../../lib/clock.ts');
    const { createLogger } = await import('../../lib/log.ts');
    const { buildLease } = await import('../../api/lease.ts');
    const { toCachedLease, toCachedNode } = await import('../../controller/cache/index.ts');
    const { loadControllerConfig } = await import('../../controller/config.ts');
    const { ControllerMetrics } = await import('../../controller/metrics.ts');
    const { Reconciler } = await import('../../controller/reconciler.ts');
    const { FakeCache } = await import('../../controller/testing.ts');
    const { eventRecorder } = await import('../../controller/writes/index.ts');
    const { client, api } = await realApi();
    const nodeName = uniqueName('ctl-409');
    await createNode(nodeName, { web: 'http://127.0.0.1:1/' });
    await core.patchNode(
      { name: nodeName, body: { spec: { taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }, UNREACHABLE] } } },
      mergePatch,
    );
    const cache = new FakeCache(systemClock);
    const stale = toCachedNode(await api.getNode(nodeName));
    cache.nodes.set(nodeName, stale);
    for (const extension of [undefined, 'web']) {
      const lease = buildLease({
        node: { name: nodeName, uid: stale.uid },
        extension,
        holderIdentity: 'agent',
        leaseDurationSeconds: 300,
        renewTime: new Date(),
        bootId: 'boot-1',
        record: extension
          ? { state: 'Healthy', reason: 'ProbeSucceeded', message: '', since: '' }
          : undefined,
      });
      cache.leases.added(toCachedLease(lease)!);
    }
    // Another writer changes the node after our read (as a newer leader would): our version is stale.
    await core.patchNode(
      { name: nodeName, body: { metadata: { labels: { 'example.com/theirs': 'x' } } } },
      mergePatch,
    );
    const loaded = loadControllerConfig([], {});
    if (!('config' in loaded)) throw new Error('expected a config');
    const metrics = new ControllerMetrics(new Registry());
    const fence = (): void => undefined;
    const reconciler = new Reconciler({
      cache,
      api,
      fence,
      clock: systemClock,
      log: createLogger({ level: 'silent', name: 'test' }),
      metrics,
      events: eventRecorder(api, 'test', systemClock, fence),
      config: loaded.config,
    });
    await reconciler.reconcile(nodeName);

    // The taint patch goes first (docs/adr/0008), so it is the write that meets the 409; the condition is
    // written once, on the node read again.
    const writes = (await metrics.nodeWrites.get()).values;
    const count = (kind: string, result: string): number =>
      writes.find((v) => v.labels.kind === kind && v.labels.result === result)?.value ?? 0;
    expect(count('node', 'conflict')).toBe(1);
    expect(count('condition', 'conflict')).toBe(0);
    expect(count('condition', 'ok')).toBe(1);
    const node = await readNode(nodeName);
    expect(condition(node)).toMatchObject({ status: 'True', reason: 'AllExtensionsHealthy' });
    expect(node.metadata?.labels?.['example.com/theirs']).toBe('x');
    expect(node.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('healthy');
    expect(node.spec?.taints?.map((t) => ({ ...t, timeAdded: t.timeAdded?.toISOString() }))).toEqual([
      { ...UNREACHABLE, timeAdded: '2026-01-01T00:00:00.000Z' },
    ]);
    await expectEvents([nodeName], ['BootstrapTaintRemoved']);
    await client.close();
  });

  it('records an event about a node whose name is 253 characters long (regression: 422, event lost)', async () => {
    const { systemClock } = await import('../../lib/clock.ts');
    const { eventRecorder } = await import('../../controller/writes/index.ts');
    const { client, api } = await realApi();
    // A cut at 200 (the old rule) ends in '-'; the cut that leaves room for the suffix ends in '.'.
    const nodeName = `${'n'.repeat(199)}-${'n'.repeat(38)}.${uniqueName('tail0')}`;
    expect(nodeName).toHaveLength(253);
    createdNodes.push(nodeName);
    const uid = (await core.createNode({ body: { metadata: { name: nodeName } } })).metadata?.uid ?? '';
    const recorder = eventRecorder(api, 'test', systemClock, () => undefined);
    await recorder.nodeEvent(
      { name: nodeName, uid },
      { type: 'Normal', reason: 'BootstrapTaintRemoved', message: 'long name' },
    );
    expect(await eventReasons(nodeName)).toEqual(['BootstrapTaintRemoved']);
    await client.close();
  });
});

describe('nodecare-controller eviction and replicas', () => {
  async function pod(namespace: string, name: string, nodeName: string, extra: Record<string, unknown> = {}) {
    const { metadata = {}, spec = {} } = extra as { metadata?: object; spec?: object };
    return core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name, ...metadata },
        spec: {
          nodeName,
          containers: [{ name: 'c', image: 'example.invalid/c' }],
          terminationGracePeriodSeconds: 0,
          ...spec,
        },
      },
    });
  }

  async function evicted(namespace: string, name: string): Promise<boolean> {
    try {
      const p = await core.readNamespacedPod({ namespace, name });
      return Boolean(p.metadata?.deletionTimestamp);
    } catch {
      return true; // gone
    }
  }

  it('evicts pods of a long-Degraded node (not DaemonSet or tolerating pods), one node per interval per zone; off by default', async () => {
    const zone = uniqueName('zone');
    const namespace = uniqueName('ctl-evict');
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const healthy = await endpoint();
    const failing = await endpoint();
    const names = {
      bad1: uniqueName('ctl-ev-bad'),
      bad2: uniqueName('ctl-ev-bad'),
      ok: [uniqueName('ctl-ev-ok'), uniqueName('ctl-ev-ok'), uniqueName('ctl-ev-ok')],
    };
    const labels = { 'topology.kubernetes.io/zone': zone };
    await createNode(names.bad1, { web: httpExtension(failing.port) }, labels);
    await createNode(names.bad2, { web: httpExtension(failing.port) }, labels);
    for (const n of names.ok) await createNode(n, { web: httpExtension(healthy.port) }, labels);
    for (const n of [names.bad1, names.bad2, ...names.ok]) await agentFor(n);

    const ds = await admin
      .makeApiClient((await import('@kubernetes/client-node')).AppsV1Api)
      .createNamespacedDaemonSet({
        namespace,
        body: {
          metadata: { name: 'ds' },
          spec: {
            selector: { matchLabels: { app: 'ds' } },
            template: {
              metadata: { labels: { app: 'ds' } },
              spec: { containers: [{ name: 'c', image: 'example.invalid/ds' }] },
            },
          },
        },
      });
    for (const node of [names.bad1, names.bad2]) {
      await pod(namespace, `app-${node}`, node);
      await pod(namespace, `ds-${node}`, node, {
        metadata: {
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'ds', uid: ds.metadata?.uid, controller: true },
          ],
        },
      });
      await pod(namespace, `tolerant-${node}`, node, {
        spec: { tolerations: [{ key: RUNTIME, operator: 'Exists', effect: 'NoSchedule' }] },
      });
    }

    // Off by default: a controller without --evict-after-seconds taints but evicts nothing.
    const plain = await controller();
    for (const n of [names.bad1, names.bad2, ...names.ok])
      await waitForNode(n, 'Ready', (node) => condition(node)?.status === 'True');
    await failing.stop();
    for (const n of [names.bad1, names.bad2])
      await waitForNode(n, 'runtime taint', (node) => taintKeys(node).includes(RUNTIME));
    await consistently(async () => expect(await evicted(namespace, `app-${names.bad1}`)).toBe(false), 2_000, {
      intervalMs: 250,
      what: 'no eviction while eviction is off',
    });
    await plain.stop();

    // On: Degraded for 2 s → evicted, at most one node per 5 s in this zone.
    await controller(['--evict-after-seconds=2', '--eviction-rate=0.2']);
    const first = await eventually(
      async () => {
        const done = await Promise.all([names.bad1, names.bad2].map((n) => evicted(namespace, `app-${n}`)));
        return done.some(Boolean) ? done : undefined;
      },
      { what: 'the first Degraded node to be evicted', timeoutMs: 20_000, intervalMs: 100 },
    );
    const firstAt = Date.now();
    expect(first.filter(Boolean)).toHaveLength(1);
    const second = first[0] ? names.bad2 : names.bad1;
    await consistently(async () => expect(await evicted(namespace, `app-${second}`)).toBe(false), 1_500, {
      intervalMs: 250,
      what: 'the second node not evicted within the rate interval',
    });
    await eventually(async () => ((await evicted(namespace, `app-${second}`)) ? true : undefined), {
      what: 'the second node after the rate interval',
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    expect(Date.now() - firstAt).toBeGreaterThan(3_000);
    for (const node of [names.bad1, names.bad2]) {
      expect(await evicted(namespace, `ds-${node}`)).toBe(false);
      expect(await evicted(namespace, `tolerant-${node}`)).toBe(false);
    }
    for (const n of names.ok) expect(taintKeys(await readNode(n))).toEqual([]);
    await expectEvents([names.bad1, names.bad2], ['PodEvicted']);
  });

  it('with two replicas only the leader writes; SIGTERM hands over at once, a killed leader within the lease duration', async () => {
    const nodeName = uniqueName('ctl-ha');
    const web = await endpoint();
    await createNode(nodeName, { web: httpExtension(web.port) });
    await agentFor(nodeName);
    const a = await controller([], uniqueName('replica-a'));
    await a.waitForLog('Reconciling as leader');
    const b = await controller([], uniqueName('replica-b'));
    await waitForNode(nodeName, 'Ready', (n) => condition(n)?.status === 'True');
    await consistently(
      () => {
        expect(b.logs.some((l) => l.msg === 'Reconciling as leader')).toBe(false);
        expect(b.logs.some((l) => l.msg === 'Changing taints' || l.msg === 'Node state changed')).toBe(false);
      },
      2_000,
      { intervalMs: 100, what: 'the standby idle' },
    );

    // SIGTERM: a releases the lease before it exits (so b need not wait for it to expire), then b leads.
    expect(await a.stop()).toBe(0);
    expect(a.logs.map((l) => l.msg)).toContain('Released leadership lease');
    await b.waitForLog('Reconciling as leader', 30_000);
    // The failover alone changes nothing on a healthy node: fresh lease graces, no taint, no write.
    const rvAfterHandover = (await readNode(nodeName)).metadata?.resourceVersion;
    await consistently(
      async () => {
        const afterHandover = await readNode(nodeName);
        expect(taintKeys(afterHandover)).toEqual([]);
        expect(afterHandover.metadata?.resourceVersion).toBe(rvAfterHandover);
      },
      2_000,
      { intervalMs: 250, what: `${nodeName} untouched by the failover` },
    );

    await web.stop();
    await waitForNode(nodeName, 'runtime taint written by the new leader', (n) =>
      taintKeys(n).includes(RUNTIME),
    );
    const c = await controller([], uniqueName('replica-c'));
    await new Promise((r) => setTimeout(r, 1_000));
    await b.kill();
    await c.waitForLog('Reconciling as leader', 60_000);
    await web.start();
    await waitForNode(
      nodeName,
      'runtime taint removed by the third leader',
      (n) => !taintKeys(n).includes(RUNTIME),
    );
  });
});
