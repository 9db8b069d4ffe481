// How long a node took to become schedulable, and what it waited for (kubectl nodecare explain's
// "Bootstrap:" lines): from the controller's record on the BootstrapTaintRemoved Event, else reconstructed from
// the Leases. Pure, like cli/model.ts whose reports it reads.

import { ExtensionState, NodeAnnotation } from '../api/names.ts';
import { EventReason } from '../api/reasons.ts';
import { BOOTSTRAP_RECORD_ANNOTATION, decodeBootstrapRecord, NodeState } from '../controller/decide/index.ts';
import type { EventObject, NodeReport } from './model.ts';

/** One thing a bootstrapping node waited for, in the order they happened. */
export interface BootstrapStep {
  /** `agent`: its first report; `extension`: `name` turned Healthy; `controller`: it removed the taint. */
  kind: 'agent' | 'extension' | 'controller';
  name: string;
  atMs: number;
  /** How long the node waited for this after the step before (the waits add up to the time held). */
  waitedMs: number;
}

export interface BootstrapBreakdown {
  startedMs: number;
  /** When the bootstrap taint was removed, if still known. */
  completedMs: number | undefined;
  steps: BootstrapStep[];
  /** Critical extensions whose time to Healthy is not known (reconstructed from Leases that moved on since). */
  unknown: string[];
  /**
   * `record`: the controller's record on the BootstrapTaintRemoved Event (correct whatever happened since);
   * `leases`: reconstructed from the Leases as they are now (an older controller, no record).
   */
  source: 'record' | 'leases';
}

/** When an event last happened (a series' last observation, else its own time). */
export function eventTimeMs(e: EventObject): number {
  const t =
    e.series?.lastObservedTime ??
    e.eventTime ??
    e.lastTimestamp ??
    e.firstTimestamp ??
    e.metadata?.creationTimestamp;
  return t ? Date.parse(t) : Number.NaN;
}

/** Steps in time order, each clamped into [start, end] and after the one before, with their waits. */
function steps(
  startedMs: number,
  completedMs: number | undefined,
  milestones: ReadonlyArray<Omit<BootstrapStep, 'waitedMs'>>,
): BootstrapStep[] {
  const end = completedMs ?? Infinity;
  const sorted = milestones
    .map((m) => ({ ...m, atMs: Math.min(end, Math.max(startedMs, m.atMs)) }))
    .sort((a, b) => a.atMs - b.atMs || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  let mark = startedMs;
  const out = sorted.map((m) => {
    const step = { ...m, waitedMs: m.atMs - mark };
    mark = m.atMs;
    return step;
  });
  if (completedMs !== undefined) {
    out.push({ kind: 'controller', name: 'controller', atMs: completedMs, waitedMs: completedMs - mark });
  }
  return out;
}

/**
 * Time to schedulable as nodecare saw it, for a node that finished bootstrapping on this boot: from the start
 * (creation, or the reboot) to the removal of the bootstrap taint, split by what the node waited for — the
 * agent's first report, each critical extension turning Healthy, the controller. From the controller's record
 * on the BootstrapTaintRemoved Event when there is one (correct after any later change); else reconstructed
 * from the Leases as they are now (extensions that changed state since are not counted). Undefined for a node
 * still bootstrapping.
 */
export function bootstrapBreakdown(
  report: NodeReport,
  events: readonly EventObject[],
): BootstrapBreakdown | undefined {
  const { node, decision } = report;
  if (decision.state === NodeState.Bootstrapping || decision.state === NodeState.BootstrapTimeout) {
    return undefined;
  }
  if (node.annotations[NodeAnnotation.bootstrappedBootId] !== node.bootId) return undefined;
  const removals = events
    .filter((e) => e.reason === EventReason.BootstrapTaintRemoved)
    .sort((a, b) => eventTimeMs(b) - eventTimeMs(a));
  const record = removals
    .map((e) => decodeBootstrapRecord(e.metadata?.annotations?.[BOOTSTRAP_RECORD_ANNOTATION]))
    .find((r) => r?.bootId === node.bootId);
  if (record) {
    return {
      startedMs: record.startedMs,
      completedMs: record.completedMs,
      steps: steps(record.startedMs, record.completedMs, [
        ...(record.agentReportedMs !== undefined
          ? [{ kind: 'agent' as const, name: 'agent', atMs: record.agentReportedMs }]
          : []),
        ...record.extensions.flatMap((e) =>
          e.healthyMs === undefined ? [] : [{ kind: 'extension' as const, name: e.name, atMs: e.healthyMs }],
        ),
      ]),
      unknown: record.extensions.filter((e) => e.healthyMs === undefined).map((e) => e.name),
      source: 'record',
    };
  }
  const startedMs = report.createdMs;
  const completedMs = removals
    .map(eventTimeMs)
    .filter((t) => Number.isFinite(t) && t >= startedMs)
    .sort((a, b) => a - b)[0];
  const known: Array<Omit<BootstrapStep, 'waitedMs'>> = [];
  const unknown: string[] = [];
  for (const e of decision.extensions.filter((v) => v.critical)) {
    const lease = report.leases.get(e.name);
    const since = lease?.state === ExtensionState.Healthy ? Date.parse(lease.since) : Number.NaN;
    if (Number.isFinite(since) && (completedMs === undefined || since <= completedMs + 1000)) {
      known.push({ kind: 'extension', name: e.name, atMs: since });
    } else unknown.push(e.name);
  }
  return { startedMs, completedMs, steps: steps(startedMs, completedMs, known), unknown, source: 'leases' };
}
