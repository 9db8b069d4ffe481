// The MutatingAdmissionPolicy that adds nodecare's tolerations to DaemonSets
// (manifests/components/extension-daemonset-tolerations) against the contract in api/: the taint keys it
// adds are the controller's defaults, the toleration it adds tolerates nodecare's taint whatever its value,
// and its opt-out label is the one the docs name. (What it does on a real API server:
// test/integration/daemonset-tolerations.test.ts.)

import { readFileSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_TAINT_VALUE,
  DEFAULT_BOOTSTRAP_TAINT_KEY,
  DEFAULT_RUNTIME_TAINT_KEY,
  INJECT_TOLERATIONS_LABEL,
  RUNTIME_TAINT_VALUE,
} from '../../api/names.ts';
import { toleratesTaint } from '../../api/scheduling.ts';

const FILE = new URL(
  '../../manifests/components/extension-daemonset-tolerations/mutating-admission-policy.yaml',
  import.meta.url,
);
const text = readFileSync(FILE, 'utf8');
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- free-form YAML, read by path
const [policy, binding] = loadAll(text) as any[];

describe('the DaemonSet tolerations policy', () => {
  it('adds exactly the two default taint keys', () => {
    const missing = policy.spec.variables.find((v: { name: string }) => v.name === 'missing').expression;
    const keys = [...(missing as string).matchAll(/'([^']+)'/g)].map((m) => m[1]).slice(0, 2);
    expect(keys).toEqual([DEFAULT_BOOTSTRAP_TAINT_KEY, DEFAULT_RUNTIME_TAINT_KEY]);
  });

  it("adds a toleration that tolerates nodecare's taints with any value, none included", () => {
    const patch = policy.spec.mutations[0].jsonPatch.expression as string;
    expect(patch).toContain("{'key': k, 'operator': 'Exists', 'effect': 'NoSchedule'}");
    for (const key of [DEFAULT_BOOTSTRAP_TAINT_KEY, DEFAULT_RUNTIME_TAINT_KEY]) {
      const added = { key, operator: 'Exists', effect: 'NoSchedule' };
      for (const value of [undefined, '', 'true', BOOTSTRAP_TAINT_VALUE, RUNTIME_TAINT_VALUE])
        expect(
          toleratesTaint(added, { key, effect: 'NoSchedule', ...(value === undefined ? {} : { value }) }),
        ).toBe(true);
    }
  });

  it('matches DaemonSets only, on create and update, never their status', () => {
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: ['apps'],
        apiVersions: ['v1'],
        resources: ['daemonsets'],
        operations: ['CREATE', 'UPDATE'],
      },
    ]);
  });

  it(`opts out by ${INJECT_TOLERATIONS_LABEL}: "false" on the DaemonSet and on its namespace`, () => {
    expect(policy.spec.matchConstraints.namespaceSelector.matchExpressions).toEqual([
      { key: INJECT_TOLERATIONS_LABEL, operator: 'NotIn', values: ['false'] },
    ]);
    expect(policy.spec.matchConditions[0].expression).toContain(`'${INJECT_TOLERATIONS_LABEL}'`);
  });

  it('never blocks a DaemonSet write when it cannot run, and binds to its own policy', () => {
    expect(policy.spec.failurePolicy).toBe('Ignore');
    expect(binding.spec.policyName).toBe(policy.metadata.name);
  });
});
