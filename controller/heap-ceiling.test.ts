// The old generation's ceiling from the memory limit (controller/heap-ceiling.ts).
import { describe, expect, it } from 'vitest';
import { oldGenerationCeiling, semiSpaceSize, type MemoryFacts } from './heap-ceiling.ts';

const MIB = 1024 * 1024;
const facts = (over: Partial<MemoryFacts>): MemoryFacts => ({
  constrainedBytes: 512 * MIB,
  totalBytes: 24 * 1024 * MIB,
  execArgv: [],
  nodeOptions: undefined,
  ...over,
});

describe('oldGenerationCeiling', () => {
  it('gives the old generation three quarters of a container limit', () => {
    expect(oldGenerationCeiling(facts({}))).toEqual(['--max-old-space-size=384']);
    expect(oldGenerationCeiling(facts({ constrainedBytes: 1280 * MIB }))).toEqual([
      '--max-old-space-size=960',
    ]);
    // A limit in bytes that is not whole MiB rounds down.
    expect(oldGenerationCeiling(facts({ constrainedBytes: 1000 * 1000 * 1000 }))).toEqual([
      '--max-old-space-size=714',
    ]);
  });

  it('adds nothing without a limit: none reported (0 or 2^64 - 1) or one at or above the machine', () => {
    expect(oldGenerationCeiling(facts({ constrainedBytes: 0 }))).toEqual([]);
    expect(oldGenerationCeiling(facts({ constrainedBytes: 2 ** 64 - 1 }))).toEqual([]);
    expect(oldGenerationCeiling(facts({ constrainedBytes: 24 * 1024 * MIB }))).toEqual([]);
    expect(oldGenerationCeiling(facts({ constrainedBytes: Number.NaN }))).toEqual([]);
  });

  it('keeps V8 sizing under 256 MiB of limit', () => {
    expect(oldGenerationCeiling(facts({ constrainedBytes: 255 * MIB }))).toEqual([]);
    expect(oldGenerationCeiling(facts({ constrainedBytes: 256 * MIB }))).toEqual([
      '--max-old-space-size=192',
    ]);
  });

  it('a ceiling set on purpose wins, on the command line or in NODE_OPTIONS, in either spelling', () => {
    expect(oldGenerationCeiling(facts({ execArgv: ['--max-old-space-size=300'] }))).toEqual([]);
    expect(oldGenerationCeiling(facts({ nodeOptions: '--trace-gc --max_old_space_size=300' }))).toEqual([]);
    expect(oldGenerationCeiling(facts({ nodeOptions: '--max-semi-space-size=8' }))).toEqual([
      '--max-old-space-size=384',
    ]);
  });
});

describe('semiSpaceSize', () => {
  it('16 MiB without a limit and under one below 1 GiB (the chart up to about 40,000 nodes)', () => {
    expect(semiSpaceSize(facts({}))).toBe('--max-semi-space-size=16');
    expect(semiSpaceSize(facts({ constrainedBytes: 640 * MIB }))).toBe('--max-semi-space-size=16');
    expect(semiSpaceSize(facts({ constrainedBytes: 1023 * MIB }))).toBe('--max-semi-space-size=16');
    expect(semiSpaceSize(facts({ constrainedBytes: 0 }))).toBe('--max-semi-space-size=16');
    expect(semiSpaceSize(facts({ constrainedBytes: 2 ** 64 - 1 }))).toBe('--max-semi-space-size=16');
    expect(semiSpaceSize(facts({ constrainedBytes: Number.NaN }))).toBe('--max-semi-space-size=16');
  });

  it('64 MiB under a limit of 1 GiB or more that is below the machine', () => {
    expect(semiSpaceSize(facts({ constrainedBytes: 1024 * MIB }))).toBe('--max-semi-space-size=64');
    expect(semiSpaceSize(facts({ constrainedBytes: 1280 * MIB }))).toBe('--max-semi-space-size=64');
    expect(semiSpaceSize(facts({ constrainedBytes: 2304 * MIB }))).toBe('--max-semi-space-size=64');
    // A "limit" at the machine's memory is none.
    expect(semiSpaceSize(facts({ constrainedBytes: 24 * 1024 * MIB }))).toBe('--max-semi-space-size=16');
  });
});
