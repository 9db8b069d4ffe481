// P4, P5 and P6 in one quiet window: a real agent (dist/agent/main.js) on one more node, then the API writes per
// node, the controller's CPU per lease renewal and its memory, and the agent's memory and CPU.
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { HEARTBEAT_RENEWALS_PER_DURATION } from '../../agent/heartbeat.ts';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createNode, fmtMiB1, load1, over, ready, say, sleep, type CreatedNode } from '../common.ts';
import { RSS_SAMPLE_MS } from '../options.ts';
import { ROOT, procCpuMs, procMemory, procThreadCpuMs, startBinary, type Program } from '../procs.ts';
import { fmtMiB } from '../report.ts';
import type { BenchCluster, BenchLeader, BenchRun } from '../run.ts';

export async function measureQuietWindow(
  run: BenchRun,
  cluster: BenchCluster,
  leader: BenchLeader,
): Promise<{ agent: Program; agentNode: CreatedNode }> {
  const { opts, rows, logDir, programs } = run;
  const { plane, client, observer, fleet, init } = cluster;
  const { nodes: N, extensions: E } = opts;
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
  const controllerPid = leader.program.child.pid ?? 0;
  const w0 = observer.writeCount();
  const cpu0 = await procCpuMs(agentPid);
  const fleetCpu0 = await Promise.all(fleet.pids.map(procCpuMs));
  const controllerCpu0 = await procCpuMs(controllerPid);
  const controllerThreads0 = await procThreadCpuMs(controllerPid);
  // The control plane's CPU over the same window: the load every figure of this run is taken under.
  const cp = plane.pids();
  const cpCpu = async (pid: number | undefined): Promise<number> => (pid ? procCpuMs(pid) : NaN);
  const apiserverCpu0 = await cpCpu(cp.apiserver);
  const etcdCpu0 = await cpCpu(cp.etcd);
  const reconciles0 = await reconcileCounts(leader.metricsPort);
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
  const controllerThreads1 = await procThreadCpuMs(controllerPid);
  // Where the controller's CPU went: its event loop, V8's worker threads (garbage collection), the rest.
  const threadMillicores = (k: 'main' | 'v8' | 'other'): number =>
    (controllerThreads1[k] - controllerThreads0[k]) / windowS;
  const apiserverCpuMs = (await cpCpu(cp.apiserver)) - apiserverCpu0;
  const apiserverCores = apiserverCpuMs / 1000 / windowS;
  const etcdCores = ((await cpCpu(cp.etcd)) - etcdCpu0) / 1000 / windowS;
  const w1 = observer.writeCount();
  const reconciles1 = await reconcileCounts(leader.metricsPort);
  agentRss.push((await procMemory(agentPid)).rssBytes);
  const controllerMem = await procMemory(controllerPid);
  controllerRss.push(controllerMem.rssBytes);
  const floor = await measureWatchFloor(run, plane.kubeconfigPath, observer, controllerPid);
  const writes =
    w1.leases -
    w0.leases +
    (w1.nodes - w0.nodes) +
    (w1.events - w0.events) +
    (w1.clusterHealth - w0.clusterHealth);
  const perNode = writes / (N + 1) / windowS;
  // Whether the simulator kept up: the lease writes its cadence asks for in the window, and its CPU.
  const fleetLeaseWritesExpected =
    N *
    windowS *
    (HEARTBEAT_RENEWALS_PER_DURATION / init.heartbeatDurationSeconds + E / init.extensionRenewSeconds);
  const fleetCores = fleetCpu1.map((c, i) => (c - (fleetCpu0[i] ?? 0)) / 1000 / windowS);
  // The API server's CPU per write it took in the window (nearly all lease renewals): what one write costs it.
  const apiserverMsPerWrite = apiserverCpuMs / Math.max(1, writes);
  say(
    `quiet window: ${w1.leases - w0.leases} lease writes (the fleet's cadence asks for about ${Math.round(fleetLeaseWritesExpected)}); fleet processes' CPU ${fleetCores.map((c) => c.toFixed(2)).join(', ')} cores; kube-apiserver ${apiserverCores.toFixed(2)} cores (${apiserverMsPerWrite.toFixed(2)} ms per write), etcd ${etcdCores.toFixed(2)} cores`,
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
      apiserverCores,
      apiserverMsPerWrite,
      etcdCores,
    },
  });
  // The controller's CPU per lease renewal it watched in the quiet window: all its CPU there (its own
  // leader-election renewals included) over the renewals, so an upper bound (issue 24 item 3). Beside it, the
  // floor: a bare Node.js process receiving the same watch (bench/floor-watch.ts), and the controller over the
  // same seconds.
  const renewals = w1.leases - w0.leases;
  const cpuMsPerRenewal = renewals > 0 ? (controllerMillicores * windowS) / renewals : 0;
  // The node reconciles in the window (nothing changed: each is a node's lease deadline firing) and the time
  // they took, writes included: how much of that CPU is deciding again rather than reading the renewals.
  const reconciles = reconciles1.count - reconciles0.count;
  const reconcileMs = (reconciles1.seconds - reconciles0.seconds) * 1000;
  rows.push({
    id: 'renewal-cpu',
    measure: 'controller CPU per lease renewal (quiet window, all its CPU)',
    goal: '≤ 0.1 ms',
    measured: `${cpuMsPerRenewal.toFixed(3)} ms (${controllerMillicores.toFixed(1)} mCPU for ${(renewals / windowS).toFixed(1)} renewals/s: event loop ${threadMillicores('main').toFixed(1)}, V8 workers ${threadMillicores('v8').toFixed(1)}, other threads ${threadMillicores('other').toFixed(1)}; ${(reconciles / windowS).toFixed(1)} node reconciles/s taking ${(reconcileMs / windowS).toFixed(1)} ms/s); floor ${floor.floorMsPerRenewal.toFixed(3)} ms (a bare Node.js watch of the same Leases, ${floor.seconds.toFixed(0)} s, controller ${floor.controllerMsPerRenewal.toFixed(3)} ms then)`,
    pass: cpuMsPerRenewal <= 0.1,
    load: load1(),
    values: {
      ...{ cpuMsPerRenewal, controllerMillicores, renewalsPerSecond: renewals / windowS },
      mainThreadMillicores: threadMillicores('main'),
      v8WorkerMillicores: threadMillicores('v8'),
      otherThreadMillicores: threadMillicores('other'),
      reconcilesPerSecond: reconciles / windowS,
      reconcileMsPerSecond: reconcileMs / windowS,
      floorMsPerRenewal: floor.floorMsPerRenewal,
      floorEventsPerSecond: floor.eventsPerSecond,
      floorRenewalsPerSecond: floor.renewalsPerSecond,
      controllerMsPerRenewalBesideFloor: floor.controllerMsPerRenewal,
    },
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
    measured: `${fmtMiB(leader.peakRssAfterStartBytes)}${over(leader.peakRssAfterStartBytes, 256 * 2 ** 20, fmtMiB1)}`,
    pass: leader.peakRssAfterStartBytes <= 256 * 2 ** 20,
    load: load1(),
    values: { peakRssBytes: leader.peakRssAfterStartBytes, peakRssWholeRunBytes: controllerMem.peakRssBytes },
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
  return { agent, agentNode };
}

/**
 * The floor under `renewal-cpu`, right after the quiet window: for a third of it (at most 60 s) a bare Node.js
 * process (bench/floor-watch.ts) receives the controller's lease watch and only counts lines. Its CPU per
 * renewal is what TLS, HTTP and an event-loop wake-up per event cost on this machine under this load; the
 * controller's CPU per renewal over the same seconds is read beside it.
 */
async function measureWatchFloor(
  run: BenchRun,
  kubeconfigPath: string,
  observer: BenchCluster['observer'],
  controllerPid: number,
): Promise<{
  seconds: number;
  floorMsPerRenewal: number;
  controllerMsPerRenewal: number;
  eventsPerSecond: number;
  renewalsPerSecond: number;
}> {
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'floor-watch.ts'), kubeconfigPath], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    const pid = child.pid ?? 0;
    const deadline = performance.now() + 60_000;
    while (!out.startsWith('watching\n')) {
      if (child.exitCode !== null || performance.now() > deadline)
        throw new Error(`bench/floor-watch.ts did not open its watch: ${err.trim() || 'no output'}`);
      await sleep(100);
    }
    await sleep(1_000);
    const seconds = Math.min(60, run.opts.steadySeconds / 3);
    const w0 = observer.writeCount().leases;
    const floor0 = await procCpuMs(pid);
    const controller0 = await procCpuMs(controllerPid);
    const t0 = performance.now();
    child.kill('SIGUSR2');
    await sleep(seconds * 1000);
    const floorMs = (await procCpuMs(pid)) - floor0;
    const controllerMs = (await procCpuMs(controllerPid)) - controller0;
    const windowS = (performance.now() - t0) / 1000;
    const renewals = observer.writeCount().leases - w0;
    child.kill('SIGTERM');
    if ((await exited) !== 0) throw new Error(`bench/floor-watch.ts failed: ${err.trim() || 'no output'}`);
    const lines = out.trim().split('\n').slice(1);
    if (lines.length !== 2) throw new Error(`bench/floor-watch.ts printed ${JSON.stringify(out)}`);
    return {
      seconds: windowS,
      floorMsPerRenewal: floorMs / Math.max(1, renewals),
      controllerMsPerRenewal: controllerMs / Math.max(1, renewals),
      // The lines it had at the window's start and at its end (bookmarks and renewals of every Lease).
      eventsPerSecond: (Number(lines[1]) - Number(lines[0])) / windowS,
      renewalsPerSecond: renewals / windowS,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

/**
 * The controller's node reconciles so far and the seconds they took (its reconcile histogram's count and sum),
 * and the node deadlines it re-armed without deciding (docs/adr/0009).
 */
export async function reconcileCounts(
  port: number,
): Promise<{ count: number; seconds: number; rearms: number }> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  const read = (name: string): number =>
    Number(new RegExp(`^nodecare_controller_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return {
    count: read('reconcile_duration_seconds_count'),
    seconds: read('reconcile_duration_seconds_sum'),
    rearms: read('deadline_rearms_total'),
  };
}
