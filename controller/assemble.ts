// The controller's object graph, wired once: the cache feeds the work queue, the queue runs the reconciler,
// the reconciler feeds the roll-up and the evictor, and every write is fenced and cut off by the leadership
// term. `work` is what a term starts and stops. No logic of its own: each part is a room with its tests.

import type { Clock } from '../lib/clock.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { Logger } from '../lib/log.ts';
import { ClusterCache, skippedObjectReporter } from './cache/index.ts';
import { publishedPolicy, type ControllerConfig } from './config.ts';
import { Evictor, evictNodePods, evictionNodeView, readNodeHold } from './eviction/index.ts';
import type { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { KubeRollupApi, RollupWriter } from './rollup/index.ts';
import type { LeadershipTerms, TermWork } from './term.ts';
import { reconcileQueue } from './reconcile-queue.ts';
import type { WorkQueue } from './workqueue.ts';
import { clusterEventRecorder, eventRecorder, KubeNodeApi, withEventLane } from './writes/index.ts';

export interface ControllerParts {
  cache: ClusterCache;
  queue: WorkQueue;
  work: TermWork;
}

export function assembleController(
  config: ControllerConfig,
  deps: { clock: Clock; client: KubeClient; log: Logger; metrics: ControllerMetrics; terms: LeadershipTerms },
): ControllerParts {
  const { clock, client, log, metrics, terms } = deps;
  const { fence } = terms;
  const port = { timeoutMs: config.requestTimeoutMs, signal: () => terms.signal };
  let droppedEvents = 0;
  // Events queue behind the node writes they describe (writes/event-lane.ts), the nodes taking turns; a full
  // backlog, or a node's full share of it, drops them.
  const api = withEventLane(new KubeNodeApi(client, port), fence, {
    dropped: (reason) => {
      metrics.eventsDropped.inc({ reason });
      if (droppedEvents++ % 1_000 === 0)
        log.warn(
          { dropped: droppedEvents, reason },
          'Dropped an event: too many events waiting to be written',
        );
    },
    abandoned: (count) => log.info({ events: count }, 'Events not recorded: no longer leading'),
  });
  /** A sweep: every node, behind any node added by itself (a change, a retry) meanwhile. */
  const enqueueAll = (): void => {
    for (const name of cache.nodeNames()) queue.addSweep(name);
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
      systemExtensionStatusChanged: () => rollup.systemExtensionsChanged(),
      daemonSetsChanged: () => enqueueAll(),
      syncChanged: () => terms.syncChanged(),
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
    ...{ cache, api, fence, clock, log, metrics, events, config },
    onBreakerChange: enqueueAll,
    onRollupChange: () => rollup.markDirty(),
  });
  const rollup = new RollupWriter({
    api: new KubeRollupApi(client, port),
    source: {
      pairs: () => reconciler.rollupPairs(),
      systemExtensionNames: function* () {
        for (const sx of cache.systemExtensionList()) yield sx.name;
      },
      systemExtensionRollout: (name) => {
        const sx = cache.systemExtension(name);
        if (!sx) return undefined;
        return {
          policy: sx.rollout,
          generation: sx.generation,
          requirement: sx.requirement,
          startedMs: reconciler.rolloutStartMs(sx),
        };
      },
      systemExtensionSpec: (name) => {
        const sx = cache.systemExtension(name);
        if (!sx) return undefined;
        const { policy, result } = sx.parse;
        return {
          generation: sx.generation,
          problems: [...sx.selectorProblems, ...(result.ok ? [] : result.problems)],
          suspend: sx.suspend,
          critical: policy.critical,
          enforcement: policy.enforcement,
        };
      },
    },
    ...{ clock, metrics, fence },
    log: log.child({ component: 'rollup' }),
    events: clusterEventRecorder(api, config.identity, clock, fence),
    thresholdsMs: config.rollupThresholdsMs,
    policy: publishedPolicy(config),
    gardenerCluster: config.gardenerCluster,
    gardenerResyncMs: config.gardenerResyncMs,
  });
  const evictor = new Evictor({
    evict: (nodeName, dryRun) =>
      evictNodePods({
        ...{ client, nodeName, dryRun, timeoutMs: config.requestTimeoutMs },
        runtimeTaintKey: config.runtimeTaintKey,
        log: log.child({ component: 'eviction' }),
        signal: terms.signal,
        beforeWrite: fence,
      }),
    // Before each pass on a node: the Node as the API server has it now (another owner's annotations included).
    hold: (nodeName) =>
      readNodeHold({ client, nodeName, timeoutMs: config.requestTimeoutMs, signal: terms.signal }),
    ...{ clock, log, metrics, events, config },
    node: (name) => {
      const node = cache.node(name);
      return node && evictionNodeView(node, config.eviction.groupLabel);
    },
    states: () => reconciler.nodeStates(),
    suspended: (name) => reconciler.suspended(name),
    breakerTripped: () => reconciler.trippedExtensions.size > 0,
  });
  const queue = reconcileQueue((name, cause) => reconciler.reconcile(name, cause), {
    rearm: (name) => reconciler.rearm(name),
    clock,
    log,
    metrics,
    config,
  });
  const work: TermWork = {
    synced: () => cache.synced,
    nodeCount: () => cache.nodes.store.size,
    start: () => {
      cache.refreshObservations();
      // Decides every node and judges the breaker over all of them before the queue's first write.
      const { pressing, settled, sweep } = reconciler.reset();
      queue.start();
      // The nodes whose decision they do not show yet go first: a change made while no replica led is
      // written before anything else, and so is one that arrives meanwhile. The rest already show their
      // decision and wait for their deadline, not for a second decision (Reconciler.reset).
      for (const name of pressing) queue.add(name);
      for (const [name, delayMs] of settled) queue.addDeadline(name, delayMs);
      for (const name of sweep) queue.addSweep(name);
      evictor.start();
      // After reset(): the first evaluation sees every node decided, never a partial cluster.
      rollup.start();
      const { dryRun } = config;
      log.info(
        {
          nodes: cache.nodes.store.size,
          pressing: pressing.length,
          swept: sweep.length,
          dryRun,
          eviction: evictor.enabled,
        },
        'Reconciling as leader',
      );
    },
    stop: async () => void (await Promise.all([queue.stop(), evictor.stop(), rollup.stop()])),
  };
  return { cache, queue, work };
}
