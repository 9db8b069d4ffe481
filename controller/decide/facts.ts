// The facts a node's decision is made of, one named pure phase each (docs/design.md section 5): the boot (is a
// bootstrap pending, since when), the judgement of the agent and of every required extension, the node's
// standing (its state, whether it keeps the bootstrap taint) and its registration conflicts. The in-service
// decision (in-service.ts) and its overlays (not-ready.ts, maintenance.ts, override.ts, suspend.ts) read them.

import { Enforcement } from '../../api/extension.ts';
import { ExtensionState, NodeAnnotation, NodeOverrideAnnotation } from '../../api/names.ts';
import { EventReason } from '../../api/reasons.ts';
import { isFault } from './condition.ts';
import type { Judged } from './events.ts';
import { judgeAgent, judgeExtension, type AgentStatus } from './extension-state.ts';
import { activeLabelWaits } from './label-wait.ts';
import { isBootstrapState, nextNodeState, recordedNodeState, type NodeState } from './node-state.ts';
import { hasTaint } from './taints.ts';
import type {
  ActiveLabelWait,
  DecisionInput,
  ExtensionRollout,
  ExtensionVerdict,
  NodeEvent,
  NodeMemory,
  RequiredExtension,
} from './types.ts';

/** The boot: the bootstrap state that lives on the node (docs/adr/0002) and what memory says of this boot. */
export interface BootFacts {
  /** Wall deadlines (from object timestamps) become monotonic ones at this reading (docs/adr/0020). */
  fromWall(wallMs: number): number;
  timeoutMs: number;
  /** The memory, when it is of this boot. */
  sameBoot: NodeMemory | undefined;
  /** The bootstrapped marker annotation's boot. */
  marker: string | undefined;
  /** Which nodecare taints are on the node now. */
  tainted: { bootstrap: boolean; runtime: boolean };
  bootstrapPending: boolean;
  bootSeenMs: number;
  bootstrapStartedMs: number | undefined;
}

/** The agent and every required extension, judged. */
export interface Judgement {
  agent: AgentStatus;
  agentReportedMs: number | undefined;
  requiredSinceMs: Map<string, number>;
  judged: Judged[];
  verdicts: ExtensionVerdict[];
  /** The critical enforced extensions: they hold bootstrap. */
  holding: Judged[];
}

/** The node's standing: its state and whether it keeps (or gets) the bootstrap taint. */
export interface Standing {
  waits: { active: ActiveLabelWait[]; ended: ActiveLabelWait[] };
  bootstrapTimedOut: boolean;
  state: NodeState;
  bootstrapping: boolean;
  bootstrapTaint: boolean;
}

/** The registration conflicts: one event each, once. */
export interface Conflicts {
  conflictEvents: NodeEvent[];
  conflictNames: Set<string>;
}

export type NodeFacts = { input: DecisionInput } & BootFacts & Judgement & Standing & Conflicts;

/** Every phase, in order: the boot, the judgement, the standing, the conflicts. */
export function nodeFacts(input: DecisionInput): NodeFacts {
  const boot = bootFacts(input);
  const judgement = judgeRequired(input, boot);
  return { input, ...boot, ...judgement, ...standingOf(input, boot, judgement), ...conflictsOf(input) };
}

export function bootFacts(input: DecisionInput): BootFacts {
  const { node, policy, now, monotonicNow, previous } = input;
  const timeoutMs = policy.bootstrapTimeoutSeconds * 1000;
  const sameBoot = previous?.bootId === node.bootId ? previous : undefined;
  const marker = node.annotations[NodeAnnotation.bootstrappedBootId];
  const tainted = {
    bootstrap: hasTaint(node.taints, policy.bootstrapTaintKey),
    runtime: hasTaint(node.taints, policy.runtimeTaintKey),
  };
  const bootstrapPending =
    marker !== node.bootId &&
    (tainted.bootstrap ||
      marker !== undefined ||
      now - node.creationTimestampMs < timeoutMs ||
      // A release override lifted the bootstrap taint of a bootstrap this controller saw start: it resumes
      // at the expiry (override.ts).
      (node.annotations[NodeOverrideAnnotation.releaseUntil] !== undefined &&
        sameBoot?.bootstrapStartedMs !== undefined));
  const bootstrapStartedMs = bootstrapPending
    ? (sameBoot?.bootstrapStartedMs ??
      (marker === undefined ? node.creationTimestampMs : Math.max(node.creationTimestampMs, now)))
    : undefined;
  return {
    fromWall: (wallMs) => monotonicNow + (wallMs - now),
    ...{ timeoutMs, sameBoot, marker, tainted, bootstrapPending, bootstrapStartedMs },
    bootSeenMs: sameBoot ? sameBoot.bootSeenMs : monotonicNow,
  };
}

export function judgeRequired(input: DecisionInput, boot: BootFacts): Judgement {
  const { node, policy, now, monotonicNow, previous } = input;
  const graceMs = policy.missingLeaseGraceSeconds * 1000;
  const agent = judgeAgent(input.agent, node.bootId, boot.bootSeenMs + graceMs, monotonicNow);
  const reportedAtMs = agent.kind === 'reporting' ? input.agent?.observedAtMs : undefined;
  const agentReportedMs =
    boot.sameBoot?.agentReportedMs ??
    (reportedAtMs === undefined ? undefined : now - (monotonicNow - reportedAtMs));
  const requiredSinceMs = new Map<string, number>();
  const judged: Judged[] = [...input.required].sort(byName).map((extension) => {
    const since = previous?.requiredSinceMs.get(extension.name) ?? monotonicNow;
    requiredSinceMs.set(extension.name, since);
    return judgeOne(input, boot, agent, extension, Math.max(boot.bootSeenMs, since) + graceMs);
  });
  const holding = judged.filter((j) => j.holdsBootstrap);
  return { agent, agentReportedMs, requiredSinceMs, judged, verdicts: judged.map((j) => j.verdict), holding };
}

/** One required extension judged on its lease, the agent and its rollout. */
function judgeOne(
  input: DecisionInput,
  boot: BootFacts,
  agent: AgentStatus,
  extension: RequiredExtension,
  graceEndsMs: number,
): Judged {
  const { node, policy, now, monotonicNow } = input;
  const j = judgeExtension(extension, input.leases.get(extension.name), agent, {
    bootId: node.bootId,
    graceEndsMs,
    now: monotonicNow,
  });
  const holdsBootstrap = extension.policy.critical && extension.policy.enforcement === Enforcement.Enforce;
  const { bootstrapPending } = boot;
  const rollout = inRollout(extension.rollout, {
    bootstrapPending,
    runtimeTainted: boot.tainted.runtime,
    now,
  });
  const rolloutEndsMs = rollout?.mode === 'Grace' ? boot.fromWall(rollout.endsMs) : undefined;
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
}

export function standingOf(input: DecisionInput, boot: BootFacts, judgement: Judgement): Standing {
  const { now } = input;
  const { bootstrapPending, bootstrapStartedMs, timeoutMs } = boot;
  const { agent, verdicts, holding } = judgement;
  const blocking = verdicts.filter((v) => v.blocking);
  // Labels a SystemExtension's nodeSelector reads may still come on a new node (label-wait.ts, adr/0019).
  const waits = activeLabelWaits(input.labelWaits ?? [], {
    firstBootstrap: bootstrapPending && boot.marker === undefined,
    ...{ startedMs: bootstrapStartedMs, timeoutMs, now },
  });
  const waitsHolding = waits.active.some((w) => w.holds);
  const bootstrapTimedOut = bootstrapStartedMs !== undefined && now >= bootstrapStartedMs + timeoutMs;
  const from = recordedNodeState({
    bootstrapPending,
    runtimeTainted: boot.tainted.runtime,
    timeoutReported: boot.sameBoot?.timeoutReported === true,
  });
  const state = nextNodeState(from, {
    bootstrapPending,
    bootstrapComplete:
      agent.kind === 'reporting' &&
      !waitsHolding &&
      holding.every((j) => j.verdict.state === ExtensionState.Healthy),
    bootstrapTimedOut,
    blockingFailing: blocking.some(isFault),
    blockingAllHealthy: blocking.every((v) => v.state === ExtensionState.Healthy),
  });
  const bootstrapping = isBootstrapState(state);
  // Added only when a critical enforced extension (or a wait for its labels) needs verifying; kept until done
  // if already there.
  const bootstrapTaint = bootstrapping && (boot.tainted.bootstrap || holding.length > 0 || waitsHolding);
  return { waits, bootstrapTimedOut, state, bootstrapping, bootstrapTaint };
}

/** Once per conflict: a new leader (no memory) reports a standing conflict once more. */
export function conflictsOf(input: DecisionInput): Conflicts {
  const conflicts = [...input.conflicts].sort(byName);
  return {
    conflictEvents: conflicts
      .filter((c) => !input.previous?.conflicts.has(c.name))
      .map((c) => ({ type: 'Warning', reason: EventReason.RegistrationConflict, message: c.message })),
    conflictNames: new Set(conflicts.map((c) => c.name)),
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

function byName(a: { name: string }, b: { name: string }): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function minDefined(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
