// The start of a leadership term: the node book's reset, then every node decided on the fresh view, without
// writing, and the breaker judged once over all of them, as the node lifecycle controller computes every
// node's state before its zone state: the first write already sees the whole cluster.

import type { NodeBook } from './book/index.ts';
import type { ClusterCache } from './cache/index.ts';
import type { NodeDecision } from './decide/index.ts';
import type { NodeDecider } from './node-decider.ts';
import type { NodeWriter } from './writes/index.ts';

/** What a term starts with (startTerm). */
export interface TermStart {
  /** The nodes to reconcile first: their decision is not on them yet, or it has events to record. */
  pressing: string[];
  /** Every other node with a deadline: the delay in ms until it must be decided again. */
  settled: Map<string, number>;
  /**
   * The nodes to decide again after the pressing ones: every settled one when the breaker the pass judged is
   * tripped (the pass decided them on an untripped breaker); empty otherwise.
   */
  sweep: string[];
}

export interface TermStartParts {
  book: NodeBook;
  cache: Pick<ClusterCache, 'node' | 'nodeNames' | 'systemExtensionList'>;
  decider: Pick<NodeDecider, 'decide'>;
  writer: Pick<NodeWriter, 'wouldWrite'>;
  clock: { monotonic(): number };
}

/** Every node's decision on the cached view, without writing (undefined: the node is gone). */
export function* decideEvery(
  cache: TermStartParts['cache'],
  decider: TermStartParts['decider'],
): Generator<[string, NodeDecision | undefined]> {
  for (const name of cache.nodeNames()) yield [name, decider.decide(name, cache.node(name))];
}

/**
 * Starts a term on synced caches, after every lease got a fresh duration. That one pass is the term's sweep.
 * `pressing`: the nodes whose decision they do not show yet (what changed while no replica led, or in the
 * hand-off) or that have an event to record, for the term to reconcile first. Every other node is `settled`:
 * the node already shows its decision, so the decision is kept as if carried out (its memory and deadline
 * parts) and the node only has to be decided again at its deadline, the delay given here (unless the breaker
 * trips: `sweep`). Deciding those thousands of nodes a second time through the work queue (as a sweep did
 * until 2026-11-28) took the controller's CPU while the pressing nodes' writes were in flight, and returned
 * nothing this pass does not know.
 */
export function startTerm(parts: TermStartParts): TermStart {
  const { book, cache, decider, writer, clock } = parts;
  book.reset([...cache.systemExtensionList()]);
  const pressing: string[] = [];
  const settled = new Map<string, number>();
  const calm: string[] = [];
  const now = clock.monotonic();
  for (const name of cache.nodeNames()) {
    const cached = cache.node(name);
    const decision = decider.decide(name, cached);
    book.record(name, decision);
    if (!cached || !decision) continue;
    if (decision.events.length > 0 || writer.wouldWrite(cached, decision)) {
      pressing.push(name);
      continue;
    }
    calm.push(name);
    book.settle(name, decision);
    const deadline = decision.nextDeadlineMs;
    if (deadline !== undefined) settled.set(name, Math.max(0, deadline - now));
  }
  book.evaluateBreaker();
  if (book.tripped.size === 0) return { pressing, settled, sweep: [] };
  // The pass decided on an untripped breaker, and the breaker it judged is tripped: what the settled nodes
  // would be decided now may differ. They are swept (decided again through the queue), as before any was.
  for (const name of calm) book.unsettle(name, 'forget');
  return { pressing, settled: new Map(), sweep: calm };
}
