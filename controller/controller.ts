// nodecare-controller: caches warm on every replica (hot standby); only the leader runs the work queue and
// writes. On becoming leader every lease gets a fresh full duration and per-node memory starts empty, so a
// failover alone never taints a healthy node. Work starts only on caches in sync (again, after an outage),
// every write passes the leadership fence just before it is sent, and a term's in-flight work is stopped
// and awaited before the lease is released. `runController(config, deps)` is the whole program.

import { API_FEATURES, recordFeatures, reportFeatures } from '../lib/kube/features.ts';
import type { Registry } from 'prom-client';
import type { Clock } from '../lib/clock.ts';
import { startHealthServer } from '../lib/health.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { Logger } from '../lib/log.ts';
import { assembleController } from './assemble.ts';
import type { ControllerConfig } from './config.ts';
import { ControllerMetrics } from './metrics.ts';
import { firstSettle } from './settled.ts';
import { LeadershipTerms } from './term.ts';

/** Leader election as the controller uses it (lib/leader/elector.ts implements it on a Lease). */
export interface Elector {
  start(callbacks: {
    onStartedLeading(): void;
    onStoppedLeading(): Promise<void>;
    /** Whether this replica may campaign now (its caches are in sync). */
    canLead?(): boolean;
  }): void;
  /** Ends leadership and releases the lease; campaigns again as canLead allows. */
  stepDown?(): void;
  /** canLead may have turned: look again now. */
  canLeadChanged?(): void;
  /**
   * Stops campaigning; when leading, awaits onStoppedLeading, then releases the lease (by `deadlineMs` on
   * the controller's clock) so a standby takes over at once.
   */
  stop(options?: { deadlineMs?: number }): Promise<void>;
}

/** With --leader-elect=false the single replica leads from the start until it stops. */
export function alwaysLeader(): Elector {
  let stopLeading: (() => Promise<void>) | undefined;
  return {
    start: ({ onStartedLeading, onStoppedLeading }) => {
      stopLeading = onStoppedLeading;
      onStartedLeading();
    },
    stop: async () => stopLeading?.(),
  };
}

/** How long a stop may take when the caller gives no budget. */
export const DEFAULT_STOP_BUDGET_MS = 10_000;
/** Finish this long before the stop budget ends (the process exits at its end). */
const STOP_MARGIN_MS = 250;

export interface ControllerDeps {
  clock: Clock;
  log: Logger;
  registry: Registry;
  client: KubeClient;
  elector: Elector;
  /**
   * Called once, when this replica first settled (controller/settled.ts): the program's V8 settings for
   * steady state.
   */
  settled?(): void;
}

export interface RunningController {
  healthPort: number;
  isLeader(): boolean;
  /** Resolves when the queue is empty (tests). */
  idle(): Promise<void>;
  /** Stops within `budgetMs`: in-flight work drains (then is cut off), the leader lease is released. */
  stop(budgetMs?: number): Promise<void>;
}

export async function runController(
  config: ControllerConfig,
  deps: ControllerDeps,
): Promise<RunningController> {
  const { clock, client, registry, elector } = deps;
  const log = deps.log.child({ identity: config.identity });
  const metrics = new ControllerMetrics(registry);
  const terms = new LeadershipTerms(clock, log, metrics, { bounds: config.syncBounds, elector });
  const { cache, queue, work } = assembleController(config, { clock, client, log, metrics, terms });
  // A reconcile stuck this long (every request has a deadline, a reconcile makes a few dozen at most) means
  // the loop is wedged: liveness fails and the kubelet restarts the process. So it does when the caches have
  // not synced once within --startup-sync-timeout-seconds (a replica that cannot list does no work, and a
  // restart may cure it); a later loss of sync steps a leader down instead (term.ts): a restart would not
  // end an API outage and would throw the warm caches away.
  const stuckLimitMs = Math.max(60_000, 30 * config.requestTimeoutMs);
  let stopped = false;
  const alive = (): boolean => !stopped && queue.stuckForMs() < stuckLimitMs && !terms.syncOverdue();
  const health = await startHealthServer(
    config.healthPort,
    { healthy: alive, ready: () => cache.synced },
    registry,
    config.healthAddress,
  );
  const { leaderElect, dryRun, nodeSelector } = config;
  const started = { port: health.port, api: client.server, leaderElect, dryRun };
  log.info({ ...started, nodeSelector: nodeSelector || '(every node)' }, 'Started nodecare-controller');
  // What this API server serves of what nodecare can use, said once (docs/install.md, "Supported versions").
  void reportFeatures(client, Object.values(API_FEATURES), log).then((reports) =>
    recordFeatures(reports, metrics.featureAvailable),
  );
  cache.start();
  const settled = deps.settled;
  const settle = firstSettle(
    settled &&
      (() => {
        settled();
        log.info({ leading: terms.leading }, 'Settled: steady-state memory settings on');
      }),
    clock,
  );
  terms.run({
    ...work,
    synced: () => {
      const synced = work.synced();
      if (synced) settle.synced();
      return synced;
    },
    start: () => {
      work.start();
      settle.termStarted(queue.idle());
    },
  });
  elector.start(terms.elected);
  return {
    healthPort: health.port,
    isLeader: () => terms.leading,
    idle: () => queue.idle(),
    async stop(budgetMs = DEFAULT_STOP_BUDGET_MS) {
      stopped = true;
      settle.stop();
      // Drains in-flight work (onStoppedLeading), then releases the lease, all by the deadline.
      await terms.stop(clock.monotonic() + budgetMs - STOP_MARGIN_MS, (deadlineMs) =>
        elector.stop({ deadlineMs }),
      );
      await Promise.all([cache.stop(), health.close()]);
      log.info('Stopped nodecare-controller');
    },
  };
}
