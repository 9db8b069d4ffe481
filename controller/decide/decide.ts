// The controller's decision for one node (docs/design.md section 5, docs/conventions.md 1): a pure function of the node, its
// leases, the policy, the controller's memory and `now` (wall) with `monotonicNow` (docs/adr/0020). No I/O, no clock, no logger.

import { Enforcement } from '../../api/extension.ts';
import { ExtensionState, NodeAnnotation, NodeOverrideAnnotation } from '../../api/names.ts';
import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { buildCondition, isFault, notReadyCondition, notTrusted, sameCondition } from './condition.ts';
import { judgeAgent, judgeExtension } from './extension-state.ts';
import { extensionEvents, notReadyEventMessage, taintEvents, type Judged } from './events.ts';
import { isBootstrapState, nextNodeState, NodeState, recordedNodeState } from './node-state.ts';
import { activeLabelWaits, describeLabelWait, labelWaitEndedEvent } from './label-wait.ts';
import { inMaintenance, outOfMaintenance } from './maintenance.ts';
import { labelFor } from './node-status.ts';
import { withRelease } from './override.ts';
import { suspended } from './suspend.ts';
import type {
  DecisionInput,
  ExtensionRollout,
  EffectiveState,
  NodeDecision,
  NodeEvent,
  NodeMemory,
  NodeTaint,
} from './types.ts';

/*
 * The NOT_READY table: the decision while the kubelet's own `Ready` condition exists and is not True (Unknown:
 * the node lifecycle controller says the kubelet stopped posting status; False: the kubelet says it is not
 * ready). Kubernetes says the node is not Ready, so nodecare neither trusts its extension results nor acts on
 * them. A node without a Ready condition (a plain Node object) is decided as before. Decided here, once:
 *
 * | would otherwise be           | state    | bootstrap taint                        | runtime taint       | bootstrapped marker |
 * | ---------------------------- | -------- | -------------------------------------- | ------------------- | ------------------- |
 * | Bootstrapping                | NotReady | kept; added as the bootstrap rule adds | not added           | not written         |
 * | BootstrapTimeout             | NotReady | kept                                   | not added           | not written         |
 * | Ready                        | NotReady | not added                              | not added           | left as it is       |
 * | Degraded                     | NotReady | —                                      | kept (not removed)  | left as it is       |
 *
 * In every row:
 * - ExtensionsReady Unknown / NodeNotReady, "The kubelet reports Ready=<status> since <lastTransitionTime>
 *   (<reason>: <message>); extension results are not trusted until the node is Ready again."; label `unknown`
 *   (labelFor, the one mapping); every extension Unknown / NodeNotReady (neither a fault nor health).
 * - No taint because of it (the node lifecycle controller's not-ready/unreachable taints keep pods off; ours
 *   would only flap on recovery) and none removed (a held node stays held: bootstrap never completes while
 *   NotReady). The bootstrap taint a bootstrapping node needs anyway is still added: it is the bootstrap rule,
 *   and a node must never become schedulable early when its kubelet turns Ready.
 * - Breaker: the node does not count (it counts only Ready and Degraded nodes). Eviction: none (only Degraded
 *   nodes are evicted; a NotReady node counts as unhealthy for a zone's disruption).
 * - Events: one Warning NodeNotReady per transition into NotReady (memory, or the condition already on the
 *   node after a leader change); no extension or BootstrapTimeout events while in it. Memory keeps the last
 *   reported extension states and the bootstrap start, so the first decision with Ready True is the one
 *   nodecare would have made anyway and reports only what changed, once.
 */

/** The effect of both nodecare taints: a taint with our key and another effect is someone else's. */
export const OWN_TAINT_EFFECT = 'NoSchedule';

/** Whether the nodecare taint `key` is on: the one definition the decision and the writes share. */
export function hasTaint(taints: readonly NodeTaint[], key: string): boolean {
  return taints.some((t) => t.key === key && t.effect === OWN_TAINT_EFFECT);
}

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The decision for one node: the one it gets in service (the NOT_READY table applied while the kubelet is not
 * Ready), or the MAINTENANCE table's (maintenance.ts) derived from it while the node is in maintenance; its
 * taint changes held while a suspension's scope holds the node (suspend.ts).
 */
export function decideNode(input: DecisionInput): NodeDecision {
  const { node, policy } = input;
  const tainted = {
    bootstrap: hasTaint(node.taints, policy.bootstrapTaintKey),
    runtime: hasTaint(node.taints, policy.runtimeTaintKey),
  };
  const decided = withRelease(withMaintenance(decideInService(input), input, tainted), input, tainted);
  const by = input.suspendedBy ?? [];
  return by.length > 0 ? suspended(decided, input, by, tainted) : decided;
}

/** The MAINTENANCE table's decision while the node is maintained; `decided` otherwise (maintenance.ts). */
function withMaintenance(
  decided: NodeDecision,
  input: DecisionInput,
  tainted: NodeDecision['desiredTaints'],
): NodeDecision {
  const { node } = input;
  const planned = node.maintenancePlanned ? { maintenancePlanned: node.maintenancePlanned } : {};
  if (node.maintenance === undefined) return { ...outOfMaintenance(decided, input), ...planned };
  return { ...inMaintenance(decided, input, node.maintenance, tainted), ...planned };
}

function decideInService(input: DecisionInput): NodeDecision {
  const { node, policy, now, monotonicNow } = input;
  // Wall deadlines (from object timestamps) become monotonic ones at this reading (docs/adr/0020).
  const fromWall = (wallMs: number): number => monotonicNow + (wallMs - now);
  const timeoutMs = policy.bootstrapTimeoutSeconds * 1000;
  const graceMs = policy.missingLeaseGraceSeconds * 1000;
  const previous = input.previous;
  const sameBoot = previous?.bootId === node.bootId;

  // Bootstrap state lives on the node (docs/adr/0002): the marker annotation and the bootstrap taint.
  const marker = node.annotations[NodeAnnotation.bootstrappedBootId];
  const bootstrapTainted = hasTaint(node.taints, policy.bootstrapTaintKey);
  const runtimeTainted = hasTaint(node.taints, policy.runtimeTaintKey);
  const bootstrapPending =
    marker !== node.bootId &&
    (bootstrapTainted ||
      marker !== undefined ||
      now - node.creationTimestampMs < timeoutMs ||
      // A release override lifted the bootstrap taint of a bootstrap this controller saw start: it resumes
      // at the expiry (override.ts).
      (node.annotations[NodeOverrideAnnotation.releaseUntil] !== undefined &&
        sameBoot &&
        previous.bootstrapStartedMs !== undefined));
  const bootSeenMs = sameBoot ? previous.bootSeenMs : monotonicNow;
  const bootstrapStartedMs = bootstrapPending
    ? ((sameBoot ? previous.bootstrapStartedMs : undefined) ??
      (marker === undefined ? node.creationTimestampMs : Math.max(node.creationTimestampMs, now)))
    : undefined;

  const agent = judgeAgent(input.agent, node.bootId, bootSeenMs + graceMs, monotonicNow);
  const reportedAtMs = agent.kind === 'reporting' ? input.agent?.observedAtMs : undefined;
  const agentReportedMs =
    (sameBoot ? previous.agentReportedMs : undefined) ??
    (reportedAtMs === undefined ? undefined : now - (monotonicNow - reportedAtMs));
  const requiredSinceMs = new Map<string, number>();
  const judged: Judged[] = [...input.required].sort(byName).map((extension) => {
    const since = previous?.requiredSinceMs.get(extension.name) ?? monotonicNow;
    requiredSinceMs.set(extension.name, since);
    const j = judgeExtension(extension, input.leases.get(extension.name), agent, {
      bootId: node.bootId,
      graceEndsMs: Math.max(bootSeenMs, since) + graceMs,
      now: monotonicNow,
    });
    const holdsBootstrap = extension.policy.critical && extension.policy.enforcement === Enforcement.Enforce;
    const rollout = inRollout(extension.rollout, { bootstrapPending, runtimeTainted, now });
    const rolloutEndsMs = rollout?.mode === 'Grace' ? fromWall(rollout.endsMs) : undefined;
    const fixed = j.expiringLease === undefined ? j.deadlineMs : undefined;
    return {
      extension,
      holdsBootstrap,
      staleLease: j.staleLease,
      deadlineMs: minDefined(j.deadlineMs, rolloutEndsMs),
      expiringLease: j.expiringLease,
      fixedDeadlineMs: minDefined(fixed, rolloutEndsMs),
      verdict: {
        name: extension.name,
        state: j.state,
        reason: j.reason,
        message:
          rollout && j.state !== ExtensionState.Healthy ? withRolloutNote(j.message, rollout) : j.message,
        critical: extension.policy.critical,
        blocking: holdsBootstrap && !policy.trippedExtensions.has(extension.name) && rollout === undefined,
        conditionType: extension.policy.conditionType,
        ...(extension.source ? { source: extension.source } : {}),
        ...(rollout ? { rollout } : {}),
      },
    };
  });
  const verdicts = judged.map((j) => j.verdict);
  const blocking = verdicts.filter((v) => v.blocking);
  const holding = judged.filter((j) => j.holdsBootstrap);
  // Labels a SystemExtension's nodeSelector reads may still come on a new node (label-wait.ts, adr/0019).
  const waits = activeLabelWaits(input.labelWaits ?? [], {
    firstBootstrap: bootstrapPending && marker === undefined,
    startedMs: bootstrapStartedMs,
    timeoutMs,
    now,
  });
  const waitsHolding = waits.active.some((w) => w.holds);

  const bootstrapTimedOut = bootstrapStartedMs !== undefined && now >= bootstrapStartedMs + timeoutMs;
  const from = recordedNodeState({
    bootstrapPending,
    runtimeTainted,
    timeoutReported: sameBoot && previous.timeoutReported,
  });
  const recorded = nextNodeState(from, {
    bootstrapPending,
    bootstrapComplete:
      agent.kind === 'reporting' &&
      !waitsHolding &&
      holding.every((j) => j.verdict.state === ExtensionState.Healthy),
    bootstrapTimedOut,
    blockingFailing: blocking.some(isFault),
    blockingAllHealthy: blocking.every((v) => v.state === ExtensionState.Healthy),
  });
  const bootstrapping = isBootstrapState(recorded);
  // Added only when a critical enforced extension (or a wait for its labels) needs verifying; kept until done
  // if already there.
  const bootstrapTaint = bootstrapping && (bootstrapTainted || holding.length > 0 || waitsHolding);
  const judgedStates = new Map<string, EffectiveState>(
    verdicts.map((v) => [v.name, { state: v.state, reason: v.reason, message: v.message }]),
  );
  // Once per conflict: a new leader (no memory) reports a standing conflict once more.
  const conflicts = [...input.conflicts].sort(byName);
  const conflictEvents: NodeEvent[] = conflicts
    .filter((c) => !previous?.conflicts.has(c.name))
    .map((c) => ({ type: 'Warning', reason: EventReason.RegistrationConflict, message: c.message }));
  const conflictNames = new Set(conflicts.map((c) => c.name));

  const kubelet = node.kubeletNotReady;
  if (kubelet !== undefined) {
    // The NOT_READY table (docs/design.md section 5): nothing nodecare judged is trusted or acted on.
    const desiredTaints = { bootstrap: bootstrapTainted || bootstrapTaint, runtime: runtimeTainted };
    const condition = notReadyCondition(kubelet);
    const events = taintEvents({
      policy,
      bootstrapPending,
      bootstrapTainted,
      runtimeTainted,
      desiredTaints,
      judged,
      record: undefined,
    });
    if (
      !previous?.notReadyReported &&
      node.extensionsReadyCondition?.reason !== ConditionReason.NodeNotReady
    ) {
      events.push({
        type: 'Warning',
        reason: EventReason.NodeNotReady,
        message: notReadyEventMessage(kubelet),
      });
    }
    events.push(...conflictEvents);
    return {
      state: NodeState.NotReady,
      desiredTaints,
      condition,
      label: labelFor(condition.reason),
      // Bootstrap never completes while the kubelet is not Ready: the marker is left as it is.
      desiredAnnotations: {},
      events,
      // Nothing changes by time alone: the node changes when the kubelet's Ready does.
      nextDeadlineMs: undefined,
      deadlines: { leases: [], fixedMs: undefined },
      staleLeases: [],
      extensions: verdicts.map((v) => ({ ...v, ...notTrusted(kubelet, v) })),
      kubeletNotReady: kubelet,
      memory: {
        bootId: node.bootId,
        bootSeenMs,
        bootstrapStartedMs: bootstrapPending ? bootstrapStartedMs : undefined,
        timeoutReported: sameBoot && previous.timeoutReported,
        requiredSinceMs,
        // Frozen at what was last reported (nothing, on first sight): on recovery, events report what
        // changed since then, once, and a failure that began meanwhile is never lost.
        extensionStates: previous?.extensionStates ?? new Map(),
        conflicts: conflictNames,
        notReadyReported: true,
        agentReportedMs,
        ...(previous?.labelWaitsEnded ? { labelWaitsEnded: previous.labelWaitsEnded } : {}),
      },
    };
  }

  const state = recorded;
  const desiredTaints = { bootstrap: bootstrapTaint, runtime: state === NodeState.Degraded };
  const condition = buildCondition({
    state,
    agent,
    extensions: verdicts,
    bootstrapTimeoutSeconds: policy.bootstrapTimeoutSeconds,
    labelWaits: bootstrapping ? waits.active.map(describeLabelWait) : [],
    keptOff: input.keptOff ?? [],
  });
  const extensionStates = judgedStates;

  const events = taintEvents({
    policy,
    bootstrapPending,
    bootstrapTainted,
    runtimeTainted,
    desiredTaints,
    judged,
    record:
      bootstrapPending && bootstrapStartedMs !== undefined
        ? {
            bootId: node.bootId,
            startedMs: bootstrapStartedMs,
            agentReportedMs,
            extensions: holding.map((j) => ({
              name: j.verdict.name,
              healthyMs: parseTime(input.leases.get(j.verdict.name)?.lease.since),
            })),
            completedMs: now,
          }
        : undefined,
  });
  if (
    state === NodeState.BootstrapTimeout &&
    !(sameBoot && previous.timeoutReported) &&
    node.extensionsReadyCondition?.reason !== ConditionReason.BootstrapTimeout
  ) {
    events.push({ type: 'Warning', reason: EventReason.BootstrapTimeout, message: condition.message });
  }
  // Without memory (first sight after a restart or leader change), a condition on the node equal to ours
  // means nothing changed while no controller was deciding: report no extension transitions.
  const before =
    previous?.extensionStates ??
    (sameCondition(node.extensionsReadyCondition, condition) ? extensionStates : new Map());
  events.push(...extensionEvents(judged, before, agent, policy.trippedExtensions));
  events.push(...conflictEvents);
  // Once per wait that ran out on this bootstrap; a new leader (no memory) reports it once more.
  const endedBefore = sameBoot ? previous.labelWaitsEnded : undefined;
  events.push(...waits.ended.filter((w) => !endedBefore?.has(w.name)).map(labelWaitEndedEvent));

  const deadlines = judged.map((j) => j.deadlineMs);
  // The same deadlines split by whether a lease renewal moves them (the work queue re-arms those, adr/0009).
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
  if (bootstrapping && bootstrapStartedMs !== undefined && !bootstrapTimedOut) {
    deadlines.push(fromWall(bootstrapStartedMs + timeoutMs));
    fixedDeadlines.push(fromWall(bootstrapStartedMs + timeoutMs));
  }
  for (const w of waits.active) {
    deadlines.push(fromWall(w.endsMs));
    fixedDeadlines.push(fromWall(w.endsMs));
  }
  const future = deadlines.filter((d): d is number => d !== undefined && d > monotonicNow);
  const fixedFuture = fixedDeadlines.filter((d): d is number => d !== undefined && d > monotonicNow);

  const memory: NodeMemory = {
    bootId: node.bootId,
    bootSeenMs,
    bootstrapStartedMs: bootstrapping ? bootstrapStartedMs : undefined,
    timeoutReported: state === NodeState.BootstrapTimeout,
    requiredSinceMs,
    extensionStates,
    conflicts: conflictNames,
    notReadyReported: false,
    agentReportedMs,
    ...(waits.ended.length > 0 ? { labelWaitsEnded: new Set(waits.ended.map((w) => w.name)) } : {}),
  };
  return {
    state,
    desiredTaints,
    condition,
    label: labelFor(condition.reason),
    desiredAnnotations: bootstrapping ? {} : { bootstrappedBootId: node.bootId },
    events,
    nextDeadlineMs: future.length > 0 ? Math.min(...future) : undefined,
    deadlines: { leases: renewable, fixedMs: fixedFuture.length > 0 ? Math.min(...fixedFuture) : undefined },
    staleLeases: [
      ...(agent.kind === 'notReporting' && agent.staleLease ? [agent.staleLease] : []),
      ...judged.flatMap((j) => (j.staleLease ? [j.staleLease] : [])),
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
    memory,
  };
}

/**
 * The rollout that holds an extension back on this node now: only on a node that completed bootstrap and carries
 * no runtime taint (a new node is held by bootstrap as usual; a node already held keeps being held), only within
 * a Grace window or while Observe.
 */
function inRollout(
  rollout: ExtensionRollout | undefined,
  node: { bootstrapPending: boolean; runtimeTainted: boolean; now: number },
): ExtensionRollout | undefined {
  if (rollout === undefined || node.bootstrapPending || node.runtimeTainted) return undefined;
  return rollout.mode === 'Observe' || node.now < rollout.endsMs ? rollout : undefined;
}

/** `<message> (rollout grace until …: not enforced on this node yet)` */
function withRolloutNote(message: string, rollout: ExtensionRollout): string {
  const note =
    rollout.mode === 'Grace'
      ? `rollout grace until ${new Date(rollout.endsMs).toISOString()}: not enforced on this node yet`
      : 'rollout Observe: not enforced on this node until the SystemExtension says Enforce';
  return message ? `${message} (${note})` : note;
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

function parseTime(text: string | undefined): number | undefined {
  const ms = text ? Date.parse(text) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}
