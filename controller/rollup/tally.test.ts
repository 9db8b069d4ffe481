// The roll-up tally: counts kept pair by pair equal the counts made at once from the same pairs, whatever
// order they came and went in, and an evaluation on the tally equals one on the list.

import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { ControllerReason, ProbeReason } from '../../api/reasons.ts';
import { evaluateRollup } from './evaluate.ts';
import type { SourcedPair } from './pairs.ts';
import { RollupTally } from './tally.ts';

const maintenance = { cause: 'DrainInProgress', since: '2026-11-23T09:58:00Z', detail: '' } as const;

function pair(
  node: string,
  extension: string,
  state: ExtensionState,
  extra: Partial<SourcedPair> = {},
): SourcedPair {
  const reason = state === ExtensionState.Healthy ? ProbeReason.ProbeSucceeded : ProbeReason.ProbeTimeout;
  return { node, extension, conditionType: 'SystemComponentsHealthy', state, reason, ...extra };
}

/** A fleet whose pairs take every verdict, a SystemExtension's and an annotation's, maintained and planned. */
function fleet(round: number): SourcedPair[] {
  const pairs: SourcedPair[] = [];
  const states = Object.values(ExtensionState);
  for (let n = 0; n < 40; n++)
    for (const [e, extension] of ['gpu', 'csi', 'cni'].entries()) {
      const state = states[(n + e + round) % states.length]!;
      pairs.push(
        pair(`node-${n}`, extension, state, {
          ...(extension === 'gpu' ? { conditionType: 'EveryNodeReady', source: 'systemExtension' } : {}),
          ...(extension === 'csi' && n % 3 === round % 3 ? { source: 'annotation' } : {}),
          ...(state === ExtensionState.Unknown && n % 2 === 0
            ? { reason: ControllerReason.LeaseExpired }
            : {}),
          ...(n % 7 === round % 7 ? { maintenance } : {}),
          ...(n % 5 === round % 5 ? { maintenancePlanned: true } : {}),
        }),
      );
    }
  return pairs;
}

describe('RollupTally', () => {
  it('kept pair by pair, counts what a tally made at once from the same pairs counts', () => {
    const kept = new RollupTally();
    let current: SourcedPair[] = [];
    for (let round = 0; round < 6; round++) {
      const next = fleet(round).filter((_, i) => (i + round) % 11 !== 0); // some pairs come and go
      for (const p of current) kept.remove(p);
      for (const p of [...next].reverse()) kept.add(p);
      current = next;
      const made = RollupTally.of(current).sorted();
      const sorted = kept.sorted();
      expect(sorted.counts).toEqual(made.counts);
      expect([sorted.maintained, sorted.planned]).toEqual([made.maintained, made.planned]);
      expect([...sorted.buckets.keys()].sort()).toEqual([...made.buckets.keys()].sort());
      for (const [type, bucket] of made.buckets)
        for (const verdict of ['unevaluable', 'failing', 'progressing'] as const)
          expect(new Set(sorted.buckets.get(type)?.[verdict])).toEqual(new Set(bucket[verdict]));
      expect(kept.registeredCounts('gpu')).toEqual(RollupTally.of(current).registeredCounts('gpu'));
    }
    expect(kept.sorted().maintained).toBeGreaterThan(0);
    for (const p of current) kept.remove(p);
    expect(kept.sorted()).toEqual({ buckets: new Map(), counts: new Map(), maintained: 0, planned: 0 });
    expect(kept.registeredCounts('gpu')).toBeUndefined();
  });

  it('counts the pairs a SystemExtension registered apart from the annotations of the same name', () => {
    const tally = RollupTally.of([
      pair('a', 'csi', ExtensionState.Healthy, { source: 'systemExtension' }),
      pair('b', 'csi', ExtensionState.Unhealthy, { source: 'systemExtension' }),
      pair('c', 'csi', ExtensionState.Unknown, { source: 'annotation' }),
    ]);
    expect(tally.registeredCounts('csi')).toEqual({
      nodes: 2,
      healthy: 1,
      progressing: 0,
      unhealthy: 1,
      unknown: 0,
    });
    expect(tally.sorted().counts.get('csi')).toMatchObject({ healthy: 1, unhealthy: 1, unknown: 1 });
  });

  it('gives an extension the condition type most of its pairs carry, the first by name on a tie', () => {
    const type = (conditionType: string) => ({ conditionType });
    const tally = RollupTally.of([
      pair('a', 'gpu', ExtensionState.Healthy, type('ZetaReady')),
      pair('b', 'gpu', ExtensionState.Healthy, type('AlphaReady')),
      pair('c', 'gpu', ExtensionState.Healthy, type('ZetaReady')),
    ]);
    expect(tally.sorted().counts.get('gpu')?.conditionType).toBe('ZetaReady');
    tally.remove(pair('c', 'gpu', ExtensionState.Healthy, type('ZetaReady')));
    expect(tally.sorted().counts.get('gpu')?.conditionType).toBe('AlphaReady');
  });

  it('kept through other pairs in another order, evaluates as the list of its pairs does', () => {
    const kept = new RollupTally();
    for (const p of [...fleet(0)].reverse()) kept.add(p);
    for (const p of fleet(0)) kept.remove(p);
    for (const p of [...fleet(1)].reverse()) kept.add(p);
    const input = { previous: [], ownedBefore: [], nowMs: Date.parse('2026-12-03T12:00:00Z') };
    const result = evaluateRollup({ ...input, pairs: kept });
    expect(result).toEqual(evaluateRollup({ ...input, pairs: fleet(1) }));
    expect(result.maintenance.inProgress).toBeGreaterThan(0);
    expect(result.conditions.map((c) => c.status)).toContain('Unknown');
  });
});
