import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { ConditionReason, ProbeReason } from '../../api/reasons.ts';
import { buildCondition, describeNotHealthy, joinCapped, MAX_CONDITION_MESSAGE } from './condition.ts';
import type { AgentStatus } from './extension-state.ts';
import { NodeState } from './node-state.ts';

const reporting: AgentStatus = { kind: 'reporting', lease: 'x', expiresAtMs: 1 };
const awaiting: AgentStatus = { kind: 'awaiting', graceEndsMs: 1 };
const expired: AgentStatus = { kind: 'notReporting', cause: 'expired', staleLease: 'x' };
const healthy = (name: string) => ({
  name,
  state: ExtensionState.Healthy,
  reason: 'ProbeSucceeded',
  message: 'ok',
});
const gpuUnhealthy = {
  name: 'gpu-plugin',
  state: ExtensionState.Unhealthy,
  reason: ProbeReason.ProbeTimeout,
  message: 'connect timed out',
};
const csiProgressing = {
  name: 'csi',
  state: ExtensionState.Progressing,
  reason: ProbeReason.StartupGrace,
  message: '',
};

describe("buildCondition: DaemonSets kept off by nodecare's taint (issue 49 item 3)", () => {
  const keptOff = ['DaemonSet kube-system/plugin does not tolerate t: its pod cannot start here'];

  it('are named after what is not Healthy, in the same message', () => {
    const c = buildCondition({
      state: NodeState.Bootstrapping,
      agent: reporting,
      extensions: [{ name: 'gpu', state: ExtensionState.Progressing, reason: 'StartupGrace', message: '' }],
      bootstrapTimeoutSeconds: 900,
      keptOff,
    });
    expect(c.message).toBe(`gpu Progressing (StartupGrace); ${keptOff[0]}`);
  });

  it('are named in the BootstrapTimeout message', () => {
    const c = buildCondition({
      state: NodeState.BootstrapTimeout,
      agent: reporting,
      extensions: [{ name: 'gpu', state: ExtensionState.Progressing, reason: 'StartupGrace', message: '' }],
      bootstrapTimeoutSeconds: 900,
      keptOff,
    });
    expect(c.message).toBe(
      `Bootstrap did not complete within 900s: gpu Progressing (StartupGrace); ${keptOff[0]}`,
    );
  });

  it('change nothing when every extension is Healthy (alone they hold nothing)', () => {
    const c = buildCondition({
      state: NodeState.Ready,
      agent: reporting,
      extensions: [{ name: 'gpu', state: ExtensionState.Healthy, reason: '', message: '' }],
      bootstrapTimeoutSeconds: 900,
      keptOff,
    });
    expect(c).toMatchObject({
      reason: 'AllExtensionsHealthy',
      message: 'All required extensions are Healthy.',
    });
  });
});

describe('buildCondition', () => {
  it.each([
    {
      name: 'all Healthy → True (AllExtensionsHealthy)',
      state: NodeState.Ready,
      agent: reporting,
      extensions: [healthy('a'), healthy('b')],
      expected: ['True', ConditionReason.AllExtensionsHealthy, 'All required extensions are Healthy.'],
    },
    {
      name: 'one Unhealthy and one Progressing → False (ExtensionsUnhealthy), each listed, sorted by name',
      state: NodeState.Degraded,
      agent: reporting,
      extensions: [gpuUnhealthy, healthy('a'), csiProgressing],
      expected: [
        'False',
        ConditionReason.ExtensionsUnhealthy,
        'csi Progressing (StartupGrace); gpu-plugin Unhealthy (ProbeTimeout): connect timed out',
      ],
    },
    {
      name: 'Unknown counts as failing → False (ExtensionsUnhealthy)',
      state: NodeState.Degraded,
      agent: reporting,
      extensions: [{ name: 'x', state: ExtensionState.Unknown, reason: 'LeaseExpired', message: '' }],
      expected: ['False', ConditionReason.ExtensionsUnhealthy, 'x Unknown (LeaseExpired)'],
    },
    {
      name: 'only Progressing → False (ExtensionsProgressing)',
      state: NodeState.Bootstrapping,
      agent: reporting,
      extensions: [csiProgressing, healthy('a')],
      expected: ['False', ConditionReason.ExtensionsProgressing, 'csi Progressing (StartupGrace)'],
    },
    {
      name: 'an empty reason is left out',
      state: NodeState.Ready,
      agent: reporting,
      extensions: [{ name: 'x', state: ExtensionState.Unhealthy, reason: '', message: 'down' }],
      expected: ['False', ConditionReason.ExtensionsUnhealthy, 'x Unhealthy: down'],
    },
    {
      name: 'agent not reporting → Unknown (AgentNotReporting), whatever the extensions say',
      state: NodeState.Degraded,
      agent: expired,
      extensions: [healthy('a')],
      expected: [
        'Unknown',
        ConditionReason.AgentNotReporting,
        "The nodecare agent's heartbeat lease expired.",
      ],
    },
    {
      name: 'BootstrapTimeout wins over the agent not reporting',
      state: NodeState.BootstrapTimeout,
      agent: expired,
      extensions: [gpuUnhealthy],
      expected: [
        'False',
        ConditionReason.BootstrapTimeout,
        'Bootstrap did not complete within 900s: gpu-plugin Unhealthy (ProbeTimeout): connect timed out',
      ],
    },
    {
      name: 'BootstrapTimeout with no extensions names the agent',
      state: NodeState.BootstrapTimeout,
      agent: awaiting,
      extensions: [],
      expected: [
        'False',
        ConditionReason.BootstrapTimeout,
        'Bootstrap did not complete within 900s: Waiting for the nodecare agent to report on this boot.',
      ],
    },
    {
      name: 'BootstrapTimeout with nothing left to name',
      state: NodeState.BootstrapTimeout,
      agent: reporting,
      extensions: [],
      expected: ['False', ConditionReason.BootstrapTimeout, 'Bootstrap did not complete within 900s.'],
    },
    {
      name: 'no extensions, agent reported → True',
      state: NodeState.Ready,
      agent: reporting,
      extensions: [],
      expected: ['True', ConditionReason.AllExtensionsHealthy, 'No extensions required.'],
    },
    {
      name: 'no extensions, agent awaited → False (ExtensionsProgressing)',
      state: NodeState.Bootstrapping,
      agent: awaiting,
      extensions: [],
      expected: [
        'False',
        ConditionReason.ExtensionsProgressing,
        'Waiting for the nodecare agent to report on this boot.',
      ],
    },
  ])('$name', ({ state, agent, extensions, expected }) => {
    const c = buildCondition({ state, agent, extensions, bootstrapTimeoutSeconds: 900 });
    expect([c.status, c.reason, c.message]).toEqual(expected);
    expect(c.type).toBe('ExtensionsReady');
  });

  it('the message is capped near 1 KB with "and N more", keeping whole items', () => {
    const many = Array.from({ length: 40 }, (_, i) => ({
      name: `ext-${String(i).padStart(2, '0')}`,
      state: ExtensionState.Unhealthy,
      reason: ProbeReason.ConnectionRefused,
      message: 'connect ECONNREFUSED 127.0.0.1:9400',
    }));
    const message = describeNotHealthy(many);
    expect(message.length).toBeLessThanOrEqual(MAX_CONDITION_MESSAGE);
    expect(
      message.startsWith('ext-00 Unhealthy (ConnectionRefused): connect ECONNREFUSED 127.0.0.1:9400; ext-01'),
    ).toBe(true);
    const shown = message.split('; ').length - 1;
    expect(message.endsWith(`; and ${40 - shown} more`)).toBe(true);
  });

  it('a long lease message is shortened to one line', () => {
    const message = describeNotHealthy([
      { name: 'x', state: ExtensionState.Unhealthy, reason: 'BadStatus', message: `a\n${'b'.repeat(400)}` },
    ]);
    expect(message.length).toBeLessThan(300);
    expect(message).not.toContain('\n');
  });
});

describe('joinCapped', () => {
  it.each([
    { name: 'fits → all items', items: ['aa', 'bb', 'cc'], max: 10, expected: 'aa; bb; cc' },
    { name: 'nothing → empty', items: [], max: 10, expected: '' },
    {
      name: 'too long → whole items and the count of the rest',
      items: ['aaaa', 'bbbb', 'cccc', 'dddd', 'eeee'],
      max: 21,
      expected: 'aaaa; and 4 more',
    },
    {
      name: 'keeps as many as fit with the suffix',
      items: ['aaaa', 'bbbb', 'cccc', 'dddd', 'eeee'],
      max: 22,
      expected: 'aaaa; bbbb; and 3 more',
    },
    {
      name: 'not even one fits → only the count',
      items: ['aaaaaaaaaaaa', 'b'],
      max: 12,
      expected: 'and 2 more',
    },
  ])('$name', ({ items, max, expected }) => {
    const joined = joinCapped(items, max);
    expect(joined).toBe(expected);
    expect(joined.length).toBeLessThanOrEqual(max);
  });
});
