// `npm run bench`: measures docs/design.md section 9 (P1–P7) at cluster scale on the local control plane.
//
// It starts etcd and kube-apiserver tuned for scale, creates N Nodes and E SystemExtensions that every node
// requires, drives the nodes' Leases with the fleet simulator (bench/fleet.ts: the agent's real lease code,
// many simulated agents per process, the nodes split between processes by bench/simulator.ts), runs the real controller binary, and measures from observed API
// state (bench/observer.ts: watch arrival times). One real agent process on one more node is measured for
// P3 and P6. Prints one table and writes JSON to bench/results/. See README "Benchmark".

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { COMPONENT_NAMESPACE, GROUP_VERSION, SYSTEM_EXTENSION, extensionLeaseName } from '../api/index.ts';
import { evaluateRollup, type RollupPair } from '../controller/rollup/evaluate.ts';
import { AGENT_OPTIONS } from '../agent/config.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { loadConnection } from '../lib/kube/config.ts';
import { freePorts, startControlPlane, type ControlPlane } from '../test/controlplane/controlplane.ts';
import type { SimState } from './fleet.ts';
import { Observer, type SeenNode } from './observer.ts';
import { procCpuMs, procMemory, ROOT, startBinary, type Program } from './procs.ts';
import {
  defaultFleetProcesses,
  NODES_PER_FLEET_PROCESS,
  Simulator,
  type SimulatorInit,
} from './simulator.ts';
import { fmtMiB, fmtMs, percentile, renderTable, writeResults, type Results, type Row } from './report.ts';
import { leasesPath } from '../lib/kube/paths.ts';

const USAGE = `Usage: npm run bench -- [options]

  --nodes N              simulated nodes (10..10000, default 1000)
  --extensions E         extensions every node requires (1..20, default 5)
  --samples S            P1 and P2 changes, spread across S nodes (default 250, at most half the nodes)
  --iterations K         rounds of the P2 change (default 1)
  --change-rate R        changes per second in P1/P2 (default 20)
  --steady-seconds T     P4/P6 window (default 180; the goals ask for at least 180)
  --agent-heartbeat-seconds H  the measured agent's heartbeat lease (default: the agent's own, 40)
  --fleet-processes P    processes the simulated agents are split between (1..32, default one per
                         ${NODES_PER_FLEET_PROCESS} nodes)
  --out DIR              results directory (default bench/results)
  --keep-logs            keep the programs' logs (their directory is printed at the start)
  --controller-workers W the controllers' --workers (default: the controller's own default)
  --smoke                100 nodes in 2 fleet processes, 50 samples, 10 s window, 8 s heartbeat: checks
                         that it runs
  --help`;

/** kube-apiserver flags for scale: in-flight limits raised (etcd already runs without fsync). */
const SCALE_FLAGS = ['--max-requests-inflight=3000', '--max-mutating-requests-inflight=1000'];
/** Simulated agents starting at once (each writes 1 + E leases before the next one starts). */
const FLEET_START_CONCURRENCY = 24;
/**
 * The simulator's request deadline. Not the agent's 10 s: a simulator process carries a thousand agents'
 * requests on a handful of connections, and an HTTP/1.1 request given up in flight costs its connection. When
 * a burst held the API server's answers past 10 s (the controller converging on 5,000 nodes while other work
 * shared the 2 cores), every connection was torn down together, the thousands of retries waited on new TLS
 * handshakes that took the CPU the API server needed to answer, and the simulator never wrote again. The API
 * server answers or gives up within 60 s by itself; 30 s rides out such a burst.
 */
const FLEET_REQUEST_TIMEOUT_MS = 30_000;
const RSS_SAMPLE_MS = 5_000;

interface Options {
  nodes: number;
  extensions: number;
  samples: number;
  iterations: number;
  changeRate: number;
  steadySeconds: number;
  agentHeartbeatSeconds: number;
  fleetProcesses: number;
  out: string;
  keepLogs: boolean;
  /** The controllers' --workers; undefined: the controller's default. */
  controllerWorkers: number | undefined;
}

function parseOptions(argv: string[]): Options | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string' },
      extensions: { type: 'string' },
      samples: { type: 'string' },
      iterations: { type: 'string' },
      'change-rate': { type: 'string' },
      'steady-seconds': { type: 'string' },
      'agent-heartbeat-seconds': { type: 'string' },
      'fleet-processes': { type: 'string' },
      out: { type: 'string' },
      'keep-logs': { type: 'boolean' },
      'controller-workers': { type: 'string' },
      smoke: { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return undefined;
  }
  const smoke = values.smoke ?? false;
  const problems: string[] = [];
  const int = (name: string, raw: string | undefined, def: number, min: number, max: number): number => {
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max)
      problems.push(`--${name}: "${raw}" is not an integer in ${min}..${max}`);
    return n;
  };
  const nodes = int('nodes', values.nodes, smoke ? 100 : 1000, 10, 10_000);
  const opts: Options = {
    nodes,
    extensions: int('extensions', values.extensions, 5, 1, 20),
    samples: int('samples', values.samples, smoke ? 50 : 250, 1, 10_000),
    iterations: int('iterations', values.iterations, 1, 1, 100),
    changeRate: int('change-rate', values['change-rate'], 20, 1, 1000),
    steadySeconds: int('steady-seconds', values['steady-seconds'], smoke ? 10 : 180, 5, 3600),
    agentHeartbeatSeconds: int(
      'agent-heartbeat-seconds',
      values['agent-heartbeat-seconds'],
      smoke ? 8 : AGENT_OPTIONS['heartbeat-duration-seconds'].default,
      8,
      3600,
    ),
    fleetProcesses: int(
      'fleet-processes',
      values['fleet-processes'],
      smoke ? 2 : defaultFleetProcesses(nodes),
      1,
      32,
    ),
    out: values.out ?? join(ROOT, 'bench', 'results'),
    keepLogs: values['keep-logs'] ?? false,
    controllerWorkers:
      values['controller-workers'] === undefined
        ? undefined
        : int('controller-workers', values['controller-workers'], 8, 1, 256),
  };
  if (opts.samples > Math.floor(nodes / 2))
    problems.push(`--samples: ${opts.samples} is more than half the nodes (${Math.floor(nodes / 2)})`);
  if (problems.length > 0) throw new Error(`bad options:\n  ${problems.join('\n  ')}\n\n${USAGE}`);
  return opts;
}

/** MiB with one decimal: a miss by less than 1 MiB reads "0.1 MiB", not "0 MiB". */
const fmtMiB1 = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MiB`;

/** ", misses by X" when `value` is over `goal` (formatted by `fmt`), else ''. */
const over = (value: number | undefined, goal: number, fmt: (n: number) => string): string =>
  value !== undefined && value > goal ? `; misses by ${fmt(value - goal)}` : '';

const say = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const load1 = (): number => loadavg()[0] ?? 0;

/** Builds dist/ (the shipped binaries) without type-checking: the type check is the test command's job. */
async function build(): Promise<void> {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--noCheck'], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`build failed (tsc exited ${code})`)),
    );
  });
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

const EXTENSION_NAMES = ['kube-proxy', 'cni-agent', 'logging-agent', 'csi-node', 'device-plugin'];

/** Probes the measured agent runs against real local targets (one of each of five light probe kinds). */
function extensionSpecs(count: number, httpPort: number, heartbeatFile: string): Array<[string, unknown]> {
  const probes: unknown[] = [
    { http: { url: `http://127.0.0.1:${httpPort}/healthz` } },
    { tcp: { host: '127.0.0.1', port: httpPort } },
    { file: { path: heartbeatFile } },
    { process: { name: 'etcd' } },
    { nodeCondition: { type: 'Ready', status: 'True' } },
  ];
  return Array.from({ length: count }, (_, i) => [
    EXTENSION_NAMES[i] ?? `extension-${i}`,
    probes[i % probes.length],
  ]);
}

function nodeBody(name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
    status: {
      allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
      capacity: { cpu: '4', memory: '16Gi', pods: '110' },
      nodeInfo: {
        architecture: 'amd64',
        bootID: randomUUID(),
        containerRuntimeVersion: 'containerd://2.1.0',
        kernelVersion: '6.12.0',
        kubeProxyVersion: '',
        kubeletVersion: 'v1.36.3',
        machineID: randomUUID().replaceAll('-', ''),
        operatingSystem: 'linux',
        osImage: 'nodecare bench (simulated node)',
        systemUUID: randomUUID(),
      },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
    },
  };
}

interface CreatedNode {
  name: string;
  uid: string;
  bootId: string;
}

async function createNode(client: KubeClient, name: string): Promise<CreatedNode> {
  const created = await client.request<{
    metadata: { name: string; uid: string };
    status?: { nodeInfo?: { bootID?: string } };
  }>('POST', '/api/v1/nodes', { body: nodeBody(name), timeoutMs: 30_000 });
  return { name, uid: created.metadata.uid, bootId: created.status?.nodeInfo?.bootID ?? '' };
}

const ready = (n: SeenNode): boolean =>
  n.label === 'healthy' && !n.bootstrapTaint && !n.runtimeTaint && n.condition === 'True';
const bootstrapping = (n: SeenNode): boolean => n.bootstrapTaint && n.label === 'progressing';

/** Latency of `samples` changes fired at `rate` per second: lease written (observed) → node state observed. */
async function measureChanges(
  observer: Observer,
  changes: Array<{
    node: string;
    lease: string;
    leaseTest: (state: string) => boolean;
    nodeTest: (n: SeenNode) => boolean;
    fire(): void;
  }>,
  ratePerSecond: number,
  timeoutMs: number,
): Promise<{ latencies: number[]; missed: number }> {
  const latencies: number[] = [];
  let missed = 0;
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (const [i, change] of changes.entries()) {
    const wait = t0 + (i * 1000) / ratePerSecond - performance.now();
    if (wait > 0) await sleep(wait);
    const leaseSeen = observer.leases.waitFor(change.lease, (l) => change.leaseTest(l.state), timeoutMs);
    const nodeSeen = observer.nodes.waitFor(change.node, change.nodeTest, timeoutMs);
    change.fire();
    pending.push(
      Promise.all([leaseSeen, nodeSeen]).then(([l, n]) => {
        if (l === undefined || n === undefined) missed++;
        else latencies.push(Math.max(0, n - l));
      }),
    );
  }
  await Promise.all(pending);
  return { latencies, missed };
}

function distributionRow(
  id: string,
  measure: string,
  result: { latencies: number[]; missed: number },
  goalMs: number,
): Row {
  const p50 = percentile(result.latencies, 50);
  const p99 = percentile(result.latencies, 99);
  const max = percentile(result.latencies, 100);
  const n = result.latencies.length;
  return {
    id,
    measure,
    goal: `p99 ≤ ${fmtMs(goalMs)}`,
    measured: `p50 ${fmtMs(p50)}, p99 ${fmtMs(p99)}, max ${fmtMs(max)} (n=${n}${result.missed ? `, ${result.missed} missed` : ''})${over(p99, goalMs, fmtMs)}`,
    pass: p99 !== undefined && result.missed === 0 && p99 <= goalMs,
    load: load1(),
    values: { p50Ms: p50 ?? null, p99Ms: p99 ?? null, maxMs: max ?? null, samples: n, missed: result.missed },
  };
}

/** The controller's leader election Lease holder. */
async function leaderOf(client: KubeClient): Promise<string> {
  const lease = await client.get<{ spec?: { holderIdentity?: string } }>(
    leasesPath(COMPONENT_NAMESPACE, 'nodecare-controller'),
  );
  return lease.spec?.holderIdentity ?? '';
}

async function run(opts: Options): Promise<Results> {
  const startedAt = new Date().toISOString();
  const rows: Row[] = [];
  const { nodes: N, extensions: E } = opts;
  const cpu = cpus();
  const machine = `${cpu.length}× ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}`;
  const logDir = await mkdtemp(join(tmpdir(), 'nodecare-bench-'));
  say(`logs in ${logDir}`);
  const programs: Program[] = [];
  let plane: ControlPlane | undefined;
  let fleet: Simulator | undefined;
  let observer: Observer | undefined;
  let client: KubeClient | undefined;
  const http = createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const httpPort = (http.address() as AddressInfo).port;
  const heartbeatFile = join(logDir, 'logging-agent.heartbeat');
  // Node options for the controller processes only (default none: the binary as shipped); for experiments,
  // recorded with the results.
  const controllerEnv: Record<string, string> = {
    ...(process.env.BENCH_CONTROLLER_NODE_OPTIONS
      ? { NODE_OPTIONS: process.env.BENCH_CONTROLLER_NODE_OPTIONS }
      : {}),
    ...(process.env.BENCH_CONTROLLER_MALLOC_ARENA_MAX
      ? { MALLOC_ARENA_MAX: process.env.BENCH_CONTROLLER_MALLOC_ARENA_MAX }
      : {}),
  };
  const fleetStartWrites: Record<string, number> = {};
  let failure: string | undefined;
  const cleanup = async (): Promise<void> => {
    await Promise.all(programs.map((p) => p.stop(5_000)));
    await fleet?.stop();
    await observer?.stop();
    await client?.close();
    await plane?.stop();
    http.close();
  };
  // Ctrl-C stops what the benchmark started (the control plane would otherwise be left to the next run).
  const onSignal = (): void => {
    say('interrupted; stopping');
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  await writeFile(heartbeatFile, 'alive\n');

  try {
    say('building dist/ (the binaries measured)');
    await build();
    plane = await startControlPlane({
      scheduler: false,
      controllerManager: false,
      apiserverFlags: SCALE_FLAGS,
      auditPolicy: false, // the benchmark reads no audit log; at 5,000 nodes it is 700 more lines a second
      log: (l) => say(l),
    });
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
    await plane.kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/systemextensions.nodecare.io',
    ]);
    client = new KubeClient(await loadConnection(plane.kubeconfigPath), {
      userAgent: 'nodecare-bench',
      connections: 64,
    });
    const specs = extensionSpecs(E, httpPort, heartbeatFile);
    const extensions = specs.map(([name]) => name);
    for (const [name, probe] of specs) {
      await client.request('POST', `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`, {
        body: { apiVersion: GROUP_VERSION, kind: SYSTEM_EXTENSION.kind, metadata: { name }, spec: { probe } },
      });
    }

    say(`creating ${N} nodes`);
    const names = Array.from({ length: N }, (_, i) => `bench-node-${String(i).padStart(5, '0')}`);
    const created: CreatedNode[] = [];
    const c = client;
    await pool(names, 32, async (name) => void created.push(await createNode(c, name)));
    created.sort((a, b) => (a.name < b.name ? -1 : 1));
    const S = opts.samples;
    const cohort = created.slice(0, S); // Bootstrapping at the start: their last extension is Progressing
    const others = created.slice(S);

    observer = new Observer(client);
    await observer.start();

    say(
      `starting the fleet simulator: ${N} agents × (${E} extension leases + heartbeat) in ${opts.fleetProcesses} processes`,
    );
    fleet = new Simulator(opts.fleetProcesses, say);
    const allHealthy: SimState[] = extensions.map(() => 'Healthy');
    const init: SimulatorInit = {
      kubeconfig: plane.kubeconfigPath,
      nodes: created.map((n, i) => ({
        ...n,
        states: i < S ? [...allHealthy.slice(0, -1), 'Progressing'] : allHealthy,
      })),
      extensions,
      heartbeatDurationSeconds: AGENT_OPTIONS['heartbeat-duration-seconds'].default,
      extensionRenewSeconds: AGENT_OPTIONS['extension-renew-seconds'].default,
      requestTimeoutMs: FLEET_REQUEST_TIMEOUT_MS,
      startConcurrency: FLEET_START_CONCURRENCY,
    };
    const started = await fleet.start(init, 30 * 60_000);
    Object.assign(fleetStartWrites, await fleet.stats(60_000));
    say(
      `fleet wrote ${started.leases} leases in ${fmtMs(started.elapsedMs)} (${JSON.stringify(fleetStartWrites)})`,
    );

    // ---- Convergence of a freshly started controller, and P5 peak during its initial list.
    const controllerArgs = (identity: string, healthPort = 0): string[] => [
      `--kubeconfig=${plane?.kubeconfigPath}`,
      `--identity=${identity}`,
      `--health-port=${healthPort}`,
      ...(opts.controllerWorkers === undefined ? [] : [`--workers=${opts.controllerWorkers}`]),
    ];
    // Controller A's /metrics: its node writes by result (a 409 is API-server work the queue pays for).
    const [metricsPortA] = await freePorts(1);
    const expected = new Map<string, (n: SeenNode) => boolean>();
    for (const n of cohort) expected.set(n.name, bootstrapping);
    for (const n of others) expected.set(n.name, ready);
    say('starting controller A; waiting for every node to converge');
    const t0 = performance.now();
    const controllerA = startBinary(
      'controller-a',
      'controller',
      controllerArgs('bench-controller-a', metricsPortA),
      logDir,
      controllerEnv,
    );
    programs.push(controllerA);
    const convergence = await observer.converged(expected, 180_000 + N * 60);
    const convergedMs = convergence.atMs === undefined ? undefined : convergence.atMs - t0;
    const afterStart = await procMemory(controllerA.child.pid ?? 0);
    rows.push({
      id: 'conv',
      measure: `fresh controller start → every node converged`,
      goal: 'none (reported)',
      measured:
        convergedMs === undefined
          ? `not converged: ${convergence.missing.length} nodes left`
          : `${fmtMs(convergedMs)}`,
      pass: null,
      load: load1(),
      values: { convergedMs: convergedMs ?? null, notConverged: convergence.missing.length },
    });
    say(`converged in ${fmtMs(convergedMs)}; controller peak RSS ${fmtMiB(afterStart.peakRssBytes)}`);

    // ---- P1: the last required lease turns Healthy → bootstrap taint gone.
    const rollupWritesBefore = observer.writeCount().clusterHealth;
    const last = E - 1;
    say(`P1: ${S} nodes finish bootstrapping at ${opts.changeRate}/s`);
    const f = fleet;
    const p1 = await measureChanges(
      observer,
      cohort.map((n) => ({
        node: n.name,
        lease: extensionLeaseName(n.name, extensions[last] as string),
        leaseTest: (s) => s === 'Healthy',
        nodeTest: (node) => !node.bootstrapTaint,
        fire: () => f.set(n.name, last, 'Healthy'),
      })),
      opts.changeRate,
      60_000,
    );
    rows.push(distributionRow('P1', 'last lease Healthy → bootstrap taint gone', p1, 1000));

    // ---- P2: an agent writes a failure → runtime taint present (then healthy again).
    const p2 = { latencies: [] as number[], missed: 0 };
    for (let round = 0; round < opts.iterations; round++) {
      say(`P2 round ${round + 1}/${opts.iterations}: ${S} failures at ${opts.changeRate}/s`);
      const restored: Promise<unknown>[] = [];
      const r = await measureChanges(
        observer,
        cohort.map((n, i) => {
          const ext = (i + round) % E;
          return {
            node: n.name,
            lease: extensionLeaseName(n.name, extensions[ext] as string),
            leaseTest: (s) => s === 'Unhealthy',
            nodeTest: (node) => {
              if (!node.runtimeTaint) return false;
              // Heal at once, so no more than a handful of nodes fail together (the breaker stays closed).
              f.set(n.name, ext, 'Healthy');
              restored.push(observer!.nodes.waitFor(n.name, ready, 60_000));
              return true;
            },
            fire: () => f.set(n.name, ext, 'Unhealthy'),
          };
        }),
        opts.changeRate,
        60_000,
      );
      p2.latencies.push(...r.latencies);
      p2.missed += r.missed;
      await Promise.all(restored);
    }
    rows.push(distributionRow('P2', 'failure written → runtime taint present', p2, 1000));
    rows.push(await nodeWriteConflictsRow(metricsPortA!));
    // The roll-up over the same phases: every change above moved a node's contribution (P1 once, P2 twice:
    // the failure and its healing), and the roll-up is written at most once per change, fewer when
    // changes fall within its one-second coalescing window.
    await sleep(3_000); // the last coalesced write
    const rollupWrites = observer.writeCount().clusterHealth - rollupWritesBefore;
    const contributionChanges = p1.latencies.length + p1.missed + 2 * (p2.latencies.length + p2.missed);
    rows.push({
      id: 'rollup-w',
      measure: 'ClusterHealth writes per node change (P1 and P2 phases)',
      goal: '≤ 1 per change',
      measured: `${rollupWrites} writes for ${contributionChanges} changes (${(rollupWrites / Math.max(1, contributionChanges)).toFixed(2)} per change)`,
      pass: rollupWrites <= contributionChanges,
      load: load1(),
      values: { rollupWrites, contributionChanges },
    });

    // ---- P4 and P6 together: a real agent on one more node, then a quiet window.
    say('starting the measured agent (dist/agent/main.js, default settings)');
    const agentNode = await createNode(client, 'bench-agent-node');
    const agentArgs = [
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--node-name=${agentNode.name}`,
      '--health-port=0',
      ...(opts.agentHeartbeatSeconds !== AGENT_OPTIONS['heartbeat-duration-seconds'].default
        ? [`--heartbeat-duration-seconds=${opts.agentHeartbeatSeconds}`]
        : []),
    ];
    const agent = startBinary('agent', 'agent', agentArgs, logDir, { POD_NAME: 'bench-agent' });
    programs.push(agent);
    const agentReady = await observer.nodes.waitFor(agentNode.name, ready, 180_000);
    if (agentReady === undefined)
      throw new Error(`the measured agent's node did not turn Ready (see ${agent.logPath})`);
    const warmupMs = Math.min(30_000, (opts.steadySeconds * 1000) / 4);
    await sleep(warmupMs);

    say(`P4/P6: quiet window of ${opts.steadySeconds} s`);
    const agentPid = agent.child.pid ?? 0;
    const controllerPid = controllerA.child.pid ?? 0;
    const w0 = observer.writeCount();
    const cpu0 = await procCpuMs(agentPid);
    const fleetCpu0 = await Promise.all(fleet.pids.map(procCpuMs));
    const controllerCpu0 = await procCpuMs(controllerPid);
    const windowStart = performance.now();
    const agentRss: number[] = [];
    const controllerRss: number[] = [];
    while (performance.now() - windowStart < opts.steadySeconds * 1000) {
      agentRss.push((await procMemory(agentPid)).rssBytes);
      controllerRss.push((await procMemory(controllerPid)).rssBytes);
      const left = opts.steadySeconds * 1000 - (performance.now() - windowStart);
      if (left > 0) await sleep(Math.min(RSS_SAMPLE_MS, left));
    }
    const windowS = (performance.now() - windowStart) / 1000;
    const cpu1 = await procCpuMs(agentPid);
    const fleetCpu1 = await Promise.all(fleet.pids.map(procCpuMs));
    const controllerMillicores = ((await procCpuMs(controllerPid)) - controllerCpu0) / windowS;
    const w1 = observer.writeCount();
    agentRss.push((await procMemory(agentPid)).rssBytes);
    const controllerMem = await procMemory(controllerPid);
    controllerRss.push(controllerMem.rssBytes);
    const writes =
      w1.leases -
      w0.leases +
      (w1.nodes - w0.nodes) +
      (w1.events - w0.events) +
      (w1.clusterHealth - w0.clusterHealth);
    const perNode = writes / (N + 1) / windowS;
    // Whether the simulator kept up: the lease writes its cadence asks for in the window, and its CPU.
    const fleetLeaseWritesExpected =
      N * windowS * (4 / init.heartbeatDurationSeconds + E / init.extensionRenewSeconds);
    const fleetCores = fleetCpu1.map((c, i) => (c - (fleetCpu0[i] ?? 0)) / 1000 / windowS);
    say(
      `quiet window: ${w1.leases - w0.leases} lease writes (the fleet's cadence asks for about ${Math.round(fleetLeaseWritesExpected)}); fleet processes' CPU ${fleetCores.map((c) => c.toFixed(2)).join(', ')} cores`,
    );
    rows.push({
      id: 'P4',
      measure: 'steady API writes per node (heartbeat included)',
      goal: '≤ 0.2 writes/s',
      measured: `${perNode.toFixed(3)} writes/s (${w1.leases - w0.leases} lease, ${w1.nodes - w0.nodes} node, ${w1.events - w0.events} event, ${w1.clusterHealth - w0.clusterHealth} ClusterHealth writes in ${windowS.toFixed(0)} s)${over(perNode, 0.2, (n) => n.toFixed(3))}`,
      pass: perNode <= 0.2,
      load: load1(),
      values: {
        writesPerNodePerSecond: perNode,
        leaseWrites: w1.leases - w0.leases,
        nodeWrites: w1.nodes - w0.nodes,
        eventWrites: w1.events - w0.events,
        clusterHealthWrites: w1.clusterHealth - w0.clusterHealth,
        windowSeconds: windowS,
        fleetLeaseWritesExpected: Math.round(fleetLeaseWritesExpected),
        fleetCpuCores: fleetCores.reduce((a, b) => a + b, 0),
      },
    });
    // The controller's CPU per lease renewal it watched in the quiet window: all its CPU there (its own
    // leader-election renewals included) over the renewals, so an upper bound (issue 24 item 3).
    const renewals = w1.leases - w0.leases;
    const cpuMsPerRenewal = renewals > 0 ? (controllerMillicores * windowS) / renewals : 0;
    rows.push({
      id: 'renewal-cpu',
      measure: 'controller CPU per lease renewal (quiet window, all its CPU)',
      goal: '≤ 0.1 ms',
      measured: `${cpuMsPerRenewal.toFixed(3)} ms (${controllerMillicores.toFixed(1)} mCPU for ${(renewals / windowS).toFixed(1)} renewals/s)`,
      pass: cpuMsPerRenewal <= 0.1,
      load: load1(),
      values: { cpuMsPerRenewal, controllerMillicores, renewalsPerSecond: renewals / windowS },
    });
    const maxOf = (xs: number[]): number => Math.max(...xs);
    const controllerSteady = controllerRss[controllerRss.length - 1] ?? 0;
    rows.push({
      id: 'P5',
      measure: 'controller RSS, steady (end of the quiet window)',
      goal: '≤ 256 MiB',
      measured: `${fmtMiB(controllerSteady)} (max in window ${fmtMiB(maxOf(controllerRss))}; CPU ${controllerMillicores.toFixed(0)} mCPU)${over(controllerSteady, 256 * 2 ** 20, fmtMiB1)}`,
      pass: controllerSteady <= 256 * 2 ** 20,
      load: load1(),
      // The controller's CPU over the window, for the cost of its heap settings (docs/adr/0007).
      values: { rssBytes: controllerSteady, windowMaxRssBytes: maxOf(controllerRss), controllerMillicores },
    });
    rows.push({
      id: 'P5',
      measure: 'controller RSS, peak during the initial list and convergence',
      goal: '≤ 256 MiB',
      measured: `${fmtMiB(afterStart.peakRssBytes)}${over(afterStart.peakRssBytes, 256 * 2 ** 20, fmtMiB1)}`,
      pass: afterStart.peakRssBytes <= 256 * 2 ** 20,
      load: load1(),
      values: { peakRssBytes: afterStart.peakRssBytes, peakRssWholeRunBytes: controllerMem.peakRssBytes },
    });
    const agentMax = maxOf(agentRss);
    const agentMean = agentRss.reduce((a, b) => a + b, 0) / agentRss.length;
    rows.push({
      id: 'P6',
      measure: `agent RSS, ${E} extensions, default periods`,
      goal: '≤ 64 MiB',
      measured: `max ${fmtMiB(agentMax)}, mean ${fmtMiB(agentMean)}${over(agentMax, 64 * 2 ** 20, fmtMiB1)}`,
      pass: agentMax <= 64 * 2 ** 20,
      load: load1(),
      values: { maxRssBytes: agentMax, meanRssBytes: agentMean, samples: agentRss.length },
    });
    const millicores = (cpu1 - cpu0) / windowS;
    rows.push({
      id: 'P6',
      measure: `agent CPU, averaged over ${windowS.toFixed(0)} s`,
      goal: '≤ 5 mCPU',
      measured: `${millicores.toFixed(2)} mCPU${over(millicores, 5, (n) => `${n.toFixed(2)} mCPU`)}`,
      pass: millicores <= 5,
      load: load1(),
      values: { millicores, cpuMs: cpu1 - cpu0, windowSeconds: windowS },
    });

    // ---- P3: the agent is killed → extension Unknown and runtime taint.
    say('P3: SIGKILL of the measured agent');
    const killedAt = performance.now();
    const gone = observer.nodes.waitFor(
      agentNode.name,
      (n) => n.runtimeTaint && n.condition === 'Unknown',
      opts.agentHeartbeatSeconds * 3000 + 60_000,
    );
    agent.signal('SIGKILL');
    const goneAt = await gone;
    const p3 = goneAt === undefined ? undefined : goneAt - killedAt;
    const p3Goal = (opts.agentHeartbeatSeconds + 2) * 1000;
    rows.push({
      id: 'P3',
      measure: `agent killed → Unknown + runtime taint (lease ${opts.agentHeartbeatSeconds} s)`,
      goal: `≤ ${fmtMs(p3Goal)}`,
      measured: `${fmtMs(p3)}${over(p3, p3Goal, fmtMs)}`,
      pass: p3 !== undefined && p3 <= p3Goal,
      load: load1(),
      values: { ms: p3 ?? null, heartbeatLeaseSeconds: opts.agentHeartbeatSeconds },
    });

    // ---- P7: leader killed / stopped → the standby writes.
    const healthyNode = others[0]?.name ?? '';
    const failover = async (
      leader: Program,
      standbyIdentity: string,
      how: 'SIGKILL' | 'SIGTERM',
      extension: number,
    ): Promise<{ ms: number | undefined; leadingMs: number | undefined; standby: Program }> => {
      const standby = startBinary(
        standbyIdentity,
        'controller',
        controllerArgs(standbyIdentity),
        logDir,
        controllerEnv,
      );
      programs.push(standby);
      await standby.waitForLog('Caches synced', 10 * 60_000);
      const holder = await leaderOf(client!);
      if (holder !== leader.name.replace(/^controller-/, 'bench-controller-'))
        say(`warning: leader is ${holder}, expected ${leader.name}`);
      const at = performance.now();
      const signalledAtMs = Date.now();
      const tainted = observer!.nodes.waitFor(healthyNode, (n) => n.runtimeTaint, 120_000);
      leader.signal(how);
      f.set(healthyNode, extension, 'Unhealthy');
      const seen = await tainted;
      f.set(healthyNode, extension, 'Healthy');
      await observer!.nodes.waitFor(healthyNode, ready, 120_000);
      await leader.exited;
      // When the standby started its term (its own log line, wall clock): the rest of the figure is its
      // first reconcile of the changed node.
      const leading = await standby.waitForLog('Reconciling as leader', 1_000).catch(() => undefined);
      const leadingMs = leading ? Date.parse(String(leading.time)) - signalledAtMs : undefined;
      return { ms: seen === undefined ? undefined : seen - at, leadingMs, standby };
    };
    say('P7: SIGKILL of the leader with a standby');
    const crash = await failover(controllerA, 'bench-controller-b', 'SIGKILL', 0);
    rows.push({
      id: 'P7',
      measure: 'leader SIGKILL → standby writing',
      goal: '≤ 15 s',
      measured: `${fmtMs(crash.ms)} (standby leading after ${fmtMs(crash.leadingMs)})${over(crash.ms, 15_000, fmtMs)}`,
      pass: crash.ms !== undefined && crash.ms <= 15_000,
      load: load1(),
      values: { ms: crash.ms ?? null, leadingMs: crash.leadingMs ?? null },
    });
    say('P7: SIGTERM of the leader with a standby');
    const graceful = await failover(crash.standby, 'bench-controller-c', 'SIGTERM', 1 % E);
    rows.push({
      id: 'P7',
      measure: 'leader SIGTERM → standby writing (hand-off)',
      goal: '≤ 3 s',
      measured: `${fmtMs(graceful.ms)} (standby leading after ${fmtMs(graceful.leadingMs)})${over(graceful.ms, 3_000, fmtMs)}`,
      pass: graceful.ms !== undefined && graceful.ms <= 3_000,
      load: load1(),
      values: { ms: graceful.ms ?? null, leadingMs: graceful.leadingMs ?? null },
    });
  } catch (err) {
    // A phase that fails stops the run, and what was measured until then is still reported and recorded.
    failure = err instanceof Error ? err.message : String(err);
    say(`run stopped early: ${failure}`);
  } finally {
    say('stopping');
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  if (failure !== undefined) {
    const expected: Record<string, number> = { P1: 1, P2: 1, P3: 1, P4: 1, P5: 2, P6: 2, P7: 2 };
    for (const [id, count] of Object.entries(expected)) {
      for (let i = rows.filter((r) => r.id === id).length; i < count; i++) {
        rows.push({
          id,
          measure: 'not measured: the run stopped early',
          goal: 'see docs/design.md section 9',
          measured: failure,
          pass: false,
          load: load1(),
          values: {},
        });
      }
    }
  }

  // ---- The roll-up's recompute time on 5,000 × 5 pairs: the pure evaluation (controller/rollup/evaluate.ts).
  rows.push(rollupRow());

  if (!opts.keepLogs) await rm(logDir, { recursive: true, force: true }).catch(() => undefined);
  return {
    startedAt,
    finishedAt: new Date().toISOString(),
    scale: { nodes: N, extensions: E, samples: opts.samples, steadySeconds: opts.steadySeconds },
    machine,
    settings: {
      apiserverFlags: SCALE_FLAGS,
      changeRatePerSecond: opts.changeRate,
      iterations: opts.iterations,
      agentHeartbeatSeconds: opts.agentHeartbeatSeconds,
      controllerWorkers: opts.controllerWorkers ?? 'default',
      fleetHeartbeatSeconds: AGENT_OPTIONS['heartbeat-duration-seconds'].default,
      fleetExtensionRenewSeconds: AGENT_OPTIONS['extension-renew-seconds'].default,
      fleetStartConcurrency: FLEET_START_CONCURRENCY,
      fleetRequestTimeoutMs: FLEET_REQUEST_TIMEOUT_MS,
      fleetProcesses: opts.fleetProcesses,
      controllerEnv,
      fleetStartWrites,
    },
    rows,
    ...(failure !== undefined ? { failure } : {}),
  };
}

function rollupRow(): Row {
  const nodes = 5000;
  const perNode = 5;
  const pairs: RollupPair[] = [];
  for (let n = 0; n < nodes; n++) {
    for (let e = 0; e < perNode; e++) {
      // 1 % failing, 1 % progressing: the message and the threshold machine have work to do.
      const k = (n * perNode + e) % 100;
      pairs.push({
        node: `node-${n}`,
        extension: EXTENSION_NAMES[e] ?? `extension-${e}`,
        conditionType: e < 2 ? 'EveryNodeReady' : 'SystemComponentsHealthy',
        state: k === 0 ? 'Unhealthy' : k === 1 ? 'Progressing' : 'Healthy',
        reason: k === 0 ? 'ConnectionRefused' : 'ProbeSucceeded',
      });
    }
  }
  const times: number[] = [];
  let previous = evaluateRollup({ pairs, previous: [], ownedBefore: [], nowMs: 0 });
  for (let i = 0; i < 7; i++) {
    const t = performance.now();
    previous = evaluateRollup({
      pairs,
      previous: previous.conditions,
      ownedBefore: previous.owned,
      nowMs: 1000 * (i + 1),
    });
    times.push(performance.now() - t);
  }
  const median = percentile(times, 50) ?? 0;
  return {
    id: 'rollup',
    measure: `roll-up recompute, ${nodes} × ${perNode} pairs (pure evaluateRollup)`,
    goal: 'none (reported)',
    measured: `median ${median.toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms`,
    pass: null,
    load: load1(),
    values: { medianMs: median, maxMs: Math.max(...times), runs: times.length },
  };
}

async function main(): Promise<number> {
  let opts: Options | undefined;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n`);
    return 2;
  }
  if (!opts) return 0;
  const results = await run(opts);
  process.stdout.write(`${renderTable(results)}\n`);
  const path = await writeResults(opts.out, results);
  process.stdout.write(`\nresults: ${path}\n`);
  return results.failure === undefined ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);

/**
 * The controller's node writes refused with 409 Conflict, from its own metrics, over its start, P1 and P2.
 * Nothing else writes the bench's nodes, so each one is the controller patching a node again on a copy older
 * than its own last write: API-server work the queue pays for (goal ~0; issue 24).
 */
async function nodeWriteConflictsRow(port: number): Promise<Row> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  const byResult = new Map<string, number>();
  for (const m of text.matchAll(/^nodecare_controller_node_writes_total\{([^}]*)\} (\S+)$/gm)) {
    const result = /result="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '';
    byResult.set(result, (byResult.get(result) ?? 0) + Number(m[2]));
  }
  const total = [...byResult.values()].reduce((a, b) => a + b, 0);
  const conflicts = byResult.get('conflict') ?? 0;
  return {
    id: 'conflicts',
    measure: 'node writes refused with 409 Conflict (controller start, P1, P2)',
    goal: '≤ 1% of node writes',
    measured: `${conflicts} of ${total} node writes (${[...byResult].map(([r, n]) => `${n} ${r}`).join(', ')})`,
    pass: conflicts <= total / 100,
    load: load1(),
    values: { conflicts, nodeWrites: total, ...Object.fromEntries(byResult) },
  };
}
