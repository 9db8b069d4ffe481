// The benchmark's fresh-fleet row (bench/phases/convergence.ts): judged at the size issue 53 item 5 names, on
// both of its figures, and reported without a verdict at every other size.
import { describe, expect, it } from 'vitest';
import { convergenceRow, FRESH_FLEET_GOAL } from '../../bench/phases/convergence.ts';

const { nodes, extensions } = FRESH_FLEET_GOAL;

describe('convergenceRow', () => {
  it('passes at 1,000 × 5 only when both the time and the CPU are within the goal', () => {
    const row = (convergedMs: number | undefined, cpuMs: number | undefined) =>
      convergenceRow(nodes, extensions, { convergedMs, cpuMs, nodeBytes: 9_100 }, convergedMs ? 0 : 3);
    expect(row(4_900, 2_900).pass).toBe(true);
    expect(row(5_100, 2_900).pass).toBe(false);
    expect(row(4_900, 3_100).pass).toBe(false);
    expect(row(4_900, undefined).pass).toBe(false);
    expect(row(undefined, 2_000)).toMatchObject({ pass: false, measured: 'not converged: 3 nodes left' });
    expect(row(4_900, 2_900).measured).toBe('4900 ms (controller CPU 2900 ms, Nodes of 8.9 KiB)');
  });

  it("says where the time went: the controller's milestones and its event loop's share of a core", () => {
    const row = convergenceRow(
      nodes,
      extensions,
      {
        convergedMs: 4_800,
        cpuMs: 2_500,
        nodeBytes: 9_100,
        syncedMs: 900,
        leadingMs: 950,
        firstNodeChangeMs: 1_010,
        firstTaintChangeMs: 1_400,
        mainRunMs: 2_100,
        mainWaitMs: 700,
      },
      0,
    );
    expect(row.measured).toBe(
      '4800 ms (controller CPU 2500 ms, Nodes of 8.9 KiB; caches synced after 900 ms, leading after 950 ms, ' +
        'first node write seen after 1010 ms, first taint change after 1400 ms; its event loop ran 2100 ms and waited 700 ms for a core)',
    );
    expect(row.values).toMatchObject({
      leadingMs: 950,
      firstNodeChangeMs: 1_010,
      firstTaintChangeMs: 1_400,
      mainWaitMs: 700,
    });
    // A controller that never said when it led (an older one): no milestones, and no verdict changes.
    const quiet = convergenceRow(
      nodes,
      extensions,
      { convergedMs: 4_800, cpuMs: 2_500, nodeBytes: 9_100 },
      0,
    );
    expect(quiet.measured).toBe('4800 ms (controller CPU 2500 ms, Nodes of 8.9 KiB)');
    expect(quiet.pass).toBe(true);
  });

  it('reports other sizes without a verdict', () => {
    const row = convergenceRow(5_000, 5, { convergedMs: 30_000, cpuMs: 9_000, nodeBytes: undefined }, 0);
    expect(row).toMatchObject({ pass: null, goal: 'none (reported)' });
    expect(row.values).toEqual({ convergedMs: 30_000, cpuMs: 9_000, nodeBytes: null, notConverged: 0 });
  });
});
