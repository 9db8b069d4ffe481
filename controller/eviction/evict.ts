// One eviction pass over a node's pods through the Eviction API (policy/v1), so PodDisruptionBudgets are
// respected (docs/design.md section 5). Never evicted: DaemonSet pods (they belong on every node and would come
// straight back), mirror pods (the kubelet owns them), pods already terminating or finished, and pods that
// tolerate the runtime taint (they chose to run on a Degraded node), and pods annotated
// karpenter.sh/do-not-disrupt: "true" (their owner opted out of voluntary disruption; owners.ts). Bare pods are
// evicted like the node lifecycle controller does; PDBs are the way to protect them.
//
// Before a pass evicts, it reads the Node itself (readNodeHold): the cache keeps none of another owner's
// annotations, and a node cordoned or claimed by another remediator since the plan must not be touched.
//
// Each eviction carries a UID precondition, so a pod re-created under the same name (a StatefulSet) is
// never evicted by mistake. Pods are evicted one at a time: a pass is rate-limited per zone already, and
// sequential calls keep the API load of a pass at one request in flight.

import { DEFAULT_RUNTIME_TAINT_KEY, RUNTIME_TAINT_VALUE } from '../../api/names.ts';
import { toleratesTaint, type Taint, type Toleration } from '../../api/scheduling.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { listAll } from '../../lib/kube/list.ts';
import type { Logger } from '../../lib/log.ts';
import { NotLeaderError } from '../writes/index.ts';
import { holdOf, podDoNotDisrupt, type HoldReason, type OwnerFacts } from './owners.ts';
import type { OwnerReference, RemediatorReads } from './remediators.ts';

export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

export { toleratesTaint, type Taint, type Toleration } from '../../api/scheduling.ts';

/**
 * The runtime taint as the controller puts it on a Degraded node. A pod tolerates it as the scheduler would
 * judge it: `operator: Exists` on the key, or `Equal` to nodecare's value.
 */
export function runtimeTaint(key: string = DEFAULT_RUNTIME_TAINT_KEY): Taint {
  return { key, value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' };
}

/** The fields of a Pod an eviction pass reads. */
export interface PodObject {
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind?: string; name?: string; controller?: boolean }>;
    deletionTimestamp?: string;
  };
  spec?: { tolerations?: Toleration[] };
  status?: { phase?: string };
}

export const SkipReason = {
  DaemonSetPod: 'DaemonSetPod',
  MirrorPod: 'MirrorPod',
  Terminating: 'Terminating',
  Finished: 'Finished',
  ToleratesRuntimeTaint: 'ToleratesRuntimeTaint',
  /** Annotated karpenter.sh/do-not-disrupt: "true". */
  DoNotDisrupt: 'DoNotDisrupt',
} as const;
export type SkipReason = (typeof SkipReason)[keyof typeof SkipReason];

/** Why a pod must not be evicted, or undefined when it may be. */
export function skipReason(pod: PodObject, taint: Taint): SkipReason | undefined {
  if (pod.metadata.ownerReferences?.some((ref) => ref.kind === 'DaemonSet')) return SkipReason.DaemonSetPod;
  if (pod.metadata.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return SkipReason.MirrorPod;
  if (pod.metadata.deletionTimestamp) return SkipReason.Terminating;
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return SkipReason.Finished;
  if (podDoNotDisrupt(pod.metadata.annotations)) return SkipReason.DoNotDisrupt;
  if (pod.spec?.tolerations?.some((t) => toleratesTaint(t, taint))) return SkipReason.ToleratesRuntimeTaint;
  return undefined;
}

export const EvictionOutcome = {
  evicted: 'evicted',
  blockedByPDB: 'blockedByPDB',
  gone: 'gone',
  skipped: 'skipped',
  wouldEvict: 'wouldEvict',
  error: 'error',
} as const;
export type EvictionOutcome = (typeof EvictionOutcome)[keyof typeof EvictionOutcome];

export interface PodEvictionResult {
  /** namespace/name */
  pod: string;
  outcome: EvictionOutcome;
  /** A SkipReason, the API's message for blockedByPDB and error, or a short word otherwise. */
  reason: string;
}

export interface EvictNodePodsOptions {
  /**
   * The controller's KubePort in production: it fences each eviction, and its NotLeaderError (this replica
   * stopped leading, the eviction not sent) ends the pass.
   */
  client: Pick<KubeClient, 'request'>;
  nodeName: string;
  runtimeTaintKey: string;
  /** Log and return what would be evicted; call no eviction. */
  dryRun: boolean;
  log: Logger;
  /** Deadline of each API request. */
  timeoutMs: number;
  signal?: AbortSignal;
}

/**
 * True when the pass found nothing left to do: no pod evicted by it, none blocked by a PDB, none failed, none
 * still Terminating. Until then the node is being evicted (it counts against the budgets, plan.ts): a pass that
 * evicted is followed by one that sees those pods gone. A dry run's wouldEvict completes (nothing will change).
 */
export function evictionComplete(results: readonly PodEvictionResult[]): boolean {
  return results.every(
    (r) =>
      r.outcome !== EvictionOutcome.evicted &&
      r.outcome !== EvictionOutcome.blockedByPDB &&
      r.outcome !== EvictionOutcome.error &&
      !(r.outcome === EvictionOutcome.skipped && r.reason === SkipReason.Terminating),
  );
}

/** The fields of a Node the owners table reads (owners.ts). */
interface NodeOwnerObject {
  metadata?: {
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    ownerReferences?: OwnerReference[];
  };
  spec?: { taints?: OwnerFacts['taints']; unschedulable?: boolean };
  status?: { conditions?: OwnerFacts['conditions'] };
}

/**
 * Reads the Node and says whose it is when not nodecare's to evict from (owners.ts), or undefined; then, when the
 * Node shows no owner and `remediators` is given, the NodeHealthChecks and its NodeClaim (remediators.ts). A node
 * that is gone is nobody's to evict from either: that is the pod list's to find (empty). Rejects with a KubeError
 * when the Node cannot be read.
 */
export async function readNodeHold(options: {
  client: Pick<KubeClient, 'request'>;
  nodeName: string;
  timeoutMs: number;
  signal?: AbortSignal;
  remediators?: RemediatorReads;
}): Promise<HoldReason | undefined> {
  let node: NodeOwnerObject;
  try {
    node = await options.client.request<NodeOwnerObject>(
      'GET',
      `/api/v1/nodes/${encodeURIComponent(options.nodeName)}`,
      { timeoutMs: options.timeoutMs, signal: options.signal },
    );
  } catch (err) {
    if (isKubeError(err, KubeErrorCode.NotFound)) return undefined;
    throw err;
  }
  const hold = holdOf({
    annotations: node.metadata?.annotations,
    deletionTimestamp: node.metadata?.deletionTimestamp,
    taints: node.spec?.taints,
    unschedulable: node.spec?.unschedulable,
    conditions: node.status?.conditions,
  });
  if (hold !== undefined || !options.remediators) return hold;
  return options.remediators.holdOf(options.nodeName, node.metadata?.ownerReferences, options.signal);
}

function listNodePods(options: EvictNodePodsOptions): Promise<PodObject[]> {
  return listAll<PodObject>(options.client, '/api/v1/pods', {
    query: { fieldSelector: `spec.nodeName=${options.nodeName}` },
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
}

/**
 * Evicts the evictable pods of `nodeName`. Rejects (with a KubeError) only when the pods cannot be listed;
 * each pod's own outcome is in the result, sorted by pod.
 */
export async function evictNodePods(options: EvictNodePodsOptions): Promise<PodEvictionResult[]> {
  const { client, nodeName, dryRun, timeoutMs, signal } = options;
  const log = options.log.child({ node: nodeName });
  const taint = runtimeTaint(options.runtimeTaintKey);
  const pods = (await listNodePods(options)).sort((a, b) => podKey(a).localeCompare(podKey(b)));
  const results: PodEvictionResult[] = [];
  for (const pod of pods) {
    const key = podKey(pod);
    const skip = skipReason(pod, taint);
    if (skip) {
      // Another owner's word: say so (the other skips are nodecare's own rules, counted by outcome).
      if (skip === SkipReason.DoNotDisrupt)
        log.info({ pod: key, reason: skip }, 'Skipped pod annotated karpenter.sh/do-not-disrupt');
      results.push({ pod: key, outcome: EvictionOutcome.skipped, reason: skip });
      continue;
    }
    if (dryRun) {
      log.info({ pod: key }, 'Would evict pod (dry run)');
      results.push({ pod: key, outcome: EvictionOutcome.wouldEvict, reason: 'DryRun' });
      continue;
    }
    const { namespace = '', name = '', uid } = pod.metadata;
    try {
      await client.request(
        'POST',
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}/eviction`,
        {
          body: {
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name, namespace },
            deleteOptions: uid ? { preconditions: { uid } } : {},
          },
          timeoutMs,
          signal,
        },
      );
      log.info({ pod: key }, 'Evicted pod');
      results.push({ pod: key, outcome: EvictionOutcome.evicted, reason: 'Evicted' });
    } catch (err) {
      if (err instanceof NotLeaderError) throw err;
      results.push(classifyFailure(key, err, log));
    }
  }
  return results;
}

function classifyFailure(pod: string, err: unknown, log: Logger): PodEvictionResult {
  // 404: deleted meanwhile. 409: the UID precondition failed, so the pod we listed is gone (a new one of the
  // same name is another pod, picked up by the next pass).
  if (isKubeError(err, KubeErrorCode.NotFound) || isKubeError(err, KubeErrorCode.Conflict)) {
    return { pod, outcome: EvictionOutcome.gone, reason: 'Gone' };
  }
  // The Eviction API answers 429 when a PodDisruptionBudget forbids it now (its message names the budget);
  // API priority and fairness also answers 429 (throttled), which is an error worth retrying, not a block.
  if (isKubeError(err, KubeErrorCode.TooManyRequests) && /disruption budget/i.test(err.message)) {
    log.info({ pod, reason: err.message }, 'Eviction blocked by a PodDisruptionBudget');
    return { pod, outcome: EvictionOutcome.blockedByPDB, reason: err.message };
  }
  log.warn({ err, pod }, 'Failed to evict pod');
  return { pod, outcome: EvictionOutcome.error, reason: err instanceof Error ? err.message : String(err) };
}

function podKey(pod: PodObject): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
}
