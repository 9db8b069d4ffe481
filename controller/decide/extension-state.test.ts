import { describe, expect, it } from 'vitest';
import { agentLeaseName, extensionLeaseName } from '../../api/lease.ts';
import { ExtensionState } from '../../api/names.ts';
import { ControllerReason, ProbeReason } from '../../api/reasons.ts';
import { judgeAgent, judgeExtension, type AgentStatus } from './extension-state.ts';
import { agent, BOOT, ext, lease, NODE, SECOND, seen, T0 } from './testing.ts';

const NOW = T0 + 60 * SECOND;
const GRACE_ENDS = NOW + 30 * SECOND;
const GRACE_OVER = NOW - SECOND;

describe('judgeAgent', () => {
  it.each([
    {
      name: 'heartbeat of this boot, live → reporting until it expires',
      heartbeat: agent(NOW - 10 * SECOND),
      graceEndsMs: GRACE_OVER,
      status: { kind: 'reporting', lease: agentLeaseName(NODE), expiresAtMs: NOW + 30 * SECOND },
    },
    {
      name: 'heartbeat of this boot, not renewed for its duration → not reporting (expired), even within the grace',
      heartbeat: agent(NOW - 40 * SECOND),
      graceEndsMs: GRACE_ENDS,
      status: { kind: 'notReporting', cause: 'expired', staleLease: agentLeaseName(NODE) },
    },
    {
      name: 'no heartbeat within the grace → awaiting',
      heartbeat: undefined,
      graceEndsMs: GRACE_ENDS,
      status: { kind: 'awaiting', graceEndsMs: GRACE_ENDS },
    },
    {
      name: 'no heartbeat after the grace → not reporting (absent)',
      heartbeat: undefined,
      graceEndsMs: GRACE_OVER,
      status: { kind: 'notReporting', cause: 'absent', staleLease: undefined },
    },
    {
      name: 'grace ends exactly now → not reporting',
      heartbeat: undefined,
      graceEndsMs: NOW,
      status: { kind: 'notReporting', cause: 'absent', staleLease: undefined },
    },
    {
      name: 'live heartbeat from an earlier boot within the grace → awaiting',
      heartbeat: agent(NOW, { bootId: 'boot-0' }),
      graceEndsMs: GRACE_ENDS,
      status: { kind: 'awaiting', graceEndsMs: GRACE_ENDS },
    },
    {
      name: 'live heartbeat from an earlier boot after the grace → not reporting (absent)',
      heartbeat: agent(NOW, { bootId: 'boot-0' }),
      graceEndsMs: GRACE_OVER,
      status: { kind: 'notReporting', cause: 'absent', staleLease: undefined },
    },
  ])('$name', ({ heartbeat, graceEndsMs, status }) => {
    expect(judgeAgent(heartbeat, BOOT, graceEndsMs, NOW)).toEqual(status);
  });
});

describe('judgeExtension', () => {
  const reporting: AgentStatus = { kind: 'reporting', lease: 'x', expiresAtMs: NOW + 10 * SECOND };
  const gpuLease = extensionLeaseName(NODE, 'gpu');
  const fresh = (overrides: Parameters<typeof lease>[1] = {}) =>
    seen(lease('gpu', overrides), NOW - 10 * SECOND);

  it.each([
    {
      name: 'invalid registration → Unknown (InvalidRegistration) with the problems, whatever the agent says',
      extension: ext('gpu', {}, [
        'probe: required',
        'timeoutSeconds: expected an integer from 1 to 60, got 0',
      ]),
      lease: fresh(),
      agent: { kind: 'awaiting', graceEndsMs: GRACE_ENDS } as AgentStatus,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.InvalidRegistration,
        message: 'probe: required; timeoutSeconds: expected an integer from 1 to 60, got 0',
        staleLease: undefined,
        deadlineMs: undefined,
      },
    },
    {
      name: 'invalid registration without a problem list → a generic message',
      extension: { ...ext('gpu'), valid: false },
      lease: undefined,
      agent: reporting,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.InvalidRegistration,
        message: 'invalid registration',
        staleLease: undefined,
        deadlineMs: undefined,
      },
    },
    {
      name: 'agent awaited → Progressing (AwaitingAgent), even with a Healthy lease',
      extension: ext('gpu'),
      lease: fresh(),
      agent: { kind: 'awaiting', graceEndsMs: GRACE_ENDS } as AgentStatus,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Progressing,
        reason: ControllerReason.AwaitingAgent,
        message: 'Waiting for the nodecare agent to report on this boot.',
        staleLease: undefined,
        deadlineMs: undefined,
      },
    },
    {
      name: 'agent expired → Unknown (AgentNotReporting), even with a Healthy lease',
      extension: ext('gpu'),
      lease: fresh(),
      agent: { kind: 'notReporting', cause: 'expired', staleLease: 'x' } as AgentStatus,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.AgentNotReporting,
        message: "The nodecare agent's heartbeat lease expired.",
        staleLease: undefined,
        deadlineMs: undefined,
      },
    },
    {
      name: 'lease missing within the grace → Progressing (AwaitingFirstReport) until the grace ends',
      extension: ext('gpu'),
      lease: undefined,
      agent: reporting,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Progressing,
        reason: ControllerReason.AwaitingFirstReport,
        message: 'No lease has been written.',
        staleLease: undefined,
        deadlineMs: GRACE_ENDS,
        expiringLease: undefined,
      },
    },
    {
      name: 'lease missing after the grace → Unknown (LeaseMissing)',
      extension: ext('gpu'),
      lease: undefined,
      agent: reporting,
      graceEndsMs: GRACE_OVER,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.LeaseMissing,
        message: 'No lease has been written.',
        staleLease: undefined,
        deadlineMs: undefined,
      },
    },
    {
      name: 'Healthy lease from an earlier boot within the grace → Progressing (AwaitingFirstReport)',
      extension: ext('gpu'),
      lease: fresh({ bootId: 'boot-0' }),
      agent: reporting,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Progressing,
        reason: ControllerReason.AwaitingFirstReport,
        message: 'The lease was written before the node rebooted.',
        staleLease: undefined,
        deadlineMs: GRACE_ENDS,
      },
    },
    {
      name: 'Healthy lease from an earlier boot after the grace → Unknown (LeaseMissing)',
      extension: ext('gpu'),
      lease: fresh({ bootId: 'boot-0' }),
      agent: reporting,
      graceEndsMs: GRACE_OVER,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.LeaseMissing,
        message: 'The lease was written before the node rebooted.',
        staleLease: undefined,
        deadlineMs: undefined,
      },
    },
    {
      name: 'lease not seen renewed for its duration → Unknown (LeaseExpired), flagged stale, even within the grace',
      extension: ext('gpu'),
      lease: seen(lease('gpu', { leaseDurationSeconds: 20 }), NOW - 20 * SECOND),
      agent: reporting,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.LeaseExpired,
        message: 'The lease was not renewed within its 20s duration.',
        staleLease: gpuLease,
        deadlineMs: undefined,
      },
    },
    {
      name: 'lease without a duration is expired at once',
      extension: ext('gpu'),
      lease: seen(lease('gpu', { leaseDurationSeconds: 0 }), NOW),
      agent: reporting,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.LeaseExpired,
        message: 'The lease was not renewed within its 0s duration.',
        staleLease: gpuLease,
        deadlineMs: undefined,
      },
    },
    {
      name: 'live lease without a valid state → Unknown (LeaseStateInvalid) until it expires',
      extension: ext('gpu'),
      lease: fresh({ state: undefined }),
      agent: reporting,
      graceEndsMs: GRACE_ENDS,
      expected: {
        state: ExtensionState.Unknown,
        reason: ControllerReason.LeaseStateInvalid,
        message: 'The lease has no valid nodecare.io/state annotation.',
        staleLease: undefined,
        deadlineMs: NOW + 30 * SECOND,
        expiringLease: gpuLease,
      },
    },
    ...[
      ExtensionState.Healthy,
      ExtensionState.Unhealthy,
      ExtensionState.Progressing,
      ExtensionState.Unknown,
    ].map((state) => ({
      name: `live lease of this boot saying ${state} → ${state}, as the agent wrote it, until it expires`,
      extension: ext('gpu'),
      lease: fresh({ state, reason: ProbeReason.ProbeError, message: 'as written' }),
      agent: reporting,
      graceEndsMs: GRACE_OVER,
      expected: {
        state,
        reason: ProbeReason.ProbeError,
        message: 'as written',
        staleLease: undefined,
        deadlineMs: NOW + 30 * SECOND,
        expiringLease: gpuLease,
      },
    })),
  ])('$name', ({ extension, lease: l, agent: a, graceEndsMs, expected }) => {
    expect(judgeExtension(extension, l, a, { bootId: BOOT, graceEndsMs, now: NOW })).toEqual(expected);
  });
});
