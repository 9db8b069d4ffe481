// The correlated-failure breaker (SPEC section 5): when most nodes that require an extension fail it at
// once, the fault is the extension's rollout (or the agent's), not the nodes, so the controller stops
// putting runtime taints on for it. Bootstrap taints are unaffected.
//
// What counts: only post-bootstrap nodes (Ready or Degraded), because only they can get a runtime taint;
// a node pool that is still coming up neither trips nor dilutes the breaker. "Failing" is Unhealthy or
// Unknown for any reason, including an invalid registration and an agent that stopped reporting: a bad
// SystemExtension or a broken agent rollout is exactly the correlated failure the breaker exists for.
// Progressing is not failing. The counts do not depend on the breaker's own output (a tripped extension
// is still judged, only not enforced), so tripping cannot feed back into the next count.

import { NodeState } from './node-state.ts';
import { isFailing } from './condition.ts';
import type { NodeDecision } from './types.ts';

export interface ExtensionFailureCount {
  /** Post-bootstrap nodes that require the extension. */
  requiring: number;
  /** Of those, the nodes where it is Unhealthy or Unknown. */
  failing: number;
}

export const BREAKER_DEFAULTS = { maxUnhealthyFraction: 0.5, minFailing: 3 } as const;

/** Extensions failing on at least `minFailing` nodes and on more than `maxUnhealthyFraction` of them. */
export function evaluateBreaker(
  counts: ReadonlyMap<string, ExtensionFailureCount>,
  maxUnhealthyFraction: number = BREAKER_DEFAULTS.maxUnhealthyFraction,
  minFailing: number = BREAKER_DEFAULTS.minFailing,
): Set<string> {
  const tripped = new Set<string>();
  for (const [extension, { requiring, failing }] of counts) {
    if (failing >= minFailing && failing / requiring > maxUnhealthyFraction) {
      tripped.add(extension);
    }
  }
  return tripped;
}

/** Per-extension counts over the latest decision of every node. */
export function countFailures(
  decisions: Iterable<Pick<NodeDecision, 'state' | 'extensions'>>,
): Map<string, ExtensionFailureCount> {
  const counts = new Map<string, ExtensionFailureCount>();
  for (const decision of decisions) {
    if (decision.state !== NodeState.Ready && decision.state !== NodeState.Degraded) continue;
    for (const extension of decision.extensions) {
      const count = counts.get(extension.name) ?? { requiring: 0, failing: 0 };
      count.requiring += 1;
      if (isFailing(extension.state)) count.failing += 1;
      counts.set(extension.name, count);
    }
  }
  return counts;
}
