// Rollout windows of SystemExtensions (docs/extensions.md, "Rolling out a new requirement"): when a window
// started, which the decision needs for `spec.rollout.existingNodes: Grace` and the status shows. A window starts
// when the object is created (generation 1: its creationTimestamp) or its requirement changes (the nodes it
// selects, its probe or a policy field: ParsedSystemExtension.requirement; the moment this controller first saw
// it), never for another edit (lifting `suspend`, the grace period, labelWait). The roll-up records it in
// status.rollout with that requirement, so a restarted controller or a new leader keeps the same window instead
// of granting a new one (issue 50 item 12). Windows not recorded yet are kept by UID, and forgotten when their
// object is gone (retain).

import { RolloutMode, type ParsedSystemExtension, type RolloutPolicy } from '../../api/index.ts';
import type { ExtensionRollout } from './types.ts';

/** The key of an object's windows: its UID (a name is reused by an object created again). */
function keyOf(sx: ParsedSystemExtension): string {
  return sx.uid === '' ? `name:${sx.name}` : sx.uid;
}

export class RolloutWindows {
  /** Windows not yet recorded in a status, by object: its requirement then and when this controller saw it. */
  private readonly firstSeen = new Map<string, { requirement: string; ms: number }>();

  /** When `sx`'s current window started (ms since the epoch, wall clock: it is compared with timestamps). */
  startMs(sx: ParsedSystemExtension, nowMs: number): number {
    const recorded = sx.recordedRollout;
    // A record written before it named the requirement belongs to the generation it was written at.
    if (
      recorded &&
      (recorded.requirement === undefined
        ? recorded.generation === sx.generation
        : recorded.requirement === sx.requirement)
    )
      return recorded.startedMs;
    if (!recorded && sx.generation === 1 && Number.isFinite(sx.createdMs)) return sx.createdMs;
    const key = keyOf(sx);
    const seen = this.firstSeen.get(key);
    if (seen?.requirement === sx.requirement) return seen.ms;
    this.firstSeen.set(key, { requirement: sx.requirement, ms: nowMs });
    return nowMs;
  }

  /** Forgets the windows of objects that are gone: only `systemExtensions` are kept. */
  retain(systemExtensions: Iterable<ParsedSystemExtension>): void {
    const keys = new Set([...systemExtensions].map(keyOf));
    for (const key of this.firstSeen.keys()) if (!keys.has(key)) this.firstSeen.delete(key);
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
