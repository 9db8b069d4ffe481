// What the Evictor (runner.ts) is given: its ports to the API (evict, the fresh read), its clock, log, metrics
// and events, the controller's settings and the views of nodes it plans over; and what it keeps of each
// Degraded node between passes (a spell).

import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/log.ts';
import type { NodeState } from '../decide/index.ts';
import type { ControllerMetrics } from '../metrics.ts';
import type { EventRecorder } from '../writes/index.ts';
import type { PodEvictionResult } from './evict.ts';
import type { HoldReason } from './owners.ts';
import type { EvictionSettings } from './policy.ts';
import type { EvictionNodeView } from './view.ts';

export interface EvictorDeps {
  /**
   * Evicts the evictable pods of a node (evictNodePods through the API, with the leadership fence before
   * every eviction, in production; a fake in unit tests). Rejects when the pass must end.
   */
  evict(nodeName: string, dryRun: boolean): Promise<PodEvictionResult[]>;
  /**
   * Reads the Node as the API server has it now and says whose it is when not nodecare's (readNodeHold in
   * production). Called before each pass on a node; undefined: no such read (the cache's view only).
   */
  hold?(nodeName: string): Promise<HoldReason | undefined>;
  clock: Clock;
  log: Logger;
  metrics: ControllerMetrics;
  events: EventRecorder;
  /** The controller's eviction settings (ControllerConfig's own shape) and its --dry-run. */
  config: { dryRun: boolean; eviction: EvictionSettings };
  /**
   * The node's zone ('' when unknown), its budget group (plan.ts groupOf; its zone's when undefined), whose it is
   * as the cache shows it (taints, maintenance), and the node to record events on (undefined when it is gone).
   */
  node(name: string): EvictionNodeView | undefined;
  /** Each node's latest decided state. */
  states(): ReadonlyMap<string, NodeState>;
  /** Whether a suspension holds the node (nothing is evicted from it). */
  suspended?(name: string): boolean;
  breakerTripped(): boolean;
  /** The guards' state (eviction()) changed: the roll-up writer publishes it in ClusterHealth status.eviction. */
  published?(): void;
}

export interface Spell {
  degradedSinceMs: number;
  lastEvictionMs?: number;
  evictionComplete?: boolean;
  /** The last fresh read found the node held: it is not picked again until untilMs. */
  freshHold?: { reason: HoldReason; untilMs: number };
  /** The hold last reported (log, metric, event): reported again only when it changes. */
  reportedHold?: HoldReason;
  /** Pods skipped for karpenter.sh/do-not-disrupt and reported in this spell (once each). */
  reportedPods?: Set<string>;
}
