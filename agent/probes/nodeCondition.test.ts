import { describe, expect, it } from 'vitest';
import type { NodeConditionProbe } from '../../api/probe-spec.ts';
import { nodeConditionProbe } from './nodeCondition.ts';
import { testContext } from './testing.ts';
import type { NodeFacts } from './types.ts';

const node: NodeFacts = {
  capacity: {},
  allocatable: {},
  conditions: [
    { type: 'Ready', status: 'True', reason: 'KubeletReady' },
    { type: 'KernelDeadlock', status: 'False', reason: 'KernelHasNoDeadlock' },
    { type: 'GPUHealthy', status: 'Unknown' },
  ],
};

describe('nodeCondition probe', () => {
  it.each([
    {
      name: 'condition has the wanted status → Healthy',
      type: 'Ready',
      status: 'True',
      node,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'wanted status False, condition False → Healthy',
      type: 'KernelDeadlock',
      status: 'False',
      node,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'condition has another status → Unhealthy',
      type: 'KernelDeadlock',
      status: 'True',
      node,
      outcome: 'Unhealthy',
      reason: 'ConditionNotMet',
    },
    {
      name: 'condition Unknown, want True → Unhealthy',
      type: 'GPUHealthy',
      status: 'True',
      node,
      outcome: 'Unhealthy',
      reason: 'ConditionNotMet',
    },
    {
      name: 'condition not reported → Unhealthy',
      type: 'NetworkUnavailable',
      status: 'False',
      node,
      outcome: 'Unhealthy',
      reason: 'ConditionNotMet',
    },
    {
      name: 'node not observed yet → Unknown',
      type: 'Ready',
      status: 'True',
      node: undefined,
      outcome: 'Unknown',
      reason: 'NodeNotObserved',
    },
  ] as const)('$name', async ({ type, status, node, outcome, reason }) => {
    const spec: NodeConditionProbe = { kind: 'nodeCondition', type, status };
    const result = await nodeConditionProbe(spec, testContext({ node }));
    expect(result).toMatchObject({ outcome, reason });
  });

  it('names the observed status and reason', async () => {
    const spec: NodeConditionProbe = { kind: 'nodeCondition', type: 'KernelDeadlock', status: 'True' };
    const result = await nodeConditionProbe(spec, testContext({ node }));
    expect(result.message).toBe('KernelDeadlock is False (KernelHasNoDeadlock), want True');
  });
});
