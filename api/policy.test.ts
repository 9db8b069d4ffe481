import { describe, expect, it } from 'vitest';
import { readPublishedPolicy, samePolicy, type PublishedPolicy } from './policy.ts';

const POLICY: PublishedPolicy = {
  bootstrapTaintKey: 'example.com/not-ready',
  runtimeTaintKey: 'example.com/unhealthy',
  bootstrapTimeoutSeconds: 900,
  missingLeaseGraceSeconds: 60,
  maxUnhealthyFraction: 0.5,
  annotationConditionTypes: ['MyGpuHealthy'],
  suspend: false,
  dryRun: true,
  nodeSelector: '',
};

describe('readPublishedPolicy', () => {
  it('takes a whole policy as written', () => {
    expect(readPublishedPolicy(structuredClone(POLICY))).toEqual({ policy: POLICY, problems: [] });
  });

  it('absent: nothing, and no problem (a controller older than the field)', () => {
    expect(readPublishedPolicy(undefined)).toEqual({ policy: {}, problems: [] });
  });

  it('keeps every good field and names each bad one, leaving it out', () => {
    const { policy, problems } = readPublishedPolicy({
      ...POLICY,
      runtimeTaintKey: 'node.kubernetes.io/not-ready',
      bootstrapTimeoutSeconds: -1,
      maxUnhealthyFraction: 2,
      annotationConditionTypes: 'MyGpuHealthy',
      suspend: 'yes',
    });
    expect(policy).toEqual({
      bootstrapTaintKey: POLICY.bootstrapTaintKey,
      missingLeaseGraceSeconds: 60,
      dryRun: true,
      nodeSelector: '',
    });
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'status.policy.runtimeTaintKey',
      'status.policy.bootstrapTimeoutSeconds',
      'status.policy.maxUnhealthyFraction',
      'status.policy.annotationConditionTypes',
      'status.policy.suspend',
    ]);
    expect(problems[0]).toContain('prefix Kubernetes owns');
  });

  it('refuses a policy that is not an object, naming it', () => {
    expect(readPublishedPolicy(['x'])).toEqual({ policy: {}, problems: ['status.policy: not an object'] });
  });
});

describe('samePolicy', () => {
  it('is true only for the same values, condition types in the same order', () => {
    expect(samePolicy(structuredClone(POLICY), POLICY)).toBe(true);
    expect(samePolicy(undefined, POLICY)).toBe(false);
    expect(samePolicy({ ...POLICY, dryRun: false }, POLICY)).toBe(false);
    expect(samePolicy({ ...POLICY, annotationConditionTypes: [] }, POLICY)).toBe(false);
    const { nodeSelector: _, ...partial } = POLICY;
    expect(samePolicy(partial, POLICY)).toBe(false);
  });
});
