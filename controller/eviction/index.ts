// controller/eviction/: safe eviction (docs/design.md section 5). It owns the pure plan of which nodes may be
// evicted now (zones, rate, breaker, group budgets, the parallel cap, storm cooldowns, plan.ts), whose a node is
// when another owner acts on it (owners.ts; its NodeHealthChecks and NodeClaims, remediators.ts), one eviction pass over a node through the Eviction API (evict.ts),
// and the runner that does passes per leadership term, its state reset each term (runner.ts).

export {
  BlockReason,
  BudgetReason,
  EVICTION_DEFAULTS,
  NO_STORM,
  ZONE_LABEL,
  groupOf,
  planEvictions,
  validateEvictionPolicy,
  type BlockedZone,
  type StormMemory,
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
  readNodeHold,
  runtimeTaint,
  skipReason,
  toleratesTaint,
  type EvictNodePodsOptions,
  type PodEvictionResult,
} from './evict.ts';
export {
  DO_NOT_DISRUPT_ANNOTATION,
  HOLD_DESCRIPTIONS,
  HoldReason,
  holdOf,
  podDoNotDisrupt,
  type OwnerFacts,
} from './owners.ts';
export {
  NODE_CLAIMS_PATH,
  NODE_CLAIM_DISRUPTING_CONDITIONS,
  NODE_HEALTH_CHECKS_PATH,
  REMEDIATOR_RBAC,
  RemediatorReads,
  nodeClaimDisrupting,
  nodeClaimOf,
  remediatingCheck,
  type NodeClaimObject,
  type NodeHealthCheckObject,
} from './remediators.ts';
export {
  PUBLISHED_LIST_MAX,
  publishEviction,
  readPublishedEviction,
  type PublishedEviction,
} from './published.ts';
export {
  Evictor,
  HOLD_RECHECK_MS,
  evictionNodeView,
  type EvictionNodeSource,
  type EvictionSettings,
  type EvictorDeps,
} from './runner.ts';
