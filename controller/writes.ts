// Everything the controller writes to a Node, as differences only. Taints, the status label and the
// bootstrap annotation go in one merge patch guarded by resourceVersion; on 409 the live node is read and the
// change re-applied to it, so a taint or label another writer added in between is preserved and nodecare
// never touches taints it does not own. The ExtensionsReady condition goes through the status subresource
// with a strategic merge on the condition type (other conditions are untouched), and only when its status,
// reason or message change.

import { NODE_CONDITION_TYPE, NODE_STATUS_LABEL, NodeAnnotation, microTime } from '../api/index.ts';
import { PatchType, type KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { toCachedNode, type CachedNode } from './cache.ts';
import { sameCondition } from './decide/condition.ts';
import type { DesiredCondition, NodeDecision, NodeEvent, NodeTaint } from './decide/index.ts';

const MAX_CONFLICT_RETRIES = 5;

export interface TaintKeys {
  bootstrap: string;
  runtime: string;
}

export interface NodeChange {
  taints?: NodeTaint[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Human summary of the taint change, for logs and dry-run. */
  taintSummary: string[];
}

/** The taint list with nodecare's taints set as decided and every other taint kept as it is. */
export function desiredTaintList(
  current: readonly NodeTaint[],
  decision: NodeDecision,
  keys: TaintKeys,
): NodeTaint[] {
  const ours = new Set([keys.bootstrap, keys.runtime]);
  const kept = current.filter((t) => !ours.has(t.key) || t.effect !== 'NoSchedule');
  if (decision.desiredTaints.bootstrap) kept.push({ key: keys.bootstrap, effect: 'NoSchedule' });
  if (decision.desiredTaints.runtime) kept.push({ key: keys.runtime, effect: 'NoSchedule' });
  return kept;
}

function hasTaint(taints: readonly NodeTaint[], key: string): boolean {
  return taints.some((t) => t.key === key && t.effect === 'NoSchedule');
}

/** What must change on the node's metadata and spec for it to match the decision (empty when nothing). */
export function nodeChange(
  node: CachedNode,
  decision: NodeDecision,
  keys: TaintKeys,
  writeTaints: boolean,
): NodeChange | undefined {
  const change: NodeChange = { taintSummary: [] };
  for (const [key, want] of [
    [keys.bootstrap, decision.desiredTaints.bootstrap],
    [keys.runtime, decision.desiredTaints.runtime],
  ] as const) {
    const has = hasTaint(node.taints, key);
    if (has !== want) change.taintSummary.push(`${want ? 'add' : 'remove'} ${key}:NoSchedule`);
  }
  if (writeTaints && change.taintSummary.length > 0)
    change.taints = desiredTaintList(node.taints, decision, keys);
  if (node.labels[NODE_STATUS_LABEL] !== decision.label)
    change.labels = { [NODE_STATUS_LABEL]: decision.label };
  const bootId = decision.desiredAnnotations.bootstrappedBootId;
  if (bootId !== undefined && node.annotations[NodeAnnotation.bootstrappedBootId] !== bootId) {
    change.annotations = { [NodeAnnotation.bootstrappedBootId]: bootId };
  }
  return change.taints || change.labels || change.annotations ? change : undefined;
}

export interface NodeWriterDeps {
  client: KubeClient;
  timeoutMs: number;
}

/**
 * Applies a NodeChange with a resourceVersion precondition. On conflict, reads the live node and re-applies
 * the same decision to it (`rebase`), up to a few times. Returns the node as written.
 */
export async function applyNodeChange(
  deps: NodeWriterDeps,
  node: CachedNode,
  change: NodeChange,
  rebase: (live: CachedNode) => NodeChange | undefined,
): Promise<CachedNode | undefined> {
  let current = node;
  let pending: NodeChange | undefined = change;
  for (let attempt = 0; pending; attempt++) {
    const body = {
      metadata: {
        resourceVersion: current.resourceVersion,
        ...(pending.labels ? { labels: pending.labels } : {}),
        ...(pending.annotations ? { annotations: pending.annotations } : {}),
      },
      ...(pending.taints ? { spec: { taints: pending.taints } } : {}),
    };
    try {
      const written = await deps.client.request<Parameters<typeof toCachedNode>[0]>(
        'PATCH',
        `/api/v1/nodes/${current.name}`,
        {
          body,
          contentType: PatchType.merge,
          timeoutMs: deps.timeoutMs,
        },
      );
      return toCachedNode(written);
    } catch (err) {
      if (!isKubeError(err, KubeErrorCode.Conflict) || attempt >= MAX_CONFLICT_RETRIES) throw err;
      current = toCachedNode(
        await deps.client.get(`/api/v1/nodes/${current.name}`, { timeoutMs: deps.timeoutMs }),
      );
      pending = rebase(current);
    }
  }
  return current;
}

/**
 * Writes ExtensionsReady when status, reason or message differ; lastTransitionTime moves only with status.
 * Returns the node as written (its new resourceVersion), or undefined when nothing needed writing.
 */
export async function writeCondition(
  deps: NodeWriterDeps,
  node: CachedNode,
  desired: DesiredCondition,
  nowMs: number,
): Promise<CachedNode | undefined> {
  const observed = node.extensionsReadyCondition;
  if (sameCondition(observed, desired)) return undefined;
  const now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const transition =
    observed?.status === desired.status && node.conditionTransitionTime ? node.conditionTransitionTime : now;
  const written = await deps.client.request<Parameters<typeof toCachedNode>[0]>(
    'PATCH',
    `/api/v1/nodes/${node.name}/status`,
    {
      body: {
        status: {
          conditions: [
            {
              type: NODE_CONDITION_TYPE,
              status: desired.status,
              reason: desired.reason,
              message: desired.message,
              lastTransitionTime: transition,
              lastHeartbeatTime: now,
            },
          ],
        },
      },
      contentType: PatchType.strategic,
      timeoutMs: deps.timeoutMs,
    },
  );
  return toCachedNode(written);
}

export interface EventRecorder {
  nodeEvent(node: { name: string; uid: string }, event: NodeEvent): Promise<void>;
}

/** Records events.k8s.io/v1 Events about Nodes (in `default`, where the kubelet records node events too). */
export function eventRecorder(
  client: KubeClient,
  reportingInstance: string,
  clock: { now(): number },
  timeoutMs: number,
): EventRecorder {
  let sequence = 0;
  return {
    async nodeEvent(node, event) {
      await client.request('POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          // Named as client-go names events: <object>.<hex time>, unique enough and sorted by time.
          metadata: {
            name: `${node.name.slice(0, 200)}.${(clock.now() * 1000 + (sequence++ % 1000)).toString(16)}`,
            namespace: 'default',
          },
          eventTime: microTime(new Date(clock.now())),
          reportingController: 'nodecare.io/controller',
          reportingInstance,
          action: event.reason,
          reason: event.reason,
          note: event.message.slice(0, 1024),
          type: event.type,
          regarding: { apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid },
        },
        timeoutMs,
      });
    },
  };
}
