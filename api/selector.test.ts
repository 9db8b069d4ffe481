import { describe, expect, it } from 'vitest';
import {
  labelSelectorProblem,
  parseLabelSelector,
  matchesSelector,
  validateSelector,
  type LabelSelector,
} from './selector.ts';

const LABELS = { 'kubernetes.io/os': 'linux', zone: 'a', 'nvidia.com/gpu.present': 'true', empty: '' };

describe('matchesSelector', () => {
  it.each<[string, LabelSelector | undefined, boolean]>([
    ['absent selector → matches', undefined, true],
    ['empty selector → matches', {}, true],
    ['empty lists → match', { matchLabels: {}, matchExpressions: [] }, true],
    ['matchLabels all equal → matches', { matchLabels: { zone: 'a', 'kubernetes.io/os': 'linux' } }, true],
    [
      'matchLabels one differs → no match',
      { matchLabels: { zone: 'a', 'kubernetes.io/os': 'windows' } },
      false,
    ],
    ['matchLabels label absent → no match', { matchLabels: { pool: 'gpu' } }, false],
    ['matchLabels empty value equals an empty label', { matchLabels: { empty: '' } }, true],
    [
      'In with the value → matches',
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b', 'a'] }] },
      true,
    ],
    [
      'In without the value → no match',
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] },
      false,
    ],
    [
      'In on an absent label → no match',
      { matchExpressions: [{ key: 'pool', operator: 'In', values: ['gpu'] }] },
      false,
    ],
    [
      'NotIn without the value → matches',
      { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['b'] }] },
      true,
    ],
    [
      'NotIn with the value → no match',
      { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] },
      false,
    ],
    [
      'NotIn on an absent label → matches',
      { matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['gpu'] }] },
      true,
    ],
    [
      'Exists on a present label → matches',
      { matchExpressions: [{ key: 'nvidia.com/gpu.present', operator: 'Exists' }] },
      true,
    ],
    [
      'Exists on an empty-valued label → matches',
      { matchExpressions: [{ key: 'empty', operator: 'Exists' }] },
      true,
    ],
    [
      'Exists on an absent label → no match',
      { matchExpressions: [{ key: 'pool', operator: 'Exists' }] },
      false,
    ],
    [
      'DoesNotExist on an absent label → matches',
      { matchExpressions: [{ key: 'pool', operator: 'DoesNotExist' }] },
      true,
    ],
    [
      'DoesNotExist on a present label → no match',
      { matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] },
      false,
    ],
    [
      'labels and expressions are ANDed',
      { matchLabels: { zone: 'a' }, matchExpressions: [{ key: 'pool', operator: 'Exists' }] },
      false,
    ],
    [
      'every expression must hold',
      {
        matchExpressions: [
          { key: 'zone', operator: 'In', values: ['a'] },
          { key: 'empty', operator: 'DoesNotExist' },
        ],
      },
      false,
    ],
  ])('%s', (_name, selector, expected) => {
    expect(matchesSelector(selector, LABELS)).toBe(expected);
  });

  it('does not treat inherited object properties as labels', () => {
    expect(matchesSelector({ matchExpressions: [{ key: 'toString', operator: 'Exists' }] }, {})).toBe(false);
  });
});

describe('validateSelector', () => {
  it.each<[string, unknown]>([
    ['undefined', undefined],
    ['null', null],
    ['empty', {}],
    ['matchLabels', { matchLabels: { a: 'b' } }],
    [
      'every operator',
      {
        matchExpressions: [
          { key: 'a', operator: 'In', values: ['x'] },
          { key: 'b', operator: 'NotIn', values: ['y'] },
          { key: 'c', operator: 'Exists' },
          { key: 'd', operator: 'DoesNotExist', values: [] },
        ],
      },
    ],
  ])('accepts %s', (_name, raw) => {
    expect(validateSelector(raw, 'sel')).toEqual([]);
  });

  it.each<[string, unknown, string[]]>([
    ['a string', 'app=x', ['sel: expected an object with matchLabels/matchExpressions']],
    ['a list', [], ['sel: expected an object with matchLabels/matchExpressions']],
    ['an unknown field', { matchFields: [] }, ['sel.matchFields: unknown field']],
    ['matchLabels as a list', { matchLabels: ['a'] }, ['sel.matchLabels: expected a map of strings']],
    ['a non-string label value', { matchLabels: { a: 1 } }, ['sel.matchLabels.a: expected a string']],
    ['matchExpressions as an object', { matchExpressions: {} }, ['sel.matchExpressions: expected a list']],
    [
      'an expression that is no object',
      { matchExpressions: ['a'] },
      ['sel.matchExpressions[0]: expected an object'],
    ],
    [
      'an empty key',
      { matchExpressions: [{ key: '', operator: 'Exists' }] },
      ['sel.matchExpressions[0].key: expected a non-empty string'],
    ],
    [
      'an unknown operator',
      { matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] },
      ['sel.matchExpressions[0].operator: expected one of In, NotIn, Exists, DoesNotExist'],
    ],
    [
      'In without values',
      { matchExpressions: [{ key: 'a', operator: 'In' }] },
      ['sel.matchExpressions[0].values: required and non-empty for operator In'],
    ],
    [
      'NotIn with empty values',
      { matchExpressions: [{ key: 'a', operator: 'NotIn', values: [] }] },
      ['sel.matchExpressions[0].values: required and non-empty for operator NotIn'],
    ],
    [
      'Exists with values',
      { matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] },
      ['sel.matchExpressions[0].values: must be empty for operator Exists'],
    ],
    [
      'non-string values',
      { matchExpressions: [{ key: 'a', operator: 'In', values: [1] }] },
      ['sel.matchExpressions[0].values: expected a list of strings'],
    ],
    [
      'several problems',
      { matchLabels: { a: 1 }, matchExpressions: [{ operator: 'In' }] },
      [
        'sel.matchLabels.a: expected a string',
        'sel.matchExpressions[0].key: expected a non-empty string',
        'sel.matchExpressions[0].values: required and non-empty for operator In',
      ],
    ],
  ])('rejects %s', (_name, raw, problems) => {
    expect(validateSelector(raw, 'sel')).toEqual(problems);
  });
});

describe('labelSelectorProblem (kubectl -l syntax, as --node-selector takes it)', () => {
  it.each([
    '',
    'kubernetes.io/os=linux',
    'kubernetes.io/os!=windows,type!=virtual-kubelet',
    'zone in (a, b),tier notin (x)',
    'gpu,!spot',
    'a==b',
    'key=',
  ])('accepts %j', (selector) => {
    expect(labelSelectorProblem(selector)).toBeUndefined();
  });

  it.each([
    ['kubernetes.io/os in linux', /is not a requirement/],
    ['zone in (a,b', /unbalanced parentheses/],
    ['zone in ((a))', /unbalanced parentheses/],
    ['-bad-=x', /"-bad-" is not a label key/],
    ['Bad_Prefix/x=y', /the prefix is not a DNS subdomain/],
    ['a=b c', /is not a requirement/],
    ['a=-x-', /"-x-" is not a label value/],
    ['a,,b', /is not a requirement/],
  ])('rejects %j', (selector, message) => {
    expect(labelSelectorProblem(selector)).toMatch(message);
  });
});

describe('parseLabelSelector', () => {
  it('reads each requirement as the API server does (!= also selects nodes without the key)', () => {
    const parsed = parseLabelSelector('kubernetes.io/os!=windows, zone in (a,b), gpu, !spot, tier=web');
    if (!('selector' in parsed)) throw new Error(parsed.problem);
    const { selector } = parsed;
    expect(matchesSelector(selector, { zone: 'a', gpu: '', tier: 'web' })).toBe(true);
    expect(matchesSelector(selector, { 'kubernetes.io/os': 'linux', zone: 'b', gpu: '', tier: 'web' })).toBe(
      true,
    );
    expect(
      matchesSelector(selector, { 'kubernetes.io/os': 'windows', zone: 'a', gpu: '', tier: 'web' }),
    ).toBe(false);
    expect(matchesSelector(selector, { zone: 'c', gpu: '', tier: 'web' })).toBe(false);
    expect(matchesSelector(selector, { zone: 'a', tier: 'web' })).toBe(false);
    expect(matchesSelector(selector, { zone: 'a', gpu: '', spot: 'true', tier: 'web' })).toBe(false);
    expect(matchesSelector(selector, { zone: 'a', gpu: '', tier: 'db' })).toBe(false);
  });

  it('the empty selector selects every node', () => {
    const parsed = parseLabelSelector(' ');
    expect('selector' in parsed && matchesSelector(parsed.selector, { any: 'x' })).toBe(true);
  });
});
