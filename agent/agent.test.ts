// runAgent in-process against a loopback API server (lib/kube/testing.ts) with a fake clock and the fake
// lease store: the whole agent, with time and writes under the test's control.

import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CONFIG_OVER_ANNOTATION_NOTE,
  GROUP_VERSION,
  LeaseAnnotation,
  SYSTEM_EXTENSION,
  agentLeaseName,
  extensionLeaseName,
  parseExtensionSpec,
  type ExtensionSpec,
} from '../api/index.ts';
import { FakeClock } from '../lib/testing.ts';
import { consistently } from '../test/integration/helpers.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { FakeApiServer } from '../lib/kube/testing.ts';
import { createLogger } from '../lib/log.ts';
import { runAgent, type RunningAgent } from './agent.ts';
import type { AgentConfig } from './config.ts';
import { FakeLeaseStore } from '../lib/kube/testing.ts';

const NODES = '/api/v1/nodes';
const SYSTEM_EXTENSIONS = `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`;
const NODE_NAME = 'node-a';

interface LogLine {
  msg: string;
  [key: string]: unknown;
}

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function spec(raw: Record<string, unknown>): ExtensionSpec {
  const { result } = parseExtensionSpec(raw);
  if (!result.ok) throw new Error(result.problems.join('; '));
  return result.value;
}

function node(bootId: string, annotations: Record<string, string> = {}, generation = 0) {
  return {
    metadata: { name: NODE_NAME, uid: 'uid-a', annotations, labels: { generation: String(generation) } },
    status: { nodeInfo: { bootID: bootId } },
  };
}

async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface Harness {
  api: FakeApiServer;
  clock: FakeClock;
  store: FakeLeaseStore;
  logs: LogLine[];
  registry: Registry;
  agent: RunningAgent;
  status(path: string): Promise<number>;
}

async function start(
  nodes: object[],
  fileExtensions: ReadonlyMap<string, ExtensionSpec> = new Map(),
): Promise<Harness> {
  const api = await FakeApiServer.start();
  api.serve(NODES, nodes);
  api.serve(SYSTEM_EXTENSIONS);
  const client: KubeClient = api.client();
  const clock = new FakeClock();
  const store = new FakeLeaseStore();
  const logs: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const config: AgentConfig = {
    kubeconfig: undefined,
    nodeName: NODE_NAME,
    identity: 'agent-pod',
    healthPort: 0,
    healthAddress: '127.0.0.1',
    logLevel: 'info',
    logFormat: 'json',
    allowedPaths: [],
    kubeletPodsSocket: '',
    heartbeatDurationSeconds: 40,
    extensionRenewSeconds: 3600,
    requestTimeoutMs: 5_000,
    runtimeMetrics: false,
    fileExtensions,
  };
  const registry = new Registry();
  const agent = await runAgent(config, {
    clock,
    client,
    log: createLogger({ name: 'nodecare-agent', level: 'info' }, stream),
    registry,
    leaseStore: store,
    random: () => 0.5,
    bootTimeMs: clock.now() - 3_600_000,
  });
  cleanups.push(async () => {
    await agent.stop();
    await client.close();
    await api.close();
  });
  const status = async (path: string): Promise<number> =>
    (await fetch(`http://127.0.0.1:${agent.healthPort}${path}`)).status;
  return { api, clock, store, logs, registry, agent, status };
}

async function tcpListener(): Promise<number> {
  const server: Server = createServer((socket) => socket.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

describe('runAgent', () => {
  it('says at start that this API server serves no ResourceSlices: one log line and nodecare_agent_feature_available 0', async () => {
    const h = await start([node('boot-1')]);
    const line = (): LogLine | undefined => h.logs.find((l) => l.msg === 'Feature check: turned off');
    await until(() => line() !== undefined, 'the feature check');
    expect(line()).toMatchObject({ feature: 'resourceSlices', available: false });
    expect(String(line()?.detail)).toMatch(
      /not served \(needs Kubernetes 1\.34\+\): resourceSlices probes report Unknown/,
    );
    const metric = await h.registry.getSingleMetric('nodecare_agent_feature_available')?.get();
    expect(metric?.values.map((v) => [v.labels.feature, v.value])).toEqual([['resourceSlices', 0]]);
  });

  it('counts its own API requests and watch events by verb and resource (nodecare_agent_api_requests_total)', async () => {
    const h = await start([node('boot-1')]);
    const count = async (name: string): Promise<Map<string, number>> =>
      new Map(
        ((await h.registry.getSingleMetric(name)?.get())?.values ?? []).map((v) => [
          Object.values(v.labels).join(' '),
          v.value,
        ]),
      );
    // The node's watch (its list first), and discovery for the feature check.
    // Counted as it is sent; the fake server has it open once it recorded it (an event before is lost).
    await until(
      async () =>
        (await count('nodecare_agent_api_requests_total')).has('watch nodes') &&
        h.api.watchRequests(NODES).length > 0,
      'a node watch',
    );
    const requests = await count('nodecare_agent_api_requests_total');
    expect(requests.get('get discovery')).toBeGreaterThanOrEqual(1);
    expect(
      [...requests.keys()].every((k) => /^(get|list|watch|create|update|patch|delete) [a-z/]+$/.test(k)),
    ).toBe(true);
    h.api.emit(NODES, 'MODIFIED', node('boot-1', {}, 1));
    await until(
      async () => ((await count('nodecare_agent_api_watch_events_total')).get('nodes') ?? 0) >= 1,
      'a node watch event',
    );
  });

  it('logs an ignored annotation once, not again on every Node update', async () => {
    const bad = { 'extensions.nodecare.io/Not_A_Label': 'tcp://127.0.0.1:1' };
    const h = await start([node('boot-1', bad)]);
    const ignored = (): LogLine[] => h.logs.filter((l) => l.msg.startsWith('Ignored annotation'));
    await until(() => ignored().length === 1, 'the first warning');
    for (let i = 1; i <= 5; i++) h.api.emit(NODES, 'MODIFIED', node('boot-1', bad, i));
    await until(() => h.agent.states().size === 0 && h.api.watchRequests(NODES).length > 0, 'the updates');
    await consistently(() => expect(ignored()).toHaveLength(1), 200, { intervalMs: 10, what: 'one warning' });

    // A change is logged again: a second bad key is new, the first is not repeated.
    const worse = { ...bad, 'extensions.nodecare.io/Also_Bad': 'tcp://127.0.0.1:1' };
    h.api.emit(NODES, 'MODIFIED', node('boot-1', worse, 6));
    await until(() => ignored().length === 2, 'the warning about the new key');
    expect(ignored()[1]?.annotation).toBe('extensions.nodecare.io/Also_Bad');
  });

  it('keeps a config-file extension over a node annotation of the same name: noted on its Lease, logged once', async () => {
    const port = await tcpListener();
    const extensions = new Map([
      ['web', spec({ probe: { tcp: { port } }, periodSeconds: 10, startupGraceSeconds: 0 })],
    ]);
    // The annotation would probe a closed port: were it in force, the extension would fail.
    const annotation = {
      'extensions.nodecare.io/web': JSON.stringify({ probe: { tcp: { port: 1 } }, startupGraceSeconds: 0 }),
    };
    const h = await start([node('boot-1', annotation)], extensions);
    const lease = extensionLeaseName(NODE_NAME, 'web');
    const message = (): string =>
      h.store.leases.get(lease)?.metadata.annotations?.[LeaseAnnotation.message] ?? '';
    await until(async () => {
      await h.clock.advance(500);
      return message().includes(CONFIG_OVER_ANNOTATION_NOTE);
    }, 'the note on the lease');
    expect(h.agent.states()).toEqual(new Map([['web', 'Healthy']]));
    for (let i = 1; i <= 3; i++) h.api.emit(NODES, 'MODIFIED', node('boot-1', annotation, i));
    await consistently(
      () => {
        const conflicts = h.logs.filter((l) => l.msg.startsWith('Registration conflict'));
        expect(conflicts.map((l) => l.msg)).toEqual([
          'Registration conflict: annotation "extensions.nodecare.io/web" ignored: the agent\'s config file defines extension "web"',
        ]);
      },
      200,
      { intervalMs: 10, what: 'one conflict logged' },
    );
  });

  it('is live but not ready while its Node does not exist yet', async () => {
    const h = await start([]);
    await until(() => h.api.watchRequests(NODES).length > 0, 'the node watch');
    await h.clock.advance(30 * 60_000);
    expect(await h.status('/healthz')).toBe(200);
    expect(await h.status('/readyz')).toBe(503);

    h.api.emit(NODES, 'ADDED', node('boot-1'));
    await until(async () => (await h.status('/readyz')) === 200, 'ready once the Node exists');
    expect(await h.status('/healthz')).toBe(200);
  });

  it('republishes every lease and the heartbeat with the new boot ID as soon as the Node reports it', async () => {
    const port = await tcpListener();
    const extensions = new Map([
      ['web', spec({ probe: { tcp: { port } }, periodSeconds: 10, startupGraceSeconds: 0 })],
      ['dns', spec({ probe: { tcp: { port } }, periodSeconds: 10, startupGraceSeconds: 0 })],
    ]);
    const h = await start([node('boot-1')], extensions);
    const bootIdOf = (lease: string): string | undefined =>
      h.store.leases.get(lease)?.metadata.annotations?.[LeaseAnnotation.bootId];
    const leases = [
      extensionLeaseName(NODE_NAME, 'web'),
      extensionLeaseName(NODE_NAME, 'dns'),
      agentLeaseName(NODE_NAME),
    ];
    const allOn = (bootId: string) => () => leases.every((l) => bootIdOf(l) === bootId);
    await until(async () => {
      await h.clock.advance(500);
      return allOn('boot-1')();
    }, 'the first writes');
    expect(h.agent.states()).toEqual(
      new Map([
        ['web', 'Healthy'],
        ['dns', 'Healthy'],
      ]),
    );

    // The kubelet posts the new boot ID. Renewals are an hour apart, the heartbeat 10 s: within a few
    // seconds of fake time every lease must carry the new boot ID.
    h.api.emit(NODES, 'MODIFIED', node('boot-2'));
    await until(
      () => h.api.watchRequests(NODES).length > 0 && h.logs.some((l) => l.rebooted === true),
      'the reboot',
    );
    for (let i = 0; i < 4; i++) await h.clock.advance(500);
    await until(allOn('boot-2'), 'every lease on the new boot', 5_000);
    expect([...h.agent.states().values()]).toEqual(['Healthy', 'Healthy']);
  });
});
