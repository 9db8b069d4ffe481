// Never fight another owner, from the owners' own objects (issue 54 item 2): besides what the Node shows (owners.ts),
// the evictor reads, just before a pass evicts from a node and only then (eviction on; no watch, no cost when off):
//
// | hold reason          | read                                                          | held when                                             |
// | -------------------- | ------------------------------------------------------------- | ----------------------------------------------------- |
// | NodeHealthCheck      | LIST nodehealthchecks.remediation.medik8s.io (cluster-scoped) | one lists the node in status.unhealthyNodes with a remediation (or, before v0.7, in status.inFlightRemediations) |
// | NodeClaimDisruption  | GET nodeclaims.karpenter.sh/<name> the Node's owner reference names | the NodeClaim is being deleted, is not there (404), or its condition DisruptionReason, InstanceTerminating or Rebooting is True |
// | RemediatorUnreadable | either read refused (403) or failed, or the owner a NodeClaim of another version than v1 | fail safe: nodecare cannot tell, so it does not evict  |
//
// NodeHealthCheck creates its remediation objects (SelfNodeRemediation, FenceAgentsRemediation, ...: any kind, from
// the template, named after the node) and lists each in status.unhealthyNodes[].remediations: that list is the one
// place that names them all, so nodecare reads it rather than every remediator's kind. Karpenter v1 sets a Node's
// owner reference to its NodeClaim at registration, and DisruptionReason True once a disruption (repair, drift,
// consolidation, emptiness) is committed to it; Drifted or Consolidatable alone are candidates, not a disruption.
//
// A CRD that is not installed (404 on the list) skips its check, with one log line at debug in the process's
// life. A read refused is logged once (error, with the rule it needs) until it succeeds again; each node it holds
// is counted by the evictor's skip metric under RemediatorUnreadable.

import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import type { Logger } from '../../lib/log.ts';
import { HoldReason } from './owners.ts';

export const NODE_HEALTH_CHECKS_PATH = '/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks';
export const NODE_CLAIMS_PATH = '/apis/karpenter.sh/v1/nodeclaims';

/** What the controller's RBAC needs for each read (manifests/components/controller-eviction/rbac.yaml). */
export const REMEDIATOR_RBAC = {
  NodeHealthCheck: 'list nodehealthchecks.remediation.medik8s.io',
  NodeClaim: 'get nodeclaims.karpenter.sh',
} as const;
type Source = keyof typeof REMEDIATOR_RBAC;

/** The parts of a NodeHealthCheck read (medik8s node-healthcheck-operator api/v1alpha1). */
export interface NodeHealthCheckObject {
  metadata?: { name?: string };
  status?: {
    unhealthyNodes?: Array<{ name?: string; remediations?: unknown[] | null } | null>;
    inFlightRemediations?: Record<string, unknown>;
  };
}

/** The parts of a Karpenter v1 NodeClaim read. */
export interface NodeClaimObject {
  metadata?: { name?: string; deletionTimestamp?: string };
  status?: { nodeName?: string; conditions?: Array<{ type?: string; status?: string }> };
}

/** An owner reference as the Node carries it. */
export interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
}

/** The NodeHealthCheck that is remediating the node, or undefined. Pure. */
export function remediatingCheck(
  checks: readonly NodeHealthCheckObject[],
  nodeName: string,
): string | undefined {
  for (const check of checks) {
    const listed = (check.status?.unhealthyNodes ?? []).some(
      (u) => u?.name === nodeName && (u.remediations?.length ?? 0) > 0,
    );
    const inFlight = check.status?.inFlightRemediations?.[nodeName] !== undefined;
    if (listed || inFlight) return check.metadata?.name ?? '';
  }
  return undefined;
}

/** The NodeClaim conditions that say Karpenter has committed to disrupting its node. */
export const NODE_CLAIM_DISRUPTING_CONDITIONS = [
  'DisruptionReason',
  'InstanceTerminating',
  'Rebooting',
] as const;

/** Whether Karpenter is disrupting the NodeClaim's node. Pure. */
export function nodeClaimDisrupting(claim: NodeClaimObject): boolean {
  if (claim.metadata?.deletionTimestamp) return true;
  return (claim.status?.conditions ?? []).some(
    (c) =>
      c.status === 'True' && (NODE_CLAIM_DISRUPTING_CONDITIONS as readonly string[]).includes(c.type ?? ''),
  );
}

/** The NodeClaim a Node's owner references name (any karpenter.sh version, kind NodeClaim), or undefined. */
export function nodeClaimOf(
  owners: readonly OwnerReference[] | undefined,
): { name: string; apiVersion: string } | undefined {
  const owner = owners?.find((o) => o.kind === 'NodeClaim' && o.apiVersion?.startsWith('karpenter.sh/'));
  return owner?.name && owner.apiVersion ? { name: owner.name, apiVersion: owner.apiVersion } : undefined;
}

/** The NodeClaim version whose conditions nodeClaimDisrupting judges (Karpenter v1). */
const NODE_CLAIM_API_VERSION = 'karpenter.sh/v1';

export interface RemediatorReadsDeps {
  client: Pick<KubeClient, 'request'>;
  log: Logger;
  timeoutMs: number;
}

/** The reads of the table above, with the memory of what was logged (one per controller process). */
export class RemediatorReads {
  private readonly deps: RemediatorReadsDeps;
  private readonly absent = new Set<Source>();
  private readonly refused = new Set<Source>();

  constructor(deps: RemediatorReadsDeps) {
    this.deps = deps;
  }

  /** Whose the node is among NodeHealthCheck and Karpenter, or undefined. Never rejects (a failure holds). */
  async holdOf(
    nodeName: string,
    owners: readonly OwnerReference[] | undefined,
    signal?: AbortSignal,
  ): Promise<HoldReason | undefined> {
    const check = await this.read('NodeHealthCheck', NODE_HEALTH_CHECKS_PATH, signal, (list) =>
      remediatingCheck((list as { items?: NodeHealthCheckObject[] }).items ?? [], nodeName),
    );
    if (check === FAILED) return HoldReason.RemediatorUnreadable;
    if (check !== undefined) return HoldReason.NodeHealthCheck;
    const owner = nodeClaimOf(owners);
    if (owner === undefined) return undefined;
    // An older Karpenter's NodeClaim (v1beta1) has other conditions: nodecare cannot tell, so it holds.
    if (owner.apiVersion !== NODE_CLAIM_API_VERSION) return HoldReason.RemediatorUnreadable;
    const path = `${NODE_CLAIMS_PATH}/${encodeURIComponent(owner.name)}`;
    const claim = await this.read('NodeClaim', path, signal, (c) =>
      nodeClaimDisrupting(c as NodeClaimObject),
    );
    if (claim === FAILED) return HoldReason.RemediatorUnreadable;
    // The Node names a NodeClaim that is not there (404): it is gone, and the garbage collector deletes the
    // Node after it; or its CRD is not served, and nodecare cannot tell. Either way the node is not nodecare's.
    return claim === true || claim === undefined ? HoldReason.NodeClaimDisruption : undefined;
  }

  /** Reads a path: its judgement, undefined when not there (CRD or object absent), FAILED otherwise. */
  private async read<T>(
    source: Source,
    path: string,
    signal: AbortSignal | undefined,
    judge: (body: unknown) => T,
  ): Promise<T | undefined | typeof FAILED> {
    const { client, log, timeoutMs } = this.deps;
    try {
      const body = await client.request<unknown>('GET', path, { timeoutMs, signal });
      this.absent.delete(source);
      if (this.refused.delete(source)) log.info({ source }, 'Remediator read allowed again');
      return judge(body);
    } catch (err) {
      if (signal?.aborted) throw err;
      if (isKubeError(err, KubeErrorCode.NotFound)) {
        if (!this.absent.has(source)) {
          this.absent.add(source);
          log.debug({ source, path }, 'Remediator check skipped: its CRD or object is not there (404)');
        }
        return undefined;
      }
      if (isKubeError(err, KubeErrorCode.Forbidden)) {
        if (!this.refused.has(source)) {
          this.refused.add(source);
          log.error(
            { err, source, needs: REMEDIATOR_RBAC[source] },
            'Remediator read refused: eviction holds every node it would start on until it is allowed',
          );
        }
      } else log.warn({ err, source }, 'Remediator read failed: the node is held this pass');
      return FAILED;
    }
  }
}

const FAILED = Symbol('failed');
