// P3: the measured agent is killed → its node's extensions Unknown and the runtime taint on, within the
// agent's heartbeat lease duration and two seconds.
import { load1, over, say } from '../common.ts';
import type { CreatedNode } from '../common.ts';
import type { Program } from '../procs.ts';
import { fmtMs } from '../report.ts';
import type { BenchCluster, BenchRun } from '../run.ts';

export async function measureAgentLoss(
  run: BenchRun,
  cluster: BenchCluster,
  measured: { agent: Program; agentNode: CreatedNode },
): Promise<void> {
  const { opts, rows } = run;
  const { observer } = cluster;
  const { agent, agentNode } = measured;
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
}
