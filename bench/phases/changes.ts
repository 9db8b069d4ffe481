// P1 and P2: change latency under a stream of changes. P1: a bootstrapping node's last lease turns Healthy →
// its bootstrap taint gone; P2: a failure written → the runtime taint on (then healed at once). Then the node
// writes refused with 409 over the run so far, and the ClusterHealth writes per node change.
import { extensionLeaseName } from '../../api/index.ts';
import {
  distributionRow,
  load1,
  measureChanges,
  nodeWriteConflictsRow,
  ready,
  say,
  sleep,
} from '../common.ts';
import type { BenchCluster, BenchLeader, BenchRun } from '../run.ts';

export async function measureChangeLatency(
  run: BenchRun,
  cluster: BenchCluster,
  leader: BenchLeader,
): Promise<void> {
  const { opts, rows } = run;
  const { observer, fleet, cohort, extensions } = cluster;
  const { extensions: E, samples: S } = opts;
  // ---- P1: the last required lease turns Healthy → bootstrap taint gone.
  const rollupWritesBefore = observer.writeCount().clusterHealth;
  const last = E - 1;
  say(`P1: ${S} nodes finish bootstrapping at ${opts.changeRate}/s`);
  const f = fleet;
  const p1 = await measureChanges(
    observer,
    cohort.map((n) => ({
      node: n.name,
      lease: extensionLeaseName(n.name, extensions[last] as string),
      leaseTest: (s) => s === 'Healthy',
      nodeTest: (node) => !node.bootstrapTaint,
      fire: () => f.set(n.name, last, 'Healthy'),
    })),
    opts.changeRate,
    60_000,
  );
  rows.push(distributionRow('P1', 'last lease Healthy → bootstrap taint gone', p1, 1000));

  // ---- P2: an agent writes a failure → runtime taint present (then healthy again).
  const p2 = { latencies: [] as number[], missed: 0 };
  for (let round = 0; round < opts.iterations; round++) {
    say(`P2 round ${round + 1}/${opts.iterations}: ${S} failures at ${opts.changeRate}/s`);
    const restored: Promise<unknown>[] = [];
    const r = await measureChanges(
      observer,
      cohort.map((n, i) => {
        const ext = (i + round) % E;
        return {
          node: n.name,
          lease: extensionLeaseName(n.name, extensions[ext] as string),
          leaseTest: (s) => s === 'Unhealthy',
          nodeTest: (node) => {
            if (!node.runtimeTaint) return false;
            // Heal at once, so no more than a handful of nodes fail together (the breaker stays closed).
            f.set(n.name, ext, 'Healthy');
            restored.push(observer!.nodes.waitFor(n.name, ready, 60_000));
            return true;
          },
          fire: () => f.set(n.name, ext, 'Unhealthy'),
        };
      }),
      opts.changeRate,
      60_000,
    );
    p2.latencies.push(...r.latencies);
    p2.missed += r.missed;
    await Promise.all(restored);
  }
  rows.push(distributionRow('P2', 'failure written → runtime taint present', p2, 1000));
  rows.push(await nodeWriteConflictsRow(leader.metricsPort));
  // The roll-up over the same phases: every change above moved a node's contribution (P1 once, P2 twice:
  // the failure and its healing), and the roll-up is written at most once per change, fewer when
  // changes fall within its one-second coalescing window.
  await sleep(3_000); // the last coalesced write
  const rollupWrites = observer.writeCount().clusterHealth - rollupWritesBefore;
  const contributionChanges = p1.latencies.length + p1.missed + 2 * (p2.latencies.length + p2.missed);
  rows.push({
    id: 'rollup-w',
    measure: 'ClusterHealth writes per node change (P1 and P2 phases)',
    goal: '≤ 1 per change',
    measured: `${rollupWrites} writes for ${contributionChanges} changes (${(rollupWrites / Math.max(1, contributionChanges)).toFixed(2)} per change)`,
    pass: rollupWrites <= contributionChanges,
    load: load1(),
    values: { rollupWrites, contributionChanges },
  });
}
