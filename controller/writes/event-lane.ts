// Events go out a few at a time, behind the node writes they describe, as client-go's event broadcaster
// sends them (one goroutine draining a channel of 1,000 that drops what does not fit). A controller start
// that finds 250 nodes changed records about 500 events; sent as soon as each reconcile made them, they took
// connections and API server time from the node writes that the convergence waits for.

import { NotLeaderError, type Fence, type NodeApi } from './port.ts';

/** Event writes in flight at once. */
export const EVENT_WRITES_IN_FLIGHT = 2;
/** Event writes waiting at most (client-go's maxQueuedEvents); one more is dropped. */
export const MAX_QUEUED_EVENT_WRITES = 1_000;

export interface EventLaneOptions {
  inFlight?: number;
  maxQueued?: number;
  /** An event write was dropped because the backlog was full (it resolves without being sent). */
  dropped?(): void;
  /**
   * The fence said this replica no longer leads: `count` event writes (the one about to go and every one
   * waiting) reject with NotLeaderError, unsent. Once per such turn, so a hand-off says it in one line.
   */
  abandoned?(count: number): void;
}

/**
 * `api` with its event writes (createEvent, patchEvent) queued: at most `inFlight` sent at once, in the
 * order they were made, each asking `fence` just before it is sent. When the fence says this replica no
 * longer leads, that write and every one waiting reject with NotLeaderError. Every other call goes straight
 * to `api`.
 */
export function withEventLane(api: NodeApi, fence: Fence, options: EventLaneOptions = {}): NodeApi {
  const { inFlight = EVENT_WRITES_IN_FLIGHT, maxQueued = MAX_QUEUED_EVENT_WRITES } = options;
  const waiting: Array<{ send: () => Promise<void>; resolve: () => void; reject: (err: unknown) => void }> =
    [];
  let active = 0;
  const pump = (): void => {
    while (active < inFlight && waiting.length > 0) {
      const next = waiting.shift() as (typeof waiting)[number];
      try {
        fence();
      } catch (err) {
        next.reject(err);
        if (err instanceof NotLeaderError) {
          const rest = waiting.splice(0);
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
  const queued = (send: () => Promise<void>): Promise<void> => {
    if (waiting.length >= maxQueued) {
      options.dropped?.();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      waiting.push({ send, resolve, reject });
      pump();
    });
  };
  return {
    getNode: (name) => api.getNode(name),
    patchNode: (name, patch) => api.patchNode(name, patch),
    patchNodeStatus: (name, patch) => api.patchNodeStatus(name, patch),
    getLease: (namespace, name) => api.getLease(namespace, name),
    createEvent: (namespace, event) => queued(() => api.createEvent(namespace, event)),
    patchEvent: (namespace, name, patch) => queued(() => api.patchEvent(namespace, name, patch)),
  };
}
