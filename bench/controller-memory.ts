// The controller's container as the chart sizes it for a fleet (bench/controller-only/chart-limit.ts): a memory
// cgroup of that limit for each controller the benchmark starts (bench/cgroup.ts), so that V8 sizes its heap
// as it does in the Deployment. Both benchmarks use it: the controller alone against the sink, and the whole
// cluster (every controller of its convergence, failover and restart phases).
import { memoryCgroup, type MemoryCgroup } from './cgroup.ts';
import { say } from './common.ts';
import { chartMemoryLimitBytes } from './controller-only/chart-limit.ts';

export class ChartMemory {
  /** Why a controller ran without a limit (this machine gives none); undefined while every one had it. */
  problem: string | undefined;

  /** A cgroup of the chart's limit for `nodes`, one per start; undefined, said once, where this machine gives none. */
  for(nodes: number): MemoryCgroup | undefined {
    const cgroup = memoryCgroup('nodecare-bench-controller', chartMemoryLimitBytes(nodes));
    if (typeof cgroup !== 'string') return cgroup;
    if (this.problem === undefined) say(`the controller runs without a memory limit: ${cgroup}`);
    this.problem = cgroup;
    return undefined;
  }

  /** What a run records of the limit for `nodes`: the chart's, in bytes, or why its controllers ran without one. */
  recorded(nodes: number): number | string {
    return this.problem ?? chartMemoryLimitBytes(nodes);
  }
}
