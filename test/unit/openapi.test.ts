import { describe, expect, it } from 'vitest';
import { applyDefaults, unsupportedKeywords, validate, type Schema } from './openapi.ts';

const SCHEMA: Schema = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 5, pattern: '^[a-z]+$' },
    size: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
    mode: { type: 'string', enum: ['A', 'B'], default: 'A' },
    port: { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    items: {
      type: 'array',
      maxItems: 2,
      items: { type: 'object', properties: { on: { type: 'boolean', default: true } } },
    },
    free: { type: 'object' },
  },
};

describe('validate', () => {
  it.each<[string, unknown, string[]]>([
    [
      'a valid object',
      { name: 'abc', size: 10, mode: 'B', port: 'http', labels: { a: 'b' }, free: { x: 1 } },
      [],
    ],
    ['int-or-string given an integer', { name: 'a', port: 80 }, []],
    ['a missing required field', {}, ['name: required']],
    ['an unknown field', { name: 'a', colour: 'red' }, ['colour: unknown field']],
    ['a wrong type', { name: 1 }, ['name: expected a string']],
    ['a float for an integer', { name: 'a', size: 1.5 }, ['size: expected an integer']],
    ['out of range', { name: 'a', size: 11 }, ['size: must be <= 10']],
    ['a value outside the enum', { name: 'a', mode: 'C' }, ['mode: unsupported value "C"']],
    ['a pattern mismatch', { name: 'ABC' }, ['name: does not match ^[a-z]+$']],
    ['too long', { name: 'abcdef' }, ['name: longer than 5']],
    ['int-or-string given a boolean', { name: 'a', port: true }, ['port: expected an integer or a string']],
    ['a bad map value', { name: 'a', labels: { a: 1 } }, ['labels.a: expected a string']],
    ['too many items', { name: 'a', items: [{}, {}, {}] }, ['items: more than 2 items']],
    ['a bad list item', { name: 'a', items: [{ on: 'yes' }] }, ['items[0].on: expected a boolean']],
    ['not an object at all', 'x', ['<root>: expected an object']],
  ])('%s', (_name, value, problems) => {
    expect(validate(SCHEMA, value)).toEqual(problems);
  });
});

describe('applyDefaults', () => {
  it('fills absent fields, also inside list items, and keeps given ones', () => {
    expect(applyDefaults(SCHEMA, { name: 'a', mode: 'B', items: [{}, { on: false }] })).toEqual({
      name: 'a',
      size: 3,
      mode: 'B',
      items: [{ on: true }, { on: false }],
    });
  });

  it('does not modify its input', () => {
    const input = { name: 'a' };
    applyDefaults(SCHEMA, input);
    expect(input).toEqual({ name: 'a' });
  });
});

describe('unsupportedKeywords', () => {
  it('names every keyword the validator would ignore, with its path', () => {
    const schema = { type: 'object', properties: { a: { type: 'string', oneOf: [] } } } as unknown as Schema;
    expect(unsupportedKeywords(schema)).toEqual(['a: oneOf']);
  });
});
