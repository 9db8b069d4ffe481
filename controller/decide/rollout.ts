// Rollout windows of SystemExtensions (docs/extensions.md, "Rolling out a new requirement"): when a window
// started, which the decision needs for `spec.rollout.existingNodes: Grace` and the status shows. A window starts
// when the object is created (generation 1: its creationTimestamp) or its spec changes (a new generation: the
// moment this controller first saw it), and is recorded in status.rollout, so a restarted controller or a new
// leader keeps the same window instead of granting a new one.

import { RolloutMode, type ParsedSystemExtension, type RolloutPolicy } from '../../api/index.ts';
import type { ExtensionRollout } from './types.ts';

export class RolloutWindows {
  /** Windows of generations not yet recorded in a status: when this controller first saw them. */
  private readonly firstSeen = new Map<string, { generation: number; ms: number }>();

  /** When `sx`'s current window started (ms since the epoch). */
  startMs(sx: ParsedSystemExtension, nowMs: number): number {
    if (sx.recordedRollout?.generation === sx.generation) return sx.recordedRollout.startedMs;
    if (sx.generation === 1 && Number.isFinite(sx.createdMs)) return sx.createdMs;
    const seen = this.firstSeen.get(sx.name);
    if (seen?.generation === sx.generation) return seen.ms;
    this.firstSeen.set(sx.name, { generation: sx.generation, ms: nowMs });
    return nowMs;
  }

  /** Forgets objects that are gone. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.firstSeen.keys()) if (!names.has(name)) this.firstSeen.delete(name);
  }
}

/** What the decision needs of a SystemExtension's rollout: nothing for Enforce. */
export function extensionRollout(policy: RolloutPolicy, startMs: number): ExtensionRollout | undefined {
  switch (policy.existingNodes) {
    case RolloutMode.Enforce:
      return undefined;
    case RolloutMode.Grace:
      return { mode: RolloutMode.Grace, endsMs: startMs + policy.gracePeriodSeconds * 1000 };
    case RolloutMode.Observe:
      return { mode: RolloutMode.Observe };
    default: {
      const unreachable: never = policy.existingNodes;
      return unreachable;
    }
  }
}
