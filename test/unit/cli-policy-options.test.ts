// kubectl nodecare takes the controller's policy flags (cli/verbs/common.ts POLICY_OPTIONS) so that it decides
// as the controller does. The CLI may not import the controller's configuration (eslint.config.js, LAYERING),
// so the two tables are written twice; this test holds each flag to the controller's type and bounds. The
// plugin's flags have no default of their own: unset, the plugin uses what the controller publishes in
// ClusterHealth status.policy, else CLI_POLICY_DEFAULTS, which must be the controller's defaults.

import { describe, expect, it } from 'vitest';
import { CLI_POLICY_DEFAULTS, type CliPolicy } from '../../cli/model.ts';
import { POLICY_OPTIONS, policyOf } from '../../cli/verbs/common.ts';
import { CONTROLLER_OPTIONS } from '../../controller/config-options.ts';

const PICK = ['type', 'min', 'max', 'choices'] as const;
const FIELD: Record<string, keyof CliPolicy> = {
  'bootstrap-taint-key': 'bootstrapTaintKey',
  'runtime-taint-key': 'runtimeTaintKey',
  'bootstrap-timeout-seconds': 'bootstrapTimeoutSeconds',
  'missing-lease-grace-seconds': 'missingLeaseGraceSeconds',
  'max-unhealthy-fraction': 'maxUnhealthyFraction',
  'annotation-condition-type': 'annotationConditionTypes',
  suspend: 'suspend',
};
const shape = (spec: object): Record<string, unknown> =>
  Object.fromEntries(PICK.filter((k) => k in spec).map((k) => [k, (spec as Record<string, unknown>)[k]]));

describe("kubectl nodecare's policy flags", () => {
  it.each(Object.keys(POLICY_OPTIONS).filter((name) => name in CONTROLLER_OPTIONS))(
    '--%s has the controller flag’s type and bounds, no default of its own, and falls back to the controller’s default',
    (name) => {
      const cli = POLICY_OPTIONS[name as keyof typeof POLICY_OPTIONS];
      const controller = CONTROLLER_OPTIONS[name as keyof typeof CONTROLLER_OPTIONS];
      expect(shape(cli)).toEqual(shape(controller));
      expect('default' in cli).toBe(false);
      const field = FIELD[name];
      expect(field, name).toBeDefined();
      expect(CLI_POLICY_DEFAULTS[field!]).toEqual((controller as { default?: unknown }).default);
    },
  );

  it('a flag given wins over the published policy, which wins over the defaults', () => {
    const published = { runtimeTaintKey: 'example.com/unhealthy', bootstrapTimeoutSeconds: 60 };
    expect(policyOf({}, published)).toEqual({
      ...CLI_POLICY_DEFAULTS,
      runtimeTaintKey: 'example.com/unhealthy',
      bootstrapTimeoutSeconds: 60,
    });
    expect(policyOf({ 'runtime-taint-key': 'example.com/flag' }, published).runtimeTaintKey).toBe(
      'example.com/flag',
    );
    expect(policyOf({})).toEqual(CLI_POLICY_DEFAULTS);
  });

  it('takes every controller flag its decisions depend on', () => {
    for (const name of [
      'bootstrap-taint-key',
      'runtime-taint-key',
      'bootstrap-timeout-seconds',
      'missing-lease-grace-seconds',
      'max-unhealthy-fraction',
      'annotation-condition-type',
      'suspend',
    ])
      expect(Object.keys(POLICY_OPTIONS)).toContain(name);
  });
});
