// Events go out a few at a time, behind the node writes they describe, as client-go's event broadcaster
// sends them (one goroutine draining a channel of 1,000 that drops what does not fit). A controller start
// that finds 250 nodes changed records about 500 events; sent as soon as each reconcile made them, they took
// connections and API server time from the node writes that the convergence waits for.
//
// Fair across subjects (issue 50 item 14): each subject (a Node, or the ClusterHealth `cluster`) has its own
// queue, and the subjects with events waiting take turns, one write each, in the order they first had one.
// A subject may have at most `maxQueuedPerSubject` writes waiting; its newer ones are dropped and counted.
// So a node that flaps (or whose owner flaps it on purpose) delays another node's event by at most one write
// per turn, never by its whole backlog, and cannot fill the shared backlog on its own.

import { NotLeaderError, type Fence, type NodeApi } from './port.ts';

/** Event writes in flight at once. */
export const EVENT_WRITES_IN_FLIGHT = 2;
/** Event writes waiting at most (client-go's maxQueuedEvents); one more is dropped. */
export const MAX_QUEUED_EVENT_WRITES = 1_000;
/**
 * Event writes one subject may have waiting; one more of its own is dropped. A node's transitions come a few
 * at a time (a taint and the extension that caused it); 25 waiting means it changes faster than events go out.
 */
export const MAX_QUEUED_EVENT_WRITES_PER_SUBJECT = 25;

/** Why an event write was dropped: the whole backlog was full, or its subject's share of it. */
export type EventDropReason = 'backlog' | 'subjectShare';

export interface EventLaneOptions {
  inFlight?: number;
  maxQueued?: number;
  maxQueuedPerSubject?: number;
  /** An event write was dropped (it resolves without being sent). */
  dropped?(reason: EventDropReason): void;
  /**
   * The fence said this replica no longer leads: `count` event writes (the one about to go and every one
   * waiting) reject with NotLeaderError, unsent. Once per such turn, so a hand-off says it in one line.
   */
  abandoned?(count: number): void;
}

interface Waiting {
  send: () => Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** The subject an Event is about: `regarding.name` (eventWriter names Events `<subject>.<hex>`, events.ts). */
function createdSubject(event: object): string {
  const name = (event as { regarding?: { name?: unknown } }).regarding?.name;
  return typeof name === 'string' ? name : '';
}

function patchedSubject(eventName: string): string {
  const dot = eventName.lastIndexOf('.');
  return dot < 0 ? eventName : eventName.slice(0, dot);
}

/**
 * `api` with its event writes (createEvent, patchEvent) queued: at most `inFlight` sent at once, each
 * subject's in the order they were made, the subjects taking turns; each write asks `fence` just before it is
 * sent. When the fence says this replica no longer leads, that write and every one waiting reject with
 * NotLeaderError. Every other call goes straight to `api`.
 */
export function withEventLane(api: NodeApi, fence: Fence, options: EventLaneOptions = {}): NodeApi {
  const {
    inFlight = EVENT_WRITES_IN_FLIGHT,
    maxQueued = MAX_QUEUED_EVENT_WRITES,
    maxQueuedPerSubject = MAX_QUEUED_EVENT_WRITES_PER_SUBJECT,
  } = options;
  /** Per subject with writes waiting, in turn order: the next turn is the first entry's. */
  const waiting = new Map<string, Waiting[]>();
  let waitingCount = 0;
  let active = 0;
  /** The first write of the subject whose turn it is; the subject goes to the end of the turns. */
  const takeNext = (): Waiting | undefined => {
    const first = waiting.entries().next();
    if (first.done) return undefined;
    const [subject, queue] = first.value;
    const next = queue.shift() as Waiting;
    waiting.delete(subject);
    if (queue.length > 0) waiting.set(subject, queue);
    waitingCount--;
    return next;
  };
  const pump = (): void => {
    while (active < inFlight) {
      const next = takeNext();
      if (!next) return;
      try {
        fence();
      } catch (err) {
        next.reject(err);
        if (err instanceof NotLeaderError) {
          const rest = [...waiting.values()].flat();
          waiting.clear();
          waitingCount = 0;
          for (const w of rest) w.reject(err);
          options.abandoned?.(rest.length + 1);
        }
        continue;
      }
      active++;
      next
        .send()
        .then(next.resolve, next.reject)
        .finally(() => {
          active--;
          pump();
        });
    }
  };
  const queued = (subject: string, send: () => Promise<void>): Promise<void> => {
    const queue = waiting.get(subject);
    const over: EventDropReason | undefined =
      waitingCount >= maxQueued
        ? 'backlog'
        : (queue?.length ?? 0) >= maxQueuedPerSubject
          ? 'subjectShare'
          : undefined;
    if (over) {
      options.dropped?.(over);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      if (queue) queue.push({ send, resolve, reject });
      else waiting.set(subject, [{ send, resolve, reject }]);
      waitingCount++;
      pump();
    });
  };
  return {
    getNode: (name) => api.getNode(name),
    patchNode: (name, patch) => api.patchNode(name, patch),
    patchNodeStatus: (name, patch) => api.patchNodeStatus(name, patch),
    getLease: (namespace, name) => api.getLease(namespace, name),
    createEvent: (namespace, event) => queued(createdSubject(event), () => api.createEvent(namespace, event)),
    patchEvent: (namespace, name, patch) =>
      queued(patchedSubject(name), () => api.patchEvent(namespace, name, patch)),
  };
}
