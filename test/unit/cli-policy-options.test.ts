// kubectl nodecare takes the controller's policy flags (cli/verbs/common.ts POLICY_OPTIONS) so that it decides
// as the controller does. The CLI may not import the controller's configuration (eslint.config.js, LAYERING),
// so the two tables are written twice; this test holds each flag to the controller's type, default and bounds.

import { describe, expect, it } from 'vitest';
import { POLICY_OPTIONS } from '../../cli/verbs/common.ts';
import { CONTROLLER_OPTIONS } from '../../controller/config.ts';

const PICK = ['type', 'default', 'min', 'max', 'choices'] as const;
const shape = (spec: object): Record<string, unknown> =>
  Object.fromEntries(PICK.filter((k) => k in spec).map((k) => [k, (spec as Record<string, unknown>)[k]]));

describe("kubectl nodecare's policy flags", () => {
  it.each(Object.keys(POLICY_OPTIONS).filter((name) => name in CONTROLLER_OPTIONS))(
    '--%s has the controller flag’s type, default and bounds',
    (name) => {
      const cli = POLICY_OPTIONS[name as keyof typeof POLICY_OPTIONS];
      const controller = CONTROLLER_OPTIONS[name as keyof typeof CONTROLLER_OPTIONS];
      expect(shape(cli)).toEqual(shape(controller));
    },
  );

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
