// The decision input built once (input.ts): registrations resolved and restricted, each SystemExtension's rollout
// window from the caller's clock of windows, the settings and the breaker's verdict, the suspensions.

import { describe, expect, it } from 'vitest';
import { EXTENSION_ANNOTATION_PREFIX } from '../../api/names.ts';
import { parseSystemExtension } from '../../api/registration.ts';
import { decisionInput } from './input.ts';
import { CONTROLLER_SUSPEND } from './suspend.ts';
import { DECISION_DEFAULTS } from './types.ts';
import { MINUTE, node, T0 } from './testing.ts';

const gpu = parseSystemExtension({
  metadata: { name: 'gpu', generation: 1, uid: 'uid-gpu', creationTimestamp: new Date(T0).toISOString() },
  spec: { probe: { tcp: { port: 1 } }, rollout: { existingNodes: 'Grace', gracePeriodSeconds: 60 } },
});

function view(over: { suspend?: boolean; annotations?: Record<string, string> } = {}) {
  const asked: string[] = [];
  const built = decisionInput({
    node: node({ annotations: over.annotations ?? {} }),
    systemExtensions: new Map([['gpu', gpu]]),
    leases: new Map(),
    agent: undefined,
    previous: undefined,
    settings: { ...DECISION_DEFAULTS, annotationConditionTypes: [], suspend: over.suspend },
    tripped: new Set(['gpu']),
    rolloutStartMs: (sx) => {
      asked.push(sx.name);
      return T0 + MINUTE;
    },
    now: T0 + 2 * MINUTE,
    monotonicNow: 5,
  });
  return { ...built, asked };
}

describe('decisionInput', () => {
  it('requires each SystemExtension with its rollout window, as the caller dates it, and the breaker verdict', () => {
    const { input, asked } = view();
    expect(asked).toEqual(['gpu']);
    expect(input.required).toMatchObject([
      {
        name: 'gpu',
        source: 'systemExtension',
        valid: true,
        rollout: { mode: 'Grace', endsMs: T0 + 2 * MINUTE },
      },
    ]);
    expect(input.policy).toEqual({
      bootstrapTaintKey: DECISION_DEFAULTS.bootstrapTaintKey,
      runtimeTaintKey: DECISION_DEFAULTS.runtimeTaintKey,
      bootstrapTimeoutSeconds: DECISION_DEFAULTS.bootstrapTimeoutSeconds,
      missingLeaseGraceSeconds: DECISION_DEFAULTS.missingLeaseGraceSeconds,
      trippedExtensions: new Set(['gpu']),
    });
    expect([input.now, input.monotonicNow, input.suspendedBy]).toEqual([T0 + 2 * MINUTE, 5, []]);
  });

  it('holds every node under --suspend, and names an annotation a SystemExtension overrides as a conflict', () => {
    const { input, registrations } = view({
      suspend: true,
      annotations: { [`${EXTENSION_ANNOTATION_PREFIX}gpu`]: 'http://127.0.0.1:8080/' },
    });
    expect(input.suspendedBy).toEqual([CONTROLLER_SUSPEND]);
    expect(input.conflicts.map((c) => c.name)).toEqual(['gpu']);
    expect(registrations.byName.get('gpu')?.source).toBe('systemExtension');
  });
});
