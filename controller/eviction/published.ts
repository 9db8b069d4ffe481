// What the leading controller's evictor publishes of its guards (issue 54 item 1), in ClusterHealth `cluster`
// status.eviction, so that `kubectl nodecare status` shows them: the settings, the budgets in use, the parallel cap,
// the zones stopped (a storm cooldown with its end), the nodes waiting on a budget or held by another owner, and
// the skips of this leadership term. Absent while eviction is off (no evictor runs). The roll-up writer carries it
// into every status it writes (controller/rollup/writer.ts); the evictor asks for a write when it changes, never on
// a heartbeat: it changes when a node starts or completes, a guard starts or ends, or a skip is counted.
//
// The shape and its reader are api/eviction.ts.

import { PUBLISHED_LIST_MAX, type PublishedEviction } from '../../api/eviction.ts';
import type { EvictionPlan } from './plan.ts';

export { PUBLISHED_LIST_MAX, readPublishedEviction, type PublishedEviction } from '../../api/eviction.ts';

export interface PublishInput {
  plan: EvictionPlan;
  settings: {
    evictAfterSeconds: number;
    dryRun: boolean;
    groupLabel: string;
    groupBudgetPercent: number;
    maxParallelNodes: number;
    maxParallelPercent: number;
    stormCooldownSeconds: number;
  };
  skipped: ReadonlyMap<string, number>;
  /** A monotonic deadline as wall time (the evictor keeps one offset per term, so it never jitters). */
  wall(monotonicMs: number): string;
}

/** The status the plan says. Pure. */
export function publishEviction(input: PublishInput): PublishedEviction {
  const { plan, settings, wall } = input;
  const waiting = plan.waiting.map((w) => ({ node: w.name, group: w.group, reason: w.reason }));
  const held = plan.held.map((h) => ({ node: h.name, reason: h.reason }));
  const omitted =
    Math.max(0, waiting.length - PUBLISHED_LIST_MAX) + Math.max(0, held.length - PUBLISHED_LIST_MAX);
  const skipped = [...input.skipped]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, count]) => {
      const [subject, reason] = key.split('/') as ['node' | 'pod', string];
      return { subject, reason, count };
    });
  return {
    ...settings,
    parallel: { ...plan.budgets.parallel },
    groups: plan.budgets.groups.slice(0, PUBLISHED_LIST_MAX),
    stoppedZones: plan.blockedZones.slice(0, PUBLISHED_LIST_MAX).map((z) => ({
      zone: z.zone,
      reason: z.reason,
      ...(z.untilMs !== undefined ? { until: wall(z.untilMs) } : {}),
    })),
    ...(plan.storm.clusterCooldownUntilMs !== undefined
      ? { cooldownUntil: wall(plan.storm.clusterCooldownUntilMs) }
      : {}),
    waiting: waiting.slice(0, PUBLISHED_LIST_MAX),
    held: held.slice(0, PUBLISHED_LIST_MAX),
    skipped,
    ...(omitted > 0 ? { omitted } : {}),
  };
}
