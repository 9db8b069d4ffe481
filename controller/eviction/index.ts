// Safe eviction (docs/design.md section 5): the pure plan of which nodes to evict, and one eviction pass over a node.

export {
  BlockReason,
  EVICTION_DEFAULTS,
  ZONE_LABEL,
  planEvictions,
  validateEvictionPolicy,
  type BlockedZone,
  type EvictionLimiter,
  type EvictionNode,
  type EvictionPlan,
  type EvictionPlanInput,
  type EvictionPolicy,
} from './plan.ts';
export {
  EvictionOutcome,
  SkipReason,
  evictNodePods,
  evictionComplete,
  runtimeTaint,
  skipReason,
  toleratesTaint,
  type EvictNodePodsOptions,
  type PodEvictionResult,
} from './evict.ts';
