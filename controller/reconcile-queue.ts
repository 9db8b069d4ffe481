// The work queue the controller runs its reconciles on: `--workers` at once, each reconcile counted by outcome
// and the queue depth sampled as it runs; a reconcile cut off because this replica stopped leading is not a
// failure to warn about.

import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import type { ControllerConfig } from './config.ts';
import type { ControllerMetrics } from './metrics.ts';
import { WorkQueue, type ReconcileFn } from '../lib/workqueue/workqueue.ts';
import { NotLeaderError } from './writes/index.ts';

/**
 * Node deadlines (a lease's expiry, a timeout's end) come on 100 ms slots: at 5,000 nodes about 83 come a
 * second, each a timer firing of its own when exact; on slots, at most ten a second (docs/adr/0016). A tenth
 * of a second late is nothing against a lease's duration of 60 s or more.
 */
export const DEADLINE_TICK_MS = 100;

export function reconcileQueue(
  reconciler: { reconcile: ReconcileFn },
  deps: {
    /** A node whose deadline came with nothing else since: the delay to its next one, or undefined (decide it). */
    rearm?: (name: string) => number | undefined;
    clock: Clock;
    log: Logger;
    metrics: Pick<ControllerMetrics, 'queueDepth' | 'reconciles'>;
    config: Pick<ControllerConfig, 'workers'>;
  },
): WorkQueue {
  const { clock, log, metrics, config, rearm } = deps;
  const queue: WorkQueue = new WorkQueue(
    async (name, cause) => {
      metrics.queueDepth.set(queue.depth);
      try {
        const result = await reconciler.reconcile(name, cause);
        metrics.reconciles.inc({ result: 'ok' });
        return result;
      } catch (err) {
        metrics.reconciles.inc({ result: 'error' });
        throw err;
      }
    },
    {
      clock,
      concurrency: config.workers,
      deadlineTickMs: DEADLINE_TICK_MS,
      ...(rearm ? { rearm } : {}),
      onError: (key, err, retryInMs) => {
        if (err instanceof NotLeaderError) log.debug({ node: key }, 'Reconcile stopped: no longer leading');
        else log.warn({ err, node: key, retryInMs }, 'Reconcile failed; retrying');
      },
    },
  );
  return queue;
}
