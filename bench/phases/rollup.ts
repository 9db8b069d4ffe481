// The roll-up's recompute time on 5,000 × 5 pairs: the pure evaluation (controller/rollup/evaluate.ts), timed in
// this process.

import { evaluateRollup, type RollupPair } from '../../controller/rollup/evaluate.ts';
import { EXTENSION_NAMES, load1 } from '../common.ts';
import { percentile, type Row } from '../report.ts';

export function rollupRow(): Row {
  const nodes = 5000;
  const perNode = 5;
  const pairs: RollupPair[] = [];
  for (let n = 0; n < nodes; n++) {
    for (let e = 0; e < perNode; e++) {
      // 1 % failing, 1 % progressing: the message and the threshold machine have work to do.
      const k = (n * perNode + e) % 100;
      pairs.push({
        node: `node-${n}`,
        extension: EXTENSION_NAMES[e] ?? `extension-${e}`,
        conditionType: e < 2 ? 'EveryNodeReady' : 'SystemComponentsHealthy',
        state: k === 0 ? 'Unhealthy' : k === 1 ? 'Progressing' : 'Healthy',
        reason: k === 0 ? 'ConnectionRefused' : 'ProbeSucceeded',
      });
    }
  }
  const times: number[] = [];
  let previous = evaluateRollup({ pairs, previous: [], ownedBefore: [], nowMs: 0 });
  for (let i = 0; i < 7; i++) {
    const t = performance.now();
    previous = evaluateRollup({
      pairs,
      previous: previous.conditions,
      ownedBefore: previous.owned,
      nowMs: 1000 * (i + 1),
    });
    times.push(performance.now() - t);
  }
  const median = percentile(times, 50) ?? 0;
  return {
    id: 'rollup',
    measure: `roll-up recompute, ${nodes} × ${perNode} pairs (pure evaluateRollup)`,
    goal: 'none (reported)',
    measured: `median ${median.toFixed(1)} ms, max ${Math.max(...times).toFixed(1)} ms`,
    pass: null,
    load: load1(),
    values: { medianMs: median, maxMs: Math.max(...times), runs: times.length },
  };
}
