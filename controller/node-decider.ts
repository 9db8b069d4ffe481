// Reads one node's view (the node, its registrations, its leases, the breaker) and calls the pure decision
// core, keeping each node's decision memory between calls. Before a decision acts on a lease it judged stale,
// the lease is read live: staleness is judged by our clock, and a renewal may not have reached the watch yet.

import { LEASE_NAMESPACE, resolveRegistrations, restrictConditionType } from '../api/index.ts';
import { BOOTSTRAP_TAINT_VALUE, RUNTIME_TAINT_VALUE } from '../api/names.ts';
import { keptOffByTaints, type DaemonSetObject } from '../api/scheduling.ts';
import type { Clock } from '../lib/clock.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { toCachedLease, type CachedNode, type ClusterCache } from './cache/index.ts';
import type { ControllerConfig } from './config.ts';
import {
  CONTROLLER_SUSPEND,
  decideNode,
  extensionRollout,
  labelWaitsOf,
  OWN_TAINT_EFFECT,
  RolloutWindows,
  type NodeDecision,
  type NodeMemory,
  type RequiredExtension,
} from './decide/index.ts';
import type { NodeApi } from './writes/index.ts';

/** The keys of `key=value:effect` taints (api/scheduling.ts taintText), joined: keys hold neither `=` nor `:`. */
function listKeys(taints: readonly string[]): string {
  return taints.map((t) => t.split(/[=:]/, 1)[0]).join(' and ');
}

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
  /** The extensions whose correlated failure holds back runtime taints. */
  tripped(): ReadonlySet<string>;
}

export class NodeDecider {
  private readonly deps: NodeDeciderDeps;
  private memory = new Map<string, NodeMemory>();
  /** When each SystemExtension's rollout window started (the roll-up records it in its status). */
  readonly rollouts = new RolloutWindows();

  constructor(deps: NodeDeciderDeps) {
    this.deps = deps;
  }

  /** Forgets every node's memory: fresh graces, no inherited event history (a new leadership term). */
  reset(): void {
    this.memory = new Map();
  }

  /** Keeps the memory of a decision that was carried out. */
  remember(name: string, memory: NodeMemory): void {
    this.memory.set(name, memory);
  }

  forget(name: string): void {
    this.memory.delete(name);
  }

  /** When the node's current bootstrap started, as remembered. */
  bootstrapStartedMs(name: string): number | undefined {
    return this.memory.get(name)?.bootstrapStartedMs;
  }

  /** The decision on the cached view of `name` (or on `node`, read live); undefined when the node is gone. */
  decide(name: string, node = this.deps.cache.node(name)): NodeDecision | undefined {
    const { cache, clock, config } = this.deps;
    if (!node) return undefined;
    const systemExtensions = new Map([...cache.systemExtensionList()].map((sx) => [sx.name, sx]));
    const { byName, conflicts, suspendedBy } = resolveRegistrations(node, systemExtensions.values());
    const now = clock.now();
    const required: RequiredExtension[] = [...byName.values()].map((registration) => {
      const r = restrictConditionType(registration, config.annotationConditionTypes);
      const sx = r.source === 'systemExtension' ? systemExtensions.get(r.name) : undefined;
      const rollout = sx && extensionRollout(sx.rollout, this.rollouts.startMs(sx, now));
      return {
        name: r.name,
        source: r.source,
        policy: r.policy,
        valid: r.valid,
        ...(r.valid ? {} : { problems: r.problems }),
        ...(rollout ? { rollout } : {}),
      };
    });
    const { extensions, agent } = cache.leasesOf(name);
    const input = {
      node,
      required,
      leases: extensions,
      agent,
      conflicts,
      previous: this.memory.get(name),
      policy: {
        bootstrapTaintKey: config.bootstrapTaintKey,
        runtimeTaintKey: config.runtimeTaintKey,
        bootstrapTimeoutSeconds: config.bootstrapTimeoutSeconds,
        missingLeaseGraceSeconds: config.missingLeaseGraceSeconds,
        trippedExtensions: this.deps.tripped(),
      },
      now,
      monotonicNow: clock.monotonic(),
      suspendedBy: [
        ...(config.suspend === true ? [CONTROLLER_SUSPEND] : []),
        ...suspendedBy.map((name) => `SystemExtension ${name}`),
      ],
      labelWaits: labelWaitsOf(node.labels, systemExtensions.values()),
    };
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

  /**
   * Decides again until the decision acts on no stale lease that was not read live, when it would write
   * (`wouldWrite`). A renewal found live can uncover another stale lease (an expired heartbeat hides its
   * extensions' leases), hence the loop.
   */
  async confirmed(
    node: CachedNode,
    decision: NodeDecision,
    wouldWrite: (decision: NodeDecision) => boolean,
  ): Promise<NodeDecision> {
    const readLive = new Set<string>();
    for (;;) {
      const unread = decision.staleLeases.filter((lease) => !readLive.has(lease));
      if (unread.length === 0 || !wouldWrite(decision)) return decision;
      for (const lease of unread) readLive.add(lease);
      if (!(await this.renewedMeanwhile(unread))) return decision;
      decision = this.decide(node.name, node) ?? decision;
    }
  }

  /** Re-reads the leases judged stale; true when one was renewed after all (decide again). */
  private async renewedMeanwhile(leaseNames: readonly string[]): Promise<boolean> {
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
