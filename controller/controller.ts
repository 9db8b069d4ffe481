// nodecare-controller: caches warm on every replica (hot standby); only the leader runs the work queue and
// writes. On becoming leader every lease gets a fresh full duration and per-node memory starts empty, so a
// failover alone never taints a healthy node. `runController(config, deps)` is the whole program.

import type { Registry } from 'prom-client';
import type { Clock } from '../lib/clock.ts';
import { startHealthServer } from '../lib/health.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { Logger } from '../lib/log.ts';
import { ClusterCache } from './cache.ts';
import type { ControllerConfig } from './config.ts';
import { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { WorkQueue } from './workqueue.ts';
import { Evictor } from './evictor.ts';
import { eventRecorder } from './writes.ts';

/** Leader election as the controller uses it (controller/leader.ts implements it on a Lease). */
export interface Elector {
  start(callbacks: { onStartedLeading(): void; onStoppedLeading(): void }): void;
  /** Stops campaigning; releases the lease if leading so a standby takes over at once. */
  stop(): Promise<void>;
}

/** With --leader-elect=false the single replica leads from the start. */
export const alwaysLeader: Elector = {
  start: ({ onStartedLeading }) => onStartedLeading(),
  stop: async () => undefined,
};

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
  stop(): Promise<void>;
}

export async function runController(
  config: ControllerConfig,
  deps: ControllerDeps,
): Promise<RunningController> {
  const { clock, client, registry, elector } = deps;
  const log = deps.log.child({ identity: config.identity });
  const metrics = new ControllerMetrics(registry);
  let leading = false;
  let synced = false;
  let stopped = false;

  const enqueueAll = (): void => {
    for (const name of cache.nodeNames()) queue.add(name);
  };
  const cache: ClusterCache = new ClusterCache(client, clock, {
    nodeChanged: (name) => queue.add(name),
    allNodesChanged: enqueueAll,
    error: (source, err) => {
      metrics.watchErrors.inc({ source });
      log.warn({ err, source }, 'Watch failed; retrying with backoff');
    },
  });
  const events = eventRecorder(client, config.identity, clock, config.requestTimeoutMs);
  const reconciler = new Reconciler({
    cache,
    client,
    clock,
    log,
    metrics,
    events,
    config,
    onBreakerChange: enqueueAll,
  });
  const evictor = new Evictor({
    client,
    clock,
    log,
    metrics,
    events,
    config,
    cache,
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
      onError: (key, err, retryInMs) => log.warn({ err, node: key, retryInMs }, 'Reconcile failed; retrying'),
    },
  );

  const maybeStartWork = (): void => {
    if (!leading || !synced || stopped) return;
    cache.refreshObservations();
    reconciler.reset();
    queue.start();
    enqueueAll();
    evictor.start();
    log.info(
      { nodes: cache.nodes.store.size, dryRun: config.dryRun, eviction: evictor.enabled },
      'Reconciling as leader',
    );
  };

  const health = await startHealthServer(
    config.healthPort,
    { healthy: () => !stopped, ready: () => synced },
    registry,
    config.healthAddress,
  );
  log.info(
    { port: health.port, api: client.server, leaderElect: config.leaderElect, dryRun: config.dryRun },
    'Started nodecare-controller',
  );

  cache.start();
  const syncWatch = setInterval(() => {
    if (cache.synced) {
      clearInterval(syncWatch);
      synced = true;
      log.info({ nodes: cache.nodes.store.size, leases: cache.leases.store.size }, 'Caches synced');
      maybeStartWork();
    }
  }, 50);

  elector.start({
    onStartedLeading: () => {
      leading = true;
      metrics.isLeader.set(1);
      log.info('Became leader');
      maybeStartWork();
    },
    onStoppedLeading: () => {
      if (!leading) return;
      leading = false;
      metrics.isLeader.set(0);
      log.warn('Lost leadership; stopped writing');
      evictor.stop();
      void queue.stop();
    },
  });

  return {
    healthPort: health.port,
    isLeader: () => leading,
    idle: () => queue.idle(),
    async stop() {
      stopped = true;
      clearInterval(syncWatch);
      evictor.stop();
      await queue.stop();
      await elector.stop();
      leading = false;
      await Promise.all([cache.stop(), health.close()]);
      log.info('Stopped nodecare-controller');
    },
  };
}
