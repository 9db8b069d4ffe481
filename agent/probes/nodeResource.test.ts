import { describe, expect, it } from 'vitest';
import { nodeResourceProbe } from './nodeResource.ts';
import { testContext } from './testing.ts';
import type { NodeFacts } from './types.ts';

const node = (allocatable: Record<string, string>): NodeFacts => ({
  capacity: allocatable,
  allocatable,
  conditions: [],
});

describe('nodeResource probe', () => {
  it.each([
    {
      name: '2 GPUs allocatable, min 1 → Healthy',
      node: node({ 'nvidia.com/gpu': '2' }),
      resource: 'nvidia.com/gpu',
      min: 1,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'quantity with a suffix, 8Gi ≥ 4Gi → Healthy',
      node: node({ 'hugepages-2Mi': '8Gi' }),
      resource: 'hugepages-2Mi',
      min: 4 * 2 ** 30,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'milli quantity, 500m < 1 → Unhealthy',
      node: node({ 'example.com/dev': '500m' }),
      resource: 'example.com/dev',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ResourceMissing',
    },
    {
      name: '0 allocatable → Unhealthy',
      node: node({ 'nvidia.com/gpu': '0' }),
      resource: 'nvidia.com/gpu',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ResourceMissing',
    },
    {
      name: 'resource not registered → Unhealthy',
      node: node({ cpu: '4' }),
      resource: 'nvidia.com/gpu',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ResourceMissing',
    },
    {
      name: 'value that is not a quantity → Unknown',
      node: node({ 'nvidia.com/gpu': 'lots' }),
      resource: 'nvidia.com/gpu',
      min: 1,
      outcome: 'Unknown',
      reason: 'ProbeError',
    },
    {
      name: 'node not observed yet → Unknown',
      node: undefined,
      resource: 'nvidia.com/gpu',
      min: 1,
      outcome: 'Unknown',
      reason: 'NodeNotObserved',
    },
  ])('$name', async ({ node, resource, min, outcome, reason }) => {
    const result = await nodeResourceProbe({ kind: 'nodeResource', resource, min }, testContext({ node }));
    expect(result).toMatchObject({ outcome, reason });
  });
});
