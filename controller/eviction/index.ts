// controller/eviction/: safe eviction (docs/design.md section 5). It owns the pure plan of which nodes may be
// evicted now (zones, rate, breaker, plan.ts), one eviction pass over a node through the Eviction API
// (evict.ts), and the runner that does passes per leadership term, its state reset each term (runner.ts).

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
export { Evictor, type EvictionSettings, type EvictorDeps } from './runner.ts';
