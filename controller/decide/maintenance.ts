// Maintenance (docs/design.md section 5, "Maintenance"): a node that is cordoned, draining, drained, shutting down
// or being deleted is expected to lose its extensions, so nodecare reports what it sees and acts on none of it.
// Which signals put a node in maintenance is read here from the Node (maintenanceOf, called on ingest), and the
// decision's answer for such a node is derived here from the one it would make in service (inMaintenance). Pure.
//
// The MAINTENANCE table, one row per signal, strongest first (the node shows the first that holds):
//
// | cause                          | read from                                                         | gate needed |
// | ------------------------------ | ----------------------------------------------------------------- | ----------- |
// | Deleting                       | metadata.deletionTimestamp (a finalizer such as Karpenter's holds it) | none    |
// | GracefulNodeShutdownInProgress | that condition True, or the kubelet's Ready not True with "node is shutting down" | none for the kubelet's word |
// | MaintenanceInProgress          | that condition True (KEP-5683)                                    | NodeLifecycleConditions (1.37 alpha) |
// | DrainInProgress                | that condition True (KEP-5683)                                    | NodeLifecycleConditions |
// | Drained                        | that condition True (KEP-5683)                                    | NodeLifecycleConditions |
// | Cordoned                       | spec.unschedulable (`kubectl cordon`, `kubectl drain`)            | none        |
//
// MaintenancePlanned True is shown (explain, the roll-up's count) and changes nothing else.
//
// In every row, compared with the decision nodecare would make in service (the NOT_READY table applies under it
// when the kubelet is not Ready too):
// - Taints: added as in service, none removed. A failing blocking extension still puts the runtime taint on, so
//   an uncordon cannot open a node whose extensions are down; a recovery never lifts a taint while the node is
//   maintained, so nodecare never makes it schedulable early. A bootstrap does not complete (its taint and
//   marker stay) until the node is out of maintenance.
// - Eviction: none (only Degraded nodes are evicted). A maintained node counts as unavailable for its zone's
//   disruption budget, like a NotReady one.
// - Breaker: the node does not count (it counts only Ready and Degraded nodes), so a fleet-wide drain never
//   trips it and never hides a real failure elsewhere.
// - Condition: AllExtensionsHealthy while every extension is Healthy; otherwise False / InMaintenance, "In
//   maintenance since … (cause): …" and what is not Healthy. Label `maintenance` (labelFor). State Maintenance.
// - Alerts: none fire (they read the BootstrapTimeout state and the AgentNotReporting reason; the node has
//   neither while maintained).
// - Events: one Normal MaintenanceStarted on entry and one MaintenanceEnded on exit; the taints' own events;
//   no ExtensionUnhealthy, NodeNotReady or BootstrapTimeout. Memory keeps the extension states last reported
//   before maintenance, so the first decision after it reports what changed meanwhile, once. "Once" holds
//   across leader changes: the node carries the annotation nodecare.io/maintenance (its value the cause) from
//   the MaintenanceStarted on until the MaintenanceEnded, so a new leader, which has no memory, reads from the
//   node that the spell was reported (issue 50 item 8: the condition alone says nothing of a maintained node
//   whose extensions are all Healthy).
// - Roll-up: a pair of a maintained node that is not Healthy counts as progressing (Gardener's EveryNodeReady
//   reports nodes being rolled as Progressing); controller/rollup/pairs.ts.

import { truncateMessage } from '../../api/lease.ts';
import { NODE_CONDITION_TYPE, NodeAnnotation } from '../../api/names.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { capInput } from '../../api/text.ts';
import { MAX_CONDITION_MESSAGE } from './condition.ts';
import { NodeState } from './node-state.ts';
import { conditionStatusFor, labelFor } from './node-status.ts';
import { MaintenanceCause, type NodeMaintenance, type PlannedMaintenance } from './maintenance-cause.ts';
import type { DecisionInput, DesiredCondition, NodeDecision, NodeEvent } from './types.ts';

export { MaintenanceCause, type NodeMaintenance, type PlannedMaintenance };

/** The Node lifecycle conditions of KEP-5683 (feature gate NodeLifecycleConditions, alpha in 1.37). */
export const LifecycleCondition = {
  GracefulNodeShutdownInProgress: 'GracefulNodeShutdownInProgress',
  MaintenanceInProgress: 'MaintenanceInProgress',
  DrainInProgress: 'DrainInProgress',
  Drained: 'Drained',
  MaintenancePlanned: 'MaintenancePlanned',
} as const;

/** What the kubelet's Ready condition says while its graceful node shutdown runs (nodeshutdown manager). */
export const KUBELET_SHUTTING_DOWN = 'node is shutting down';

/** The taint the node lifecycle controller mirrors spec.unschedulable with (its timeAdded dates a cordon). */
export const UNSCHEDULABLE_TAINT = 'node.kubernetes.io/unschedulable';

/** How much of a node's own words about its maintenance is kept. */
const MAX_DETAIL = 256;

/** The parts of a Node the maintenance signals are read from, as the API returns them. */
export interface LifecycleFacts {
  deletionTimestamp?: Time;
  unschedulable?: boolean;
  taints?: ReadonlyArray<{ key: string; timeAdded?: Time }>;
  conditions?: ReadonlyArray<{
    type: string;
    status: string;
    reason?: string;
    message?: string;
    lastTransitionTime?: Time;
  }>;
}

/** A time as the API returned it: text, or a Date where a typed client decoded it. */
type Time = string | Date;

/** The words a node carries about its maintenance: capped, on one line, made inert. */
function detailOf(c: { reason?: string; message?: string }): string {
  return capInput(
    truncateMessage([c.reason ?? '', c.message ?? ''].filter((part) => part !== '').join(': ')),
    MAX_DETAIL,
  );
}

/** The maintenance signals of a node: the strongest that holds (the MAINTENANCE table) and a planned one. */
export function maintenanceOf(facts: LifecycleFacts): {
  maintenance?: NodeMaintenance;
  planned?: PlannedMaintenance;
} {
  const conditions = facts.conditions ?? [];
  const trueCondition = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const since = (time: Time | undefined) =>
    capInput(time instanceof Date ? time.toISOString() : (time ?? ''), 40);
  const found = (cause: MaintenanceCause, when: Time | undefined, detail = ''): NodeMaintenance => ({
    cause,
    since: since(when),
    detail,
  });
  const fromCondition = (cause: MaintenanceCause): NodeMaintenance | undefined => {
    const c = trueCondition(cause);
    return c ? found(cause, c.lastTransitionTime, detailOf(c)) : undefined;
  };
  const ready = conditions.find((c) => c.type === 'Ready');
  const kubeletShuttingDown =
    ready !== undefined && ready.status !== 'True' && (ready.message ?? '').includes(KUBELET_SHUTTING_DOWN);
  const maintenance =
    (facts.deletionTimestamp ? found(MaintenanceCause.Deleting, facts.deletionTimestamp) : undefined) ??
    fromCondition(MaintenanceCause.GracefulNodeShutdownInProgress) ??
    (kubeletShuttingDown
      ? found(MaintenanceCause.GracefulNodeShutdownInProgress, ready.lastTransitionTime, detailOf(ready))
      : undefined) ??
    fromCondition(MaintenanceCause.MaintenanceInProgress) ??
    fromCondition(MaintenanceCause.DrainInProgress) ??
    fromCondition(MaintenanceCause.Drained) ??
    (facts.unschedulable === true
      ? found(
          MaintenanceCause.Cordoned,
          facts.taints?.find((t) => t.key === UNSCHEDULABLE_TAINT)?.timeAdded,
          'spec.unschedulable',
        )
      : undefined);
  const plannedCondition = trueCondition(LifecycleCondition.MaintenancePlanned);
  return {
    ...(maintenance ? { maintenance } : {}),
    ...(plannedCondition
      ? { planned: { since: since(plannedCondition.lastTransitionTime), detail: detailOf(plannedCondition) } }
      : {}),
  };
}

/** `in maintenance since 2026-11-25T08:00:00Z (DrainInProgress: NodeDrain: draining for a kernel update)` */
export function describeMaintenance(m: NodeMaintenance): string {
  return `in maintenance${m.since ? ` since ${m.since}` : ''} (${m.cause}${m.detail ? `: ${m.detail}` : ''})`;
}

/** `maintenance planned since … (reason: message)` */
export function describePlanned(p: PlannedMaintenance): string {
  return `maintenance planned${p.since ? ` since ${p.since}` : ''}${p.detail ? ` (${p.detail})` : ''}`;
}

/** `text` with its first letter upper case. */
function sentence(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Events that describe a node's extensions or kubelet as a fault: not said about a maintained node. */
const FAULT_EVENTS: ReadonlySet<string> = new Set([
  EventReason.ExtensionUnhealthy,
  EventReason.NodeNotReady,
  EventReason.BootstrapTimeout,
]);

/** The one-line summary of what nodecare does for a maintained node (events and the condition say it). */
const WHAT_NODECARE_DOES =
  'extensions are expected to go down, so nodecare removes no taint, evicts nothing, and leaves the node out of the breaker and the alerts';

/**
 * The decision for a node in maintenance (the MAINTENANCE table above), from `base`, the one nodecare would
 * make in service for the same inputs (NOT_READY table included).
 */
export function inMaintenance(
  base: NodeDecision,
  input: DecisionInput,
  m: NodeMaintenance,
  tainted: { bootstrap: boolean; runtime: boolean },
): NodeDecision {
  const previous = input.previous;
  const sameBoot = previous?.bootId === input.node.bootId;
  const allHealthy = base.condition.reason === ConditionReason.AllExtensionsHealthy;
  const condition: DesiredCondition = allHealthy
    ? base.condition
    : {
        type: NODE_CONDITION_TYPE,
        status: conditionStatusFor(ConditionReason.InMaintenance),
        reason: ConditionReason.InMaintenance,
        message: capInput(
          `${sentence(describeMaintenance(m))}: ${WHAT_NODECARE_DOES}. ${base.condition.message}`,
          MAX_CONDITION_MESSAGE,
        ),
      };
  const events: NodeEvent[] = base.events.filter(
    (e) =>
      !FAULT_EVENTS.has(e.reason) &&
      e.reason !== EventReason.BootstrapTaintRemoved &&
      e.reason !== EventReason.RuntimeTaintRemoved,
  );
  if (!previous?.maintenanceReported && !reportedOnNode(input)) {
    events.unshift({
      type: 'Normal',
      reason: EventReason.MaintenanceStarted,
      message: `Node ${describeMaintenance(m)}: ${WHAT_NODECARE_DOES}.`,
    });
  }
  return {
    ...base,
    state: NodeState.Maintenance,
    desiredTaints: {
      bootstrap: base.desiredTaints.bootstrap || tainted.bootstrap,
      runtime: base.desiredTaints.runtime || tainted.runtime,
    },
    condition,
    label: allHealthy ? base.label : labelFor(ConditionReason.InMaintenance),
    // A bootstrap does not complete while maintained: its taint stays, so its marker is not written either.
    // The maintenance marker is: a new leader reads from it that this spell was reported.
    desiredAnnotations: { maintenance: m.cause },
    events,
    maintenance: m,
    memory: {
      ...base.memory,
      // As last reported before maintenance: the first decision after it reports what changed, once.
      extensionStates: previous?.extensionStates ?? new Map(),
      timeoutReported: sameBoot && previous.timeoutReported,
      notReadyReported: previous?.notReadyReported ?? false,
      maintenanceReported: true,
    },
  };
}

/**
 * Whether the node shows a maintenance nodecare reported: its marker annotation, or (written before the marker
 * existed) the InMaintenance condition.
 */
function reportedOnNode(input: DecisionInput): boolean {
  return (
    input.node.annotations[NodeAnnotation.maintenance] !== undefined ||
    input.node.extensionsReadyCondition?.reason === ConditionReason.InMaintenance
  );
}

/**
 * The decision for a node out of maintenance: `decided`, with the MaintenanceEnded event when a maintenance was
 * reported (this controller's memory, or the node's marker or condition after a restart or a leader change)
 * and the marker removed.
 */
export function outOfMaintenance(decided: NodeDecision, input: DecisionInput): NodeDecision {
  const marked = input.node.annotations[NodeAnnotation.maintenance] !== undefined;
  if (input.previous?.maintenanceReported !== true && !reportedOnNode(input)) return decided;
  return {
    ...decided,
    events: [
      {
        type: 'Normal',
        reason: EventReason.MaintenanceEnded,
        message: 'Node out of maintenance: nodecare acts on its extension results again.',
      },
      ...decided.events,
    ],
    ...(marked ? { desiredAnnotations: { ...decided.desiredAnnotations, maintenance: null } } : {}),
  };
}
