import { describe, expect, it } from 'vitest';
import type { PodReadyProbe } from '../../api/probe-spec.ts';
import type { LabelSelector } from '../../api/selector.ts';
import { podReadyProbe } from './podReady.ts';
import { testContext } from './testing.ts';
import type { PodFacts } from './types.ts';

const spec = (min: number): PodReadyProbe => ({
  kind: 'podReady',
  namespace: 'kube-system',
  selector: { matchLabels: { app: 'gpu-plugin' } },
  min,
});
const pod = (name: string, ready: boolean): PodFacts => ({ name, ready });

describe('podReady probe', () => {
  it.each([
    {
      name: '1 ready pod, min 1 → Healthy',
      pods: [pod('a', true)],
      min: 1,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: '2 ready of 3, min 2 → Healthy',
      pods: [pod('a', true), pod('b', false), pod('c', true)],
      min: 2,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'pod not ready → Unhealthy',
      pods: [pod('a', false)],
      min: 1,
      outcome: 'Unhealthy',
      reason: 'TooFewPodsReady',
    },
    {
      name: 'no matching pods → Unhealthy',
      pods: [],
      min: 1,
      outcome: 'Unhealthy',
      reason: 'TooFewPodsReady',
    },
  ])('$name', async ({ pods, min, outcome, reason }) => {
    const result = await podReadyProbe(spec(min), testContext({ pods: async () => pods }));
    expect(result).toMatchObject({ outcome, reason });
  });

  it('asks the pod cache for its namespace and selector', async () => {
    const asked: Array<[string, LabelSelector]> = [];
    const result = await podReadyProbe(
      spec(2),
      testContext({
        pods: async (namespace, selector) => {
          asked.push([namespace, selector]);
          return [pod('a', true)];
        },
      }),
    );
    expect(asked).toEqual([['kube-system', { matchLabels: { app: 'gpu-plugin' } }]]);
    expect(result.message).toBe('1 of 1 matching pods in kube-system Ready, want at least 2');
  });
});
