// The benchmark's options (`npm run bench -- --help`) and the settings every run records with its results.

import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { AGENT_OPTIONS } from '../agent/config.ts';
import { ROOT } from './procs.ts';
import { defaultFleetProcesses, NODES_PER_FLEET_PROCESS } from './simulator.ts';

/**
 * One pod change in the churn every this many ms on each node: a pod created, made Ready, or deleted
 * (phases/pod-source.ts).
 */
export const POD_CHANGE_EVERY_MS = 5_000;

const USAGE = `Usage: npm run bench -- [options]

  --nodes N              simulated nodes (10..10000, default 1000)
  --extensions E         extensions every node requires (1..20, default 5)
  --samples S            P1 and P2 changes, spread across S nodes (default 250, at most half the nodes)
  --iterations K         rounds of the P2 change (default 1)
  --restarts K           rounds of the P8 restart; the row is the slowest (default 3)
  --change-rate R        changes per second in P1/P2 (default 20)
  --steady-seconds T     P4/P6 window (default 180; the goals ask for at least 180)
  --pods-api-seconds W   window of the pods-api phase: two agents, podReady pods from the kubelet's Pods
                         API vs the API server (default 600, the longest watch timeout; 0 skips it)
  --agent-heartbeat-seconds H  the measured agent's heartbeat lease (default: the agent's own, 60)
  --fleet-processes P    processes the simulated agents are split between (1..32, default one per
                         ${NODES_PER_FLEET_PROCESS} nodes)
  --out DIR              results directory (default bench/results)
  --keep-logs            keep the programs' logs (their directory is printed at the start)
  --controller-workers W the controllers' --workers (default: the controller's own default)
  --controller-only      the controller's own cost at sizes one API server here cannot serve: the real
                         controller against a recording sink, for each of --nodes (a comma list,
                         100..100000 each, default 10000,20000,50000); --steady-seconds is the renewal
                         window (default 60), --samples the changes (default 500); with --smoke
                         200,400 nodes, 20 changes, short windows
  --smoke                100 nodes in 2 fleet processes, 50 samples, 10 s windows, 8 s heartbeat: checks
                         that it runs
  --help`;

/** kube-apiserver flags for scale: in-flight limits raised (etcd already runs without fsync). */
export const SCALE_FLAGS = ['--max-requests-inflight=3000', '--max-mutating-requests-inflight=1000'];
/** Simulated agents starting at once (each writes 1 + E leases before the next one starts). */
export const FLEET_START_CONCURRENCY = 24;
/**
 * The simulator's request deadline. Not the agent's 10 s: a simulator process carries a thousand agents'
 * requests on a handful of connections, and an HTTP/1.1 request given up in flight costs its connection. When
 * a burst held the API server's answers past 10 s (the controller converging on 5,000 nodes while other work
 * shared the 2 cores), every connection was torn down together, the thousands of retries waited on new TLS
 * handshakes that took the CPU the API server needed to answer, and the simulator never wrote again. The API
 * server answers or gives up within 60 s by itself; 30 s rides out such a burst.
 */
export const FLEET_REQUEST_TIMEOUT_MS = 30_000;
export const RSS_SAMPLE_MS = 5_000;

export interface Options {
  nodes: number;
  extensions: number;
  samples: number;
  iterations: number;
  /** Rounds of the P8 restart (bench/phases/restart.ts). */
  restarts: number;
  changeRate: number;
  steadySeconds: number;
  /** The pods-api phase's window (bench/phases/pod-source.ts); 0 skips it. */
  podSourceSeconds: number;
  agentHeartbeatSeconds: number;
  fleetProcesses: number;
  out: string;
  keepLogs: boolean;
  /** The controllers' --workers; undefined: the controller's default. */
  controllerWorkers: number | undefined;
  /** `--controller-only`: the sizes to measure against the recording sink (bench/controller-only/). */
  controllerOnly: boolean;
  controllerOnlySizes: number[];
  /** --smoke: checks that it runs (short windows), measures nothing worth keeping. */
  smoke: boolean;
}

export const CONTROLLER_ONLY_SIZES = [10_000, 20_000, 50_000];
const CONTROLLER_ONLY_SMOKE_SIZES = [200, 400];

export function parseOptions(argv: string[]): Options | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string' },
      extensions: { type: 'string' },
      samples: { type: 'string' },
      iterations: { type: 'string' },
      restarts: { type: 'string' },
      'change-rate': { type: 'string' },
      'steady-seconds': { type: 'string' },
      'pods-api-seconds': { type: 'string' },
      'agent-heartbeat-seconds': { type: 'string' },
      'fleet-processes': { type: 'string' },
      out: { type: 'string' },
      'keep-logs': { type: 'boolean' },
      'controller-workers': { type: 'string' },
      'controller-only': { type: 'boolean' },
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
  const controllerOnly = values['controller-only'] ?? false;
  const sizes = controllerOnly ? controllerOnlySizes(values.nodes, smoke, problems) : [];
  const nodes = controllerOnly ? (sizes[0] ?? 0) : int('nodes', values.nodes, smoke ? 100 : 1000, 10, 10_000);
  const opts: Options = {
    nodes,
    extensions: int('extensions', values.extensions, 5, 1, 20),
    samples: int(
      'samples',
      values.samples,
      controllerOnly ? (smoke ? 20 : 500) : smoke ? 50 : 250,
      1,
      10_000,
    ),
    iterations: int('iterations', values.iterations, 1, 1, 100),
    restarts: int('restarts', values.restarts, smoke ? 2 : 3, 1, 20),
    changeRate: int('change-rate', values['change-rate'], 20, 1, 1000),
    steadySeconds: int(
      'steady-seconds',
      values['steady-seconds'],
      smoke ? 10 : controllerOnly ? 60 : 180,
      5,
      3600,
    ),
    podSourceSeconds: int('pods-api-seconds', values['pods-api-seconds'], smoke ? 10 : 600, 0, 3600),
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
    controllerOnly,
    controllerOnlySizes: sizes,
    smoke,
  };
  if (!controllerOnly && opts.samples > Math.floor(nodes / 2))
    problems.push(`--samples: ${opts.samples} is more than half the nodes (${Math.floor(nodes / 2)})`);
  if (problems.length > 0) throw new Error(`bad options:\n  ${problems.join('\n  ')}\n\n${USAGE}`);
  return opts;
}

function controllerOnlySizes(raw: string | undefined, smoke: boolean, problems: string[]): number[] {
  if (raw === undefined) return smoke ? CONTROLLER_ONLY_SMOKE_SIZES : CONTROLLER_ONLY_SIZES;
  const sizes = raw.split(',').map((part) => Number(part.trim()));
  if (sizes.some((n) => !Number.isInteger(n) || n < 100 || n > 100_000))
    problems.push(
      `--nodes: "${raw}" is not a comma list of integers in 100..100000 (with --controller-only)`,
    );
  return sizes;
}

/** The settings a run records with its results (what its figures depend on besides the scale). */
export function settingsOf(
  opts: Options,
  recorded: {
    controllerEnv: Record<string, string>;
    controllerMemory: { recorded(nodes: number): number | string };
    fleetStartWrites: Record<string, number>;
    plane?: { version: string };
  },
): Record<string, unknown> {
  return {
    // The control plane's Kubernetes version (NODECARE_KUBE_DIR builds another, docs/benchmark.md).
    kubernetes: recorded.plane?.version ?? 'not started',
    apiserverFlags: SCALE_FLAGS,
    changeRatePerSecond: opts.changeRate,
    iterations: opts.iterations,
    restarts: opts.restarts,
    agentHeartbeatSeconds: opts.agentHeartbeatSeconds,
    podsApiSeconds: opts.podSourceSeconds,
    podChangeEveryMs: POD_CHANGE_EVERY_MS,
    controllerWorkers: opts.controllerWorkers ?? 'default',
    fleetHeartbeatSeconds: AGENT_OPTIONS['heartbeat-duration-seconds'].default,
    fleetExtensionRenewSeconds: AGENT_OPTIONS['extension-renew-seconds'].default,
    fleetStartConcurrency: FLEET_START_CONCURRENCY,
    fleetRequestTimeoutMs: FLEET_REQUEST_TIMEOUT_MS,
    fleetProcesses: opts.fleetProcesses,
    controllerEnv: recorded.controllerEnv,
    // Every controller ran in a memory cgroup of the chart's limit for the fleet, or none and why.
    controllerMemoryLimitBytes: recorded.controllerMemory.recorded(opts.nodes),
    fleetStartWrites: recorded.fleetStartWrites,
  };
}
