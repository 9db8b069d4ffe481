// Acceptance: killing the API server connection mid-run (stop and restart kube-apiserver) loses nothing —
// the agent reconnects and the Leases resume. This file starts its own control plane, because restarting the
// shared one would disturb every other test.

import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import {
  connect,
  createServer as createTcpServer,
  type AddressInfo,
  type Server as TcpServer,
} from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_NAMESPACE,
  LeaseAnnotation,
  agentLeaseName,
  extensionLeaseName,
} from '../../api/index.ts';
import { startControlPlane, type ControlPlane } from '../controlplane/controlplane.ts';
import { eventually, uniqueName, FAST_PROBING, createSystemExtension } from './helpers.ts';
import { startAgent, type ProgramProcess } from './processes.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** How long kube-apiserver stays stopped before it is started again (its start-up adds several seconds more). */
const DOWN_MS = 5_000;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let plane: ControlPlane;
let core: CoreV1Api;
let coordination: CoordinationV1Api;
let custom: CustomObjectsApi;
let dir: string;
let agent: (ProgramProcess & { healthPort: number }) | undefined;
const servers: Array<Server | TcpServer> = [];

beforeAll(async () => {
  plane = await startControlPlane({ scheduler: false });
  const base = join(ROOT, 'manifests', 'base');
  const applied = await plane.kubectl([
    'apply',
    '--server-side',
    '-f',
    join(base, 'namespaces.yaml'),
    '-f',
    join(base, 'crds'),
  ]);
  if (applied.code !== 0) throw new Error(`kubectl apply failed: ${applied.stderr}`);
  const established = await plane.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/systemextensions.nodecare.io',
  ]);
  if (established.code !== 0) throw new Error(`CRDs not established: ${established.stderr}`);
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  core = kc.makeApiClient(CoreV1Api);
  coordination = kc.makeApiClient(CoordinationV1Api);
  custom = kc.makeApiClient(CustomObjectsApi);
  dir = await mkdtemp(join(tmpdir(), 'nodecare-reconnect-it-'));
}, 240_000);

afterAll(async () => {
  await agent?.kill();
  for (const server of servers) {
    if ('closeAllConnections' in server) server.closeAllConnections();
    server.close();
  }
  await plane?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

/** Fails a check (with the agent's last words) once the agent process has died: waiting longer is pointless. */
function assertAgentAlive(): void {
  const child = agent?.child;
  if (child && (child.exitCode !== null || child.signalCode !== null)) {
    throw new Error(
      `the agent exited (${child.exitCode ?? child.signalCode}): ${agent?.stderr.slice(-20).join('\n')}`,
    );
  }
}

async function readLease(name: string): Promise<V1Lease | undefined> {
  assertAgentAlive();
  try {
    return await coordination.readNamespacedLease({ name, namespace: LEASE_NAMESPACE });
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}

function waitForState(node: string, extension: string, state: string, timeoutMs = 60_000): Promise<V1Lease> {
  return eventually(
    async () => {
      const lease = await readLease(extensionLeaseName(node, extension));
      return lease?.metadata?.annotations?.[LeaseAnnotation.state] === state ? lease : undefined;
    },
    { timeoutMs, intervalMs: 200, what: `lease ${extension} on ${node} to be ${state}` },
  );
}

function renewedAfter(name: string, afterMs: number, timeoutMs = 60_000): Promise<V1Lease> {
  return eventually(
    async () => {
      const lease = await readLease(name);
      const renew = lease?.spec?.renewTime;
      return renew && new Date(renew).getTime() > afterMs ? lease : undefined;
    },
    {
      timeoutMs,
      intervalMs: 250,
      what: `lease ${name} to be renewed after ${new Date(afterMs).toISOString()}`,
    },
  );
}

async function listen<T extends Server | TcpServer>(server: T, port = 0): Promise<number> {
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Resolves once nothing accepts connections on the API server's port any more. */
function apiServerDown(server: string): Promise<true> {
  const { hostname, port } = new URL(server);
  const refused = (): Promise<true | undefined> =>
    new Promise((resolve) => {
      const socket = connect({ host: hostname, port: Number(port) });
      socket.once('connect', () => {
        socket.destroy();
        resolve(undefined);
      });
      socket.once('error', () => resolve(true));
    });
  return eventually(refused, { timeoutMs: 30_000, intervalMs: 50, what: 'kube-apiserver to stop' });
}

async function readyz(port: number): Promise<number> {
  return (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
}

const fast = FAST_PROBING;

describe('nodecare-agent across an API server restart', () => {
  it('loses nothing: a change made while the API server is down is written once it is back, and leases resume', async () => {
    const nodeName = uniqueName('reconnect');
    const web = createServer((_req, res) => res.end('ok'));
    servers.push(web);
    const webPort = await listen(web);
    const tcp = createTcpServer((socket) => socket.end());
    servers.push(tcp);
    const tcpPort = await listen(tcp);

    // One extension from a node annotation, one from a SystemExtension: both sources must survive the restart.
    const sxName = uniqueName('sx-tcp');
    await createSystemExtension(custom, sxName, {
      nodeSelector: { matchLabels: { 'test-node': nodeName } },
      probe: { tcp: { port: tcpPort } },
      ...fast,
    });
    await core.createNode({
      body: {
        metadata: {
          name: nodeName,
          labels: { 'test-node': nodeName },
          annotations: {
            [`${EXTENSION_ANNOTATION_PREFIX}web`]: JSON.stringify({
              probe: { http: { url: `http://127.0.0.1:${webPort}/healthz` } },
              ...fast,
            }),
          },
        },
        status: {
          nodeInfo: { bootID: 'boot-1' } as never,
          addresses: [{ type: 'InternalIP', address: '10.99.0.1' }],
        },
      },
    });
    agent = await startAgent({
      kubeconfig: plane.kubeconfigPath,
      nodeName,
      allowedPaths: [dir],
      extraArgs: ['--extension-renew-seconds=5', '--heartbeat-duration-seconds=8'],
    });
    const running = agent;

    const webBefore = await waitForState(nodeName, 'web', 'Healthy');
    const sxBefore = await waitForState(nodeName, sxName, 'Healthy');
    await eventually(async () => ((await readyz(running.healthPort)) === 200 ? true : undefined), {
      what: 'the agent to be ready',
    });
    const heartbeatBefore = await eventually(() => readLease(agentLeaseName(nodeName)), {
      what: 'the heartbeat lease',
    });

    // Stop the API server; while it is down, the web extension breaks.
    const restarted = plane.restartApiServer(DOWN_MS);
    await apiServerDown(plane.server);
    await new Promise<void>((resolve) => {
      web.close(() => resolve());
      web.closeAllConnections();
    });
    const brokenAt = Date.now();
    await restarted;
    const backAt = Date.now();
    expect(
      backAt - brokenAt,
      'the API server was down for longer than the failure detection',
    ).toBeGreaterThan(DOWN_MS - 1_000);
    expect(running.logs.some((line) => line.msg === 'Watch failed; retrying with backoff')).toBe(true);

    // The change the agent made while it could not write is written once the API server is back.
    const webAfter = await waitForState(nodeName, 'web', 'Unhealthy');
    const since = Date.parse(webAfter.metadata?.annotations?.[LeaseAnnotation.since] ?? '');
    expect(since).toBeGreaterThanOrEqual(brokenAt - 1_000);
    expect(since, 'the state changed while the API server was down').toBeLessThan(backAt);
    expect(webAfter.metadata?.annotations?.[LeaseAnnotation.reason]).toBe('ConnectionRefused');

    // Renewals resume: the heartbeat (every 2 s) and the extension leases (every 5 s).
    await renewedAfter(agentLeaseName(nodeName), backAt);
    const sxAfter = await renewedAfter(extensionLeaseName(nodeName, sxName), backAt);
    expect(sxAfter.metadata?.annotations?.[LeaseAnnotation.state]).toBe('Healthy');

    // Nothing was deleted and recreated behind the scenes: the same objects carry on.
    expect(webAfter.metadata?.uid).toBe(webBefore.metadata?.uid);
    expect(sxAfter.metadata?.uid).toBe(sxBefore.metadata?.uid);
    expect((await readLease(agentLeaseName(nodeName)))?.metadata?.uid).toBe(heartbeatBefore.metadata?.uid);

    // The process lived through it and reports ready and healthy again.
    assertAgentAlive();
    await eventually(async () => ((await readyz(running.healthPort)) === 200 ? true : undefined), {
      timeoutMs: 60_000,
      what: 'the agent to be ready again',
    });
    expect((await fetch(`http://127.0.0.1:${running.healthPort}/healthz`)).status).toBe(200);

    // The node watch is live again: a registration added after the restart is picked up.
    await core.patchNode(
      {
        name: nodeName,
        body: {
          metadata: { annotations: { [`${EXTENSION_ANNOTATION_PREFIX}late`]: `tcp://127.0.0.1:${tcpPort}` } },
        },
      },
      mergePatch,
    );
    await waitForState(nodeName, 'late', 'Healthy');

    // And the broken extension recovers as usual.
    await listen(web, webPort);
    await waitForState(nodeName, 'web', 'Healthy', 30_000);
    assertAgentAlive();
  }, 300_000);
});
