// Convergence: controller A starts on the whole fleet; how long until every node shows its expected state, and
// its peak memory over the initial list (P5). It leads from then on.
import { bootstrapping, load1, ready, say } from '../common.ts';
import type { SeenNode } from '../observer.ts';
import { freePorts } from '../../test/controlplane/controlplane.ts';
import { procMemory, startBinary } from '../procs.ts';
import { fmtMiB, fmtMs } from '../report.ts';
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
  return {
    program: controllerA,
    metricsPort: metricsPortA!,
    peakRssAfterStartBytes: afterStart.peakRssBytes,
    args: controllerArgs,
  };
}
