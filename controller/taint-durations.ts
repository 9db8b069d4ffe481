// How long taints were held, from the taint changes writes really made: the bootstrap duration (from the
// remembered bootstrap start or, on a first boot, the node's creation) and the runtime taint's (known only
// when this leader added it), into their histograms. The bootstrap duration starts at a wall timestamp (the
// node's creation, or the remembered start, which is one) and is wall time; the runtime taint's is measured by
// this process alone, on the monotonic clock (docs/adr/0020).

import { NodeAnnotation } from '../api/names.ts';
import { EventReason } from '../api/reasons.ts';
import type { CachedNode } from './cache/index.ts';
import type { NodeEvent } from './decide/index.ts';
import type { ControllerMetrics } from './metrics.ts';

export class TaintDurations {
  private readonly metrics: Pick<ControllerMetrics, 'bootstrapDuration' | 'runtimeTaintDuration'>;
  /** When this leader added the runtime taint to each node (monotonic clock). */
  private readonly runtimeTaintedAtMs = new Map<string, number>();

  constructor(metrics: Pick<ControllerMetrics, 'bootstrapDuration' | 'runtimeTaintDuration'>) {
    this.metrics = metrics;
  }

  reset(): void {
    this.runtimeTaintedAtMs.clear();
  }

  forget(name: string): void {
    this.runtimeTaintedAtMs.delete(name);
  }

  /** Observes the taint events a write to `node` made at `at`; `bootstrapStartedMs` (wall) as remembered. */
  observe(
    node: CachedNode,
    taintEvents: readonly NodeEvent[],
    at: { wallMs: number; monotonicMs: number },
    bootstrapStartedMs: number | undefined,
  ): void {
    const { metrics } = this;
    const { wallMs: now, monotonicMs } = at;
    for (const event of taintEvents) {
      if (event.reason === EventReason.BootstrapTaintRemoved) {
        const firstBoot = node.annotations[NodeAnnotation.bootstrappedBootId] === undefined;
        const started = bootstrapStartedMs ?? (firstBoot ? node.creationTimestampMs : undefined);
        if (started !== undefined && now >= started)
          metrics.bootstrapDuration.observe((now - started) / 1000);
      } else if (event.reason === EventReason.RuntimeTaintAdded) {
        this.runtimeTaintedAtMs.set(node.name, monotonicMs);
      } else if (event.reason === EventReason.RuntimeTaintRemoved) {
        const added = this.runtimeTaintedAtMs.get(node.name);
        this.runtimeTaintedAtMs.delete(node.name);
        if (added !== undefined) metrics.runtimeTaintDuration.observe((monotonicMs - added) / 1000);
      }
    }
  }
}
