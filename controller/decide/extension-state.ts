// An extension's health in the controller's view (docs/design.md section 5): the state the agent wrote on a live
// Lease of the node's current boot, or the controller's own verdict when that cannot be trusted. Staleness
// is judged by the controller's clock from when it saw renewTime change, never from renewTime itself.

import { ExtensionState, LeaseAnnotation } from '../../api/names.ts';
import { ControllerReason } from '../../api/reasons.ts';
import type { EffectiveState, RequiredExtension, SeenLease } from './types.ts';

/** The agent's heartbeat for the node's current boot. */
export type AgentStatus =
  | { kind: 'reporting'; lease: string; expiresAtMs: number }
  /** Not reported on this boot yet, within the missing-lease grace. */
  | { kind: 'awaiting'; graceEndsMs: number }
  | { kind: 'notReporting'; cause: 'absent' | 'expired'; staleLease: string | undefined };

function leaseExpiresAtMs(seen: SeenLease): number {
  return seen.observedAtMs + seen.lease.leaseDurationSeconds * 1000;
}

/**
 * A heartbeat from an earlier boot counts as absent: the agent has not reported on this boot. Only absence
 * gets the grace; a heartbeat of this boot that expired means the agent stopped.
 */
export function judgeAgent(
  agent: SeenLease | undefined,
  bootId: string,
  graceEndsMs: number,
  now: number,
): AgentStatus {
  if (agent && agent.lease.bootId === bootId) {
    const expiresAtMs = leaseExpiresAtMs(agent);
    if (now < expiresAtMs) return { kind: 'reporting', lease: agent.lease.name, expiresAtMs };
    return { kind: 'notReporting', cause: 'expired', staleLease: agent.lease.name };
  }
  if (now < graceEndsMs) return { kind: 'awaiting', graceEndsMs };
  return { kind: 'notReporting', cause: 'absent', staleLease: undefined };
}

export interface ExtensionJudgement extends EffectiveState {
  /** The Lease whose expiry made this Unknown (re-read it before acting). */
  staleLease: string | undefined;
  /** When this judgement changes by time alone (grace end or lease expiry), if it can. */
  deadlineMs: number | undefined;
  /** The Lease whose expiry deadlineMs is (a renewal moves it); undefined for a grace end. */
  expiringLease: string | undefined;
}

function judged(
  state: ExtensionState,
  reason: string,
  message: string,
  extra: Partial<Pick<ExtensionJudgement, 'staleLease' | 'deadlineMs' | 'expiringLease'>> = {},
): ExtensionJudgement {
  const { staleLease, deadlineMs, expiringLease } = extra;
  return { state, reason, message, staleLease, deadlineMs, expiringLease };
}

export const AGENT_MESSAGES = {
  awaiting: 'Waiting for the nodecare agent to report on this boot.',
  absent: 'The nodecare agent has not reported on this boot.',
  expired: "The nodecare agent's heartbeat lease expired.",
} as const;

/**
 * In order: an invalid registration, then the agent (no agent, no trustworthy lease), then a lease that is
 * missing or from an earlier boot (Progressing within the grace, then Unknown), then an expired lease,
 * then what the lease says.
 */
export function judgeExtension(
  extension: RequiredExtension,
  seen: SeenLease | undefined,
  agent: AgentStatus,
  context: { bootId: string; graceEndsMs: number; now: number },
): ExtensionJudgement {
  if (!extension.valid) {
    const problems = extension.problems?.length ? extension.problems.join('; ') : 'invalid registration';
    return judged(ExtensionState.Unknown, ControllerReason.InvalidRegistration, problems);
  }
  switch (agent.kind) {
    case 'awaiting':
      return judged(ExtensionState.Progressing, ControllerReason.AwaitingAgent, AGENT_MESSAGES.awaiting);
    case 'notReporting':
      return judged(ExtensionState.Unknown, ControllerReason.AgentNotReporting, AGENT_MESSAGES[agent.cause]);
    case 'reporting':
      break;
    default: {
      const unreachable: never = agent;
      throw new Error(`unknown agent status ${JSON.stringify(unreachable)}`);
    }
  }
  if (!seen || seen.lease.bootId !== context.bootId) {
    const why = seen ? 'The lease was written before the node rebooted.' : 'No lease has been written.';
    if (context.now < context.graceEndsMs) {
      return judged(ExtensionState.Progressing, ControllerReason.AwaitingFirstReport, why, {
        deadlineMs: context.graceEndsMs,
      });
    }
    return judged(ExtensionState.Unknown, ControllerReason.LeaseMissing, why);
  }
  const expiresAtMs = leaseExpiresAtMs(seen);
  if (context.now >= expiresAtMs) {
    return judged(
      ExtensionState.Unknown,
      ControllerReason.LeaseExpired,
      `The lease was not renewed within its ${seen.lease.leaseDurationSeconds}s duration.`,
      { staleLease: seen.lease.name },
    );
  }
  if (seen.lease.state === undefined) {
    return judged(
      ExtensionState.Unknown,
      ControllerReason.LeaseStateInvalid,
      `The lease has no valid ${LeaseAnnotation.state} annotation.`,
      { deadlineMs: expiresAtMs, expiringLease: seen.lease.name },
    );
  }
  return judged(seen.lease.state, seen.lease.reason, seen.lease.message, {
    deadlineMs: expiresAtMs,
    expiringLease: seen.lease.name,
  });
}
