// Events, as client-go's event broadcaster records them (a repeat within six minutes is a series, not a new
// object), about Nodes and about the cluster as a whole: a correlated failure is the extension's rollout, not
// any one node's fault, so it regards the cluster roll-up object, the cluster-scoped ClusterHealth `cluster`
// (docs/design.md section 6), which need not exist yet. All go to namespace `default`, where the API server
// accepts events about cluster-scoped objects. Only the leader records (fenced).

import { capUtf8, CLUSTER_HEALTH, GROUP_VERSION, microTime } from '../../api/index.ts';
import type { Clock } from '../../lib/clock.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { CachedNode } from '../cache/index.ts';
import type { NodeEvent } from '../decide/index.ts';
import type { ControllerMetrics } from '../metrics.ts';
import { NotLeaderError, type Fence, type NodeApi } from './port.ts';

/** Event names as client-go makes them (<object>.<hex time>), always a valid DNS subdomain. */
export function eventName(objectName: string, uniqueNumber: number): string {
  const suffix = `.${uniqueNumber.toString(16)}`;
  // Room for the suffix within 253 characters; a cut must not leave a '.' or '-' before the suffix's '.'.
  const prefix = objectName.slice(0, 253 - suffix.length).replace(/[.-]+$/, '');
  return `${prefix}${suffix}`;
}

/**
 * Logs an event that could not be recorded: a warning, except when it was not sent because this replica no
 * longer leads (the event lane says how many in one line, withEventLane's `abandoned`).
 */
export function eventNotRecorded(log: Logger, err: unknown, fields: Record<string, unknown> = {}): void {
  if (err instanceof NotLeaderError) log.debug({ err, ...fields }, 'Event not recorded: no longer leading');
  else log.warn({ err, ...fields }, 'Failed to record event');
}

export interface EventRecorder {
  nodeEvent(node: { name: string; uid: string }, event: NodeEvent): Promise<void>;
}

/** What an event regards: a Node, or the cluster-scoped ClusterHealth (clusterEventRecorder, below). */
export interface EventSubject {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
}

/**
 * The API server refuses an events.k8s.io Event whose note is over 1 KiB, counted in UTF-8 bytes: a note cut by
 * characters let non-ASCII text (an extension's message, a node name) over it, and the event was lost.
 */
export const MAX_EVENT_NOTE_BYTES = 1024;

/** The note of `message`: within MAX_EVENT_NOTE_BYTES, cut on a character boundary. */
export function eventNote(message: string): string {
  return capUtf8(message, MAX_EVENT_NOTE_BYTES);
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

/** What makes two events one series: the same subject, type, reason and note. */
function seriesKey(subject: EventSubject, event: NodeEvent): string {
  const { kind, name, uid } = subject;
  return JSON.stringify([kind, name, uid ?? '', event.type, event.reason, eventNote(event.message)]);
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
  clock: Pick<Clock, 'now' | 'monotonic'>,
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
      note: eventNote(event.message),
      type: event.type,
      regarding: subject,
    });
  };
  return (subject, event) => {
    const nowMs = clock.now();
    // The series window is a duration this process measures: monotonic (docs/adr/0020); nowMs is written.
    const observedMs = clock.monotonic();
    // `series` is in the order of last observation (a repeat moves its entry to the end): the finished ones
    // are at the front. Looking at every entry on every event cost a burst of 1,000 events a million steps.
    for (const [key, entry] of series) {
      if (observedMs - entry.lastObservedMs <= EVENT_SERIES_FINISH_MS) break;
      series.delete(key);
    }
    const key = seriesKey(subject, event);
    const entry = series.get(key);
    if (!entry) {
      const name = eventName(subject.name, nowMs * 1000 + (sequence++ % 1000));
      const pending = create(subject, event, name, nowMs);
      series.set(key, {
        name,
        count: 1,
        lastObservedMs: observedMs,
        pending: pending.catch(() => undefined),
      });
      return pending;
    }
    entry.count += 1;
    entry.lastObservedMs = observedMs;
    series.delete(key);
    series.set(key, entry);
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
  clock: Pick<Clock, 'now' | 'monotonic'>,
  fence: Fence,
): EventRecorder {
  const write = eventWriter(api, reportingInstance, clock, fence);
  return {
    nodeEvent: (node, event) =>
      write({ apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid }, event),
  };
}

/**
 * Records `events` about `node`, each counted by reason; one that cannot be written is logged, never thrown
 * (an event is a note, not part of the decision).
 */
export function recordNodeEvents(
  recorder: EventRecorder,
  metrics: Pick<ControllerMetrics, 'events'>,
  node: Pick<CachedNode, 'name' | 'uid'>,
  events: readonly NodeEvent[],
  log: Logger,
): void {
  for (const event of events) {
    metrics.events.inc({ reason: event.reason });
    recorder
      .nodeEvent(node, event)
      .catch((err: unknown) => eventNotRecorded(log, err, { reason: event.reason }));
  }
}

export const CLUSTER_EVENT_REGARDING = {
  apiVersion: GROUP_VERSION,
  kind: CLUSTER_HEALTH.kind,
  name: CLUSTER_HEALTH.name,
} as const;

export interface ClusterEventRecorder {
  clusterEvent(event: NodeEvent): Promise<void>;
}

export function clusterEventRecorder(
  api: Pick<NodeApi, 'createEvent' | 'patchEvent'>,
  reportingInstance: string,
  clock: Pick<Clock, 'now' | 'monotonic'>,
  fence: Fence,
): ClusterEventRecorder {
  const write = eventWriter(api, reportingInstance, clock, fence);
  return { clusterEvent: (event) => write(CLUSTER_EVENT_REGARDING, event) };
}
