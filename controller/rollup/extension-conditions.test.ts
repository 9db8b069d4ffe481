// A SystemExtension's Valid and InForce conditions from its parsed spec and rollout phase, and
// metav1.Condition's rule that lastTransitionTime moves only when the status changes.

import { describe, expect, it } from 'vitest';
import { Enforcement } from '../../api/index.ts';
import {
  systemExtensionConditions,
  type SystemExtensionCondition,
  type SystemExtensionSpecState,
} from './extension-conditions.ts';
import type { SystemExtensionRolloutStatus } from './store.ts';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const GOOD: SystemExtensionSpecState = {
  generation: 3,
  problems: [],
  suspend: false,
  critical: true,
  enforcement: Enforcement.Enforce,
};
const rollout = (phase: SystemExtensionRolloutStatus['phase']): SystemExtensionRolloutStatus => ({
  observedGeneration: 3,
  requirement: 'r',
  startedAt: '2026-12-01T09:55:00Z',
  phase,
  ...(phase === 'Grace' ? { enforcingAt: '2026-12-01T10:05:00Z' } : {}),
  message: 'm',
});

const byType = (conditions: SystemExtensionCondition[]) =>
  Object.fromEntries(conditions.map((c) => [c.type, `${c.status}/${c.reason}`]));

describe('systemExtensionConditions', () => {
  it.each([
    [
      'a valid, enforced, critical spec → Valid, InForce Enforced',
      GOOD,
      rollout('Enforced'),
      'True/SpecValid',
      'True/Enforced',
    ],
    [
      'a spec that does not parse → Valid False InvalidSpec, not in force',
      { ...GOOD, problems: ['probe: expected exactly one probe kind'] },
      rollout('Enforced'),
      'False/InvalidSpec',
      'False/InvalidSpec',
    ],
    [
      'suspend → not in force, Suspended',
      { ...GOOD, suspend: true },
      rollout('Enforced'),
      'True/SpecValid',
      'False/Suspended',
    ],
    [
      'enforcement DryRun → not in force, DryRun',
      { ...GOOD, enforcement: Enforcement.DryRun },
      rollout('Enforced'),
      'True/SpecValid',
      'False/DryRun',
    ],
    [
      'rollout Observe → not in force, Observing',
      GOOD,
      rollout('Observe'),
      'True/SpecValid',
      'False/Observing',
    ],
    [
      'rollout Grace → not in force until enforcingAt, GracePeriod',
      GOOD,
      rollout('Grace'),
      'True/SpecValid',
      'False/GracePeriod',
    ],
    [
      'critical false → in force as a report, NotCritical',
      { ...GOOD, critical: false },
      rollout('Enforced'),
      'True/SpecValid',
      'True/NotCritical',
    ],
  ])('%s', (_name, spec, phase, valid, inForce) => {
    const conditions = systemExtensionConditions(spec, phase, undefined, T0);
    expect(byType(conditions)).toEqual({ Valid: valid, InForce: inForce });
    for (const c of conditions) {
      expect(c.observedGeneration).toBe(3);
      expect(c.lastTransitionTime).toBe('2026-12-01T10:00:00Z');
      expect(c.message.length).toBeGreaterThan(0);
    }
  });

  it('an invalid spec says why in the Valid message, capped', () => {
    const [valid] = systemExtensionConditions(
      { ...GOOD, problems: ['probe.http.url: expected http:// or https://', 'x'.repeat(10_000)] },
      undefined,
      undefined,
      T0,
    );
    expect(valid!.message).toContain('probe.http.url: expected http:// or https://');
    expect(valid!.message.length).toBeLessThan(4200);
  });

  it('the Grace message names when enforcement starts', () => {
    const [, inForce] = systemExtensionConditions(GOOD, rollout('Grace'), undefined, T0);
    expect(inForce!.message).toContain('2026-12-01T10:05:00Z');
  });

  it('lastTransitionTime moves only when the status changes, not with reason, message or generation', () => {
    const first = systemExtensionConditions(
      { ...GOOD, enforcement: Enforcement.DryRun },
      rollout('Enforced'),
      undefined,
      T0,
    );
    // Another reason with the same status (DryRun → Suspended: both False), a new generation: kept.
    const second = systemExtensionConditions(
      { ...GOOD, generation: 4, suspend: true },
      rollout('Enforced'),
      first,
      T0 + 60_000,
    );
    expect(second.map((c) => c.lastTransitionTime)).toEqual(['2026-12-01T10:00:00Z', '2026-12-01T10:00:00Z']);
    expect(second.map((c) => c.observedGeneration)).toEqual([4, 4]);
    // InForce turns True: only it moves.
    const third = systemExtensionConditions(
      { ...GOOD, generation: 5 },
      rollout('Enforced'),
      second,
      T0 + 120_000,
    );
    expect(third.map((c) => c.lastTransitionTime)).toEqual(['2026-12-01T10:00:00Z', '2026-12-01T10:02:00Z']);
  });

  it('keeps the condition types another writer owns, as they are', () => {
    const foreign: SystemExtensionCondition = {
      type: 'example.com/Audited',
      status: 'True',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-01T00:00:00Z',
      reason: 'Audited',
      message: 'ok',
    };
    const conditions = systemExtensionConditions(GOOD, undefined, [foreign], T0);
    expect(conditions.map((c) => c.type)).toEqual(['Valid', 'InForce', 'example.com/Audited']);
    expect(conditions[2]).toEqual(foreign);
  });
});
