// What one node's latest decision contributes to the cluster-wide views: the state metrics, the breaker's
// counts and the roll-up's pairs, as one record (the node book keeps one per node).

import type { ExtensionState, RegistrationSource } from '../../api/index.ts';
import {
  breakerContribution,
  type BreakerContribution,
  type NodeDecision,
  type NodeMaintenance,
  type NodeState,
} from '../decide/index.ts';
import type { ControllerMetrics } from '../metrics.ts';
import type { AgentNotReportingFact, NodeNotReadyFact } from '../rollup/index.ts';

export interface ContributedExtension {
  name: string;
  state: ExtensionState;
  reason: string;
  conditionType: string;
  source: RegistrationSource | undefined;
}

/** What a node's latest decision contributes to the state metrics, the breaker and the roll-up. */
export interface Contribution {
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
  /** What it adds to the breaker's counts. */
  breaker: BreakerContribution;
}

export type ContributionMetrics = Pick<
  ControllerMetrics,
  'nodes' | 'nodeConditions' | 'suspendedNodes' | 'releasedNodes'
>;

export function contributionOf(decision: NodeDecision): Contribution {
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
    breaker: breakerContribution(decision),
  };
}

/** Adds (sign 1) or takes away (-1) what a contribution counts in the state metrics. */
export function countContribution(metrics: ContributionMetrics, c: Contribution, sign: 1 | -1): void {
  metrics.nodes.inc({ state: c.state }, sign);
  metrics.nodeConditions.inc(c.condition, sign);
  if (c.suspended) metrics.suspendedNodes.inc({ held: c.heldChanges > 0 ? 'true' : 'false' }, sign);
  if (c.release) metrics.releasedNodes.inc({ verdict: c.release }, sign);
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

/** Whether what a node contributes to the roll-up changed from `old` to `next` (undefined: none). */
export function rollupChanged(old: Contribution | undefined, next: Contribution | undefined): boolean {
  if (!next) return old !== undefined && old.extensions.length > 0;
  return (
    !old ||
    !sameExtensions(old.extensions, next.extensions) ||
    old.notReady?.reason !== next.notReady?.reason ||
    old.notReady?.since !== next.notReady?.since ||
    old.agentNotReporting?.since !== next.agentNotReporting?.since ||
    old.maintenance?.cause !== next.maintenance?.cause ||
    old.maintenance?.since !== next.maintenance?.since ||
    old.maintenancePlanned !== next.maintenancePlanned
  );
}
