import { describe, expect, it } from 'vitest';
import { parseAnnotationValue } from './annotation.ts';
import { missingLabelKeys, parseLabelWait } from './label-wait.ts';
import { parseSystemExtension } from './registration.ts';
import type { LabelSelector } from './selector.ts';

const GPU: LabelSelector = { matchLabels: { 'nvidia.com/gpu.present': 'true' } };

function problemsOf(raw: unknown, selector: LabelSelector | undefined = GPU): string[] {
  const problems: string[] = [];
  parseLabelWait(raw, selector, (p) => problems.push(p));
  return problems;
}

describe('parseLabelWait', () => {
  it('absent: no wait, no problem', () => {
    expect(parseLabelWait(undefined, GPU, () => expect.unreachable())).toBeUndefined();
  });

  it('waitSeconds alone, and with both selectors', () => {
    expect(parseLabelWait({ waitSeconds: 120 }, GPU, () => expect.unreachable())).toEqual({
      waitSeconds: 120,
      nodeSelector: undefined,
      settledSelector: undefined,
    });
    const nodeSelector = { matchLabels: { 'karpenter.sh/nodepool': 'gpu' } };
    const settledSelector = {
      matchExpressions: [{ key: 'feature.node.kubernetes.io/kernel-version.full', operator: 'Exists' }],
    };
    expect(
      parseLabelWait({ waitSeconds: 3600, nodeSelector, settledSelector }, GPU, () => expect.unreachable()),
    ).toEqual({ waitSeconds: 3600, nodeSelector, settledSelector });
  });

  it.each<[string, unknown, string[]]>([
    [
      'not an object',
      120,
      [
        'labelWait: expected an object with waitSeconds (and optionally nodeSelector, settledSelector), got 120',
      ],
    ],
    ['waitSeconds missing', {}, ['labelWait.waitSeconds: expected an integer from 1 to 3600, got none']],
    [
      'waitSeconds 0',
      { waitSeconds: 0 },
      ['labelWait.waitSeconds: expected an integer from 1 to 3600, got 0'],
    ],
    [
      'waitSeconds past an hour',
      { waitSeconds: 3601 },
      ['labelWait.waitSeconds: expected an integer from 1 to 3600, got 3601'],
    ],
    [
      'waitSeconds a string',
      { waitSeconds: '2m' },
      ['labelWait.waitSeconds: expected an integer from 1 to 3600, got "2m"'],
    ],
    [
      'an unknown field',
      { waitSeconds: 60, timeout: 5 },
      ['labelWait.timeout: unknown field (expected one of waitSeconds, nodeSelector, settledSelector)'],
    ],
    [
      'a bad nodeSelector',
      { waitSeconds: 60, nodeSelector: { matchExpressions: [{ key: 'k', operator: 'Has' }] } },
      [
        'labelWait.nodeSelector.matchExpressions[0].operator: expected one of In, NotIn, Exists, DoesNotExist',
      ],
    ],
    [
      'a bad settledSelector',
      { waitSeconds: 60, settledSelector: { matchLabels: { a: 1 } } },
      ['labelWait.settledSelector.matchLabels.a: expected a string'],
    ],
  ])('%s → a problem naming the field and the expected form', (_name, raw, problems) => {
    expect(problemsOf(raw)).toEqual(problems);
  });

  it.each<[string, LabelSelector]>([
    ['an empty nodeSelector (every node)', {}],
    [
      'a nodeSelector of only NotIn and DoesNotExist',
      { matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] },
    ],
  ])('%s → nothing to wait for', (_name, selector) => {
    expect(problemsOf({ waitSeconds: 60 }, selector)).toEqual([
      'labelWait: spec.nodeSelector names no label a node could gain (matchLabels, or matchExpressions with In or Exists), so there is nothing to wait for',
    ]);
  });
});

describe('missingLabelKeys', () => {
  const twoKeys: LabelSelector = {
    matchLabels: { 'node-role': 'gpu' },
    matchExpressions: [
      { key: 'feature.node.kubernetes.io/pci-10de.present', operator: 'In', values: ['true'] },
    ],
  };
  it.each<[string, LabelSelector, Record<string, string>, string[]]>([
    ['the label is not there yet → wait for it', GPU, {}, ['nvidia.com/gpu.present']],
    ['the selector matches → nothing to wait for', GPU, { 'nvidia.com/gpu.present': 'true' }, []],
    [
      'the key is there with another value → the labeler has spoken',
      GPU,
      { 'nvidia.com/gpu.present': 'false' },
      [],
    ],
    [
      'both keys missing → both, sorted',
      twoKeys,
      {},
      ['feature.node.kubernetes.io/pci-10de.present', 'node-role'],
    ],
    [
      'a label present at registration rules the selector out → no wait (a CPU node)',
      twoKeys,
      { 'node-role': 'cpu' },
      [],
    ],
    [
      'a label present at registration agrees → wait for the other',
      twoKeys,
      { 'node-role': 'gpu' },
      ['feature.node.kubernetes.io/pci-10de.present'],
    ],
    ['Exists on a missing key → wait', { matchExpressions: [{ key: 'a', operator: 'Exists' }] }, {}, ['a']],
    [
      'a DoesNotExist that the node breaks → no wait',
      { matchLabels: { a: '1' }, matchExpressions: [{ key: 'b', operator: 'DoesNotExist' }] },
      { b: 'x' },
      [],
    ],
    [
      'a selector that can never match (Exists and DoesNotExist on one key) → no wait',
      {
        matchExpressions: [
          { key: 'a', operator: 'Exists' },
          { key: 'a', operator: 'DoesNotExist' },
        ],
      },
      {},
      [],
    ],
  ])('%s', (_name, selector, labels, missing) => {
    expect(missingLabelKeys(selector, labels)).toEqual(missing);
  });
});

describe('spec.labelWait on a SystemExtension', () => {
  const spec = { nodeSelector: GPU, probe: { tcp: { port: 1 } } };

  it('is parsed onto the SystemExtension', () => {
    const sx = parseSystemExtension({
      metadata: { name: 'gpu' },
      spec: { ...spec, labelWait: { waitSeconds: 90 } },
    });
    expect(sx.parse.result.ok).toBe(true);
    expect(sx.labelWait).toEqual({ waitSeconds: 90, nodeSelector: undefined, settledSelector: undefined });
  });

  it('a bad one makes the registration invalid with the problem, and gives no wait', () => {
    const sx = parseSystemExtension({
      metadata: { name: 'gpu' },
      spec: { ...spec, labelWait: { waitSeconds: -1 } },
    });
    expect(sx.parse.result).toEqual({
      ok: false,
      problems: ['labelWait.waitSeconds: expected an integer from 1 to 3600, got -1'],
    });
    expect(sx.labelWait).toBeUndefined();
  });

  it('is refused in a node annotation (only a SystemExtension may hold other nodes for labels)', () => {
    const parsed = parseAnnotationValue(
      JSON.stringify({ probe: { tcp: { port: 1 } }, labelWait: { waitSeconds: 5 } }),
    );
    expect(parsed.result.ok ? [] : parsed.result.problems).toContain(
      'labelWait: only valid on a SystemExtension, not in a node annotation',
    );
  });
});
