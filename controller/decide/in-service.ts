// The decision for a node in service, from its facts (facts.ts): the taints, the ExtensionsReady condition and
// label, the events of the transition, the next deadline and the memory to keep. The overlays (not-ready.ts,
// maintenance.ts, override.ts, suspend.ts) are applied over it (decide.ts).

import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { buildCondition, sameCondition } from './condition.ts';
import { extensionEvents, taintEvents } from './events.ts';
import type { NodeFacts } from './facts.ts';
import { describeLabelWait, labelWaitEndedEvent } from './label-wait.ts';
import { NodeState } from './node-state.ts';
import { labelFor } from './node-status.ts';
import type { DesiredCondition, EffectiveState, NodeDecision, NodeEvent, NodeMemory } from './types.ts';

export function inService(facts: NodeFacts): NodeDecision {
  const { input, state, bootstrapping, waits, verdicts, agent } = facts;
  const { node, policy } = input;
  const desiredTaints = { bootstrap: facts.bootstrapTaint, runtime: state === NodeState.Degraded };
  const condition = buildCondition({
    state,
    agent,
    extensions: verdicts,
    bootstrapTimeoutSeconds: policy.bootstrapTimeoutSeconds,
    labelWaits: bootstrapping ? waits.active.map(describeLabelWait) : [],
    keptOff: input.keptOff ?? [],
  });
  const extensionStates = new Map<string, EffectiveState>(
    verdicts.map((v) => [v.name, { state: v.state, reason: v.reason, message: v.message }]),
  );
  return {
    state,
    desiredTaints,
    condition,
    label: labelFor(condition.reason),
    desiredAnnotations: bootstrapping ? {} : { bootstrappedBootId: node.bootId },
    events: serviceEvents(facts, desiredTaints, condition, extensionStates),
    ...deadlinesOf(facts),
    staleLeases: [
      ...(agent.kind === 'notReporting' && agent.staleLease ? [agent.staleLease] : []),
      ...facts.judged.flatMap((j) => (j.staleLease ? [j.staleLease] : [])),
    ],
    extensions: verdicts,
    ...(waits.active.length > 0 ? { labelWaits: waits.active } : {}),
    ...(agent.kind === 'notReporting'
      ? {
          agentNotReporting: {
            since: agent.cause === 'expired' ? (input.agent?.lease.renewTime ?? '') : '',
          },
        }
      : {}),
    memory: serviceMemory(facts, extensionStates),
  };
}

/** The events of the transition: taints, a bootstrap timeout, extensions, conflicts, label waits that ended. */
function serviceEvents(
  facts: NodeFacts,
  desiredTaints: NodeDecision['desiredTaints'],
  condition: DesiredCondition,
  extensionStates: ReadonlyMap<string, EffectiveState>,
): NodeEvent[] {
  const { input, state, sameBoot, judged, waits } = facts;
  const { node, policy, previous } = input;
  const events = taintEvents({
    policy,
    bootstrapPending: facts.bootstrapPending,
    bootstrapTainted: facts.tainted.bootstrap,
    runtimeTainted: facts.tainted.runtime,
    desiredTaints,
    judged,
    record: bootstrapRecord(facts),
  });
  if (
    state === NodeState.BootstrapTimeout &&
    sameBoot?.timeoutReported !== true &&
    node.extensionsReadyCondition?.reason !== ConditionReason.BootstrapTimeout
  ) {
    events.push({ type: 'Warning', reason: EventReason.BootstrapTimeout, message: condition.message });
  }
  // Without memory (first sight after a restart or leader change), a condition on the node equal to ours
  // means nothing changed while no controller was deciding: report no extension transitions.
  const before =
    previous?.extensionStates ??
    (sameCondition(node.extensionsReadyCondition, condition) ? extensionStates : new Map());
  events.push(...extensionEvents(judged, before, facts.agent, policy.trippedExtensions));
  events.push(...facts.conflictEvents);
  // Once per wait that ran out on this bootstrap; a new leader (no memory) reports it once more.
  const endedBefore = sameBoot?.labelWaitsEnded;
  events.push(...waits.ended.filter((w) => !endedBefore?.has(w.name)).map(labelWaitEndedEvent));
  return events;
}

/** What the bootstrap record says when this decision completes the bootstrap (taintEvents writes it). */
function bootstrapRecord(facts: NodeFacts): Parameters<typeof taintEvents>[0]['record'] {
  const { input, bootstrapStartedMs } = facts;
  if (!facts.bootstrapPending || bootstrapStartedMs === undefined) return undefined;
  return {
    bootId: input.node.bootId,
    startedMs: bootstrapStartedMs,
    agentReportedMs: facts.agentReportedMs,
    extensions: facts.holding.map((j) => ({
      name: j.verdict.name,
      healthyMs: parseTime(input.leases.get(j.verdict.name)?.lease.since),
    })),
    completedMs: input.now,
  };
}

/**
 * The next deadline, and the same deadlines split by whether a lease renewal moves them (the work queue
 * re-arms those, adr/0009).
 */
function deadlinesOf(facts: NodeFacts): Pick<NodeDecision, 'nextDeadlineMs' | 'deadlines'> {
  const { judged, agent, bootstrapStartedMs, fromWall, timeoutMs } = facts;
  const { monotonicNow } = facts.input;
  const deadlines = judged.map((j) => j.deadlineMs);
  const fixedDeadlines = judged.map((j) => j.fixedDeadlineMs);
  const renewable = judged.flatMap((j) => (j.expiringLease === undefined ? [] : [j.expiringLease]));
  if (agent.kind === 'reporting') {
    deadlines.push(agent.expiresAtMs);
    renewable.push(agent.lease);
  }
  if (agent.kind === 'awaiting') {
    deadlines.push(agent.graceEndsMs);
    fixedDeadlines.push(agent.graceEndsMs);
  }
  if (facts.bootstrapping && bootstrapStartedMs !== undefined && !facts.bootstrapTimedOut) {
    deadlines.push(fromWall(bootstrapStartedMs + timeoutMs));
    fixedDeadlines.push(fromWall(bootstrapStartedMs + timeoutMs));
  }
  for (const w of facts.waits.active) {
    deadlines.push(fromWall(w.endsMs));
    fixedDeadlines.push(fromWall(w.endsMs));
  }
  const future = deadlines.filter((d): d is number => d !== undefined && d > monotonicNow);
  const fixedFuture = fixedDeadlines.filter((d): d is number => d !== undefined && d > monotonicNow);
  return {
    nextDeadlineMs: future.length > 0 ? Math.min(...future) : undefined,
    deadlines: { leases: renewable, fixedMs: fixedFuture.length > 0 ? Math.min(...fixedFuture) : undefined },
  };
}

function serviceMemory(facts: NodeFacts, extensionStates: ReadonlyMap<string, EffectiveState>): NodeMemory {
  const { input, waits } = facts;
  return {
    bootId: input.node.bootId,
    bootSeenMs: facts.bootSeenMs,
    bootstrapStartedMs: facts.bootstrapping ? facts.bootstrapStartedMs : undefined,
    timeoutReported: facts.state === NodeState.BootstrapTimeout,
    requiredSinceMs: facts.requiredSinceMs,
    extensionStates,
    conflicts: facts.conflictNames,
    notReadyReported: false,
    agentReportedMs: facts.agentReportedMs,
    ...(waits.ended.length > 0 ? { labelWaitsEnded: new Set(waits.ended.map((w) => w.name)) } : {}),
  };
}

function parseTime(text: string | undefined): number | undefined {
  const ms = text ? Date.parse(text) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}
