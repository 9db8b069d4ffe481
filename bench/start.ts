// `npm run bench`: measures docs/design.md section 9 (P1–P7) at cluster scale on the local control plane.
//
// It starts etcd and kube-apiserver tuned for scale, creates N Nodes and E SystemExtensions that every node
// requires, drives the nodes' Leases with the fleet simulator (bench/fleet.ts: the agent's real lease code,
// many simulated agents per process, the nodes split between processes by bench/simulator.ts), runs the real
// controller binary, and measures from observed API state (bench/observer.ts: watch arrival times). One real
// agent process on one more node is measured for P3 and P6, and two more for the kubelet's Pods API. The phases are bench/phases/, in the order run()
// calls them. Prints one table and writes JSON to bench/results/. See docs/benchmark.md.

import { describeMachine, measuredCode, say } from './common.ts';
import {
  renderControllerOnly,
  runControllerOnly,
  writeControllerOnlyResults,
} from './controller-only/run.ts';
import { parseOptions, settingsOf, type Options } from './options.ts';
import { measureAgentLoss } from './phases/agent-loss.ts';
import { measureChangeLatency } from './phases/changes.ts';
import { converge } from './phases/convergence.ts';
import { measureFailover } from './phases/failover.ts';
import { measurePodSource } from './phases/pod-source.ts';
import { measureRestart } from './phases/restart.ts';
import { rollupRow } from './phases/rollup.ts';
import { setUp } from './phases/setup.ts';
import { measureQuietWindow } from './phases/steady.ts';
import { renderTable, writeResults, type Results } from './report.ts';
import { openRun, unmeasuredRows } from './run.ts';

async function run(opts: Options): Promise<Results> {
  const startedAt = new Date().toISOString();
  const machine = describeMachine();
  const code = measuredCode();
  const { run, close } = await openRun(opts);
  let failure: string | undefined;
  try {
    const cluster = await setUp(run);
    const leader = await converge(run, cluster);
    await measureChangeLatency(run, cluster, leader);
    const measured = await measureQuietWindow(run, cluster, leader);
    await measureAgentLoss(run, cluster, measured);
    const leading = await measureFailover(run, cluster, leader);
    await measureRestart(run, cluster, leader, leading);
    await measurePodSource(run, cluster);
  } catch (err) {
    // A phase that fails stops the run, and what was measured until then is still reported and recorded.
    failure = err instanceof Error ? err.message : String(err);
    say(`run stopped early: ${failure}`);
  } finally {
    await close();
  }
  const rows = [
    ...run.rows,
    ...(failure === undefined ? [] : unmeasuredRows(run.rows, failure)),
    rollupRow(),
  ];
  const { nodes, extensions, samples, steadySeconds } = opts;
  return {
    ...{ startedAt, finishedAt: new Date().toISOString(), machine, rows },
    ...(code ? { code } : {}),
    scale: { nodes, extensions, samples, steadySeconds },
    settings: settingsOf(opts, run),
    ...(failure !== undefined ? { failure } : {}),
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
  if (opts.controllerOnly) {
    const results = await runControllerOnly(opts);
    process.stdout.write(`${renderControllerOnly(results)}\n`);
    const path = await writeControllerOnlyResults(opts.out, results);
    process.stdout.write(`\nresults: ${path}\n`);
    return results.failure === undefined ? 0 : 1;
  }
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
