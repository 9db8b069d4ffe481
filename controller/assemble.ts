// The controller's object graph, wired once: the cache feeds the work queue, the queue runs the reconciler, the
// reconciler writes the node book, and the roll-up, the evictor, the metrics and the queue's re-arm read the
// book; every request goes through one KubePort (port.ts), its writes fenced, all cut off by the leadership
// term. `work` is what a term starts and stops. No logic of its own: each part is a room with its tests.

import type { Clock } from '../lib/clock.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { Logger } from '../lib/log.ts';
import { bookOf, type NodeBook } from './book/index.ts';
import { ClusterCache, skippedObjectReporter, type CacheEvents } from './cache/index.ts';
import { publishedPolicy, type ControllerConfig } from './config.ts';
import { Evictor, RemediatorReads, evictNodePods, evictionNodeView, readNodeHold } from './eviction/index.ts';
import type { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { KubePort } from './port.ts';
import { RollupWriter, type RollupSource } from './rollup/index.ts';
import type { LeadershipTerms, TermWork } from './term.ts';
import { reconcileQueue } from './reconcile-queue.ts';
import type { WorkQueue } from '../lib/workqueue/workqueue.ts';
import { clusterEventRecorder, eventRecorder, withEventLane, type NodeApi } from './writes/index.ts';

export interface ControllerParts {
  cache: ClusterCache;
  queue: WorkQueue;
  work: TermWork;
}

interface Deps {
  clock: Clock;
  client: KubeClient;
  log: Logger;
  metrics: ControllerMetrics;
  terms: LeadershipTerms;
}

export function assembleController(config: ControllerConfig, deps: Deps): ControllerParts {
  const { clock, client, log, metrics, terms } = deps;
  const { fence } = terms;
  const port = new KubePort(client, {
    timeoutMs: config.requestTimeoutMs,
    signal: () => terms.signal,
    fence,
  });
  const api = eventLaneApi(port, deps);
  /** A sweep: every node, behind any node added by itself (a change, a retry) meanwhile. */
  const enqueueAll = (): void => {
    for (const name of cache.nodeNames()) queue.addSweep(name);
  };
  const handlers: CacheEvents = {
    ...cacheReports(deps),
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
  };
  const cache: ClusterCache = new ClusterCache(client, clock, handlers, config.nodeSelector);
  const book = bookOf({
    ...{ api, fence, clock, log, metrics, cache, config },
    onBreakerChange: enqueueAll,
    onRollupChange: () => rollup.markDirty(),
  });
  const events = eventRecorder(api, config.identity, clock, fence);
  const reconciler = new Reconciler({ cache, api, fence, clock, log, metrics, events, config, book });
  const rollup = new RollupWriter({
    api: port,
    source: rollupSource(cache, book),
    ...{ clock, metrics, fence },
    log: log.child({ component: 'rollup' }),
    events: clusterEventRecorder(api, config.identity, clock, fence),
    thresholdsMs: config.rollupThresholdsMs,
    policy: publishedPolicy(config),
    // The evictor's guards in status.eviction (eviction/published.ts); undefined while it does not run.
    eviction: () => evictor.eviction(),
    gardenerCluster: config.gardenerCluster,
    gardenerResyncMs: config.gardenerResyncMs,
  });
  const evictor = evictorOf(config, deps, {
    ...{ port, cache, book, events },
    published: () => rollup.markDirty(),
  });
  const queue = reconcileQueue(reconciler, { rearm: book.rearm, clock, log, metrics, config });
  const work: TermWork = {
    synced: () => cache.synced,
    nodeCount: () => cache.nodes.store.size,
    start: () => {
      // The term starts from the book's reset on a refreshed view: every node decided, the breaker judged.
      cache.refreshObservations();
      const { pressing, settled, sweep } = reconciler.reset();
      queue.start();
      // The nodes whose decision they do not show yet go first: a change made while no replica led is
      // written before anything else, and so is one that arrives meanwhile. The rest already show their
      // decision and wait for their deadline, not for a second decision (term-start.ts).
      for (const name of pressing) queue.add(name);
      for (const [name, delayMs] of settled) queue.addDeadline(name, delayMs);
      for (const name of sweep) queue.addSweep(name);
      evictor.start();
      // After the term's start: the first evaluation sees every node decided, never a partial cluster.
      rollup.start();
      const counts = { pressing: pressing.length, swept: sweep.length };
      const { dryRun } = config;
      log.info(
        { nodes: cache.nodes.store.size, ...counts, dryRun, eviction: evictor.enabled },
        'Reconciling as leader',
      );
    },
    stop: async () => void (await Promise.all([queue.stop(), evictor.stop(), rollup.stop()])),
  };
  return { cache, queue, work };
}

/**
 * Events queue behind the node writes they describe (writes/event-lane.ts), the nodes taking turns; a full
 * backlog, or a node's full share of it, drops them.
 */
function eventLaneApi(api: NodeApi, deps: Deps): NodeApi {
  const { log, metrics, terms } = deps;
  let droppedEvents = 0;
  return withEventLane(api, terms.fence, {
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
}

/** What the cache reports of its watches and of the objects it skips or ignores. */
function cacheReports(deps: Deps): Pick<CacheEvents, 'error' | 'skipped' | 'ignored' | 'ignoredCount'> {
  const { log, metrics } = deps;
  return {
    error: (source, err) => {
      metrics.watchErrors.inc({ source });
      log.warn({ err, source }, 'Watch failed; retrying with backoff');
    },
    skipped: skippedObjectReporter(log, metrics),
    ignored: (lease, problem) =>
      log.warn({ lease: lease.name, node: lease.node, problem }, "Ignored a lease that is not the agent's"),
    ignoredCount: (problem, count) => metrics.leasesIgnored.set({ reason: problem }, count),
  };
}

/** What the roll-up evaluates: the book's tally of pairs and rollout windows, the SystemExtensions as cached. */
function rollupSource(cache: ClusterCache, book: NodeBook): RollupSource {
  return {
    tally: () => book.tally,
    systemExtensionNames: function* () {
      for (const sx of cache.systemExtensionList()) yield sx.name;
    },
    systemExtensionRollout: (name) => {
      const sx = cache.systemExtension(name);
      if (!sx) return undefined;
      const { rollout: policy, generation, requirement } = sx;
      return { policy, generation, requirement, startedMs: book.rolloutStartMs(sx) };
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
  };
}

/** The evictor: it reads the node states, suspensions and the breaker from the book. */
function evictorOf(
  config: ControllerConfig,
  deps: Deps,
  parts: {
    port: KubePort;
    cache: ClusterCache;
    book: NodeBook;
    events: ReturnType<typeof eventRecorder>;
    published: () => void;
  },
): Evictor {
  const { clock, log, metrics, terms } = deps;
  const { port: client, cache, book, events } = parts;
  const remediators = new RemediatorReads({
    ...{ client, log: log.child({ component: 'eviction' }) },
    timeoutMs: config.requestTimeoutMs,
  });
  return new Evictor({
    evict: (nodeName, dryRun) =>
      evictNodePods({
        ...{ client, nodeName, dryRun, timeoutMs: config.requestTimeoutMs },
        runtimeTaintKey: config.runtimeTaintKey,
        log: log.child({ component: 'eviction' }),
        signal: terms.signal,
      }),
    // Before each pass on a node: the Node as the API server has it now (another owner's annotations included).
    // Then the NodeHealthChecks and its NodeClaim (eviction/remediators.ts): reads made only here, eviction on.
    hold: (nodeName) =>
      readNodeHold({
        ...{ client, nodeName, remediators },
        timeoutMs: config.requestTimeoutMs,
        signal: terms.signal,
      }),
    ...{ clock, log, metrics, events, config },
    node: (name) => {
      const node = cache.node(name);
      return node && evictionNodeView(node, config.eviction.groupLabel);
    },
    states: () => book.nodeStates(),
    suspended: (name) => book.suspended(name),
    breakerTripped: () => book.tripped.size > 0,
    published: parts.published,
  });
}
