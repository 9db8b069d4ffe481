// nodecare-controller: caches warm on every replica (hot standby); only the leader runs the work queue and
// writes. On becoming leader every lease gets a fresh full duration and per-node memory starts empty, so a
// failover alone never taints a healthy node. Work starts only on caches in sync (again, after an outage),
// every write passes the leadership fence just before it is sent, and a term's in-flight work is stopped
// and awaited before the lease is released. `runController(config, deps)` is the whole program.

import type { Registry } from 'prom-client';
import type { Clock, Timer } from '../lib/clock.ts';
import { startHealthServer } from '../lib/health.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { Logger } from '../lib/log.ts';
import { ClusterCache, skippedObjectReporter } from './cache/index.ts';
import type { ControllerConfig } from './config.ts';
import { ZONE_LABEL, evictNodePods } from './eviction/index.ts';
import { Evictor } from './evictor.ts';
import { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { KubeRollupApi } from './rollup/store.ts';
import { RollupWriter } from './rollup/writer.ts';
import { WorkQueue } from './workqueue.ts';
import { clusterEventRecorder } from './writes/index.ts';
import { KubeNodeApi, NotLeaderError, eventRecorder, type Fence } from './writes/index.ts';

/** Leader election as the controller uses it (controller/leader.ts implements it on a Lease). */
export interface Elector {
  start(callbacks: { onStartedLeading(): void; onStoppedLeading(): Promise<void> }): void;
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
/** Of a stop budget, at most this much is kept for releasing the leader lease (the rest drains work). */
const RELEASE_RESERVE_MS = 2_000;
/** Finish this long before the stop budget ends (the process exits at its end). */
const STOP_MARGIN_MS = 250;
/** How often the sync watch looks at the caches. */
const SYNC_CHECK_MS = 50;

export interface ControllerDeps {
  clock: Clock;
  log: Logger;
  registry: Registry;
  client: KubeClient;
  elector: Elector;
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
  let leading = false;
  let stopped = false;
  let stopDeadlineMs = 0;
  /** The current leadership term's work; aborted when it must not write any more. */
  let term: AbortController | undefined;
  // A reconcile stuck this long (every request has a deadline, a reconcile makes a few dozen at most) means
  // the loop is wedged: liveness fails and the kubelet restarts the process.
  const stuckLimitMs = Math.max(60_000, 30 * config.requestTimeoutMs);

  /** Every write goes through here just before it is sent: only the current term writes. */
  const fence: Fence = () => {
    if (!term || term.signal.aborted) throw new NotLeaderError();
  };
  const api = new KubeNodeApi(client, { timeoutMs: config.requestTimeoutMs, signal: () => term?.signal });

  const enqueueAll = (): void => {
    for (const name of cache.nodeNames()) queue.add(name);
  };
  const cache: ClusterCache = new ClusterCache(
    client,
    clock,
    {
      nodeChanged: (name) => queue.add(name),
      allNodesChanged: () => {
        enqueueAll();
        // A SystemExtension changed: its counts may have to be written even with no node, and its status may
        // not be what this leader last wrote (an old leader's late write): read again.
        rollup.systemExtensionsChanged();
      },
      error: (source, err) => {
        metrics.watchErrors.inc({ source });
        log.warn({ err, source }, 'Watch failed; retrying with backoff');
      },
      skipped: skippedObjectReporter(log, metrics),
      ignored: (lease, problem) =>
        log.warn({ lease: lease.name, node: lease.node, problem }, "Ignored a lease that is not the agent's"),
      ignoredCount: (problem, count) => metrics.leasesIgnored.set({ reason: problem }, count),
    },
    config.nodeSelector,
  );
  const events = eventRecorder(api, config.identity, clock, fence);
  const reconciler = new Reconciler({
    cache,
    api,
    fence,
    clock,
    log,
    metrics,
    events,
    config,
    onBreakerChange: enqueueAll,
    onRollupChange: () => rollup.markDirty(),
  });
  const rollup = new RollupWriter({
    api: new KubeRollupApi(client, { timeoutMs: config.requestTimeoutMs, signal: () => term?.signal }),
    source: {
      pairs: () => reconciler.rollupPairs(),
      systemExtensionNames: function* () {
        for (const sx of cache.systemExtensionList()) yield sx.name;
      },
    },
    clock,
    log: log.child({ component: 'rollup' }),
    metrics,
    fence,
    events: clusterEventRecorder(api, config.identity, clock, fence),
    thresholdsMs: config.rollupThresholdsMs,
    gardenerCluster: config.gardenerCluster,
    gardenerResyncMs: config.gardenerResyncMs,
  });
  const evictor = new Evictor({
    evict: (nodeName, dryRun) =>
      evictNodePods({
        client,
        nodeName,
        runtimeTaintKey: config.runtimeTaintKey,
        dryRun,
        log: log.child({ component: 'eviction' }),
        timeoutMs: config.requestTimeoutMs,
        signal: term?.signal,
        beforeWrite: fence,
      }),
    clock,
    log,
    metrics,
    events,
    config,
    node: (name) => {
      const node = cache.node(name);
      return node && { name: node.name, uid: node.uid, zone: node.labels[ZONE_LABEL] ?? '' };
    },
    states: () => reconciler.nodeStates(),
    breakerTripped: () => reconciler.trippedExtensions.size > 0,
  });
  const queue: WorkQueue = new WorkQueue(
    async (name) => {
      metrics.queueDepth.set(queue.depth);
      try {
        const result = await reconciler.reconcile(name);
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
      onError: (key, err, retryInMs) => {
        if (err instanceof NotLeaderError) log.debug({ node: key }, 'Reconcile stopped: no longer leading');
        else log.warn({ err, node: key, retryInMs }, 'Reconcile failed; retrying');
      },
    },
  );

  /** Starts a term's work once this replica leads on caches in sync (again, after an outage). */
  const maybeStartWork = (): void => {
    if (!leading || term || stopped || !cache.synced) return;
    term = new AbortController();
    cache.refreshObservations();
    // Decides every node and judges the breaker over all of them before the queue's first write.
    reconciler.reset();
    queue.start();
    enqueueAll();
    evictor.start();
    // After reset(): the first evaluation sees every node decided, never a partial cluster.
    rollup.start();
    log.info(
      { nodes: cache.nodes.store.size, dryRun: config.dryRun, eviction: evictor.enabled },
      'Reconciling as leader',
    );
  };

  /**
   * Ends the term's work: no new reconcile or eviction pass starts; the ones in flight are awaited. After a
   * lost election nothing more may be written, so they are cut off at once; on stop() this replica still
   * holds the lease and lets them finish until `drainByMs`.
   */
  const endWork = async (drainByMs: number | undefined): Promise<void> => {
    const current = term;
    if (!current) return;
    if (drainByMs === undefined) current.abort();
    const drained = Promise.all([queue.stop(), evictor.stop(), rollup.stop()]);
    if (drainByMs !== undefined) {
      const timeout = new AbortController();
      await Promise.race([
        drained,
        clock.sleep(Math.max(0, drainByMs - clock.now()), timeout.signal).catch(() => undefined),
      ]);
      timeout.abort();
      current.abort();
    }
    await drained;
    term = undefined;
  };

  const health = await startHealthServer(
    config.healthPort,
    { healthy: () => !stopped && queue.stuckForMs() < stuckLimitMs, ready: () => cache.synced },
    registry,
    config.healthAddress,
  );
  log.info(
    {
      port: health.port,
      api: client.server,
      leaderElect: config.leaderElect,
      dryRun: config.dryRun,
      nodeSelector: config.nodeSelector || '(every node)',
    },
    'Started nodecare-controller',
  );

  cache.start();
  let wasSynced = false;
  let syncTimer: Timer | undefined;
  const watchSync = (): void => {
    const synced = cache.synced;
    if (synced !== wasSynced) {
      wasSynced = synced;
      if (synced) log.info({ nodes: cache.nodes.store.size }, 'Caches synced');
      else log.warn('Caches out of sync; relisting');
    }
    maybeStartWork();
    if (!stopped) syncTimer = clock.setTimer(SYNC_CHECK_MS, watchSync);
  };
  watchSync();

  elector.start({
    onStartedLeading: () => {
      leading = true;
      metrics.isLeader.set(1);
      log.info('Became leader');
      maybeStartWork();
    },
    onStoppedLeading: async () => {
      if (!leading) return;
      leading = false;
      metrics.isLeader.set(0);
      if (stopped) {
        await endWork(stopDeadlineMs - Math.min(RELEASE_RESERVE_MS, (stopDeadlineMs - clock.now()) / 2));
      } else {
        log.warn('Lost leadership; stopped writing');
        await endWork(undefined);
      }
    },
  });

  return {
    healthPort: health.port,
    isLeader: () => leading,
    idle: () => queue.idle(),
    async stop(budgetMs = DEFAULT_STOP_BUDGET_MS) {
      stopped = true;
      stopDeadlineMs = clock.now() + budgetMs - STOP_MARGIN_MS;
      syncTimer?.cancel();
      // Drains in-flight work (onStoppedLeading), then releases the lease, all by the deadline.
      await elector.stop({ deadlineMs: stopDeadlineMs });
      await endWork(clock.now());
      leading = false;
      await Promise.all([cache.stop(), health.close()]);
      log.info('Stopped nodecare-controller');
    },
  };
}
