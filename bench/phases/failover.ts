// P7: the leader is killed (SIGKILL) and then stopped (SIGTERM) with a standby running: how long until the
// standby writes a node change made at that moment. Returns the controller leading at the end.
import { leaderOf, load1, over, ready, say } from '../common.ts';
import { startBinary, type Program } from '../procs.ts';
import { fmtMs } from '../report.ts';
import type { BenchCluster, BenchLeader, BenchRun } from '../run.ts';

export async function measureFailover(
  run: BenchRun,
  cluster: BenchCluster,
  leader: BenchLeader,
): Promise<Program> {
  const { opts, rows, logDir, programs, controllerEnv } = run;
  const { client, observer, fleet, others } = cluster;
  const E = opts.extensions;
  const f = fleet;
  const controllerArgs = leader.args;
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
      run.controllerMemory.for(opts.nodes),
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
  const crash = await failover(leader.program, 'bench-controller-b', 'SIGKILL', 0);
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
  return graceful.standby;
}
