// Reads one node's view (the node, its registrations, its leases, the breaker, its memory in the node book) and
// calls the pure decision core. Before a decision acts on a lease it judged stale, the reconciler has the lease
// read live (readLive): staleness is judged by our clock, and a renewal may not have reached the watch yet.

import { LEASE_NAMESPACE } from '../api/index.ts';
import { BOOTSTRAP_TAINT_VALUE, RUNTIME_TAINT_VALUE } from '../api/names.ts';
import { keptOffByTaints, type DaemonSetObject } from '../api/scheduling.ts';
import type { Clock } from '../lib/clock.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import type { NodeBook } from './book/index.ts';
import { toCachedLease, type CachedNode, type ClusterCache } from './cache/index.ts';
import type { ControllerConfig } from './config.ts';
import { decideNode, decisionInput, OWN_TAINT_EFFECT, type NodeDecision } from './decide/index.ts';
import type { NodeApi } from './writes/index.ts';

/** The keys of `key=value:effect` taints (api/scheduling.ts taintText), joined: keys hold neither `=` nor `:`. */
function listKeys(taints: readonly string[]): string {
  return taints.map((t) => t.split(/[=:]/, 1)[0]).join(' and ');
}

/** What the reconciler reads from the caches (ClusterCache; FakeCache in unit tests). */
type Read = 'node' | 'nodeNames' | 'leasesOf' | 'leaseExpiresAtMs' | 'observeLive' | 'systemExtensionList';
export type ReconcilerCache = Pick<ClusterCache, Read | 'noteWritten'> &
  Partial<Pick<ClusterCache, 'daemonSetList'>>;

export interface NodeDeciderDeps {
  cache: Pick<ClusterCache, 'node' | 'leasesOf' | 'observeLive' | 'systemExtensionList'> & {
    /** The DaemonSets' placements (ClusterCache.daemonSetList); absent: none known. */
    daemonSetList?(): Iterable<DaemonSetObject>;
  };
  api: Pick<NodeApi, 'getLease'>;
  clock: Pick<Clock, 'now' | 'monotonic'>;
  config: Pick<
    ControllerConfig,
    | 'bootstrapTaintKey'
    | 'runtimeTaintKey'
    | 'bootstrapTimeoutSeconds'
    | 'missingLeaseGraceSeconds'
    | 'annotationConditionTypes'
  > &
    Partial<Pick<ControllerConfig, 'suspend'>>;
  /** The node's memory, the breaker's tripped extensions and the rollout windows. */
  book: Pick<NodeBook, 'memory' | 'tripped' | 'rolloutStartMs'>;
}

export class NodeDecider {
  private readonly deps: NodeDeciderDeps;

  constructor(deps: NodeDeciderDeps) {
    this.deps = deps;
  }

  /** The decision on the cached view of `name` (or on `node`, read live); undefined when the node is gone. */
  decide(name: string, node = this.deps.cache.node(name)): NodeDecision | undefined {
    const { cache, clock, config, book } = this.deps;
    if (!node) return undefined;
    const systemExtensions = new Map([...cache.systemExtensionList()].map((sx) => [sx.name, sx]));
    const now = clock.now();
    const { extensions, agent } = cache.leasesOf(name);
    const { input } = decisionInput({
      ...{ node, systemExtensions, leases: extensions, agent, now, monotonicNow: clock.monotonic() },
      previous: book.memory(name),
      settings: config,
      tripped: book.tripped,
      rolloutStartMs: (sx) => book.rolloutStartMs(sx, now),
    });
    // The DaemonSets kept off are judged against the taints the decision wants (a taint it is about to add
    // counts), so the condition it writes with that taint names them already: decided again with them.
    const decision = decideNode(input);
    const keptOff = this.keptOff(node, decision.desiredTaints);
    return keptOff.length === 0 ? decision : decideNode({ ...input, keptOff });
  }

  /**
   * The DaemonSets nodecare's taints keep off the node once it has the taints the decision wants, one
   * sentence each for the condition message. Looked at only for a node nodecare holds (few): a Ready node
   * costs nothing. A taint of ours already there counts as it is (any value); one to add, with our value.
   */
  private keptOff(node: CachedNode, desired: NodeDecision['desiredTaints']): string[] {
    const { cache, config } = this.deps;
    const wanted = [
      [config.bootstrapTaintKey, desired.bootstrap, BOOTSTRAP_TAINT_VALUE],
      [config.runtimeTaintKey, desired.runtime, RUNTIME_TAINT_VALUE],
    ] as const;
    if (!cache.daemonSetList || !wanted.some(([, want]) => want)) return [];
    const keys = wanted.map(([key]) => key);
    const ours = (t: { key: string; effect: string }, key: string): boolean =>
      t.key === key && t.effect === OWN_TAINT_EFFECT;
    const taints = [
      ...node.taints.filter((t) => !keys.some((key) => ours(t, key))),
      ...wanted.flatMap(([key, want, value]) =>
        want ? [node.taints.find((t) => ours(t, key)) ?? { key, value, effect: OWN_TAINT_EFFECT }] : [],
      ),
    ];
    return keptOffByTaints(
      { name: node.name, labels: node.labels, taints },
      keys,
      [...cache.daemonSetList()],
      [],
    ).map(
      (k) =>
        `DaemonSet ${k.namespace}/${k.name} does not tolerate ${listKeys(k.untolerated)}: its pod cannot start here`,
    );
  }

  /** Re-reads the leases judged stale; true when one was renewed after all (decide again). */
  async readLive(leaseNames: readonly string[]): Promise<boolean> {
    const { api, cache } = this.deps;
    let renewed = false;
    for (const leaseName of leaseNames) {
      try {
        const live = toCachedLease(await api.getLease(LEASE_NAMESPACE, leaseName));
        if (live && cache.observeLive(live)) renewed = true;
      } catch (err) {
        if (!isKubeError(err, KubeErrorCode.NotFound)) throw err;
      }
    }
    return renewed;
  }
}
