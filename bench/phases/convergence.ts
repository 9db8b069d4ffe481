// Convergence: controller A starts on the whole fleet, registered as kubelets register it (the bootstrap taint,
// about 9 KB a Node: bench/common.ts registeredNodeBody) with every Lease written; how long until every node
// shows its expected state, on how much of the controller's CPU, and its peak memory over the initial list
// (P5). It leads from then on.
import { bootstrapping, load1, ready, say } from '../common.ts';
import type { SeenNode } from '../observer.ts';
import { freePorts } from '../../test/controlplane/controlplane.ts';
import { loggedAfterMs, procCpuMs, procMainThreadSchedMs, procMemory, startBinary } from '../procs.ts';
import { fmtMiB, fmtMs, type Row } from '../report.ts';
import type { BenchCluster, BenchLeader, BenchRun } from '../run.ts';

export async function converge(run: BenchRun, cluster: BenchCluster): Promise<BenchLeader> {
  const { opts, rows, logDir, programs, controllerEnv } = run;
  const { observer, cohort, others } = cluster;
  const N = opts.nodes;
  // ---- Convergence of a freshly started controller, and P5 peak during its initial list.
  const controllerArgs = (identity: string, healthPort = 0): string[] => [
    `--kubeconfig=${cluster.plane.kubeconfigPath}`,
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
  const startedAtMs = Date.now();
  const controllerA = startBinary(
    'controller-a',
    'controller',
    controllerArgs('bench-controller-a', metricsPortA),
    logDir,
    controllerEnv,
    run.controllerMemory.for(N),
  );
  programs.push(controllerA);
  const convergence = await observer.converged(expected, 180_000 + N * 60);
  const convergedMs = convergence.atMs === undefined ? undefined : convergence.atMs - t0;
  const pid = controllerA.child.pid ?? 0;
  const [afterStart, cpuMs, sched, nodeBytes] = await Promise.all([
    procMemory(pid),
    procCpuMs(pid).catch(() => undefined),
    procMainThreadSchedMs(pid),
    cluster.client
      .request<unknown>('GET', `/api/v1/nodes/${others[0]?.name ?? cohort[0]?.name}`)
      .then((node) => Buffer.byteLength(JSON.stringify(node)))
      .catch(() => undefined),
  ]);
  // Where the time went: the controller's own milestones (its log times) and its event loop's share of a core.
  const phases: ConvergencePhases = {
    syncedMs: await loggedAfterMs(controllerA, 'Caches synced', startedAtMs),
    leadingMs: await loggedAfterMs(controllerA, 'Reconciling as leader', startedAtMs),
    firstNodeChangeMs:
      convergence.firstChangeAtMs === undefined ? undefined : convergence.firstChangeAtMs - t0,
    firstTaintChangeMs: await loggedAfterMs(controllerA, 'Changing taints', startedAtMs),
    mainRunMs: sched?.runMs,
    mainWaitMs: sched?.waitMs,
  };
  rows.push(
    convergenceRow(
      N,
      opts.extensions,
      { convergedMs, cpuMs, nodeBytes, ...phases },
      convergence.missing.length,
    ),
  );
  say(`converged in ${fmtMs(convergedMs)}; controller peak RSS ${fmtMiB(afterStart.peakRssBytes)}`);
  return {
    program: controllerA,
    metricsPort: metricsPortA!,
    peakRssAfterStartBytes: afterStart.peakRssBytes,
    args: controllerArgs,
  };
}

/** Issue 53 item 5: a fresh fleet of 1,000 nodes × 5 converges within 5 s on at most 3 s of controller CPU. */
export const FRESH_FLEET_GOAL = { nodes: 1_000, extensions: 5, ms: 5_000, cpuMs: 3_000 };

/**
 * The `conv` row: every node registered with the bootstrap taint and its Leases written, then the controller
 * starts; until every node shows its state (the cohort still bootstrapping, the others ready). Judged at
 * FRESH_FLEET_GOAL's size, reported at the others.
 */
export function convergenceRow(
  nodes: number,
  extensions: number,
  measured: {
    convergedMs: number | undefined;
    cpuMs: number | undefined;
    nodeBytes: number | undefined;
  } & Partial<ConvergencePhases>,
  notConverged: number,
): Row {
  const { convergedMs, cpuMs, nodeBytes } = measured;
  const goal = FRESH_FLEET_GOAL;
  const judged = nodes === goal.nodes && extensions === goal.extensions;
  const size = nodeBytes === undefined ? '' : `, Nodes of ${(nodeBytes / 1024).toFixed(1)} KiB`;
  return {
    id: 'conv',
    measure: 'fresh fleet (bootstrap-tainted, Leases written) → controller start → every node converged',
    goal: judged ? `≤ ${fmtMs(goal.ms)} on ≤ ${fmtMs(goal.cpuMs)} of CPU` : 'none (reported)',
    measured:
      convergedMs === undefined
        ? `not converged: ${notConverged} nodes left`
        : `${fmtMs(convergedMs)} (controller CPU ${cpuMs === undefined ? '?' : fmtMs(cpuMs)}${size}${phasesText(measured)})`,
    pass: judged
      ? convergedMs !== undefined && cpuMs !== undefined && convergedMs <= goal.ms && cpuMs <= goal.cpuMs
      : null,
    load: load1(),
    values: {
      convergedMs: convergedMs ?? null,
      cpuMs: cpuMs ?? null,
      nodeBytes: nodeBytes ?? null,
      notConverged,
      ...(measured.leadingMs === undefined
        ? {}
        : {
            syncedMs: measured.syncedMs ?? null,
            leadingMs: measured.leadingMs,
            firstNodeChangeMs: measured.firstNodeChangeMs ?? null,
            firstTaintChangeMs: measured.firstTaintChangeMs ?? null,
            mainRunMs: measured.mainRunMs ?? null,
            mainWaitMs: measured.mainWaitMs ?? null,
          }),
    },
  };
}

/** The controller's milestones from its start (ms), and its event loop's time on and waiting for a core. */
export interface ConvergencePhases {
  syncedMs: number | undefined;
  leadingMs: number | undefined;
  /** The first node change the benchmark's watch saw after the start: the first node write, as it arrived. */
  firstNodeChangeMs: number | undefined;
  /**
   * Its first 'Changing taints' line: the first write that changes a taint. Writes of the label, annotation or
   * condition alone log no such line, so earlier writes may have gone out (docs/benchmark.md, fresh fleet).
   */
  firstTaintChangeMs: number | undefined;
  mainRunMs: number | undefined;
  mainWaitMs: number | undefined;
}

/**
 * `; caches synced after …, leading after …, first node write seen after …, first taint change after …; its event
 * loop ran … and waited …`.
 */
function phasesText(p: Partial<ConvergencePhases>): string {
  if (p.leadingMs === undefined) return '';
  const milestones = `; caches synced after ${fmtMs(p.syncedMs)}, leading after ${fmtMs(p.leadingMs)}, first node write seen after ${fmtMs(p.firstNodeChangeMs)}, first taint change after ${fmtMs(p.firstTaintChangeMs)}`;
  const loop =
    p.mainRunMs === undefined || p.mainWaitMs === undefined
      ? ''
      : `; its event loop ran ${fmtMs(p.mainRunMs)} and waited ${fmtMs(p.mainWaitMs)} for a core`;
  return milestones + loop;
}
