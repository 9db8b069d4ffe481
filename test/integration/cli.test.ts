// kubectl-nodecare status / explain / extensions against the real control plane, with real agents probing real
// loopback servers and a real controller: nodes Ready, Degraded, Bootstrapping and BootstrapTimeout (one
// without an agent), foreign taints of other components, a SystemExtension and annotations. Checks the text,
// JSON and YAML outputs and the exit codes, that the plugin's answer equals what the controller wrote (it
// uses the same decision core), and the error paths (no kubeconfig, unreachable API server, unknown node, bad
// flags, --help).

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, type V1Node } from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
} from '../../api/index.ts';
import type { ExplainView } from '../../cli/verbs/explain.ts';
import type { ExtensionRow } from '../../cli/verbs/extensions.ts';
import type { StatusView } from '../../cli/verbs/status.ts';
import { adminKubeConfig, createSystemExtension, eventually, FAST_PROBING, uniqueName } from './helpers.ts';
import { startAgent, startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');

const RUN = uniqueName('cli');
const LABEL = 'nodecare.io/cli-test';
const SELECTOR = `${LABEL}=${RUN}`;
const NODE = {
  ready: `${RUN}-ready`,
  degraded: `${RUN}-degraded`,
  booting: `${RUN}-booting`,
  noAgent: `${RUN}-noagent`,
};
const EXT = {
  net: `${RUN}-net`,
  logs: `${RUN}-logs`,
  slow: `${RUN}-slow`,
  gpu: `${RUN}-gpu`,
  bad: `${RUN}-bad`,
};
/** The controller's and the plugin's settings must agree: the plugin decides with the same core. */
const BOOTSTRAP_TIMEOUT_SECONDS = 60;
const GRACE_SECONDS = 20;
const POLICY_ARGS = [
  `--bootstrap-timeout-seconds=${BOOTSTRAP_TIMEOUT_SECONDS}`,
  `--missing-lease-grace-seconds=${GRACE_SECONDS}`,
];
const FOREIGN_TAINTS = [
  { key: 'node.cilium.io/agent-not-ready', value: 'true', effect: 'NoSchedule' },
  { key: 'karpenter.sh/disrupted', effect: 'NoSchedule' },
  { key: 'readiness.k8s.io/network-ready', value: 'pending', effect: 'NoSchedule' },
  { key: 'ebs.csi.aws.com/agent-not-ready', effect: 'NoExecute' },
  { key: 'example.com/custom', value: 'x', effect: 'PreferNoSchedule' },
];

const processes: ProgramProcess[] = [];
const servers: Server[] = [];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runPlugin(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'cli', 'main.ts'), ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function pluginJson<T>(args: string[]): Promise<{ code: number | null; value: T; run: Run }> {
  const run = await runPlugin([...args, '-o', 'json', ...POLICY_ARGS]);
  expect(run.stderr, run.stderr).toBe('');
  return { code: run.code, value: JSON.parse(run.stdout) as T, run };
}

async function httpServer(): Promise<{ port: number; stop(): Promise<void> }> {
  const server = createServer((_req, res) => res.end('ok'));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

/** A loopback port with nothing listening (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

const http = (port: number, extra: object = {}): string =>
  JSON.stringify({ probe: { http: { url: `http://127.0.0.1:${port}/` } }, ...FAST_PROBING, ...extra });

async function createNode(
  name: string,
  extensions: Record<string, string>,
  extra: { labels?: Record<string, string>; taints?: typeof FOREIGN_TAINTS } = {},
): Promise<void> {
  await core.createNode({
    body: {
      metadata: {
        name,
        labels: { 'kubernetes.io/hostname': name, [LABEL]: RUN, ...extra.labels },
        annotations: Object.fromEntries(
          Object.entries(extensions).map(([ext, value]) => [`${EXTENSION_ANNOTATION_PREFIX}${ext}`, value]),
        ),
      },
      spec: { taints: extra.taints ?? [] },
      status: {
        allocatable: { cpu: '4', memory: '8Gi', pods: '110' },
        capacity: { cpu: '4', memory: '8Gi', pods: '110' },
        nodeInfo: { bootID: 'boot-1' } as never,
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
      },
    },
  });
}

const readNode = (name: string): Promise<V1Node> => core.readNode({ name });
const taintKeys = (node: V1Node): string[] => (node.spec?.taints ?? []).map((t) => t.key);
const condition = (node: V1Node) => node.status?.conditions?.find((c) => c.type === 'ExtensionsReady');

let flaky: { port: number; stop(): Promise<void> };
let controllerPort = 0;

beforeAll(async () => {
  await applyBaseManifests();
  const ok = await httpServer();
  flaky = await httpServer();
  const down = await closedPort();
  await createSystemExtension(custom, EXT.gpu, {
    nodeSelector: { matchLabels: { [`${LABEL}-gpu`]: RUN } },
    probe: { tcp: { host: '127.0.0.1', port: ok.port } },
    ...FAST_PROBING,
  });
  await createNode(NODE.ready, { [EXT.net]: http(ok.port) }, { labels: { [`${LABEL}-gpu`]: RUN } });
  await createNode(
    NODE.degraded,
    {
      [EXT.net]: http(flaky.port),
      [EXT.logs]: http(down, {
        critical: false,
        enforcement: 'DryRun',
        conditionType: 'ObservabilityComponentsHealthy',
      }),
    },
    { taints: FOREIGN_TAINTS },
  );
  await createNode(NODE.booting, {
    [EXT.slow]: http(down),
    [EXT.bad]: JSON.stringify({ probe: { http: { url: 'ftp://x' } } }),
  });
  await createNode(NODE.noAgent, { [EXT.net]: http(ok.port) });
  // The controller first, as in a cluster where nodes join later: it puts the bootstrap taint on, then lifts it.
  const controller = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--log-level=debug',
    `--identity=${uniqueName('controller')}`,
    // Its own election Lease: an earlier test's controller may still hold the default one for a while.
    `--leader-election-name=${RUN}`,
    '--leader-election-lease-duration-seconds=6',
    '--leader-election-renew-deadline-seconds=4',
    '--leader-election-retry-period-seconds=1',
    ...POLICY_ARGS,
  ]);
  processes.push(controller);
  controllerPort = (await controller.waitForLog('Started nodecare-controller')).port as number;
  // Leading before any agent reports: the nodes are held with the bootstrap taint, then released.
  await controller.waitForLog('Became leader');
  for (const nodeName of [NODE.ready, NODE.degraded, NODE.booting]) {
    processes.push(
      await startAgent({
        kubeconfig,
        nodeName,
        extraArgs: ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'],
      }),
    );
  }
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await Promise.all(Object.values(NODE).map((name) => core.deleteNode({ name }).catch(() => undefined)));
  await custom
    .deleteClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'systemextensions',
      name: EXT.gpu,
    })
    .catch(() => undefined);
});

describe('kubectl nodecare against the real control plane', () => {
  it('status, explain and extensions follow nodes through Ready, Bootstrapping, Degraded and BootstrapTimeout', async () => {
    // Booted: two nodes Ready (bootstrap taint gone), one held by an extension in its startup grace.
    await eventually(
      async () => {
        const [ready, degraded, booting] = (await Promise.all(
          [NODE.ready, NODE.degraded, NODE.booting].map(readNode),
        )) as [V1Node, V1Node, V1Node];
        return !taintKeys(ready).includes(BOOTSTRAP) &&
          condition(ready)?.status === 'True' &&
          !taintKeys(degraded).includes(BOOTSTRAP) &&
          taintKeys(booting).includes(BOOTSTRAP)
          ? true
          : undefined;
      },
      { timeoutMs: 45_000, what: 'ready and degraded bootstrapped, booting held' },
    );

    // explain of a Ready node: schedulable (exit 0), the SystemExtension as source, the bootstrap breakdown.
    // (The breakdown needs the BootstrapTaintRemoved event, recorded just after the taint went.)
    const readyText = await eventually(
      async () => {
        const run = await runPlugin(['explain', NODE.ready, ...POLICY_ARGS]);
        return /Bootstrap: nodecare released/.test(run.stdout) ? run : undefined;
      },
      { timeoutMs: 15_000, what: 'the bootstrap breakdown' },
    );
    expect(readyText.code, readyText.stdout + readyText.stderr).toBe(0);
    expect(readyText.stdout).toContain(`Node ${NODE.ready} is schedulable`);
    expect(readyText.stdout).toContain(
      'nodecare state: Ready; ExtensionsReady=True (AllExtensionsHealthy), nodecare.io/status=healthy',
    );
    expect(readyText.stdout).toContain(`✓ ${EXT.gpu}: Healthy (ProbeSucceeded)`);
    expect(readyText.stdout).toContain(`registered:   SystemExtension ${EXT.gpu}`);
    expect(readyText.stdout).toMatch(
      new RegExp(`registered: +node annotation extensions.nodecare.io/${EXT.net}`),
    );
    expect(readyText.stdout).toMatch(/probe: +tcp connect 127\.0\.0\.1:\d+/);
    expect(readyText.stdout).toMatch(/Bootstrap: nodecare released the node \S+ after its creation/);
    // From the controller's record on the BootstrapTaintRemoved event: the agent, each extension, the controller.
    expect(readyText.stdout).toMatch(/\+\S+ +\S+ +the agent's first report/);
    expect(readyText.stdout).toMatch(new RegExp(`\\+\\S+ +\\S+ +${EXT.gpu} Healthy`));
    expect(readyText.stdout).toMatch(/\+\S+ +\S+ +the controller removed the bootstrap taint/);
    expect(readyText.stdout).not.toContain('Reconstructed from the Leases');
    expect(readyText.stdout).toContain('If the agent stops renewing its Leases now:');
    expect(readyText.stdout).toContain(`add the runtime taint ${RUNTIME}`);

    // explain of the booting node: the bootstrap taint's owner, the failing extension, the deadline.
    // (Held by an extension that fails from the start: the agent times a startup grace from the machine's
    // boot, long past on a test host, so a grace cannot be relied on here.)
    const booting = await eventually(
      async () => {
        const b = await pluginJson<ExplainView>(['explain', NODE.booting]);
        return b.value.extensions.find((e) => e.name === EXT.slow)?.state === 'Unhealthy' ? b : undefined;
      },
      { timeoutMs: 20_000, what: 'the booting node held by an Unhealthy extension' },
    );
    expect(booting.code).toBe(1);
    expect(booting.value.state).toBe('Bootstrapping');
    expect(booting.value.schedulable).toBe(false);
    expect(booting.value.taints).toContainEqual(
      expect.objectContaining({
        key: BOOTSTRAP,
        owner: 'nodecare (bootstrap taint)',
        blocksScheduling: true,
      }),
    );
    const slow = booting.value.extensions.find((e) => e.name === EXT.slow);
    expect(slow).toMatchObject({
      state: 'Unhealthy',
      reason: 'ConnectionRefused',
      registeredBy: `node annotation extensions.nodecare.io/${EXT.slow}`,
      critical: true,
      enforcement: 'Enforce',
      blocking: true,
    });
    expect(slow?.probe).toMatch(/^http GET http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(slow?.since).toBeTruthy();
    expect(booting.value.next?.to).toBe('BootstrapTimeout');
    const bad = booting.value.extensions.find((e) => e.name === EXT.bad);
    expect(bad).toMatchObject({ state: 'Unknown', reason: 'InvalidRegistration' });
    expect(bad?.problems?.join(' ')).toContain('probe.http.url');
    expect(booting.value.bootstrap).toBeNull();

    // An extension fails on a Ready node: the runtime taint.
    await flaky.stop();
    await eventually(
      async () => (taintKeys(await readNode(NODE.degraded)).includes(RUNTIME) ? true : undefined),
      {
        timeoutMs: 30_000,
        what: 'runtime taint on the degraded node',
      },
    );

    const degraded = await pluginJson<ExplainView>(['explain', NODE.degraded]);
    expect(degraded.code).toBe(1);
    expect(degraded.value.state).toBe('Degraded');
    const owners = Object.fromEntries(degraded.value.taints.map((t) => [t.key, t]));
    expect(owners[RUNTIME]).toMatchObject({ owner: 'nodecare (runtime taint)', blocksScheduling: true });
    expect(owners['node.cilium.io/agent-not-ready']?.owner).toContain('Cilium');
    expect(owners['karpenter.sh/disrupted']?.owner).toBe('Karpenter');
    expect(owners['readiness.k8s.io/network-ready']?.owner).toContain('node-readiness-controller');
    expect(owners['ebs.csi.aws.com/agent-not-ready']?.owner).toContain('EBS CSI');
    expect(owners['example.com/custom']).toMatchObject({
      owner: 'unknown (not a well-known taint key)',
      blocksScheduling: false,
    });
    expect(degraded.value.extensions.find((e) => e.name === EXT.net)).toMatchObject({
      state: 'Unhealthy',
      reason: 'ConnectionRefused',
      blocking: true,
    });
    expect(degraded.value.extensions.find((e) => e.name === EXT.logs)).toMatchObject({
      critical: false,
      enforcement: 'DryRun',
      conditionType: 'ObservabilityComponentsHealthy',
      blocking: false,
    });
    expect(degraded.value.events.map((e) => e.reason)).toContain('RuntimeTaintAdded');

    const degradedText = await runPlugin(['explain', NODE.degraded, ...POLICY_ARGS]);
    expect(degradedText.code).toBe(1);
    expect(degradedText.stdout).toContain(`Node ${NODE.degraded} is NOT schedulable: 5 taints keep pods`);
    expect(degradedText.stdout).toContain('owner: Karpenter');
    expect(degradedText.stdout).toContain(`✗ ${EXT.net}: Unhealthy (ConnectionRefused)`);
    expect(degradedText.stdout).toContain('(✓ Healthy  ✗ Unhealthy  … Progressing  ? Unknown)');
    expect(degradedText.stdout).toMatch(/RuntimeTaintAdded: Added taint/);

    // The booting node runs into the bootstrap timeout; the node without an agent too.
    await eventually(
      async () => {
        const [b, n] = await Promise.all([readNode(NODE.booting), readNode(NODE.noAgent)]);
        return condition(b)?.reason === 'BootstrapTimeout' && condition(n)?.reason === 'BootstrapTimeout'
          ? true
          : undefined;
      },
      { timeoutMs: (BOOTSTRAP_TIMEOUT_SECONDS + 30) * 1000, what: 'bootstrap timeouts' },
    );

    // status: the plugin's verdict equals what the controller wrote, worst first, exit 1.
    const status = await eventually(
      async () => {
        const s = await pluginJson<StatusView>(['status', '-l', SELECTOR]);
        const nodes = await Promise.all(s.value.nodes.map((n) => readNode(n.name)));
        const agree = s.value.nodes.every((n, i) => condition(nodes[i]!)?.reason === n.condition.reason);
        return agree ? s : undefined;
      },
      { timeoutMs: 20_000, what: "the plugin's verdict to equal the controller's" },
    );
    expect(status.code).toBe(1);
    const states = Object.fromEntries(status.value.nodes.map((n) => [n.name, n.state]));
    expect(states).toEqual({
      [NODE.ready]: 'Ready',
      [NODE.degraded]: 'Degraded',
      [NODE.booting]: 'BootstrapTimeout',
      [NODE.noAgent]: 'BootstrapTimeout',
    });
    expect(status.value.nodes.map((n) => n.name).slice(2)).toEqual([NODE.degraded, NODE.ready]);
    expect(status.value.summary).toMatchObject({ nodes: 4, healthy: 1 });
    const noAgent = status.value.nodes.find((n) => n.name === NODE.noAgent);
    expect(noAgent?.agent).toBe('not reporting');
    expect(status.value.nodes.find((n) => n.name === NODE.degraded)?.failing).toEqual([EXT.logs, EXT.net]);

    const statusText = await runPlugin(['status', `--selector=${SELECTOR}`, ...POLICY_ARGS]);
    expect(statusText.code).toBe(1);
    const rows = statusText.stdout.split('\n');
    expect(rows[0]).toMatch(/^NODE +STATE +TAINTS +AGE +FAILING$/);
    expect(rows[1]).toMatch(/-(booting|noagent) +BootstrapTimeout +/);
    expect(rows[3]).toMatch(
      new RegExp(
        `^${NODE.degraded} +Degraded \\(ExtensionsUnhealthy\\) +runtime,node\\.cilium\\.io/agent-not-ready,karpenter`,
      ),
    );
    expect(rows[4]).toMatch(new RegExp(`^${NODE.ready} +Ready +<none> +\\S+ +<none>$`));
    expect(statusText.stdout).toContain(
      '4 nodes: 2 BootstrapTimeout, 1 Degraded (ExtensionsUnhealthy), 1 Ready; 1 healthy.',
    );
    expect(statusText.stdout).toContain(`kubectl nodecare explain ${rows[1]!.split(' ')[0]}`);

    const wide = await runPlugin(['status', '-l', SELECTOR, '-owide', ...POLICY_ARGS]);
    expect(wide.stdout).toMatch(/^NODE +STATE +CONDITION +LABEL +AGENT +EXTENSIONS +TAINTS +AGE +FAILING$/m);
    expect(wide.stdout).toMatch(
      new RegExp(`${NODE.noAgent} +BootstrapTimeout +False +unhealthy +not reporting`),
    );

    const yaml = await runPlugin(['status', '-l', SELECTOR, '-o', 'yaml', ...POLICY_ARGS]);
    expect((load(yaml.stdout) as StatusView).nodes).toHaveLength(4);

    // Only the Ready node selected: exit 0.
    const onlyReady = await runPlugin(['status', '-l', `${LABEL}-gpu=${RUN}`, ...POLICY_ARGS]);
    expect(onlyReady.code, onlyReady.stdout + onlyReady.stderr).toBe(0);
    expect(onlyReady.stdout).toContain('1 node: 1 Ready; 1 healthy.');

    // The controller's metrics saw the same: bootstraps timed, condition reasons counted (no node names).
    const metrics = await (await fetch(`http://127.0.0.1:${controllerPort}/metrics`)).text();
    const count = (re: RegExp): number => Number(re.exec(metrics)?.[1] ?? Number.NaN);
    expect(count(/^nodecare_controller_bootstrap_duration_seconds_count (\d+)$/m)).toBeGreaterThanOrEqual(2);
    expect(
      count(/^nodecare_controller_node_conditions\{status="False",reason="BootstrapTimeout"\} (\d+)$/m),
    ).toBeGreaterThanOrEqual(2);
    expect(metrics).not.toContain(NODE.ready);

    // Events: one per change, never one per reconcile (the nodes were reconciled many times meanwhile).
    for (const name of Object.values(NODE)) {
      const events = (
        await core.listNamespacedEvent({
          namespace: 'default',
          fieldSelector: `involvedObject.kind=Node,involvedObject.name=${name}`,
        })
      ).items;
      const reasons = events.map((e) => e.reason ?? '');
      // The same change (reason and message) recorded twice would be a per-reconcile event.
      const changes = events.map((e) => `${e.reason}: ${e.message}`);
      expect(new Set(changes).size, changes.join('\n')).toBe(changes.length);
      expect(events.every((e) => (e.count ?? 1) <= 1 && (e.series?.count ?? 1) <= 1)).toBe(true);
      for (const e of events) {
        const failure = [
          'RuntimeTaintAdded',
          'ExtensionUnhealthy',
          'BootstrapTimeout',
          'InvalidRegistration',
        ].includes(e.reason ?? '');
        expect(e.type, `${name} ${e.reason}`).toBe(failure ? 'Warning' : 'Normal');
      }
      if (name === NODE.degraded) expect(reasons).toContain('RuntimeTaintAdded');
      if (name === NODE.booting || name === NODE.noAgent) expect(reasons).toContain('BootstrapTimeout');
      if (name === NODE.booting) expect(reasons).toContain('InvalidRegistration');
    }

    // extensions: node counts per state, by source.
    const ext = await pluginJson<{ extensions: ExtensionRow[] }>(['extensions']);
    expect(ext.code).toBe(1);
    const byName = Object.fromEntries(ext.value.extensions.map((r) => [r.name, r]));
    expect(byName[EXT.net]).toMatchObject({
      sources: ['annotation'],
      nodes: 3,
      healthy: 1,
      unhealthy: 1,
      unknown: 1,
    });
    expect(byName[EXT.gpu]).toMatchObject({ sources: ['SystemExtension'], nodes: 1, healthy: 1 });
    expect(byName[EXT.logs]).toMatchObject({
      nodes: 1,
      unhealthy: 1,
      critical: false,
      enforcement: 'DryRun',
    });
    expect(byName[EXT.slow]).toMatchObject({ nodes: 1, unhealthy: 1 });
    const extText = await runPlugin(['extensions', ...POLICY_ARGS]);
    expect(extText.stdout).toMatch(
      /^NAME +SOURCE +NODES +HEALTHY +PROGRESSING +UNHEALTHY +UNKNOWN +CRITICAL +ENFORCEMENT$/m,
    );
    expect(extText.stdout).toMatch(new RegExp(`^${EXT.net} +annotation +3 +1 +0 +1 +1 +yes +Enforce$`, 'm'));
    expect(extText.stdout).toMatch(
      new RegExp(`^${EXT.gpu} +SystemExtension +1 +1 +0 +0 +0 +yes +Enforce$`, 'm'),
    );
  }, 240_000);

  it('without the policy flags judges with the policy the controller publishes in ClusterHealth; a flag given still wins (issue 51 item 5)', async () => {
    // The controller (60 s bootstrap timeout, 20 s grace) published its settings.
    const health = (await custom.getClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'clusterhealths',
      name: 'cluster',
    })) as { status?: { policy?: Record<string, unknown> } };
    expect(health.status?.policy).toMatchObject({
      bootstrapTaintKey: BOOTSTRAP,
      runtimeTaintKey: RUNTIME,
      bootstrapTimeoutSeconds: BOOTSTRAP_TIMEOUT_SECONDS,
      missingLeaseGraceSeconds: GRACE_SECONDS,
    });
    const view = async (args: string[]): Promise<StatusView> => {
      const run = await runPlugin(['status', `--selector=${SELECTOR}`, '-o', 'json', ...args]);
      expect(run.stderr, run.stderr).toBe('');
      return JSON.parse(run.stdout) as StatusView;
    };
    const states = async (args: string[]): Promise<Record<string, string>> =>
      Object.fromEntries((await view(args)).nodes.map((n) => [n.name, n.stateText]));
    const runtimeOwner = async (args: string[]): Promise<string | undefined> =>
      (await view(args)).nodes.find((n) => n.name === NODE.degraded)?.taints.find((t) => t.key === RUNTIME)
        ?.owner;
    // No flags: the same answers as with the controller's flags, BootstrapTimeout after 60 s among them
    // (with the plugin's own defaults, 900 s, the node would still be Bootstrapping).
    const published = await states([]);
    expect(published).toEqual(await states(POLICY_ARGS));
    expect(published[NODE.booting]).toMatch(/^BootstrapTimeout/);
    // A flag overrides the published value: told another runtime taint key, the plugin no longer calls the
    // controller's runtime taint its own.
    const owner = await runtimeOwner([]);
    expect(owner).toBe('nodecare (runtime taint)');
    expect(await runtimeOwner(['--runtime-taint-key=example.com/other'])).not.toBe(owner);
  });

  it('says clearly what is wrong: unknown node, no kubeconfig, unreachable API server, bad flags', async () => {
    const unknown = await runPlugin(['explain', `${RUN}-nope`]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(`kubectl nodecare explain: node "${RUN}-nope" not found`);
    expect(unknown.stdout).toBe('');

    const home = mkdtempSync(join(tmpdir(), 'nodecare-cli-'));
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    for (const verb of ['status', 'extensions']) {
      const none = await runPlugin([verb], { KUBECONFIG: undefined, HOME: home });
      expect(none.code).toBe(2);
      expect(none.stderr).toContain(
        `kubectl nodecare ${verb}: no kubeconfig: pass --kubeconfig, set KUBECONFIG`,
      );
    }

    const port = await closedPort();
    const unreachable = join(home, 'unreachable.yaml');
    writeFileSync(
      unreachable,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:' +
          port +
          '", insecure-skip-tls-verify: true}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n'),
    );
    for (const args of [['status'], ['explain', 'some-node'], ['extensions']]) {
      const down = await runPlugin([...args, `--kubeconfig=${unreachable}`]);
      expect(down.code, down.stderr).toBe(2);
      expect(down.stderr).toContain(`cannot reach the API server at https://127.0.0.1:${port}`);
    }

    const badSelector = await runPlugin(['status', '-l', 'a in (']);
    expect(badSelector.code).toBe(2);
    expect(badSelector.stderr).toContain('the API server rejected the request');

    const noNode = await runPlugin(['explain']);
    expect(noNode.code).toBe(2);
    expect(noNode.stderr).toContain('name a node: kubectl nodecare explain <node>');

    const badOutput = await runPlugin(['status', '-o', 'xml']);
    expect(badOutput.code).toBe(2);
    expect(badOutput.stderr).toContain('--output');

    const twoNodes = await runPlugin(['explain', 'a', 'b']);
    expect(twoNodes.code).toBe(2);
    expect(twoNodes.stderr).toContain("Unexpected argument 'b'");

    for (const verb of ['status', 'explain', 'extensions']) {
      const help = await runPlugin([verb, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(
        `Usage: kubectl nodecare ${verb} ${verb === 'explain' ? '<node> [options]' : '[options]'}`,
      );
      expect(help.stdout).toContain('--output');
      expect(help.stdout).toContain('--bootstrap-timeout-seconds');
    }
  }, 60_000);

  it("chooses the cluster as kubectl does, for every verb and for completion: KUBECONFIG's files merged, --context picks one of them", async () => {
    // The first file's current-context is a dead API server; the real cluster's context is only in the second.
    const real = load(readFileSync(kubeconfig, 'utf8')) as { 'current-context': string };
    const home = mkdtempSync(join(tmpdir(), 'nodecare-cli-'));
    onTestFinished(() => rmSync(home, { recursive: true, force: true }));
    const port = await closedPort();
    const first = join(home, 'first.yaml');
    writeFileSync(
      first,
      [
        'clusters: [{name: dead, cluster: {server: "https://127.0.0.1:' + port + '"}}]',
        'users: [{name: dead, user: {token: t}}]',
        'contexts: [{name: dead, context: {cluster: dead, user: dead}}]',
        'current-context: dead',
      ].join('\n'),
    );
    const env = { KUBECONFIG: [first, kubeconfig].join(':') };
    const current = await runPlugin(['status', '-o', 'json'], env);
    expect(current.code, current.stderr).toBe(2);
    expect(current.stderr).toContain(`cannot reach the API server at https://127.0.0.1:${port}`);

    const context = `--context=${real['current-context']}`;
    for (const args of [['status'], ['explain', NODE.ready], ['extensions']]) {
      const chosen = await runPlugin([...args, context, '-o', 'json', ...POLICY_ARGS], env);
      expect([0, 1], `${args[0]}: ${chosen.stderr}`).toContain(chosen.code);
      expect(chosen.stderr).toBe('');
      expect(JSON.parse(chosen.stdout)).toBeTypeOf('object');
    }
    // uninstall without --yes: it names that cluster and context first, and changes nothing.
    const uninstall = await runPlugin(['uninstall', context, '-n', `${RUN}-absent`], env);
    expect(uninstall.code, uninstall.stderr).toBe(0);
    const lines = uninstall.stdout.split('\n');
    expect(lines[0]).toMatch(
      new RegExp(
        `^cluster: https://\\S+ \\(kubeconfig ${first}:${kubeconfig} context ${real['current-context']}\\)$`,
      ),
    );
    expect(uninstall.stdout).toContain('nothing was changed (run again with --yes to do it)');
    expect(uninstall.stdout).not.toContain(`${RUN}-absent/`);

    // Completion of explain <node> (kubectl_complete-nodecare, which kubectl runs for `kubectl nodecare`):
    // the names the cluster of the --context typed has, with the prefix typed; then cobra's :4.
    const completed = await new Promise<Run>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [join(ROOT, 'cli', 'complete-main.ts'), 'explain', context, `${RUN}-`],
        {
          env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, stdout, stderr }));
    });
    expect(completed.code, completed.stderr).toBe(0);
    const candidates = completed.stdout.trimEnd().split('\n');
    expect(candidates.pop()).toBe(':4');
    expect(candidates).toEqual(expect.arrayContaining(Object.values(NODE)));
    for (const name of candidates) expect(name.startsWith(`${RUN}-`), name).toBe(true);
    // Without the --context, the dead cluster of the current context: nothing, silently, still :4.
    const dead = await runPlugin(['__complete', 'explain', `${RUN}-`], env);
    expect(dead).toMatchObject({ code: 0, stdout: ':4\n', stderr: '' });
  }, 60_000);
});
