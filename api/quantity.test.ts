import { describe, expect, it } from 'vitest';
import { MAX_QUANTITY_LENGTH, parseQuantity } from './quantity.ts';

describe('parseQuantity', () => {
  it.each<[string | number, number]>([
    ['4', 4],
    ['0', 0],
    [' 2 ', 2],
    ['+3', 3],
    ['-1', -1],
    ['1.5', 1.5],
    ['.5', 0.5],
    ['500m', 0.5],
    ['250u', 250e-6],
    ['10n', 10e-9],
    ['1k', 1000],
    ['2M', 2e6],
    ['3G', 3e9],
    ['1T', 1e12],
    ['1P', 1e15],
    ['1E', 1e18],
    ['1Ki', 1024],
    ['8Mi', 8 * 2 ** 20],
    ['8Gi', 8 * 2 ** 30],
    ['1Ti', 2 ** 40],
    ['1Pi', 2 ** 50],
    ['1Ei', 2 ** 60],
    ['1.5Gi', 1.5 * 2 ** 30],
    ['1e3', 1000],
    ['1E3', 1000],
    ['5e-1', 0.5],
    [7, 7],
    [0.25, 0.25],
  ])('%j → %d', (text, expected) => {
    expect(parseQuantity(text)).toBeCloseTo(expected, 12);
  });

  it.each<[string | number]>([
    [''],
    ['Gi'],
    ['8GB'],
    ['8 Gi'],
    ['8gi'],
    ['1K'],
    ['0x10'],
    ['abc'],
    ['1e'],
    ['--1'],
    [Number.NaN],
    [Number.POSITIVE_INFINITY],
  ])('%j → not a quantity', (text) => {
    expect(parseQuantity(text)).toBeUndefined();
  });
});

describe('parseQuantity on hostile input (issue 7 item 3)', () => {
  it('rejects a 40,000-digit value with a bad suffix by its length, before any scan', () => {
    expect(parseQuantity(`${'1'.repeat(40_000)}x`)).toBeUndefined();
    expect(parseQuantity('1'.repeat(MAX_QUANTITY_LENGTH + 1))).toBeUndefined();
  });

  it('still parses the longest accepted quantity', () => {
    expect(parseQuantity('1'.repeat(MAX_QUANTITY_LENGTH - 2) + 'Ki')).toBeCloseTo(
      Number('1'.repeat(MAX_QUANTITY_LENGTH - 2)) * 1024,
    );
  });

  it.each(['1.', '1.Gi', '+.5', '-.5m'])('%j still parses', (text) => {
    expect(parseQuantity(text)).toBeDefined();
  });

  it.each(['.', '+', '1e+', '1e-', 'toString', '1toString', '1__proto__', '1.2.3'])(
    '%j → not a quantity',
    (text) => {
      expect(parseQuantity(text)).toBeUndefined();
    },
  );
});
