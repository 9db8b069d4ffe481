import { describe, expect, it } from 'vitest';
import { parseQuantity } from './quantity.ts';

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
