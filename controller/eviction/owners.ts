// Never fight another owner (issue 54 item 2): whether a node is someone else's to act on, so nodecare evicts
// nothing from it. Pure: a function of what the Node shows. The evictor reads it twice: from the controller's
// cache on every pass (taints, labels, maintenance: the cache keeps those whole), and from a fresh GET of the
// Node just before a pass evicts from it (annotations too: the cache keeps only nodecare's own annotations).
//
// The OWNERS table, one row per signal, first match wins:
//
// | hold reason           | read from the Node                                                 | whose             |
// | --------------------- | ------------------------------------------------------------------ | ----------------- |
// | DoNotDisrupt          | annotation karpenter.sh/do-not-disrupt: "true"                     | a person, Karpenter's opt-out |
// | KarpenterDisruption   | taint karpenter.sh/disrupted (NoSchedule)                          | Karpenter disrupting the node |
// | Medik8sRemediation    | taint medik8s.io/remediation (self-node-remediation) or medik8s.io/fence-agents-remediation (NoExecute) | medik8s remediators a NodeHealthCheck started |
// | OutOfService          | taint node.kubernetes.io/out-of-service                            | non-graceful shutdown (a person, SNR, FAR) |
// | Maintenance           | deletion, graceful shutdown, KEP-5683 conditions, cordon (controller/decide/maintenance.ts) | a drain, an upgrade, a person |
//
// Then, from the fresh read only, the owners' own objects (remediators.ts): a NodeHealthCheck remediating the node,
// a NodeClaim Karpenter is disrupting, or either read failing (fail safe).

import { maintenanceOf } from '../decide/index.ts';

/** The lifecycle facts maintenanceOf reads (deletion, cordon, conditions, taints). */
type LifecycleFacts = Parameters<typeof maintenanceOf>[0];

export const DO_NOT_DISRUPT_ANNOTATION = 'karpenter.sh/do-not-disrupt';
export const KARPENTER_DISRUPTED_TAINT = 'karpenter.sh/disrupted';
/** Self-node-remediation's NoExecute taint (value self-node-remediation) and fence-agents-remediation's. */
export const MEDIK8S_REMEDIATION_TAINTS = [
  'medik8s.io/remediation',
  'medik8s.io/fence-agents-remediation',
] as const;
export const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';

export const HoldReason = {
  DoNotDisrupt: 'DoNotDisrupt',
  KarpenterDisruption: 'KarpenterDisruption',
  Medik8sRemediation: 'Medik8sRemediation',
  OutOfService: 'OutOfService',
  Maintenance: 'Maintenance',
  /** The owners' own objects (remediators.ts), read after the Node shows none of the above. */
  NodeHealthCheck: 'NodeHealthCheck',
  NodeClaimDisruption: 'NodeClaimDisruption',
  RemediatorUnreadable: 'RemediatorUnreadable',
  /** The fresh read of the Node itself failed (429, 5xx, a timeout): whose it is cannot be told yet. */
  NodeUnreadable: 'NodeUnreadable',
} as const;
export type HoldReason = (typeof HoldReason)[keyof typeof HoldReason];

/** What a hold says, for logs and events: `annotated karpenter.sh/do-not-disrupt=true`. */
export const HOLD_DESCRIPTIONS = {
  DoNotDisrupt: `annotated ${DO_NOT_DISRUPT_ANNOTATION}=true`,
  KarpenterDisruption: `tainted ${KARPENTER_DISRUPTED_TAINT} (Karpenter is disrupting it)`,
  Medik8sRemediation: `tainted ${MEDIK8S_REMEDIATION_TAINTS.join(' or ')} (a medik8s remediator acts on it)`,
  OutOfService: `tainted ${OUT_OF_SERVICE_TAINT} (non-graceful shutdown)`,
  Maintenance: 'in maintenance (deleting, shutting down, draining, drained or cordoned)',
  NodeHealthCheck: 'listed with a remediation in a NodeHealthCheck status (medik8s remediates it)',
  NodeClaimDisruption:
    'owned by a NodeClaim Karpenter is disrupting (deleting, DisruptionReason, InstanceTerminating or Rebooting)',
  RemediatorUnreadable:
    'not known to be free of another remediator (its NodeHealthCheck or NodeClaim read failed)',
  NodeUnreadable: 'not read fresh (the API server did not answer its GET), so whose it is cannot be told yet',
} as const satisfies Record<HoldReason, string>;

/** The parts of a Node the owners table reads; each may be absent (the cache has no annotations but its own). */
export interface OwnerFacts extends Omit<LifecycleFacts, 'taints'> {
  annotations?: Readonly<Record<string, string>>;
  taints?: ReadonlyArray<{ key: string; value?: string; effect?: string; timeAdded?: string | Date }>;
}

/** Whose the node is when not nodecare's to evict from, or undefined when nodecare may evict from it. */
export function holdOf(node: OwnerFacts): HoldReason | undefined {
  if (node.annotations?.[DO_NOT_DISRUPT_ANNOTATION] === 'true') return HoldReason.DoNotDisrupt;
  const keys = new Set((node.taints ?? []).map((t) => t.key));
  if (keys.has(KARPENTER_DISRUPTED_TAINT)) return HoldReason.KarpenterDisruption;
  if (MEDIK8S_REMEDIATION_TAINTS.some((key) => keys.has(key))) return HoldReason.Medik8sRemediation;
  if (keys.has(OUT_OF_SERVICE_TAINT)) return HoldReason.OutOfService;
  if (maintenanceOf(node).maintenance) return HoldReason.Maintenance;
  return undefined;
}

/** A pod that carries karpenter.sh/do-not-disrupt: "true" is never evicted (Karpenter's own rule for pods). */
export function podDoNotDisrupt(annotations: Readonly<Record<string, string>> | undefined): boolean {
  return annotations?.[DO_NOT_DISRUPT_ANNOTATION] === 'true';
}
