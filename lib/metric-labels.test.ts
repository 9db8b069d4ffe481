// Bounded extension labels (issue 20 item 8): whatever names nodes register by annotation, the controller's
// per-extension series stay few.

import { describe, expect, it } from 'vitest';
import { OTHER_EXTENSION_LABEL, extensionSeries, type ExtensionPair } from './metric-labels.ts';

const pairs = (extension: string, state: string, n: number): ExtensionPair[] =>
  Array.from({ length: n }, () => ({ extension, state }));

describe('extensionSeries', () => {
  it('counts nodes per name and state', () => {
    expect(
      extensionSeries([...pairs('gpu', 'Healthy', 3), ...pairs('gpu', 'Unhealthy', 1)], new Set(['gpu'])),
    ).toEqual([
      { extension: 'gpu', state: 'Healthy', nodes: 3 },
      { extension: 'gpu', state: 'Unhealthy', nodes: 1 },
    ]);
  });

  it('declared names always have their own series; of the others only the most required do', () => {
    const series = extensionSeries(
      [
        ...pairs('declared-rare', 'Healthy', 1),
        ...pairs('wide', 'Healthy', 5),
        ...pairs('medium', 'Healthy', 3),
        ...pairs('b-single', 'Unknown', 1),
        ...pairs('a-single', 'Unknown', 1),
      ],
      new Set(['declared-rare']),
      3,
    );
    expect(series).toEqual([
      { extension: 'declared-rare', state: 'Healthy', nodes: 1 },
      { extension: 'wide', state: 'Healthy', nodes: 5 },
      { extension: 'medium', state: 'Healthy', nodes: 3 },
      { extension: OTHER_EXTENSION_LABEL, state: 'Unknown', nodes: 1 },
      { extension: 'a-single', state: 'Unknown', nodes: 1 },
    ]);
  });

  it('10,000 distinct annotation names give at most the bound plus one series per state', () => {
    const many = Array.from({ length: 10_000 }, (_, i) => ({ extension: `x-${i}`, state: 'Unknown' }));
    const series = extensionSeries(many, new Set(), 32);
    expect(series).toHaveLength(33);
    expect(series.find((s) => s.extension === OTHER_EXTENSION_LABEL)?.nodes).toBe(10_000 - 32);
  });
});
