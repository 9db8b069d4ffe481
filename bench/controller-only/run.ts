// `npm run bench -- --controller-only`: the controller's own cost past what one API server on these 2 cores can
// serve (issue 24 item 4). For each size, the real controller binary (dist/controller/main.js, as shipped,
// --leader-elect=false) runs against the recording sink (bench/controller-only/sink.ts, its own process): the
// real ingest → decide → write path, on a generated fleet of N nodes × E extensions renewing at the agent's
// cadence. Measured from outside the controller: its CPU time and memory from /proc, every figure of the fleet
// from what the sink served and what the controller wrote to it.
//
//   converge   controller start → every node's taints, label and condition match its leases
//   idle       the controller's CPU in a window with no renewals (not a floor: the deadline re-checks of the
//              nodes it decided while converging fall due in it)
//   renewals   its CPU per streamed renewal, all-in (window CPU / renewals), its node reconciles in that
//              window (deadline re-checks, from its own reconcile histogram) and the node deadlines it
//              re-armed from a renewed lease without deciding (docs/adr/0009)
//   changes    one extension of `samples` nodes fails, then recovers, at --change-rate: latency from the
//              lease change streamed to the node write that answers it, and CPU per change above renewals
//   restart    P8: the controller stops (SIGTERM); while none runs, one extension of `samples` ready nodes
//              fails; a new controller starts: its start → every node's taints, label and condition match
//              again, when its caches synced, and its CPU until then
//
// Then a least-squares line through the sizes for memory and convergence, with R², and the floor Node.js
// itself sets: the RSS of an empty Node.js process with the controller's V8 flags.

import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { build, describeMachine, load1, measuredCode, say, sleep } from '../common.ts';
import { freePorts } from '../../test/controlplane/controlplane.ts';
import type { Options } from '../options.ts';
import { reconcileCounts } from '../phases/steady.ts';
import { ChartMemory } from '../controller-memory.ts';
import { loggedAfterMs, procCpuMs, procMemory, startBinary, unlessExited, type Program } from '../procs.ts';
import { fmtCode, fmtMs, percentile, type MeasuredCode } from '../report.ts';
import {
  RENEW_TICK_MS,
  type ChangeResult,
  type SinkCommand,
  type SinkEvent,
  type SinkInit,
  type SinkStats,
} from './sink.ts';

/** Bootstrapping at the start (their last extension Progressing), as in `npm run bench`: 5 % of the nodes. */
const COHORT_SHARE = 0.05;
/**
 * A window with no renewal at all, shorter than the heartbeat lease's 60 s so that no lease expires in it;
 * and after convergence, before measuring, the first wave's events and the roll-up settle. Short with --smoke.
 */
const windows = (smoke: boolean): { idleMs: number; settleMs: number } =>
  smoke ? { idleMs: 3_000, settleMs: 2_000 } : { idleMs: 15_000, settleMs: 10_000 };

export interface SizeResult {
  nodes: number;
  extensions: number;
  leases: number;
  convergedMs: number | null;
  cpuToConvergeMs: number;
  peakRssBytes: number;
  steadyRssBytes: number;
  /** The memory limit the controller ran under (its cgroup), null when it ran without one. */
  memoryLimitBytes: number | null;
  idleMilliCpu: number;
  renewalsPerSecond: number;
  renewalMilliCpu: number;
  cpuPerRenewalMs: number;
  /** The controller's node reconciles in the renewal window (deadline re-checks: nothing else changes). */
  reconcilesPerSecond: number;
  reconcileMsPerSecond: number;
  /** Node deadlines that came with only renewals since the node's decision: re-armed without deciding. */
  rearmsPerSecond: number;
  changes: number;
  cpuPerChangeMs: number;
  failP50Ms: number | null;
  failP99Ms: number | null;
  recoverP99Ms: number | null;
  missed: number;
  /** Node writes the sink took (patches of nodes and nodes/status) and those refused with 409. */
  nodeWrites: number;
  conflicts: number;
  /** P8: a new controller's start → every node converged, with `restartChanged` nodes failed while none ran. */
  restartMs: number;
  /** Its start → its log line 'Caches synced' (null when the line was not found). */
  restartSyncedMs: number | null;
  /** Its CPU until it converged. */
  restartCpuMs: number;
  restartChanged: number;
  requests: Record<string, number>;
  unserved: Record<string, number>;
  load: number;
}

export interface Fit {
  /** y = intercept + slope × nodes. */
  intercept: number;
  slope: number;
  r2: number;
}

export interface ControllerOnlyResults {
  startedAt: string;
  finishedAt: string;
  machine: string;
  /** The commit measured (absent outside a git checkout). */
  code?: MeasuredCode;
  mode: 'controller-only';
  settings: Record<string, unknown>;
  sizes: SizeResult[];
  fits: { steadyRssBytes?: Fit; peakRssBytes?: Fit; convergedMs?: Fit; idleMilliCpu?: Fit };
  /** RSS of an empty Node.js process with the controller's V8 flags (nodeFloorRss). */
  nodeFloorRssBytes?: number;
  failure?: string;
}

/**
 * The memory floor Node.js sets (issue 24 item 3): the RSS of a Node.js process of the binary that runs the
 * controller, with the controller's own V8 flags (dist/controller/runtime-flags.js, imported first as the
 * controller does, and its optimizeForSize() called) and nothing else, after `settleMs`.
 */
export async function nodeFloorRss(settleMs = 3_000): Promise<number> {
  const flags = pathToFileURL(
    join(import.meta.dirname, '..', '..', 'dist', 'controller', 'runtime-flags.js'),
  );
  // As the controller is once its caches synced: optimizeForSize() on.
  const script = `import(${JSON.stringify(flags.href)}).then((m) => m.optimizeForSize()); setInterval(() => {}, 1 << 30)`;
  const child = spawn(process.execPath, ['--import', flags.href, '-e', script], { stdio: 'ignore' });
  try {
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`the empty Node.js process exited (${code})`))),
    );
    await Promise.race([sleep(settleMs), exited]);
    return (await procMemory(child.pid ?? 0)).rssBytes;
  } finally {
    child.kill('SIGKILL');
  }
}

/** Least squares through (x, y); undefined for fewer than two distinct x. */
export function linearFit(points: ReadonlyArray<readonly [number, number]>): Fit | undefined {
  const n = points.length;
  if (n < 2) return undefined;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  if (sxx === 0) return undefined;
  const slope = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx;
  const intercept = my - slope * mx;
  const ssTot = points.reduce((a, [, y]) => a + (y - my) ** 2, 0);
  const ssRes = points.reduce((a, [x, y]) => a + (y - intercept - slope * x) ** 2, 0);
  return { intercept, slope, r2: ssTot === 0 ? 1 : 1 - ssRes / ssTot };
}

class SinkProcess {
  private readonly child: ChildProcess;
  private readonly listeners: Array<(e: SinkEvent) => void> = [];

  constructor() {
    this.child = fork(join(import.meta.dirname, 'sink.ts'), [], {
      execPath: process.execPath,
      execArgv: ['--max-old-space-size=8192'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('message', (e: SinkEvent) => {
      if (e.evt === 'error') say(`sink error: ${e.message}`);
      for (const l of [...this.listeners]) l(e);
    });
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  send(cmd: SinkCommand): void {
    if (!this.child.connected)
      throw new Error(`the sink exited (${this.child.signalCode ?? this.child.exitCode})`);
    this.child.send(cmd);
  }

  next<E extends SinkEvent['evt']>(evt: E, timeoutMs: number): Promise<Extract<SinkEvent, { evt: E }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`sink: no ${evt} within ${timeoutMs} ms`)), timeoutMs);
      const listener = (e: SinkEvent): void => {
        if (e.evt !== evt) return;
        clearTimeout(timer);
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        resolve(e as Extract<SinkEvent, { evt: E }>);
      };
      this.listeners.push(listener);
      this.child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the sink exited (${signal ?? `code ${code}`}) while waiting for ${evt}`));
      });
    });
  }

  async stats(): Promise<SinkStats> {
    const reply = this.next('stats', 60_000);
    this.send({ cmd: 'stats' });
    return (await reply).stats;
  }

  async stop(): Promise<void> {
    if (!this.child.connected) return;
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.send({ cmd: 'stop' } satisfies SinkCommand);
    await Promise.race([exited, sleep(5_000)]);
    this.child.kill('SIGKILL');
  }
}

const sum = (r: Record<string, number>, keys: (k: string) => boolean): number =>
  Object.entries(r).reduce((a, [k, v]) => a + (keys(k) ? v : 0), 0);

async function measureSize(opts: Options, nodes: number, logDir: string): Promise<SizeResult> {
  const E = opts.extensions;
  const sink = new SinkProcess();
  let controller: Program | undefined;
  try {
    const init: SinkInit = {
      cmd: 'init',
      nodes,
      extensions: E,
      cohort: Math.floor(nodes * COHORT_SHARE),
      heartbeatDurationSeconds: AGENT_OPTIONS['heartbeat-duration-seconds'].default,
      extensionRenewSeconds: AGENT_OPTIONS['extension-renew-seconds'].default,
    };
    say(`${nodes} × ${E}: generating the fleet in the sink`);
    const ready = sink.next('ready', 10 * 60_000);
    sink.send(init);
    const { port, listed } = await ready;
    const kubeconfig = join(logDir, `sink-${nodes}.kubeconfig`);
    await writeFile(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'sink', cluster: { server: `http://127.0.0.1:${port}` } }],
        users: [{ name: 'sink', user: {} }],
        contexts: [{ name: 'sink', context: { cluster: 'sink', user: 'sink' } }],
        'current-context': 'sink',
      }),
    );
    sink.send({ cmd: 'renewals', on: true });
    const [healthPort] = await freePorts(1);
    const converged = sink.next('converged', 10 * 60_000 + nodes * 20);
    say(`${nodes} × ${E}: ${listed} leases; starting the controller; waiting for every node to converge`);
    const t0 = Date.now();
    const controllerArgs = (): string[] => [
      `--kubeconfig=${kubeconfig}`,
      '--identity=bench-controller-only',
      `--health-port=${healthPort}`,
      '--leader-elect=false',
      ...(opts.controllerWorkers === undefined ? [] : [`--workers=${opts.controllerWorkers}`]),
    ];
    const memory = chartMemory.for(nodes);
    controller = startBinary(
      `controller-only-${nodes}`,
      'controller',
      controllerArgs(),
      logDir,
      controllerEnv(),
      memory,
    );
    const pid = controller.child.pid ?? 0;
    let convergedMs: number | null = null;
    let cpuToConvergeMs = 0;
    try {
      const { atEpochMs } = await unlessExited(converged, controller, 'converging');
      convergedMs = atEpochMs - t0;
      cpuToConvergeMs = await procCpuMs(pid);
      say(`${nodes} × ${E}: converged in ${fmtMs(convergedMs)}, ${fmtMs(cpuToConvergeMs)} of controller CPU`);
    } catch (err) {
      const stats = await sink.stats();
      throw new Error(`${(err as Error).message}; ${stats.nodesMatching} of ${nodes} nodes matched`, {
        cause: err,
      });
    }
    const peakRssBytes = (await procMemory(pid)).peakRssBytes;
    const { idleMs, settleMs } = windows(opts.smoke);
    await sleep(settleMs);

    sink.send({ cmd: 'renewals', on: false });
    await sleep(1_000);
    let cpu0 = await procCpuMs(pid);
    await sleep(idleMs);
    let cpu1 = await procCpuMs(pid);
    const idleMilliCpu = (cpu1 - cpu0) / (idleMs / 1000);

    sink.send({ cmd: 'renewals', on: true });
    await sleep(2_000);
    const s0 = await sink.stats();
    const r0 = await reconcileCounts(healthPort!);
    cpu0 = await procCpuMs(pid);
    const w0 = performance.now();
    await sleep(opts.steadySeconds * 1000);
    cpu1 = await procCpuMs(pid);
    const r1 = await reconcileCounts(healthPort!);
    const s1 = await sink.stats();
    const windowS = (performance.now() - w0) / 1000;
    const renewals = s1.renewalsStreamed - s0.renewalsStreamed;
    const renewalMilliCpu = (cpu1 - cpu0) / windowS;
    const steadyRssBytes = (await procMemory(pid)).rssBytes;
    say(
      `${nodes} × ${E}: ${(renewals / windowS).toFixed(0)} renewals/s cost ${renewalMilliCpu.toFixed(1)} mCPU (idle ${idleMilliCpu.toFixed(1)})`,
    );

    const samples = Math.min(opts.samples, Math.floor(nodes / 2));
    const changed = sink.next('changes', 30 * 60_000);
    const c0 = await procCpuMs(pid);
    const ct0 = performance.now();
    sink.send({ cmd: 'changes', count: samples, ratePerSecond: opts.changeRate, timeoutMs: 120_000 });
    const result: ChangeResult = (await changed).result;
    const changeS = (performance.now() - ct0) / 1000;
    const changeCpu = (await procCpuMs(pid)) - c0 - renewalMilliCpu * changeS;
    const changeCount = result.failLatencies.length + result.recoverLatencies.length;
    const s2 = await sink.stats();
    const nodeWrite = (k: string): boolean => k === 'patch nodes' || k === 'patch nodes/status';

    // P8, the restart: this controller stops (SIGTERM); while none runs, `samples` nodes fail; a new one starts.
    await controller.stop(10_000);
    const failedWhileDown = sink.next('restart', 60_000);
    sink.send({ cmd: 'restart', count: samples });
    const { changed: restartChanged } = await failedWhileDown;
    const reconverged = sink.next('converged', 10 * 60_000 + nodes * 20);
    const restartedAt = Date.now();
    controller = startBinary(
      `controller-only-${nodes}-restart`,
      'controller',
      controllerArgs(),
      logDir,
      controllerEnv(),
      chartMemory.for(nodes),
    );
    const { atEpochMs: reconvergedAt } = await unlessExited(reconverged, controller, 'converging');
    const restartMs = reconvergedAt - restartedAt;
    const restartCpuMs = await procCpuMs(controller.child.pid ?? 0);
    const restartSyncedMs = (await loggedAfterMs(controller, 'Caches synced', restartedAt)) ?? null;
    say(
      `${nodes} × ${E}: restart with ${restartChanged} nodes failed while none ran: converged in ${fmtMs(restartMs)} (caches synced after ${fmtMs(restartSyncedMs)}), ${fmtMs(restartCpuMs)} of controller CPU`,
    );
    return {
      nodes,
      extensions: E,
      leases: listed,
      convergedMs,
      cpuToConvergeMs,
      peakRssBytes,
      steadyRssBytes,
      memoryLimitBytes: memory?.limitBytes ?? null,
      idleMilliCpu,
      renewalsPerSecond: renewals / windowS,
      renewalMilliCpu,
      cpuPerRenewalMs: renewals > 0 ? (cpu1 - cpu0) / renewals : 0,
      reconcilesPerSecond: (r1.count - r0.count) / windowS,
      reconcileMsPerSecond: ((r1.seconds - r0.seconds) * 1000) / windowS,
      rearmsPerSecond: (r1.rearms - r0.rearms) / windowS,
      changes: changeCount,
      cpuPerChangeMs: changeCount > 0 ? Math.max(0, changeCpu) / changeCount : 0,
      failP50Ms: percentile(result.failLatencies, 50) ?? null,
      failP99Ms: percentile(result.failLatencies, 99) ?? null,
      recoverP99Ms: percentile(result.recoverLatencies, 99) ?? null,
      missed: result.missed,
      nodeWrites: sum(s2.requests, nodeWrite),
      conflicts: sum(s2.conflicts, (k) => k === 'nodes' || k === 'nodes/status'),
      restartMs,
      restartSyncedMs,
      restartCpuMs,
      restartChanged,
      requests: s2.requests,
      unserved: s2.unserved,
      load: load1(),
    };
  } finally {
    await controller?.stop(10_000);
    await sink.stop();
  }
}

/** The controller's memory limit, the chart's for each fleet size (bench/controller-memory.ts). */
const chartMemory = new ChartMemory();

/** Node options for the controller only, as `npm run bench` takes them (none by default: the binary as shipped). */
function controllerEnv(): Record<string, string> {
  const options = process.env.BENCH_CONTROLLER_NODE_OPTIONS;
  return options ? { NODE_OPTIONS: options } : {};
}

const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(0)} MiB`;

export function renderControllerOnly(results: ControllerOnlyResults): string {
  const header = [
    'nodes × ext',
    'leases',
    'converge',
    'CPU to converge',
    'RSS peak / steady / limit',
    'no renewals',
    'renewals',
    'CPU/renewal',
    'reconciles',
    're-armed',
    'CPU/change',
    'fail p50 / p99',
    'node writes (409)',
    'restart (synced)',
    'load',
  ];
  const body = results.sizes.map((s) => [
    `${s.nodes} × ${s.extensions}`,
    String(s.leases),
    fmtMs(s.convergedMs),
    fmtMs(s.cpuToConvergeMs),
    `${mib(s.peakRssBytes)} / ${mib(s.steadyRssBytes)} / ${s.memoryLimitBytes ? mib(s.memoryLimitBytes) : 'none'}`,
    `${s.idleMilliCpu.toFixed(1)} mCPU`,
    `${s.renewalsPerSecond.toFixed(0)}/s, ${s.renewalMilliCpu.toFixed(0)} mCPU`,
    `${s.cpuPerRenewalMs.toFixed(3)} ms`,
    `${s.reconcilesPerSecond.toFixed(0)}/s, ${s.reconcileMsPerSecond.toFixed(0)} ms/s`,
    `${s.rearmsPerSecond.toFixed(0)}/s`,
    `${s.cpuPerChangeMs.toFixed(2)} ms`,
    `${fmtMs(s.failP50Ms)} / ${fmtMs(s.failP99Ms)}${s.missed ? `, ${s.missed} missed` : ''}`,
    `${s.nodeWrites} (${s.conflicts})`,
    `${fmtMs(s.restartMs)} (${fmtMs(s.restartSyncedMs)})`,
    s.load.toFixed(2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  const fit = (
    name: string,
    f: Fit | undefined,
    unit: (v: number) => string,
    per: (v: number) => string,
  ): string =>
    f
      ? `${name}: ${unit(f.intercept)} + ${per(f.slope)} per node (R² ${f.r2.toFixed(3)})`
      : `${name}: needs two sizes`;
  const { fits, nodeFloorRssBytes: floor } = results;
  return [
    `nodecare controller-only benchmark (the real controller, a recording sink for an API server), ${results.startedAt}`,
    `machine: ${results.machine}; ${fmtCode(results.code)}`,
    '',
    line(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...body.map(line),
    '',
    `linear fits through the sizes:`,
    `  ${fit('steady RSS', fits.steadyRssBytes, mib, (v) => `${(v / 1024).toFixed(2)} KiB`)}`,
    `  ${fit('peak RSS', fits.peakRssBytes, mib, (v) => `${(v / 1024).toFixed(2)} KiB`)}`,
    `  ${fit('convergence', fits.convergedMs, fmtMs, (v) => `${(v * 1000).toFixed(1)} µs`)}`,
    `  ${fit(
      'CPU without renewals',
      fits.idleMilliCpu,
      (v) => `${v.toFixed(1)} mCPU`,
      (v) => `${(v * 1000).toFixed(2)} µCPU`,
    )}`,
    ...(floor === undefined
      ? []
      : [
          `Node.js floor (an empty Node.js process with the controller's V8 flags): ${mib(floor)}; steady RSS above it: ${results.sizes
            .map((s) => `${s.nodes} nodes ${mib(s.steadyRssBytes - floor)}`)
            .join(', ')}`,
        ]),
    ...(Object.keys(results.sizes.at(-1)?.unserved ?? {}).length > 0
      ? [`requests the sink does not serve (answered 404): ${JSON.stringify(results.sizes.at(-1)?.unserved)}`]
      : []),
    ...(results.failure ? ['', `stopped early: ${results.failure}`] : []),
  ].join('\n');
}

export async function writeControllerOnlyResults(
  dir: string,
  results: ControllerOnlyResults,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const stamp = results.startedAt.replace(/[:]/g, '').replace(/\..*$/, 'Z');
  const sizes = results.sizes.map((s) => s.nodes).join('-') || 'none';
  const path = join(dir, `${stamp}-controller-only-${sizes}x${results.sizes[0]?.extensions ?? 0}.json`);
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}

export async function runControllerOnly(opts: Options): Promise<ControllerOnlyResults> {
  const startedAt = new Date().toISOString();
  const machine = describeMachine();
  const code = measuredCode();
  const logDir = await mkdtemp(join(tmpdir(), 'nodecare-bench-'));
  say(`logs in ${logDir}`);
  say('building dist/ (the binary measured)');
  await build();
  const sizes: SizeResult[] = [];
  let failure: string | undefined;
  const nodeFloorRssBytes = await nodeFloorRss();
  say(
    `Node.js floor: an empty Node.js process with the controller's V8 flags holds ${mib(nodeFloorRssBytes)}`,
  );
  try {
    for (const nodes of opts.controllerOnlySizes) sizes.push(await measureSize(opts, nodes, logDir));
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
    say(`run stopped early: ${failure}`);
  }
  if (!opts.keepLogs && failure === undefined)
    await rm(logDir, { recursive: true, force: true }).catch(() => undefined);
  const points = (f: (s: SizeResult) => number | null): Array<[number, number]> =>
    sizes.flatMap((s) => (f(s) === null ? [] : [[s.nodes, f(s)!] as [number, number]]));
  return {
    ...{ startedAt, finishedAt: new Date().toISOString(), machine, mode: 'controller-only', sizes },
    ...(code ? { code } : {}),
    settings: {
      extensions: opts.extensions,
      samples: opts.samples,
      changeRatePerSecond: opts.changeRate,
      renewalWindowSeconds: opts.steadySeconds,
      idleWindowMs: windows(opts.smoke).idleMs,
      // Renewals written every this many ms (the earlier 100 ms and what it hid: docs/adr/0011).
      sinkRenewTickMs: RENEW_TICK_MS,
      smoke: opts.smoke,
      cohortShare: COHORT_SHARE,
      controllerWorkers: opts.controllerWorkers ?? 'default',
      controllerEnv: controllerEnv(),
      // The controller's memory limit at each size: the chart's for that fleet (bench/controller-only/
      // chart-limit.ts), or why it ran without one.
      memoryLimit: chartMemory.problem ?? 'the chart limit for each fleet size (memoryLimitBytes)',
      fleetHeartbeatSeconds: AGENT_OPTIONS['heartbeat-duration-seconds'].default,
      fleetExtensionRenewSeconds: AGENT_OPTIONS['extension-renew-seconds'].default,
    },
    fits: {
      steadyRssBytes: linearFit(points((s) => s.steadyRssBytes)),
      peakRssBytes: linearFit(points((s) => s.peakRssBytes)),
      convergedMs: linearFit(points((s) => s.convergedMs)),
      idleMilliCpu: linearFit(points((s) => s.idleMilliCpu)),
    },
    nodeFloorRssBytes,
    ...(failure !== undefined ? { failure } : {}),
  };
}
