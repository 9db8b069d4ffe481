import { describe, expect, it } from 'vitest';
import { FieldReader } from './field-reader.ts';

describe('FieldReader.withDefaults', () => {
  const read = (raw: Record<string, unknown>) => new FieldReader(raw, 'probe.x', []);

  it.each([
    ['an absent field gets its default', { a: 1 }, { a: 1, b: 2 }],
    ['a given field keeps its value', { a: 1, b: 5 }, { a: 1, b: 5 }],
    ['a given field of the wrong type is kept for the reader to report', { b: 'five' }, { b: 'five' }],
    [
      'a nested default applies inside an object that is there',
      { o: { x: 1 } },
      { o: { x: 1, min: 1 }, b: 2 },
    ],
    ['a nested default does not create its object', {}, { b: 2 }],
    ['a nested default leaves a non-object alone', { o: 'text' }, { o: 'text', b: 2 }],
  ] as const)('%s', (_name, raw, filled) => {
    expect(read({ ...raw }).withDefaults({ b: 2, o: { min: 1 } }).raw).toEqual(filled);
  });

  it('changes neither the input nor its nested objects, and keeps the path and the problems list', () => {
    const nested = { x: 1 };
    const raw = { o: nested };
    const reader = read(raw);
    const filled = reader.withDefaults({ b: 2, o: { min: 1 } });
    expect(raw).toEqual({ o: { x: 1 } });
    expect(nested).toEqual({ x: 1 });
    expect(filled.path).toBe('probe.x');
    expect(filled.problems).toBe(reader.problems);
  });
});
