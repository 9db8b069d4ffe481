// How long taints were held, from the taint changes writes really made: the bootstrap duration (from the
// remembered bootstrap start or, on a first boot, the node's creation) and the runtime taint's (known only
// when this leader added it), into their histograms. The bootstrap duration starts at a wall timestamp (the
// node's creation, or the remembered start, which is one) and is wall time; the runtime taint's is measured by
// this process alone, on the monotonic clock (docs/adr/0020).

import { NodeAnnotation } from '../../api/names.ts';
import { EventReason } from '../../api/reasons.ts';
import type { CachedNode } from '../cache/index.ts';
import type { NodeEvent, NodeMemory } from '../decide/index.ts';
import type { ControllerMetrics } from '../metrics.ts';

/** The part of a node's record the durations read and keep. */
export interface TaintTimes {
  /** The memory of the node's last decision carried out: when its current bootstrap started. */
  memory?: Pick<NodeMemory, 'bootstrapStartedMs'>;
  /** When this leader added the runtime taint (monotonic clock). */
  runtimeTaintedAtMs?: number;
}

/** Observes the taint events a write to `node` made at `at`, keeping the runtime taint's start in `times`. */
export function observeTaintDurations(
  metrics: Pick<ControllerMetrics, 'bootstrapDuration' | 'runtimeTaintDuration'>,
  times: TaintTimes,
  node: CachedNode,
  taintEvents: readonly NodeEvent[],
  at: { wallMs: number; monotonicMs: number },
): void {
  const { wallMs: now, monotonicMs } = at;
  for (const event of taintEvents) {
    if (event.reason === EventReason.BootstrapTaintRemoved) {
      const firstBoot = node.annotations[NodeAnnotation.bootstrappedBootId] === undefined;
      const started = times.memory?.bootstrapStartedMs ?? (firstBoot ? node.creationTimestampMs : undefined);
      if (started !== undefined && now >= started) metrics.bootstrapDuration.observe((now - started) / 1000);
    } else if (event.reason === EventReason.RuntimeTaintAdded) {
      times.runtimeTaintedAtMs = monotonicMs;
    } else if (event.reason === EventReason.RuntimeTaintRemoved) {
      const added = times.runtimeTaintedAtMs;
      delete times.runtimeTaintedAtMs;
      if (added !== undefined) metrics.runtimeTaintDuration.observe((monotonicMs - added) / 1000);
    }
  }
}
