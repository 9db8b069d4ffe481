// The cluster as the controller last decided it, kept up to date one node at a time: each node's state,
// condition and extensions (what the state metrics count and the roll-up evaluates) and the correlated-failure
// breaker's counts, whose trips and resets it reports (log, metric, a cluster event).

import type { ExtensionState, RegistrationSource } from '../api/index.ts';
import { ControllerReason, EventReason } from '../api/reasons.ts';
import type { Logger } from '../lib/log.ts';
import {
  BREAKER_DEFAULTS,
  BreakerState,
  type NodeDecision,
  type NodeMaintenance,
  type NodeState,
} from './decide/index.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { AgentNotReportingFact, NodeNotReadyFact, SourcedPair } from './rollup/index.ts';
import { eventNotRecorded, type ClusterEventRecorder } from './writes/index.ts';

interface ContributedExtension {
  name: string;
  state: ExtensionState;
  reason: string;
  conditionType: string;
  source: RegistrationSource | undefined;
}

/** What a node's latest decision contributes to the state metrics, the breaker and the roll-up. */
interface Contribution {
  state: NodeState;
  condition: { status: string; reason: string };
  extensions: ContributedExtension[];
  /** While NotReady: what the kubelet says (the roll-up names it for every pair of the node). */
  notReady: NodeNotReadyFact | undefined;
  /** While the agent is not reporting: since when (the roll-up names it once for the node). */
  agentNotReporting: AgentNotReportingFact | undefined;
  /** While in maintenance: why and since when (the roll-up counts the node's pairs as progressing). */
  maintenance: NodeMaintenance | undefined;
  /** Its MaintenancePlanned is True (the roll-up counts such nodes). */
  maintenancePlanned: boolean;
  /** A suspension holds it: taint changes held (`heldChanges` of them), nothing evicted. */
  suspended: boolean;
  heldChanges: number;
  /** Its release override's verdict (override.ts), when it carries one. */
  release: 'active' | 'expired' | 'invalid' | undefined;
}

function sameExtensions(a: readonly ContributedExtension[], b: readonly ContributedExtension[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (x, i) =>
        x.name === b[i]!.name &&
        x.state === b[i]!.state &&
        x.reason === b[i]!.reason &&
        x.conditionType === b[i]!.conditionType &&
        x.source === b[i]!.source,
    )
  );
}

function contribution(decision: NodeDecision): Contribution {
  return {
    state: decision.state,
    condition: { status: decision.condition.status, reason: decision.condition.reason },
    extensions: decision.extensions.map((e) => ({
      name: e.name,
      state: e.state,
      reason: e.reason,
      conditionType: e.conditionType,
      source: e.source,
    })),
    notReady: decision.kubeletNotReady
      ? { reason: decision.kubeletNotReady.reason, since: decision.kubeletNotReady.since }
      : undefined,
    agentNotReporting: decision.agentNotReporting ? { ...decision.agentNotReporting } : undefined,
    maintenance: decision.maintenance,
    maintenancePlanned: decision.maintenancePlanned !== undefined,
    suspended: decision.suspended !== undefined,
    heldChanges: decision.suspended?.wouldChange.length ?? 0,
    release: decision.release?.verdict,
  };
}

export interface LedgerDeps {
  metrics: Pick<
    ControllerMetrics,
    'nodes' | 'nodeConditions' | 'breakerTripped' | 'events' | 'suspendedNodes' | 'releasedNodes'
  >;
  log: Logger;
  clusterEvents: ClusterEventRecorder;
  maxUnhealthyFraction: number;
}

export class DecisionLedger {
  private readonly deps: LedgerDeps;
  private readonly contributions = new Map<string, Contribution>();
  private readonly breaker: BreakerState;

  constructor(deps: LedgerDeps) {
    this.deps = deps;
    this.breaker = new BreakerState({
      maxUnhealthyFraction: deps.maxUnhealthyFraction,
      minFailing: BREAKER_DEFAULTS.minFailing,
    });
  }

  /** The extensions whose correlated failure holds back runtime taints. */
  get tripped(): ReadonlySet<string> {
    return this.breaker.tripped;
  }

  /** The node's latest decided state. */
  state(name: string): NodeState | undefined {
    return this.contributions.get(name)?.state;
  }

  /** Whether a suspension holds the node, as last decided. */
  suspended(name: string): boolean {
    return this.contributions.get(name)?.suspended === true;
  }

  /** Each node's latest decided state. */
  nodeStates(): Map<string, NodeState> {
    return new Map([...this.contributions].map(([name, c]) => [name, c.state]));
  }

  /** Every required (node, extension) pair's extension name and state, as last decided. */
  *extensionPairs(): Generator<{ extension: string; state: string }> {
    for (const c of this.contributions.values())
      for (const e of c.extensions) yield { extension: e.name, state: e.state };
  }

  /** Every (node, extension) pair as last decided: what the roll-up evaluates. */
  *rollupPairs(): Generator<SourcedPair> {
    for (const [node, c] of this.contributions) {
      for (const e of c.extensions)
        yield {
          node,
          extension: e.name,
          conditionType: e.conditionType,
          state: e.state,
          reason: e.reason,
          ...(e.source ? { source: e.source } : {}),
          ...(c.notReady ? { nodeNotReady: c.notReady } : {}),
          ...(c.maintenance ? { maintenance: c.maintenance } : {}),
          ...(c.maintenancePlanned ? { maintenancePlanned: true } : {}),
          ...(c.agentNotReporting && e.reason === ControllerReason.AgentNotReporting
            ? { agentNotReporting: c.agentNotReporting }
            : {}),
        };
    }
  }

  /** Forgets every node and the breaker's counts, and zeroes the metrics they feed (a new leadership term). */
  reset(): void {
    const { metrics } = this.deps;
    this.contributions.clear();
    this.breaker.reset();
    metrics.nodes.reset();
    metrics.breakerTripped.reset();
    metrics.nodeConditions.reset();
    metrics.suspendedNodes.reset();
    metrics.releasedNodes.reset();
  }

  /**
   * Records a node's latest decision (undefined: the node is gone), keeping the state metrics and the
   * breaker's counts up to date. True when what the node contributes to the roll-up changed.
   */
  record(name: string, decision: NodeDecision | undefined): boolean {
    const { metrics } = this.deps;
    const old = this.contributions.get(name);
    const apply = (c: Contribution, sign: 1 | -1): void => {
      metrics.nodes.inc({ state: c.state }, sign);
      metrics.nodeConditions.inc(c.condition, sign);
      if (c.suspended) metrics.suspendedNodes.inc({ held: c.heldChanges > 0 ? 'true' : 'false' }, sign);
      if (c.release) metrics.releasedNodes.inc({ verdict: c.release }, sign);
    };
    if (old) apply(old, -1);
    let changed: boolean;
    if (decision) {
      const next = contribution(decision);
      apply(next, 1);
      this.contributions.set(name, next);
      changed =
        !old ||
        !sameExtensions(old.extensions, next.extensions) ||
        old.notReady?.reason !== next.notReady?.reason ||
        old.notReady?.since !== next.notReady?.since ||
        old.agentNotReporting?.since !== next.agentNotReporting?.since ||
        old.maintenance?.cause !== next.maintenance?.cause ||
        old.maintenance?.since !== next.maintenance?.since ||
        old.maintenancePlanned !== next.maintenancePlanned;
    } else {
      this.contributions.delete(name);
      changed = old !== undefined && old.extensions.length > 0;
    }
    this.breaker.apply(name, decision);
    return changed;
  }

  /** Judges the breaker on the current counts and reports its transitions; true when the set changed. */
  evaluateBreaker(nowMs: number): boolean {
    const { metrics, log, clusterEvents } = this.deps;
    const { transitions } = this.breaker.evaluate(nowMs);
    for (const { extension, tripped, count } of transitions) {
      if (!tripped) {
        metrics.breakerTripped.remove({ extension });
        log.info({ extension, ...count }, 'Correlated failure over: breaker reset');
        continue;
      }
      metrics.breakerTripped.set({ extension }, 1);
      const message = `Extension ${extension} fails on ${count.failing} of ${count.requiring} nodes at once: treating it as a faulty rollout, not faulty nodes; holding back runtime taints for it.`;
      log.warn({ extension, ...count }, 'Correlated failure: breaker tripped');
      metrics.events.inc({ reason: EventReason.CorrelatedFailure });
      clusterEvents
        .clusterEvent({ type: 'Warning', reason: EventReason.CorrelatedFailure, message })
        .catch((err: unknown) => eventNotRecorded(log, err, { reason: EventReason.CorrelatedFailure }));
    }
    return transitions.length > 0;
  }
}
