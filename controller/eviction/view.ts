// The evictor's view of a cached Node (runner.ts EvictorDeps.node): its zone, its budget group, and the hold the
// cache can show.

import { HoldReason, holdOf, type OwnerFacts } from './owners.ts';
import { ZONE_LABEL, groupOf } from './plan.ts';

/** A node as the evictor sees it (the node to record events on, too). */
export interface EvictionNodeView {
  name: string;
  uid: string;
  zone: string;
  group?: string;
  hold?: HoldReason;
}

/** What the cache keeps of a Node that node() reads (controller/ingest.ts CachedNode has these). */
export interface EvictionNodeSource {
  name: string;
  uid: string;
  labels: Readonly<Record<string, string>>;
  taints: OwnerFacts['taints'];
  /** Set while the node is in maintenance (controller/decide/maintenance.ts). */
  maintenance?: unknown;
}

/**
 * The evictor's view of a cached Node (EvictorDeps.node): its zone, its budget group by `groupLabel`, and the hold
 * the cache can show (another owner's taints, maintenance; not annotations, which the cache does not keep).
 */
export function evictionNodeView(node: EvictionNodeSource, groupLabel: string): EvictionNodeView {
  const hold = holdOf({ taints: node.taints }) ?? (node.maintenance ? HoldReason.Maintenance : undefined);
  return {
    name: node.name,
    uid: node.uid,
    zone: node.labels[ZONE_LABEL] ?? '',
    group: groupOf(node.labels, groupLabel),
    ...(hold ? { hold } : {}),
  };
}
