// nodecare-agent against the real control plane, with real local extension endpoints: an HTTP server on
// loopback, a gRPC health server on a unix socket, a heartbeat file, a TCP listener.

import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  CONFLICT_LEASE_NOTE,
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_NAMESPACE,
  LeaseAnnotation,
  agentLeaseName,
  extensionLeaseName,
} from '../../api/index.ts';
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { PROTO_FILES, service } from '../../agent/probes/proto.ts';
import { serveGrpc } from '../../agent/probes/testing.ts';
import { adminKubeConfig, eventually, uniqueName, FAST_PROBING, createSystemExtension } from './helpers.ts';
import { startAgent, type ProgramProcess } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const coordination = admin.makeApiClient(CoordinationV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const agents: ProgramProcess[] = [];
const createdNodes: string[] = [];
let dir: string;

beforeAll(async () => {
  await applyBaseManifests();
  dir = await mkdtemp(join(tmpdir(), 'nodecare-agent-it-'));
});

afterAll(async () => {
  await Promise.all(agents.map((a) => a.kill()));
  await Promise.all(createdNodes.map((name) => core.deleteNode({ name }).catch(() => undefined)));
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function createNode(
  name: string,
  annotations: Record<string, string> = {},
  labels: Record<string, string> = {},
) {
  createdNodes.push(name);
  return core.createNode({
    body: {
      metadata: { name, annotations, labels },
      status: {
        nodeInfo: { bootID: 'boot-1' } as never,
        addresses: [{ type: 'InternalIP', address: '10.99.0.1' }],
      },
    },
  });
}

async function lease(node: string, extension: string) {
  try {
    return await coordination.readNamespacedLease({
      name: extensionLeaseName(node, extension),
      namespace: LEASE_NAMESPACE,
    });
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}

async function leaseState(node: string, extension: string): Promise<string | undefined> {
  return (await lease(node, extension))?.metadata?.annotations?.[LeaseAnnotation.state];
}

function waitForState(node: string, extension: string, state: string, timeoutMs = 30_000) {
  return eventually(async () => ((await leaseState(node, extension)) === state ? true : undefined), {
    timeoutMs,
    intervalMs: 100,
    what: `lease ${extension} on ${node} to be ${state}`,
  });
}

function annotation(name: string, spec: unknown): Record<string, string> {
  return {
    [`${EXTENSION_ANNOTATION_PREFIX}${name}`]: typeof spec === 'string' ? spec : JSON.stringify(spec),
  };
}

async function httpServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

async function spawnAgent(nodeName: string, extraArgs: string[] = []) {
  const agent = await startAgent({ kubeconfig, nodeName, allowedPaths: [dir], extraArgs });
  agents.push(agent);
  return agent;
}

const fast = FAST_PROBING;

describe('nodecare-agent', () => {
  it('keeps one Lease per annotated extension; a failing endpoint turns Unhealthy, the others stay Healthy, and it recovers', async () => {
    const nodeName = uniqueName('agent-three');
    const web = await httpServer();
    const socket = join(dir, `${nodeName}.sock`);
    const grpc = await serveGrpc(`unix://${socket}`, (server) =>
      server.addService(service(PROTO_FILES.health, 'grpc.health.v1.Health'), {
        Check: (_call: unknown, cb: (err: null, res: { status: string }) => void) =>
          cb(null, { status: 'SERVING' }),
      }),
    );
    const heartbeat = join(dir, `${nodeName}.heartbeat`);
    await writeFile(heartbeat, 'alive');
    await createNode(nodeName, {
      ...annotation('web', { probe: { http: { url: `http://127.0.0.1:${web.port}/healthz` } }, ...fast }),
      ...annotation('grpc-plugin', { probe: { grpc: { address: `unix://${socket}` } }, ...fast }),
      ...annotation('log-heartbeat', { probe: { file: { path: heartbeat, maxAgeSeconds: 60 } }, ...fast }),
    });
    await spawnAgent(nodeName);

    for (const ext of ['web', 'grpc-plugin', 'log-heartbeat']) await waitForState(nodeName, ext, 'Healthy');
    const webLease = await lease(nodeName, 'web');
    expect(webLease?.metadata?.labels?.['nodecare.io/extension']).toBe('web');
    expect(webLease?.metadata?.annotations?.[LeaseAnnotation.node]).toBe(nodeName);
    expect(webLease?.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Node', name: nodeName });
    expect(webLease?.spec?.holderIdentity).toBe(`nodecare-agent-${nodeName}`);
    const heartbeatLease = await coordination.readNamespacedLease({
      name: agentLeaseName(nodeName),
      namespace: LEASE_NAMESPACE,
    });
    expect(heartbeatLease.spec?.leaseDurationSeconds).toBe(
      AGENT_OPTIONS['heartbeat-duration-seconds'].default,
    );

    await new Promise<void>((r) => web.server.close(() => r()));
    web.server.closeAllConnections();
    const stoppedAt = Date.now();
    // How fast is the benchmark's business; here: it flips, for the right reason, after the endpoint went away.
    await waitForState(nodeName, 'web', 'Unhealthy');
    const failed = (await lease(nodeName, 'web'))?.metadata?.annotations ?? {};
    expect(failed[LeaseAnnotation.reason]).toBe('ConnectionRefused');
    expect(Date.parse(failed[LeaseAnnotation.since] ?? '')).toBeGreaterThanOrEqual(stoppedAt - 1_000);
    expect(await leaseState(nodeName, 'grpc-plugin')).toBe('Healthy');

    await new Promise<void>((r) => web.server.listen(web.port, '127.0.0.1', r));
    await waitForState(nodeName, 'web', 'Healthy');
    grpc.server.forceShutdown();
  });

  it('republishes every lease with the new boot ID as soon as the node reboots, long before a renewal', async () => {
    const nodeName = uniqueName('agent-reboot');
    const web = await httpServer();
    await createNode(nodeName, {
      ...annotation('web', { probe: { http: { url: `http://127.0.0.1:${web.port}/` } }, ...fast }),
      ...annotation('tcp', { probe: { tcp: { port: web.port } }, ...fast }),
    });
    // Renewals an hour apart: only the reboot itself can explain a prompt rewrite.
    const agent = await spawnAgent(nodeName, ['--extension-renew-seconds=3600']);
    for (const ext of ['web', 'tcp']) await waitForState(nodeName, ext, 'Healthy');
    const bootIdOf = async (name: string): Promise<string | undefined> => {
      const found = await coordination
        .readNamespacedLease({ name, namespace: LEASE_NAMESPACE })
        .catch(() => undefined);
      return found?.metadata?.annotations?.[LeaseAnnotation.bootId];
    };
    const names = [
      extensionLeaseName(nodeName, 'web'),
      extensionLeaseName(nodeName, 'tcp'),
      agentLeaseName(nodeName),
    ];
    for (const name of names) expect(await bootIdOf(name)).toBe('boot-1');

    await core.patchNodeStatus(
      { name: nodeName, body: { status: { nodeInfo: { bootID: 'boot-2' } } } },
      mergePatch,
    );
    await agent.waitForLog('Re-registered extension');
    await eventually(
      async () => ((await Promise.all(names.map(bootIdOf))).every((b) => b === 'boot-2') ? true : undefined),
      { timeoutMs: 30_000, what: 'every lease of the node to carry the new boot ID' },
    );
    expect(await leaseState(nodeName, 'web')).toBe('Healthy');
    web.server.close();
  });

  it('applies a SystemExtension to matching nodes only and follows relabelling', async () => {
    const tcp: TcpServer = createTcpServer((s) => s.end());
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    const group = uniqueName('grp');
    const sxName = uniqueName('sx-tcp');
    await createSystemExtension(custom, sxName, {
      nodeSelector: { matchLabels: { 'test-group': group } },
      probe: { tcp: { port: (tcp.address() as AddressInfo).port } },
      ...fast,
    });
    const matching = uniqueName('sx-yes');
    const other = uniqueName('sx-no');
    await createNode(matching, {}, { 'test-group': group });
    await createNode(other, {}, { 'test-group': 'elsewhere' });
    await spawnAgent(matching);
    await spawnAgent(other);

    await waitForState(matching, sxName, 'Healthy');
    // The other node's agent is running and heartbeating, yet has no lease for this extension.
    await eventually(
      async () =>
        coordination.readNamespacedLease({ name: agentLeaseName(other), namespace: LEASE_NAMESPACE }),
      {
        what: 'the other agent heartbeat',
      },
    );
    expect(await lease(other, sxName)).toBeUndefined();

    await core.patchNode(
      { name: other, body: { metadata: { labels: { 'test-group': group } } } },
      mergePatch,
    );
    await waitForState(other, sxName, 'Healthy', 5_000);
    await core.patchNode(
      { name: matching, body: { metadata: { labels: { 'test-group': null } } } },
      mergePatch,
    );
    await eventually(async () => ((await lease(matching, sxName)) === undefined ? true : undefined), {
      timeoutMs: 5_000,
      what: 'the lease of the node that no longer matches to be deleted',
    });
    tcp.close();
  });

  it('resourceSlices: Healthy while the DRA driver publishes enough devices for the node; a republish with fewer → Unhealthy, withdrawn → Unhealthy, back → Healthy', async () => {
    const group = uniqueName('dra');
    const driver = `${group}.nodecare.test`;
    const sxName = uniqueName('sx-dra');
    await createSystemExtension(custom, sxName, {
      nodeSelector: { matchLabels: { 'test-group': group } },
      probe: { resourceSlices: { driver, minDevices: 2, attribute: { name: 'model', value: 'a100' } } },
      ...fast,
    });
    const node = uniqueName('dra-node');
    await createNode(node, {}, { 'test-group': group });
    const sliceName = `${node}-${group}`;
    const slice = (generation: number, models: string[]) => ({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceSlice',
      metadata: { name: sliceName },
      spec: {
        driver,
        nodeName: node,
        pool: { name: node, generation, resourceSliceCount: 1 },
        devices: models.map((model, i) => ({ name: `gpu-${i}`, attributes: { model: { string: model } } })),
      },
    });
    const resource = { group: 'resource.k8s.io', version: 'v1', plural: 'resourceslices' };
    // A slice of the same driver for another node never counts for this one.
    await custom.createClusterCustomObject({
      ...resource,
      body: {
        ...slice(1, ['a100', 'a100', 'a100']),
        metadata: { name: `other-${sliceName}` },
        spec: {
          ...slice(1, ['a100', 'a100', 'a100']).spec,
          nodeName: `other-${node}`,
          pool: { name: `other-${node}`, generation: 1, resourceSliceCount: 1 },
        },
      },
    });
    await spawnAgent(node);
    await waitForState(node, sxName, 'Unhealthy');
    expect((await lease(node, sxName))?.metadata?.annotations?.[LeaseAnnotation.reason]).toBe(
      'ResourceMissing',
    );

    // The driver publishes two A100s (and a device of another model, which does not count).
    await custom.createClusterCustomObject({ ...resource, body: slice(1, ['a100', 't4', 'a100']) });
    await waitForState(node, sxName, 'Healthy');
    // It republishes (a new generation) with one A100 left: degraded below minDevices.
    await custom.replaceClusterCustomObject({
      ...resource,
      name: sliceName,
      body: {
        ...slice(2, ['a100', 't4']),
        metadata: {
          name: sliceName,
          resourceVersion: (
            (await custom.getClusterCustomObject({ ...resource, name: sliceName })) as {
              metadata: { resourceVersion: string };
            }
          ).metadata.resourceVersion,
        },
      },
    });
    await waitForState(node, sxName, 'Unhealthy');
    expect((await lease(node, sxName))?.metadata?.annotations?.[LeaseAnnotation.reason]).toBe(
      'TooFewDevices',
    );
    // It withdraws its slice (the driver is gone): failed.
    await custom.deleteClusterCustomObject({ ...resource, name: sliceName });
    await eventually(
      async () =>
        (await lease(node, sxName))?.metadata?.annotations?.[LeaseAnnotation.reason] === 'ResourceMissing'
          ? true
          : undefined,
      { what: 'the withdrawn slice to read as ResourceMissing' },
    );
    // Published again: Healthy again.
    await custom.createClusterCustomObject({ ...resource, body: slice(4, ['a100', 'a100']) });
    await waitForState(node, sxName, 'Healthy');
    await custom.deleteClusterCustomObject({ ...resource, name: sliceName });
    await custom.deleteClusterCustomObject({ ...resource, name: `other-${sliceName}` });
  });

  it('podReady: the pods on its node are watched for the probe; Healthy once a matching pod there is Ready, Unhealthy when it is not', async () => {
    const group = uniqueName('pods');
    const namespace = uniqueName('pods-ns');
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const node = uniqueName('pods-node');
    await createNode(node, {}, { 'test-group': group });
    // No kubelet runs here: the test plays its part, binding pods and reporting them Ready or not.
    const createPod = (name: string, nodeName: string) =>
      core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name, labels: { app: group } },
          spec: { nodeName, containers: [{ name: 'app', image: 'nodecare.invalid/none' }] },
        },
      });
    const setReady = (name: string, ready: boolean) =>
      core.patchNamespacedPodStatus(
        {
          name,
          namespace,
          body: {
            status: {
              phase: 'Running',
              conditions: [
                { type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date() },
              ],
            },
          },
        },
        mergePatch,
      );
    // A Ready pod with the same labels on another node never counts for this one.
    await createPod('elsewhere', `other-${node}`);
    await setReady('elsewhere', true);
    await createPod('here', node);
    const sxName = uniqueName('sx-pods');
    await createSystemExtension(custom, sxName, {
      nodeSelector: { matchLabels: { 'test-group': group } },
      probe: { podReady: { namespace, selector: { matchLabels: { app: group } } } },
      ...fast,
    });
    await spawnAgent(node);
    await waitForState(node, sxName, 'Unhealthy');
    expect((await lease(node, sxName))?.metadata?.annotations?.[LeaseAnnotation.reason]).toBe(
      'TooFewPodsReady',
    );
    await setReady('here', true);
    await waitForState(node, sxName, 'Healthy');
    await setReady('here', false);
    await waitForState(node, sxName, 'Unhealthy');
    await core.deleteNamespace({ name: namespace });
  });

  it('deletes the Lease when the annotation is removed, and leaves Leases of a deleted Node to garbage collection', async () => {
    const nodeName = uniqueName('agent-dereg');
    const web = await httpServer();
    await createNode(nodeName, {
      ...annotation('one', `http://127.0.0.1:${web.port}/`),
      ...annotation('two', `tcp://127.0.0.1:${web.port}`),
    });
    const agent = await spawnAgent(nodeName);
    await waitForState(nodeName, 'one', 'Healthy');
    await waitForState(nodeName, 'two', 'Healthy');

    await core.patchNode(
      {
        name: nodeName,
        body: { metadata: { annotations: { [`${EXTENSION_ANNOTATION_PREFIX}one`]: null } } },
      },
      mergePatch,
    );
    await eventually(async () => ((await lease(nodeName, 'one')) === undefined ? true : undefined), {
      timeoutMs: 5_000,
      what: 'the deregistered lease to be deleted',
    });
    expect(await leaseState(nodeName, 'two')).toBe('Healthy');

    await core.deleteNode({ name: nodeName });
    await agent.waitForLog('Node is gone; stopped probing (its leases are garbage-collected with it)');
    await eventually(async () => ((await lease(nodeName, 'two')) === undefined ? true : undefined), {
      timeoutMs: 60_000,
      what: 'the garbage collector to delete the lease owned by the deleted node',
    });
    web.server.close();
  });

  it('reports malformed registrations as Unknown / InvalidRegistration, keeps the others working, and recovers when fixed', async () => {
    const nodeName = uniqueName('agent-bad');
    const web = await httpServer();
    const good = annotation('good', { probe: { http: { url: `http://127.0.0.1:${web.port}/` } }, ...fast });
    const bad = {
      ...annotation('bad-json', '{"probe": {'),
      ...annotation('bad-kind', { probe: { carrierPigeon: {} } }),
      ...annotation('bad-exec', { probe: { exec: { command: ['/bin/true'] } } }),
      ...annotation('bad-target', { probe: { http: { url: 'http://10.1.2.3:8080/healthz' } } }),
    };
    await createNode(nodeName, { ...good, ...bad });
    await spawnAgent(nodeName);

    await waitForState(nodeName, 'good', 'Healthy');
    const expectations: Record<string, RegExp> = {
      'bad-json': /not valid JSON/,
      'bad-kind': /probe\.carrierPigeon: unknown probe kind/,
      'bad-exec': /exec probes are accepted only from SystemExtension objects/,
      'bad-target': /probe\.http\.url: target "10\.1\.2\.3" is not allowed from a node annotation/,
    };
    for (const [ext, message] of Object.entries(expectations)) {
      await waitForState(nodeName, ext, 'Unknown');
      const annotations = (await lease(nodeName, ext))?.metadata?.annotations ?? {};
      expect(annotations[LeaseAnnotation.reason]).toBe('InvalidRegistration');
      expect(annotations[LeaseAnnotation.message]).toMatch(message);
    }

    await core.patchNode(
      {
        name: nodeName,
        body: { metadata: { annotations: annotation('bad-json', `http://127.0.0.1:${web.port}/`) } },
      },
      mergePatch,
    );
    await waitForState(nodeName, 'bad-json', 'Healthy', 15_000);
    expect(await leaseState(nodeName, 'good')).toBe('Healthy');
    web.server.close();
  });

  it('stops on SIGTERM by itself (exit 0 before the SIGKILL grace) without marking extensions failed', async () => {
    const nodeName = uniqueName('agent-term');
    const hb = join(dir, `${nodeName}.hb`);
    await writeFile(hb, 'x');
    await utimes(hb, new Date(), new Date());
    await createNode(nodeName, annotation('file', { probe: { file: { path: hb } }, ...fast }));
    const agent = await spawnAgent(nodeName);
    await waitForState(nodeName, 'file', 'Healthy');
    const before = await lease(nodeName, 'file');

    // stop() sends SIGKILL after the grace; a killed process has no exit code, so 0 means it exited by itself.
    const code = await agent.stop(30_000);
    expect(code).toBe(0);
    expect(agent.logs.map((l) => l.msg)).toContain('Stopped nodecare-agent');
    const after = await lease(nodeName, 'file');
    expect(after?.metadata?.annotations?.[LeaseAnnotation.state]).toBe('Healthy');
    expect(after?.metadata?.annotations?.[LeaseAnnotation.since]).toBe(
      before?.metadata?.annotations?.[LeaseAnnotation.since],
    );
  });

  it('serves /healthz, /readyz and lint-clean /metrics', async () => {
    const nodeName = uniqueName('agent-metrics');
    await createNode(nodeName, annotation('bad', 'ftp://nowhere'));
    const agent = await spawnAgent(nodeName);
    const base = `http://127.0.0.1:${agent.healthPort}`;
    await eventually(async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), {
      what: '/readyz',
    });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const text = await (await fetch(`${base}/metrics`)).text();
    const { lintMetrics } = await import('../../lib/metrics-lint.ts');
    expect(lintMetrics(text, 'nodecare_agent_')).toEqual([]);
    expect(text).toMatch(/nodecare_agent_invalid_registrations 1/);
    expect(text).toMatch(/nodecare_agent_lease_writes_total\{operation="create",result="ok"\} \d+/);
  });

  // Regression, issue 7 item 2: an annotation silently replaced a SystemExtension of the same name, so whoever
  // could annotate a node could swap a cluster-wide check for a trivially healthy one.
  it('keeps a SystemExtension in force over a same-named annotation unless it allows overrides, and says so on the Lease', async () => {
    const closed = createTcpServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const refusedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const web = await httpServer();
    const group = uniqueName('grp');
    const sxName = uniqueName('sx-locked');
    await createSystemExtension(custom, sxName, {
      nodeSelector: { matchLabels: { 'test-group': group } },
      probe: { tcp: { port: refusedPort } },
      ...fast,
    });
    const nodeName = uniqueName('conflict');
    await createNode(nodeName, annotation(sxName, { probe: { tcp: { port: web.port } }, ...fast }), {
      'test-group': group,
    });
    await spawnAgent(nodeName);

    await waitForState(nodeName, sxName, 'Unhealthy');
    const message = async () =>
      (await lease(nodeName, sxName))?.metadata?.annotations?.[LeaseAnnotation.message] ?? '';
    await eventually(async () => ((await message()).includes(CONFLICT_LEASE_NOTE) ? true : undefined), {
      what: 'the conflict note on the lease message',
    });

    await custom.patchClusterCustomObject(
      {
        group: 'nodecare.io',
        version: 'v1alpha1',
        plural: 'systemextensions',
        name: sxName,
        body: { spec: { allowAnnotationOverride: true } },
      },
      mergePatch,
    );
    await waitForState(nodeName, sxName, 'Healthy');
    await eventually(async () => (!(await message()).includes(CONFLICT_LEASE_NOTE) ? true : undefined), {
      what: 'the conflict note to be gone',
    });
    web.server.close();
  });

  it('never repeats a key in a log line (every agent this file started)', () => {
    expect(agents.length).toBeGreaterThan(0);
    for (const agent of agents) expect(agent.duplicateKeyLines).toEqual([]);
  });
});
