// The correlated-failure breaker (docs/design.md section 5): when most nodes that require an extension fail it at
// once, the fault is the extension's rollout (or the agent's), not the nodes, so the controller stops
// putting runtime taints on for it. Bootstrap taints are unaffected.
//
// Whose registrations count: only what an admin declared, a critical registration that a SystemExtension's
// nodeSelector put on the node. A node annotation (whoever may patch one Node can write it) and a
// non-critical registration (it never taints, so there is nothing to hold back) never feed the counts:
// otherwise annotations naming an admin's extension on a few unselected nodes could trip it and lift the
// runtime taints of the nodes where it is truly broken, and stop eviction everywhere. Each node contributes
// at most one to `requiring` and one to `failing` per extension, whatever it writes (docs/controller.md).
//
// What counts: only post-bootstrap nodes (Ready or Degraded), because only they can get a runtime taint;
// a node pool that is still coming up neither trips nor dilutes the breaker. "Failing" is a confirmed
// fault, the same one that puts the runtime taint on (docs/adr/0004): Unhealthy, or Unknown because the
// lease or the agent's heartbeat expired, so a broken agent rollout still trips it. An Unknown the agent
// reports, or an invalid registration, sets no taint, so there is nothing for the breaker to hold back,
// and counting it would let a mass of could-not-determine nodes lift the taints of nodes confirmed broken.
// Progressing is not failing. The counts do not depend on the breaker's own output (a tripped extension
// is still judged, only not enforced), so tripping cannot feed back into the next count.
//
// Like the node lifecycle controller's zone state, the breaker is judged over every node at once: the
// reconciler applies each node's decision as it changes and evaluates afterwards, and at the start of a
// leadership term it resets, applies a decision for every node, and evaluates once before the first write
// (docs/controller.md). Pure state: no I/O, no clock (evaluate is given the time).
//
// A rollout (a SystemExtension's spec.rollout holding it back on existing nodes): such a pair is counted only
// once its window has ended — by the time passed to evaluate, not by the node's last decision — so the first
// minutes of a legitimate rollout never trip the breaker, while a bad one trips it the moment its window ends,
// before any node is decided as enforced (the reconciler evaluates before it decides): no storm of taints put
// on and lifted again.

import { isFault } from './condition.ts';
import { NodeState } from './node-state.ts';
import type { ExtensionVerdict, NodeDecision } from './types.ts';

export interface ExtensionFailureCount {
  /** Post-bootstrap nodes that require the extension. */
  requiring: number;
  /** Of those, the nodes where it is failing. */
  failing: number;
}

export interface BreakerThresholds {
  /** Trip when more than this fraction of the nodes requiring an extension fail it… */
  maxUnhealthyFraction: number;
  /** …and at least this many do. */
  minFailing: number;
}

export const BREAKER_DEFAULTS = {
  maxUnhealthyFraction: 0.5,
  minFailing: 3,
} as const satisfies BreakerThresholds;

/** Whether these counts trip the breaker. */
export function trips(count: ExtensionFailureCount, thresholds: BreakerThresholds): boolean {
  return (
    count.failing >= thresholds.minFailing &&
    count.failing / count.requiring > thresholds.maxUnhealthyFraction
  );
}

/** The part of a node's decision the breaker reads. */
export type BreakerInput = Pick<NodeDecision, 'state' | 'extensions'>;

export interface BreakerTransition {
  extension: string;
  tripped: boolean;
  /** The counts that made the change. */
  count: ExtensionFailureCount;
}

export interface BreakerEvaluation {
  tripped: ReadonlySet<string>;
  /** Extensions whose tripped state changed since the last evaluation, sorted by name. */
  transitions: BreakerTransition[];
}

const NONE: ExtensionFailureCount = { requiring: 0, failing: 0 };

/** Per node: each counted extension, whether it is failing there, and when its rollout window ends (if held). */
export type BreakerContribution = ReadonlyMap<string, { failing: boolean; graceEndsMs?: number }>;

const NO_CONTRIBUTION: BreakerContribution = new Map();

/**
 * An admin's declaration: a critical registration from a SystemExtension (not an annotation, not the config),
 * enforced on the node.
 */
function feedsBreaker(e: Pick<ExtensionVerdict, 'source' | 'critical'>): boolean {
  return e.source === 'systemExtension' && e.critical;
}

/** What a node's decision (undefined: the node is gone) adds to the breaker's counts. */
export function breakerContribution(decision: BreakerInput | undefined): BreakerContribution {
  if (!decision || (decision.state !== NodeState.Ready && decision.state !== NodeState.Degraded)) {
    return NO_CONTRIBUTION;
  }
  return new Map(
    decision.extensions.filter(feedsBreaker).map((e) => [
      e.name,
      {
        failing: isFault(e),
        ...(e.rollout
          ? { graceEndsMs: e.rollout.mode === 'Grace' ? e.rollout.endsMs : Number.POSITIVE_INFINITY }
          : {}),
      },
    ]),
  );
}

/** Adds (or takes away) one node, failing or not, to the counts under `key`; a count of no node is dropped. */
function bump<K>(counts: Map<K, ExtensionFailureCount>, key: K, sign: 1 | -1, failing: boolean): void {
  const { requiring, failing: failed } = counts.get(key) ?? NONE;
  const next = { requiring: requiring + sign, failing: failed + (failing ? sign : 0) };
  if (next.requiring === 0) counts.delete(key);
  else counts.set(key, next);
}

/**
 * Per-extension failure counts over the latest decision of every node, and the breaker judged on them. The
 * caller keeps what each node contributes (the controller's node book) and swaps it as the node is decided.
 */
export class BreakerCounts {
  private readonly thresholds: BreakerThresholds;
  private readonly counts = new Map<string, ExtensionFailureCount>();
  /** Pairs a rollout holds back, per extension and window end: counted from then on. */
  private readonly graced = new Map<string, Map<number, ExtensionFailureCount>>();
  /** Extensions whose counts changed since the last evaluation. */
  private readonly touched = new Set<string>();
  private trippedSet = new Set<string>();
  private lastEvaluatedMs = Number.NEGATIVE_INFINITY;

  constructor(thresholds: BreakerThresholds) {
    this.thresholds = thresholds;
  }

  get tripped(): ReadonlySet<string> {
    return this.trippedSet;
  }

  /** The counts at `nowMs`: a held-back pair counts once its rollout window has ended. */
  count(extension: string, nowMs = Number.NEGATIVE_INFINITY): ExtensionFailureCount {
    const count = { ...(this.counts.get(extension) ?? NONE) };
    for (const [endsMs, held] of this.graced.get(extension) ?? []) {
      if (endsMs > nowMs) continue;
      count.requiring += held.requiring;
      count.failing += held.failing;
    }
    return count;
  }

  /** Replaces what one node contributed (`before`) with what it contributes now (`after`). */
  swap(before: BreakerContribution, after: BreakerContribution): void {
    for (const [extension, pair] of before) this.add(extension, -1, pair);
    for (const [extension, pair] of after) this.add(extension, 1, pair);
  }

  private add(extension: string, sign: 1 | -1, pair: { failing: boolean; graceEndsMs?: number }): void {
    if (pair.graceEndsMs === undefined) bump(this.counts, extension, sign, pair.failing);
    else {
      const windows = this.graced.get(extension) ?? new Map<number, ExtensionFailureCount>();
      bump(windows, pair.graceEndsMs, sign, pair.failing);
      if (windows.size > 0) this.graced.set(extension, windows);
      else this.graced.delete(extension);
    }
    this.touched.add(extension);
  }

  /**
   * Judges every extension whose counts changed since the last evaluation, or whose held-back pairs' rollout
   * window ended since then (`nowMs`; without it, held-back pairs are never counted).
   */
  evaluate(nowMs = Number.NEGATIVE_INFINITY): BreakerEvaluation {
    for (const [extension, windows] of this.graced)
      for (const endsMs of windows.keys())
        if (endsMs > this.lastEvaluatedMs && endsMs <= nowMs) this.touched.add(extension);
    this.lastEvaluatedMs = Math.max(this.lastEvaluatedMs, nowMs);
    // Nothing to judge: the common case, at every node deadline that only moves (docs/adr/0016).
    if (this.touched.size === 0) return { tripped: this.trippedSet, transitions: [] };
    const transitions: BreakerTransition[] = [];
    const next = new Set(this.trippedSet);
    for (const extension of [...this.touched].sort()) {
      const count = this.count(extension, nowMs);
      const tripped = trips(count, this.thresholds);
      if (tripped === this.trippedSet.has(extension)) continue;
      if (tripped) next.add(extension);
      else next.delete(extension);
      transitions.push({ extension, tripped, count });
    }
    this.touched.clear();
    if (transitions.length > 0) this.trippedSet = next;
    return { tripped: this.trippedSet, transitions };
  }

  /** Forgets every node, count and tripped extension (a new leadership term starts from nothing). */
  reset(): void {
    this.counts.clear();
    this.graced.clear();
    this.touched.clear();
    this.lastEvaluatedMs = Number.NEGATIVE_INFINITY;
    this.trippedSet = new Set();
  }
}

/** The breaker counts that keep each node's contribution themselves (`kubectl nodecare` decides one pass). */
export class BreakerState extends BreakerCounts {
  private readonly byNode = new Map<string, BreakerContribution>();

  /** Replaces what `node` contributes with its latest decision; undefined when the node is gone. */
  apply(node: string, decision: BreakerInput | undefined): void {
    const after = breakerContribution(decision);
    this.swap(this.byNode.get(node) ?? NO_CONTRIBUTION, after);
    if (after.size > 0) this.byNode.set(node, after);
    else this.byNode.delete(node);
  }

  override reset(): void {
    this.byNode.clear();
    super.reset();
  }
}

/**
 * The breaker judged once over every node's decision (`kubectl nodecare`'s one pass, which has no history of
 * decisions): the extensions it holds back at `nowMs`.
 */
export function trippedOver(
  decisions: Iterable<readonly [node: string, decision: BreakerInput]>,
  thresholds: BreakerThresholds,
  nowMs: number,
): ReadonlySet<string> {
  const breaker = new BreakerState(thresholds);
  for (const [node, decision] of decisions) breaker.apply(node, decision);
  return new Set(breaker.evaluate(nowMs).tripped);
}
