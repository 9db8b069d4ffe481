// Each SystemExtension's counts (nodes, healthy, progressing, unhealthy, unknown, failing) in its status, from
// the roll-up's tally of the pairs each registered: patched only when they changed, each patch against the
// resourceVersion it was computed on, so an old leader's late write is refused (409: list again) or noticed
// (its watch event: forget).

import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { ControllerMetrics } from '../metrics.ts';
import { NotLeaderError, type Fence } from '../writes/index.ts';
import { RolloutMode } from '../../api/index.ts';
import { apiTime } from './condition.ts';
import { systemExtensionConditions } from './extension-conditions.ts';
import type { RollupTally } from './tally.ts';
import {
  MAX_CONFLICT_RETRIES,
  type RollupApi,
  type RollupSource,
  type SystemExtensionCounts,
  type SystemExtensionRollout,
  type SystemExtensionRolloutStatus,
  type SystemExtensionStatusView,
} from './store.ts';

function zeroCounts(): SystemExtensionCounts {
  return { nodes: 0, healthy: 0, progressing: 0, unhealthy: 0, unknown: 0, failing: 0 };
}

function sameSxCounts(a: SystemExtensionCounts | undefined, b: SystemExtensionCounts): boolean {
  return (
    a !== undefined &&
    a.nodes === b.nodes &&
    a.healthy === b.healthy &&
    a.progressing === b.progressing &&
    a.unhealthy === b.unhealthy &&
    a.unknown === b.unknown &&
    a.failing === b.failing &&
    JSON.stringify(a.rollout ?? null) === JSON.stringify(b.rollout ?? null) &&
    a.observedGeneration === b.observedGeneration &&
    JSON.stringify(a.conditions ?? null) === JSON.stringify(b.conditions ?? null)
  );
}

/**
 * status.rollout: the window of the current generation, its phase now and the progress, for example
 * `37 of 120 selected nodes report healthy; enforcing at 2026-11-25T10:00:00Z` (docs/extensions.md).
 */
export function rolloutStatus(
  rollout: SystemExtensionRollout,
  counts: Pick<SystemExtensionCounts, 'nodes' | 'healthy'>,
  nowMs: number,
): SystemExtensionRolloutStatus {
  const progress = `${counts.healthy} of ${counts.nodes} selected node${counts.nodes === 1 ? '' : 's'} report healthy`;
  const base = {
    observedGeneration: rollout.generation,
    requirement: rollout.requirement,
    startedAt: apiTime(rollout.startedMs),
  };
  const { existingNodes, gracePeriodSeconds } = rollout.policy;
  if (existingNodes === RolloutMode.Observe)
    return {
      ...base,
      phase: 'Observe',
      message: `${progress}; observing: existing nodes are not enforced until spec.rollout.existingNodes is Enforce`,
    };
  const enforcingMs = rollout.startedMs + gracePeriodSeconds * 1000;
  if (existingNodes === RolloutMode.Grace && nowMs < enforcingMs) {
    const enforcingAt = apiTime(enforcingMs);
    return { ...base, phase: 'Grace', enforcingAt, message: `${progress}; enforcing at ${enforcingAt}` };
  }
  return { ...base, phase: 'Enforced', message: `${progress}; enforced` };
}

export interface CountsWriterDeps {
  api: Pick<RollupApi, 'listSystemExtensions' | 'patchSystemExtensionStatus'>;
  source: Pick<RollupSource, 'systemExtensionNames' | 'systemExtensionRollout' | 'systemExtensionSpec'>;
  metrics: Pick<ControllerMetrics, 'rollupWrites'>;
  fence: Fence;
  /** A patch the API server refused as invalid (422): reported, not retried until the counts change. */
  invalid(name: string, err: unknown): void;
}

export class SystemExtensionCountsWriter {
  private readonly deps: CountsWriterDeps;
  /** The statuses as last listed or written; undefined: list them before the next write. */
  private sxCounts: Map<string, SystemExtensionStatusView> | undefined;

  constructor(deps: CountsWriterDeps) {
    this.deps = deps;
  }

  /** Lists the SystemExtensions again before the next write (a new term, a failure, a watch event). */
  forget(): void {
    this.sxCounts = undefined;
  }

  /**
   * Writes every SystemExtension's counts (and rollout) from the pairs it registered that differ from its
   * status. Resolves with the earliest future moment a rollout's phase changes by time alone (a Grace window
   * ending), if any.
   */
  async write(tally: Pick<RollupTally, 'registeredCounts'>, nowMs: number): Promise<number | undefined> {
    const { api, fence, metrics, source } = this.deps;
    const desired = new Map<string, SystemExtensionCounts>();
    for (const name of source.systemExtensionNames())
      desired.set(name, { ...zeroCounts(), ...tally.registeredCounts(name) });
    let nextDeadlineMs: number | undefined;
    for (const [name, counts] of desired) {
      counts.failing = counts.unhealthy + counts.unknown;
      const rollout = source.systemExtensionRollout?.(name);
      if (!rollout) continue;
      counts.rollout = rolloutStatus(rollout, counts, nowMs);
      const endsMs = rollout.startedMs + rollout.policy.gracePeriodSeconds * 1000;
      if (counts.rollout.phase === 'Grace' && (nextDeadlineMs === undefined || endsMs < nextDeadlineMs))
        nextDeadlineMs = endsMs;
    }
    for (let attempt = 0; ; attempt++) {
      if (this.sxCounts === undefined) {
        const listed = await api.listSystemExtensions();
        this.sxCounts = new Map(listed.map((sx) => [sx.name, sx]));
      }
      const known = this.sxCounts;
      for (const name of known.keys()) if (!desired.has(name)) known.delete(name);
      try {
        for (const [name, counts] of desired) {
          const current = known.get(name);
          if (current === undefined) continue;
          const spec = source.systemExtensionSpec?.(name);
          if (spec) {
            // On what the object carries now, so lastTransitionTime moves only when a status changes.
            counts.observedGeneration = spec.generation;
            counts.conditions = systemExtensionConditions(
              spec,
              counts.rollout,
              current.counts?.conditions,
              nowMs,
            );
          }
          if (sameSxCounts(current.counts, counts)) continue;
          fence();
          try {
            // The precondition: an old leader's late write (or anyone's) in between gets 409, not the last word.
            const resourceVersion = await api.patchSystemExtensionStatus(
              name,
              current.resourceVersion,
              counts,
            );
            metrics.rollupWrites.inc({ kind: 'systemextension', result: 'ok' });
            known.set(name, { name, resourceVersion, counts });
          } catch (err) {
            if (isKubeError(err, KubeErrorCode.Invalid)) {
              this.deps.invalid(name, err);
              known.set(name, { ...current, counts }); // not retried until the counts change
              continue;
            }
            if (isKubeError(err, KubeErrorCode.NotFound)) {
              known.delete(name); // deleted meanwhile: its watch event takes it out of the cache
              continue;
            }
            throw err;
          }
        }
        return nextDeadlineMs;
      } catch (err) {
        if (err instanceof NotLeaderError) throw err;
        if (!isKubeError(err, KubeErrorCode.Conflict) || attempt >= MAX_CONFLICT_RETRIES) {
          metrics.rollupWrites.inc({ kind: 'systemextension', result: 'error' });
          throw err;
        }
        // Written meanwhile (by an old leader, or anyone): list again and write on what is there.
        metrics.rollupWrites.inc({ kind: 'systemextension', result: 'conflict' });
        this.sxCounts = undefined;
      }
    }
  }
}
