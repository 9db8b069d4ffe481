// Restart: the leader stops, and while no controller runs S nodes' extensions fail (spread over the
// extensions, so the breaker stays closed); then a new controller starts. How long from its start until every
// node shows its state again: the failed ones tainted and False, every other one still ready. This is the
// restart issue 24 item 2 asks about (an upgrade, an evicted pod, a node drain): the fleet was converged by
// the controller before it, and the new one has to find what changed while none ran. The first start on a
// fleet no controller ever converged (the `conv` row) writes every node twice; this one writes only the
// changed nodes, and the rest of its time is listing and deciding the fleet.
import { extensionLeaseName } from '../../api/index.ts';
import { failedNode, load1, over, ready, say } from '../common.ts';
import type { SeenNode } from '../observer.ts';
import { loggedAfterMs, startBinary, type Program } from '../procs.ts';
import { fmtMs } from '../report.ts';
import type { BenchCluster, BenchLeader, BenchRun } from '../run.ts';

/** The goal of issue 24 item 2: convergence after a controller start. */
export const RESTART_GOAL_MS = 10_000;

export async function measureRestart(
  run: BenchRun,
  cluster: BenchCluster,
  leader: BenchLeader,
  current: Program,
): Promise<Program> {
  const { opts, rows, logDir, programs, controllerEnv } = run;
  const { observer, fleet, cohort, others, extensions } = cluster;
  const { extensions: E, samples: S } = opts;
  say(`restart: the leader stops; ${S} nodes fail while no controller runs; a new controller starts`);
  await current.stop(15_000);
  const changed = others.slice(0, S);
  const leasesSeen = changed.map((n, i) =>
    observer.leases.waitFor(
      extensionLeaseName(n.name, extensions[i % E] as string),
      (l) => l.state === 'Unhealthy',
      60_000,
    ),
  );
  changed.forEach((n, i) => fleet.set(n.name, i % E, 'Unhealthy'));
  if ((await Promise.all(leasesSeen)).some((at) => at === undefined))
    throw new Error('restart: not every failure reached its lease within 60 s');

  const expected = new Map<string, (n: SeenNode) => boolean>();
  for (const n of [...cohort, ...others]) expected.set(n.name, ready);
  for (const n of changed) expected.set(n.name, failedNode);
  const t0 = performance.now();
  const startedAtMs = Date.now();
  const restarted = startBinary(
    'controller-d',
    'controller',
    leader.args('bench-controller-d'),
    logDir,
    controllerEnv,
  );
  programs.push(restarted);
  const convergence = await observer.converged(expected, 120_000 + opts.nodes * 20);
  const ms = convergence.atMs === undefined ? undefined : convergence.atMs - t0;
  const syncedMs = await loggedAfterMs(restarted, 'Caches synced', startedAtMs);
  const leadingMs = await loggedAfterMs(restarted, 'Reconciling as leader', startedAtMs);
  rows.push({
    id: 'P8',
    measure: `controller restart → every node converged (${S} nodes failed while none ran)`,
    goal: `≤ ${fmtMs(RESTART_GOAL_MS)}`,
    measured:
      ms === undefined
        ? `not converged: ${convergence.missing.length} nodes left`
        : `${fmtMs(ms)} (caches synced after ${fmtMs(syncedMs)}, leading after ${fmtMs(leadingMs)})${over(ms, RESTART_GOAL_MS, fmtMs)}`,
    pass: ms !== undefined && ms <= RESTART_GOAL_MS,
    load: load1(),
    values: {
      ms: ms ?? null,
      syncedMs: syncedMs ?? null,
      leadingMs: leadingMs ?? null,
      changed: changed.length,
      notConverged: convergence.missing.length,
    },
  });
  say(`restart: converged in ${fmtMs(ms)} (caches synced after ${fmtMs(syncedMs)})`);
  // Healed again for the phases after this one.
  changed.forEach((n, i) => fleet.set(n.name, i % E, 'Healthy'));
  const healed = await Promise.all(changed.map((n) => observer.nodes.waitFor(n.name, ready, 120_000)));
  if (healed.some((at) => at === undefined))
    throw new Error('restart: not every failed node was ready again within 120 s');
  return restarted;
}
