// spec.labelWait in the SystemExtension CRD against its parser (api/label-wait.ts): the schema accepts what the
// parser accepts and refuses what it refuses, so kubectl's error and the controller's InvalidRegistration agree.
// (The CEL rule that a labelWait needs a nodeSelector with a label to wait for runs in the API server:
// test/integration/label-wait.test.ts.)

import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { LABEL_WAIT_MAX_SECONDS, parseLabelWait } from '../../api/label-wait.ts';
import { validate, type Schema } from './openapi.ts';

const crd = load(
  readFileSync(
    new URL('../../manifests/base/crds/systemextensions.nodecare.io.yaml', import.meta.url),
    'utf8',
  ),
) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } };
const SPEC = crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
const LABEL_WAIT = SPEC.properties!.labelWait!;
const GPU = { matchLabels: { 'nvidia.com/gpu.present': 'true' } };

function parserAccepts(raw: unknown): boolean {
  let ok = true;
  parseLabelWait(raw, GPU, () => (ok = false));
  return ok;
}

describe('spec.labelWait: the CRD schema and the parser agree', () => {
  it.each<[string, unknown, boolean]>([
    ['waitSeconds alone', { waitSeconds: 120 }, true],
    ['the smallest wait', { waitSeconds: 1 }, true],
    ['the longest wait', { waitSeconds: LABEL_WAIT_MAX_SECONDS }, true],
    [
      'both selectors',
      {
        waitSeconds: 60,
        nodeSelector: { matchLabels: { pool: 'gpu' } },
        settledSelector: {
          matchExpressions: [{ key: 'feature.node.kubernetes.io/kernel-version.full', operator: 'Exists' }],
        },
      },
      true,
    ],
    ['no waitSeconds', {}, false],
    ['waitSeconds 0', { waitSeconds: 0 }, false],
    ['waitSeconds past the longest', { waitSeconds: LABEL_WAIT_MAX_SECONDS + 1 }, false],
    ['waitSeconds a string', { waitSeconds: '60' }, false],
    ['an unknown field', { waitSeconds: 60, timeoutSeconds: 5 }, false],
    [
      'a bad operator',
      { waitSeconds: 60, nodeSelector: { matchExpressions: [{ key: 'k', operator: 'Has' }] } },
      false,
    ],
    ['a non-string label value', { waitSeconds: 60, settledSelector: { matchLabels: { a: 1 } } }, false],
  ])('%s', (_name, raw, accepted) => {
    expect(validate(LABEL_WAIT, raw).length === 0).toBe(accepted);
    expect(parserAccepts(raw)).toBe(accepted);
  });

  it('has no default, so a SystemExtension without it never waits', () => {
    expect(LABEL_WAIT.default).toBeUndefined();
    expect(LABEL_WAIT.required).toEqual(['waitSeconds']);
  });
});
