// One benchmark run's shared state, handed from phase to phase (bench/phases/): what it started (stopped by
// the runner whatever happens), the rows measured so far, and what each phase leaves for the next.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeClient } from '../lib/kube/client.ts';
import type { ControlPlane } from '../test/controlplane/controlplane.ts';
import { load1, say, type CreatedNode } from './common.ts';
import { ChartMemory } from './controller-memory.ts';
import type { Observer } from './observer.ts';
import type { Options } from './options.ts';
import type { Program } from './procs.ts';
import type { Row } from './report.ts';
import type { Simulator, SimulatorInit } from './simulator.ts';

export interface BenchRun {
  opts: Options;
  logDir: string;
  rows: Row[];
  /** Every program started; stopped at the end. */
  programs: Program[];
  /** Node options for the controller processes only (none by default); recorded with the results. */
  controllerEnv: Record<string, string>;
  /** Each controller's memory limit: the chart's for the fleet (bench/controller-memory.ts). */
  controllerMemory: ChartMemory;
  /** The local targets of the measured agent's probes. */
  httpPort: number;
  heartbeatFile: string;
  /** Lease writes by outcome while the fleet started. */
  fleetStartWrites: Record<string, number>;
  /** Set as they start, so that the runner stops them even when a phase fails half-way. */
  plane?: ControlPlane;
  client?: KubeClient;
  observer?: Observer;
  fleet?: Simulator;
}

/** The cluster the setup phase leaves: control plane, nodes, SystemExtensions and the simulated agents. */
export interface BenchCluster {
  plane: ControlPlane;
  client: KubeClient;
  observer: Observer;
  fleet: Simulator;
  init: SimulatorInit;
  extensions: string[];
  /** Bootstrapping at the start (their last extension Progressing): the P1 and P2 samples. */
  cohort: CreatedNode[];
  others: CreatedNode[];
}

/** The first controller, leading, as the convergence phase leaves it. */
export interface BenchLeader {
  program: Program;
  metricsPort: number;
  peakRssAfterStartBytes: number;
  /** The flags a controller of this run starts with. */
  args(identity: string, healthPort?: number): string[];
}

/**
 * Opens a run: its log directory, the local targets of the measured agent's probes, and `close`, which stops
 * whatever the phases started (also on Ctrl-C: the control plane would otherwise be left to the next run).
 */
export async function openRun(opts: Options): Promise<{ run: BenchRun; close(): Promise<void> }> {
  const logDir = await mkdtemp(join(tmpdir(), 'nodecare-bench-'));
  say(`logs in ${logDir}`);
  const http = createServer((_req, res) => res.end('ok\n'));
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const heartbeatFile = join(logDir, 'logging-agent.heartbeat');
  await writeFile(heartbeatFile, 'alive\n');
  const env = process.env;
  const run: BenchRun = {
    ...{ opts, logDir, heartbeatFile, rows: [], programs: [], fleetStartWrites: {} },
    controllerMemory: new ChartMemory(),
    httpPort: (http.address() as AddressInfo).port,
    // Node options for the controller processes only (default none: the binary as shipped); for experiments.
    controllerEnv: {
      ...(env.BENCH_CONTROLLER_NODE_OPTIONS ? { NODE_OPTIONS: env.BENCH_CONTROLLER_NODE_OPTIONS } : {}),
      ...(env.BENCH_CONTROLLER_MALLOC_ARENA_MAX
        ? { MALLOC_ARENA_MAX: env.BENCH_CONTROLLER_MALLOC_ARENA_MAX }
        : {}),
    },
  };
  const stop = async (): Promise<void> => {
    await Promise.all(run.programs.map((p) => p.stop(5_000)));
    await run.fleet?.stop();
    await run.observer?.stop();
    await run.client?.close();
    await run.plane?.stop();
    http.close();
  };
  const onSignal = (): void => {
    say('interrupted; stopping');
    void stop().finally(() => process.exit(130));
  };
  // A phase can start a program while stop() runs (Ctrl-C while the fleet starts went on to start a
  // controller, which outlived the run): none is left behind when this process exits.
  const killLeft = (): void => {
    for (const { child } of run.programs)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', killLeft);
  const close = async (): Promise<void> => {
    say('stopping');
    await stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', killLeft);
    if (!opts.keepLogs) await rm(logDir, { recursive: true, force: true }).catch(() => undefined);
  };
  return { run, close };
}

/** The rows a run that stopped early with `failure` did not measure, each saying so (a miss). */
export function unmeasuredRows(rows: readonly Row[], failure: string): Row[] {
  const expected: Record<string, number> = { P1: 1, P2: 1, P3: 1, P4: 1, P5: 2, P6: 2, P7: 2, P8: 1 };
  return Object.entries(expected).flatMap(([id, count]) =>
    Array.from({ length: Math.max(0, count - rows.filter((r) => r.id === id).length) }, () => ({
      id,
      measure: 'not measured: the run stopped early',
      goal: 'see docs/design.md section 9',
      measured: failure,
      pass: false,
      load: load1(),
      values: {},
    })),
  );
}
