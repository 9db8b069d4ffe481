// Everything the controller writes to a Node, as differences only, through one narrow port (NodeApi).
// Taints, the status label and the bootstrap annotation go in one merge patch; the ExtensionsReady condition
// goes through the status subresource with a strategic merge on the condition type (other conditions are
// untouched), only when its status, reason or message change. Both carry a resourceVersion precondition:
// a write decided on a stale node gets 409, and the reconciler re-reads and re-decides. nodecare never alters
// a taint it does not own: the taint list is the observed list, field for field, with only ours changed.
// Every write first asks the fence whether this replica still leads.

import { NODE_CONDITION_TYPE, NODE_STATUS_LABEL, NodeAnnotation, microTime } from '../api/index.ts';
import type { LeaseObject } from '../api/lease.ts';
import { EventReason } from '../api/reasons.ts';
import { PatchType, type KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import type { CachedNode, NodeObject } from './cache.ts';
import { sameCondition } from './decide/condition.ts';
import { hasTaint, OWN_TAINT_EFFECT } from './decide/decide.ts';
import type { DesiredCondition, NodeDecision, NodeEvent, NodeTaint } from './decide/index.ts';

export interface TaintKeys {
  bootstrap: string;
  runtime: string;
}

/** Thrown by a write attempted after this replica stopped leading: the write did not go out. */
export class NotLeaderError extends Error {
  readonly code = 'NotLeader';
  constructor() {
    super('not the leader: write not sent');
    this.name = 'NotLeaderError';
  }
}

/** Called just before every write; throws NotLeaderError when this replica no longer leads. */
export type Fence = () => void;

/** The API calls the controller makes (docs/conventions.md 5). FakeNodeApi (testing.ts) is the unit-test double. */
export interface NodeApi {
  getNode(name: string): Promise<NodeObject>;
  /** JSON merge patch of the Node (metadata and spec). */
  patchNode(name: string, patch: object): Promise<NodeObject>;
  /** Strategic merge patch of nodes/status. */
  patchNodeStatus(name: string, patch: object): Promise<NodeObject>;
  getLease(namespace: string, name: string): Promise<LeaseObject>;
  createEvent(namespace: string, event: object): Promise<void>;
  /** JSON merge patch of an Event (its series, when the same event repeats). */
  patchEvent(namespace: string, name: string, patch: object): Promise<void>;
}

export interface KubeNodeApiOptions {
  /** Deadline of each request. */
  timeoutMs: number;
  /** Aborts requests in flight (the leadership term ended, or the program is stopping). */
  signal?(): AbortSignal | undefined;
}

/** One request of a controller port: with the port's deadline, cut off when its term's signal aborts. */
export function portRequest<T>(
  client: Pick<KubeClient, 'request'>,
  options: KubeNodeApiOptions,
  method: 'GET' | 'PATCH' | 'POST' | 'PUT',
  path: string,
  body?: object,
  type?: string,
): Promise<T> {
  return client.request<T>(method, path, {
    ...(body ? { body } : {}),
    ...(type ? { contentType: type } : {}),
    timeoutMs: options.timeoutMs,
    signal: options.signal?.(),
  });
}

export class KubeNodeApi implements NodeApi {
  private readonly client: Pick<KubeClient, 'request'>;
  private readonly options: KubeNodeApiOptions;

  constructor(client: Pick<KubeClient, 'request'>, options: KubeNodeApiOptions) {
    this.client = client;
    this.options = options;
  }

  private call<T>(method: 'GET' | 'PATCH' | 'POST', path: string, body?: object, type?: string): Promise<T> {
    return portRequest<T>(this.client, this.options, method, path, body, type);
  }

  getNode(name: string): Promise<NodeObject> {
    return this.call('GET', `/api/v1/nodes/${encodeURIComponent(name)}`);
  }

  patchNode(name: string, patch: object): Promise<NodeObject> {
    return this.call('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}`, patch, PatchType.merge);
  }

  patchNodeStatus(name: string, patch: object): Promise<NodeObject> {
    return this.call('PATCH', `/api/v1/nodes/${encodeURIComponent(name)}/status`, patch, PatchType.strategic);
  }

  getLease(namespace: string, name: string): Promise<LeaseObject> {
    return this.call('GET', leasesPath(namespace, name));
  }

  async createEvent(namespace: string, event: object): Promise<void> {
    await this.call(
      'POST',
      `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
      event,
    );
  }

  async patchEvent(namespace: string, name: string, patch: object): Promise<void> {
    await this.call(
      'PATCH',
      `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events/${encodeURIComponent(name)}`,
      patch,
      PatchType.merge,
    );
  }
}

export interface NodeChange {
  taints?: NodeTaint[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Human summary of the taint change, for logs and dry-run. */
  taintSummary: string[];
}

/** The taint list with nodecare's taints set as decided and every other taint kept as it is, field for field. */
export function desiredTaintList<T extends NodeTaint>(
  current: readonly T[],
  decision: NodeDecision,
  keys: TaintKeys,
): NodeTaint[] {
  const ours = new Set([keys.bootstrap, keys.runtime]);
  const kept: NodeTaint[] = current.filter((t) => !ours.has(t.key) || t.effect !== OWN_TAINT_EFFECT);
  if (decision.desiredTaints.bootstrap) kept.push({ key: keys.bootstrap, effect: OWN_TAINT_EFFECT });
  if (decision.desiredTaints.runtime) kept.push({ key: keys.runtime, effect: OWN_TAINT_EFFECT });
  return kept;
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
    if (has !== want) change.taintSummary.push(`${want ? 'add' : 'remove'} ${key}:${OWN_TAINT_EFFECT}`);
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

/** The merge patch for a NodeChange, valid only against `node`'s resourceVersion. */
export function nodePatch(node: CachedNode, change: NodeChange): object {
  return {
    metadata: {
      resourceVersion: node.resourceVersion,
      ...(change.labels ? { labels: change.labels } : {}),
      ...(change.annotations ? { annotations: change.annotations } : {}),
    },
    ...(change.taints ? { spec: { taints: change.taints } } : {}),
  };
}

/**
 * The status patch that sets ExtensionsReady as decided, valid only against `node`'s resourceVersion, or
 * undefined when status, reason and message already match. lastTransitionTime moves only with status.
 */
export function conditionPatch(
  node: CachedNode,
  desired: DesiredCondition,
  nowMs: number,
): object | undefined {
  const observed = node.extensionsReadyCondition;
  if (sameCondition(observed, desired)) return undefined;
  const now = new Date(nowMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const transition =
    observed?.status === desired.status && node.conditionTransitionTime ? node.conditionTransitionTime : now;
  return {
    metadata: { resourceVersion: node.resourceVersion },
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
  };
}

const TAINT_EVENT_CHANGES = {
  [EventReason.BootstrapTaintAdded]: { taint: 'bootstrap', added: true },
  [EventReason.BootstrapTaintRemoved]: { taint: 'bootstrap', added: false },
  [EventReason.RuntimeTaintAdded]: { taint: 'runtime', added: true },
  [EventReason.RuntimeTaintRemoved]: { taint: 'runtime', added: false },
} as const satisfies Partial<Record<EventReason, { taint: keyof TaintKeys; added: boolean }>>;

export function isTaintEvent(event: NodeEvent): boolean {
  return event.reason in TAINT_EVENT_CHANGES;
}

/** The taint events among `events` that describe a change the write from `before` to `after` really made. */
export function writtenTaintEvents(
  before: CachedNode,
  after: CachedNode,
  events: readonly NodeEvent[],
  keys: TaintKeys,
): NodeEvent[] {
  return events.filter((event) => {
    const change = (
      TAINT_EVENT_CHANGES as Partial<Record<string, { taint: keyof TaintKeys; added: boolean }>>
    )[event.reason];
    if (!change) return false;
    const key = keys[change.taint];
    return !hasTaint(before.taints, key) === change.added && hasTaint(after.taints, key) === change.added;
  });
}

/** Event names as client-go makes them (<object>.<hex time>), always a valid DNS subdomain. */
export function eventName(objectName: string, uniqueNumber: number): string {
  const suffix = `.${uniqueNumber.toString(16)}`;
  // Room for the suffix within 253 characters; a cut must not leave a '.' or '-' before the suffix's '.'.
  const prefix = objectName.slice(0, 253 - suffix.length).replace(/[.-]+$/, '');
  return `${prefix}${suffix}`;
}

export interface EventRecorder {
  nodeEvent(node: { name: string; uid: string }, event: NodeEvent): Promise<void>;
}

/** What an event regards: a Node, or the cluster-scoped ClusterHealth (cluster-events.ts). */
export interface EventSubject {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
}

/** A repeat of an event this long after the last one starts a new Event (client-go's `finishTime`). */
export const EVENT_SERIES_FINISH_MS = 6 * 60_000;

interface SeriesEntry {
  name: string;
  count: number;
  lastObservedMs: number;
  /** Writes of this series run one after the other (a repeat patches the Event its first write created). */
  pending: Promise<void>;
}

/**
 * Records events.k8s.io/v1 Events in `default` (where the kubelet records node events too and the API server
 * accepts events about cluster-scoped objects), named validly after their subject; fenced: only the leader
 * records. An event that repeats one seen within the last 6 minutes — same subject, type, reason and note — is
 * not a new object: the first Event gets a `series` (count, last observed time), as client-go's event
 * broadcaster does. Two differences from client-go, both deliberate: the note is part of the key (nodecare's
 * reasons are per node, not per extension, so "gpu-plugin is Unhealthy" and "csi-node is Unhealthy" must stay
 * two Events), and the count is written at each repeat rather than on a half-hourly heartbeat (nodecare
 * records transitions only, never one per reconcile, so repeats are rare and each is worth seeing). A series
 * whose Event is gone (events expire after an hour) starts again with a new one.
 */
export function eventWriter(
  api: Pick<NodeApi, 'createEvent' | 'patchEvent'>,
  reportingInstance: string,
  clock: { now(): number },
  fence: Fence,
): (subject: EventSubject, event: NodeEvent) => Promise<void> {
  let sequence = 0;
  const series = new Map<string, SeriesEntry>();
  const create = async (subject: EventSubject, event: NodeEvent, name: string, nowMs: number) => {
    fence();
    await api.createEvent('default', {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: {
        name,
        namespace: 'default',
        ...(event.annotations ? { annotations: { ...event.annotations } } : {}),
      },
      eventTime: microTime(new Date(nowMs)),
      reportingController: 'nodecare.io/controller',
      reportingInstance,
      action: event.reason,
      reason: event.reason,
      note: event.message.slice(0, 1024),
      type: event.type,
      regarding: subject,
    });
  };
  return (subject, event) => {
    const nowMs = clock.now();
    for (const [key, entry] of series) {
      if (nowMs - entry.lastObservedMs > EVENT_SERIES_FINISH_MS) series.delete(key);
    }
    const note = event.message.slice(0, 1024);
    const key = JSON.stringify([
      subject.kind,
      subject.name,
      subject.uid ?? '',
      event.type,
      event.reason,
      note,
    ]);
    const entry = series.get(key);
    if (!entry) {
      const name = eventName(subject.name, nowMs * 1000 + (sequence++ % 1000));
      const pending = create(subject, event, name, nowMs);
      series.set(key, { name, count: 1, lastObservedMs: nowMs, pending: pending.catch(() => undefined) });
      return pending;
    }
    entry.count += 1;
    entry.lastObservedMs = nowMs;
    const count = entry.count;
    const write = entry.pending.then(async () => {
      fence();
      try {
        await api.patchEvent('default', entry.name, {
          series: { count, lastObservedTime: microTime(new Date(nowMs)) },
        });
      } catch (err) {
        if (!isKubeError(err, KubeErrorCode.NotFound)) throw err;
        // Expired meanwhile: this repeat starts a new Event (and series).
        entry.name = eventName(subject.name, nowMs * 1000 + (sequence++ % 1000));
        entry.count = 1;
        await create(subject, event, entry.name, nowMs);
      }
    });
    entry.pending = write.catch(() => undefined);
    return write;
  };
}

/** Records Events about Nodes. */
export function eventRecorder(
  api: Pick<NodeApi, 'createEvent' | 'patchEvent'>,
  reportingInstance: string,
  clock: { now(): number },
  fence: Fence,
): EventRecorder {
  const write = eventWriter(api, reportingInstance, clock, fence);
  return {
    nodeEvent: (node, event) =>
      write({ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid }, event),
  };
}
