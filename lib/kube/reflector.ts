// List-then-watch into a local store, as client-go's reflector: paginated LIST, WATCH from its
// resourceVersion with bookmarks and a server-side timeout, resume from the last seen resourceVersion when a
// watch ends, relist on 410 Gone or a malformed stream, capped backoff on errors and on watches that end at
// once with nothing (client-go's "very short watch"). Objects are transformed on ingest so the store keeps
// only what the program needs (docs/adr/0001), and their managedFields are not even parsed
// (managed-fields.ts). An object whose transform or handler throws is a poison object: reported through
// `skipped` and passed over, never retried (the same object would throw again).
//
// One object never fails its page or its watch, and never makes the process hold more than a constant
// (issue 50): an object a LIST decoder could not read (ListBody.skipped) or a watch line over
// `maxObjectBytes` or not JSON (named from its first bytes) is skipped the same way, and what the store held
// for it goes (it is no longer what the API server has). LIST pages are bounded in bytes as well as in
// items: a page over `pageMaxBytes` is not read on, and asked for again with a quarter of the items; each
// next page asks for as many items as fit a quarter of `pageMaxBytes` at the bytes per item of the page
// before (up to `pageSize`), so a run of large objects is read a few at a time and the pages grow back
// after it.

import type { Clock } from '../clock.ts';
import { Backoff, WATCH_BACKOFF } from './backoff.ts';
import type { KubeClient, Query, WatchEventType } from './client.ts';
import { isKubeError, KubeError, KubeErrorCode } from './errors.ts';
import { listContinueToken, nextPageLimit, type ListBody, type ProtobufList } from './list.ts';

/** ReflectorOptions.pageMaxBytes by default: far above a page of 2,000 Leases (about 3 MB of JSON). */
export const DEFAULT_PAGE_MAX_BYTES = 32 * 1024 * 1024;

interface Meta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

export interface ReflectorHandlers<T> {
  /**
   * A new object, or one seen again on a relist. May return what the store keeps for it instead of `obj`
   * (the controller keeps of a Lease it ignores only its name and problem).
   */
  added?(obj: T): T | void;
  /**
   * An object that changed. May return what the store keeps for it instead of `obj`: `old`, brought up to
   * date in place, when the change was only in fields the handler copied onto it (the controller's lease
   * index does so for a renewal: the object held is already in V8's old generation, where a replacement
   * would be promoted to become garbage at the next renewal; docs/adr/0013).
   */
  updated?(obj: T, old: T): T | void;
  deleted?(obj: T): void;
  /** The first complete LIST has been applied (and again after each relist). */
  synced?(): void;
  /** A list or watch failed; the reflector retries on its own. */
  error?(err: unknown): void;
  /** The transform or a handler threw on the object with this key; it was skipped. */
  skipped?(err: unknown, key: string): void;
}

export interface ReflectorOptions<R, T> {
  client: KubeClient;
  clock: Clock;
  /** Collection path, e.g. /api/v1/nodes or /apis/coordination.k8s.io/v1/namespaces/x/leases. */
  path: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Strips a raw API object to what is kept; returning undefined drops it. */
  transform: (raw: R) => T | undefined;
  handlers: ReflectorHandlers<T>;
  pageSize?: number;
  /**
   * The most bytes of one LIST page that are read (DEFAULT_PAGE_MAX_BYTES): a larger page is asked for
   * again with fewer items. Must exceed the largest object the API server stores (etcd's 1.5 MiB by default).
   */
  pageMaxBytes?: number;
  /**
   * A watch event over this many bytes is skipped, its object named from the event's first bytes, instead of
   * being buffered (default: the client's line limit).
   */
  maxObjectBytes?: number;
  /** Read the watch in batches, at most this much later (KubeClient.watch; docs/adr/0011). */
  watchCoalesceMs?: number;
  /**
   * LIST in Kubernetes' protobuf encoding, read by these (protobuf.ts; a built-in type only, docs/adr/0018).
   * The watch stays JSON.
   */
  protobufList?: ProtobufList<R>;
  random?: () => number;
}

/** A LIST page asked for, and the one after it once its text named the continue token (Reflector.list). */
interface PageFetch<R> {
  token: string | undefined;
  /** The items asked for. */
  limit: number;
  page: Promise<ListBody<R>>;
  /** The page's size in bytes (its text's length, or its protobuf's), once it has arrived. */
  bytes?: number;
  next?: PageFetch<R>;
}

/**
 * Key, type and resourceVersion of a watch event read from its line's first bytes, as the API server writes
 * them (`{"type":…,"object":{…,"metadata":{"name":…,"namespace":…,…,"resourceVersion":…`). undefined
 * without a name.
 */
export function eventHead(
  prefix: string,
): { key: string; type?: string; resourceVersion?: string } | undefined {
  const metadata = prefix.indexOf('"metadata":{');
  if (metadata === -1) return undefined;
  const rest = prefix.slice(metadata);
  const name = HEAD_NAME.exec(rest)?.[1];
  if (name === undefined) return undefined;
  const namespace = HEAD_NAMESPACE.exec(rest)?.[1];
  return {
    key: namespace ? `${namespace}/${name}` : name,
    type: HEAD_TYPE.exec(prefix)?.[1],
    resourceVersion: HEAD_RESOURCE_VERSION.exec(rest)?.[1],
  };
}

// Plain values only (no escapes): names, namespaces and resourceVersions the API server accepts have none.
const HEAD_NAME = /^"metadata":\{"name":"([^"\\]{1,253})"/;
const HEAD_NAMESPACE = /"namespace":"([^"\\]{1,63})"/;
const HEAD_RESOURCE_VERSION = /"resourceVersion":"([0-9]{1,20})"/;
const HEAD_TYPE = /^\{"type":"([A-Z]{1,16})"/;

/** A watch that ends sooner than this having delivered nothing counts as a failure (client-go: 1 s). */
const SHORT_WATCH_MS = 1_000;

export function objectKey(obj: Meta): string {
  const { namespace, name } = obj.metadata ?? {};
  return namespace ? `${namespace}/${name}` : (name ?? '');
}

export class Reflector<R extends Meta, T> {
  readonly store = new Map<string, T>();
  private readonly options: ReflectorOptions<R, T>;
  private readonly backoff: Backoff;
  private resourceVersion = '';
  private hasSynced = false;
  private notFound = false;
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(options: ReflectorOptions<R, T>) {
    this.options = options;
    this.backoff = new Backoff(WATCH_BACKOFF, options.random);
  }

  get synced(): boolean {
    return this.hasSynced;
  }

  /** Synced empty because the API server answered 404: it does not serve this resource type (yet). */
  get notServed(): boolean {
    return this.notFound;
  }

  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  start(): void {
    if (this.loop) return;
    this.controller = new AbortController();
    this.loop = this.run(this.controller.signal);
  }

  async stop(): Promise<void> {
    this.controller?.abort();
    await this.loop;
    this.loop = undefined;
  }

  private selectors(): Query {
    return { labelSelector: this.options.labelSelector, fieldSelector: this.options.fieldSelector };
  }

  private async run(signal: AbortSignal): Promise<void> {
    const { clock, handlers, path } = this.options;
    while (!signal.aborted) {
      try {
        if (!this.resourceVersion) await this.list(signal);
        const startedMs = clock.monotonic();
        const delivered = await this.watch(signal);
        if (signal.aborted) return;
        // Resuming at once is right after a watch that lived or delivered; one that ended at once with
        // nothing would be reopened in a tight loop, so it is a failure and backs off.
        if (delivered === 0 && clock.monotonic() - startedMs < SHORT_WATCH_MS)
          throw new KubeError(KubeErrorCode.Network, 0, `WATCH ${path}: ended at once without any event`);
        this.backoff.reset();
      } catch (err) {
        if (signal.aborted) return;
        if (isKubeError(err, KubeErrorCode.Gone)) {
          this.resourceVersion = ''; // history compacted: relist, then watch again
          continue;
        }
        // A stream we cannot read (an over-long or broken line) may hide events: relist after the backoff.
        if (isKubeError(err, KubeErrorCode.Malformed)) this.resourceVersion = '';
        if (isKubeError(err, KubeErrorCode.NotFound) && !this.hasSynced) {
          // The resource type does not exist (a CRD not installed yet): an empty collection, so dependants
          // can start. Only before the first sync: a later 404 keeps what is known and retries.
          this.applyList(new Map());
          this.notFound = true;
        }
        handlers.error?.(err);
        const delay = isKubeError(err) && err.retryAfterMs ? err.retryAfterMs : this.backoff.next();
        await clock.sleep(delay, signal).catch(() => undefined);
      }
    }
  }

  /** Runs `fn` for one object; a throw makes it a poison object, reported and skipped. */
  private guarded(key: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.options.handlers.skipped?.(err, key);
    }
  }

  /**
   * A complete paged LIST into a fresh store. Each next page is asked for as soon as the body of the one
   * before (its text, or its protobuf) has arrived and names its continue token, so the API server prepares
   * it while this process parses and decodes the page in hand (one page ahead; the parsed token is the one
   * that counts).
   */
  private async list(signal: AbortSignal): Promise<void> {
    const { client, path, transform, pageSize = 500, protobufList, handlers } = this.options;
    const pageMaxBytes = this.options.pageMaxBytes ?? DEFAULT_PAGE_MAX_BYTES;
    const pages = new AbortController();
    const pagesSignal = AbortSignal.any([signal, pages.signal]);
    const fetchPage = (token: string | undefined, limit: number): PageFetch<R> => {
      const fetch: PageFetch<R> = {
        token,
        limit,
        page: client.get<ListBody<R>>(path, {
          query: { ...this.selectors(), limit, continue: token },
          timeoutMs: 60_000,
          signal: pagesSignal,
          withoutManagedFields: true,
          maxBodyBytes: pageMaxBytes,
          ...(protobufList ? { protobuf: protobufList.decode } : {}),
          peek: (body) => {
            fetch.bytes = body.length;
            const next =
              typeof body === 'string' ? listContinueToken(body) : protobufList?.continueToken(body);
            if (next !== undefined && !pagesSignal.aborted)
              fetch.next = fetchPage(next, nextPageLimit(limit, body.length, pageMaxBytes, pageSize));
          },
        }),
      };
      // Awaited below, or given up when the list fails first: never an unhandled rejection.
      fetch.page.catch(() => undefined);
      return fetch;
    };
    const fresh = new Map<string, T>();
    let resourceVersion: string;
    try {
      let current = fetchPage(undefined, pageSize);
      for (;;) {
        let page: ListBody<R>;
        try {
          page = await current.page;
        } catch (err) {
          // Over pageMaxBytes: the same page again, a quarter of the items (one object alone always fits).
          if (!isKubeError(err, KubeErrorCode.TooLarge) || current.limit === 1) throw err;
          current = fetchPage(current.token, Math.max(1, Math.floor(current.limit / 4)));
          continue;
        }
        for (const { key, err } of page.skipped ?? []) handlers.skipped?.(err, key);
        for (const raw of page.items ?? []) {
          const key = objectKey(raw);
          this.guarded(key, () => {
            const obj = transform(raw);
            if (obj !== undefined) fresh.set(key, obj);
          });
        }
        resourceVersion = page.metadata?.resourceVersion ?? '';
        const token = page.metadata?.continue || undefined;
        if (token === undefined) break;
        const limit = nextPageLimit(current.limit, current.bytes ?? 0, pageMaxBytes, pageSize);
        current = current.next?.token === token ? current.next : fetchPage(token, limit);
      }
    } finally {
      pages.abort(); // a page asked for ahead that is not needed
    }
    this.applyList(fresh);
    this.resourceVersion = resourceVersion;
  }

  /** Replaces the store with a complete list, emitting the differences, and marks the reflector synced. */
  private applyList(fresh: Map<string, T>): void {
    const { handlers } = this.options;
    for (const [key, old] of this.store) {
      if (!fresh.has(key)) {
        this.store.delete(key);
        this.guarded(key, () => handlers.deleted?.(old));
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.store.get(key);
      this.store.set(key, obj);
      this.guarded(key, () => (old === undefined ? this.added(key, obj) : this.updated(key, obj, old)));
    }
    this.hasSynced = true;
    this.notFound = false;
    handlers.synced?.();
  }

  /** Watches until the server ends the watch; resolves with the number of events received. */
  private async watch(signal: AbortSignal): Promise<number> {
    const { client, path, random = Math.random } = this.options;
    // Like client-go: the server ends the watch after 5-10 minutes and we resume from the last version.
    const timeoutSeconds = 300 + Math.floor(random() * 300);
    let delivered = 0;
    await client.watch<R>(
      path,
      {
        ...this.selectors(),
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
      },
      (event) => {
        delivered++;
        // The version moves past every event, also one that is then skipped as poison.
        const rv = event.object.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (event.type === 'BOOKMARK') return;
        const key = objectKey(event.object);
        this.guarded(key, () => this.apply(key, event.type, event.object));
      },
      signal,
      {
        ...(this.options.watchCoalesceMs ? { coalesceMs: this.options.watchCoalesceMs } : {}),
        ...(this.options.maxObjectBytes ? { maxLineBytes: this.options.maxObjectBytes } : {}),
        withoutManagedFields: true,
        unreadable: (prefix, err) => {
          delivered++;
          this.unreadable(prefix, err);
        },
      },
    );
    return delivered;
  }

  /**
   * A watch event that could not be read (over maxObjectBytes, or not JSON): named from its first bytes, its
   * object is skipped and what the store held for it goes. One that names no object may hide any event: the
   * watch fails with `err`, and the reflector relists.
   */
  private unreadable(prefix: string, err: KubeError): void {
    const head = eventHead(prefix);
    if (head === undefined) throw err;
    if (head.resourceVersion) this.resourceVersion = head.resourceVersion;
    if (head.type === 'BOOKMARK') return;
    const { key } = head;
    const old = this.store.get(key);
    if (old !== undefined) {
      this.store.delete(key);
      this.guarded(key, () => this.options.handlers.deleted?.(old));
    }
    this.options.handlers.skipped?.(err, key);
  }

  private apply(key: string, type: WatchEventType, raw: R): void {
    const { transform, handlers } = this.options;
    const old = this.store.get(key);
    const obj = type === 'DELETED' ? undefined : transform(raw);
    if (obj === undefined) {
      if (old !== undefined) {
        this.store.delete(key);
        handlers.deleted?.(old);
      }
      return;
    }
    this.store.set(key, obj);
    if (old === undefined) this.added(key, obj);
    else this.updated(key, obj, old);
  }

  /** Hands a new object to its handler and keeps what the handler says to keep (ReflectorHandlers.added). */
  private added(key: string, obj: T): void {
    const kept = this.options.handlers.added?.(obj);
    if (kept !== undefined && kept !== obj) this.store.set(key, kept);
  }

  /** Hands an update to its handler and keeps what the handler says to keep (ReflectorHandlers.updated). */
  private updated(key: string, obj: T, old: T): void {
    const kept = this.options.handlers.updated?.(obj, old);
    if (kept !== undefined && kept !== obj) this.store.set(key, kept);
  }
}
