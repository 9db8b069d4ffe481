// The roll-up room (docs/rollup.md): the pure evaluation of every (node, extension) pair into Gardener-style
// conditions and counts (evaluate.ts, on the pairs as tally.ts keeps them counted; pairs.ts, condition.ts,
// gardener.ts), and its writer of ClusterHealth and the SystemExtension counts through one port (writer.ts,
// extension-counts.ts, store.ts).

export { evaluateRollup, type RollupResult } from './evaluate.ts';
export { RollupTally } from './tally.ts';
export type { AgentNotReportingFact, NodeNotReadyFact, RollupPair, SourcedPair } from './pairs.ts';
export type {
  ClusterHealthObject,
  RollupApi,
  RollupSource,
  SystemExtensionCounts,
  SystemExtensionStatusView,
} from './store.ts';
export { GARDENER_RESYNC_MS, ROLLUP_MIN_INTERVAL_MS, RollupWriter } from './writer.ts';
