// List-then-watch into a local store, as client-go's reflector: paginated LIST, WATCH from its
// resourceVersion with bookmarks and a server-side timeout, resume from the last seen resourceVersion when a
// watch ends, relist on 410 Gone or a malformed stream, capped backoff on errors and on watches that end at
// once with nothing (client-go's "very short watch"). Objects are transformed on ingest so the store keeps
// only what the program needs (docs/adr/0001), and their managedFields are not even parsed
// (managed-fields.ts). An object whose transform or handler throws is a poison object: reported through
// `skipped` and passed over, never retried (the same object would throw again).

import type { Clock } from '../clock.ts';
import { Backoff, WATCH_BACKOFF } from './backoff.ts';
import type { KubeClient, Query, WatchEventType } from './client.ts';
import { isKubeError, KubeError, KubeErrorCode } from './errors.ts';

interface Meta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** A LIST response as the reflector reads it (JSON's shape; protobuf.ts decodes Leases into the same). */
export interface ListBody<R> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: R[];
}

export interface ReflectorHandlers<T> {
  /** A new object, or one seen again on a relist. */
  added?(obj: T): void;
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
  /** Read the watch in batches, at most this much later (KubeClient.watch; docs/adr/0011). */
  watchCoalesceMs?: number;
  /**
   * LIST in Kubernetes' protobuf encoding, read by these (protobuf.ts; a built-in type only, docs/adr/0018).
   * The watch stays JSON.
   */
  protobufList?: ProtobufList<R>;
  random?: () => number;
}

/** How a LIST of one built-in type is read as protobuf: the whole page, and its continue token alone. */
export interface ProtobufList<R> {
  decode(bytes: Buffer, what: string): ListBody<R>;
  continueToken(bytes: Buffer): string | undefined;
}

/** A LIST page asked for, and the one after it once its text named the continue token (Reflector.list). */
interface PageFetch<R> {
  token: string | undefined;
  page: Promise<ListBody<R>>;
  next?: PageFetch<R>;
}

/**
 * The continue token of a LIST response, read from its text before it is parsed: the list's metadata comes
 * before its items (as the API server writes it) and its continue token is plain (base64). Undefined when the
 * text says otherwise; then the next page is asked for after the parse.
 */
export function listContinueToken(text: string): string | undefined {
  const metadata = text.indexOf('"metadata":{');
  if (metadata === -1 || metadata > 1024 || text.lastIndexOf('"items":', metadata) !== -1) return undefined;
  const end = text.indexOf('}', metadata);
  const key = text.indexOf('"continue":"', metadata);
  if (end === -1 || key === -1 || key > end) return undefined;
  const start = key + '"continue":"'.length;
  const close = text.indexOf('"', start);
  if (close === -1 || close > end) return undefined;
  const token = text.slice(start, close);
  return token === '' || token.includes('\\') ? undefined : token;
}

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
    const { client, path, transform, pageSize = 500, protobufList } = this.options;
    const pages = new AbortController();
    const pagesSignal = AbortSignal.any([signal, pages.signal]);
    const fetchPage = (token: string | undefined): PageFetch<R> => {
      const fetch: PageFetch<R> = {
        token,
        page: client.get<ListBody<R>>(path, {
          query: { ...this.selectors(), limit: pageSize, continue: token },
          timeoutMs: 60_000,
          signal: pagesSignal,
          withoutManagedFields: true,
          ...(protobufList ? { protobuf: protobufList.decode } : {}),
          peek: (body) => {
            const next =
              typeof body === 'string' ? listContinueToken(body) : protobufList?.continueToken(body);
            if (next !== undefined && !pagesSignal.aborted) fetch.next = fetchPage(next);
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
      let current = fetchPage(undefined);
      for (;;) {
        const page = await current.page;
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
        current = current.next?.token === token ? current.next : fetchPage(token);
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
      this.guarded(key, () => (old === undefined ? handlers.added?.(obj) : this.updated(key, obj, old)));
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
        withoutManagedFields: true,
      },
    );
    return delivered;
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
    if (old === undefined) handlers.added?.(obj);
    else this.updated(key, obj, old);
  }

  /** Hands an update to its handler and keeps what the handler says to keep (ReflectorHandlers.updated). */
  private updated(key: string, obj: T, old: T): void {
    const kept = this.options.handlers.updated?.(obj, old);
    if (kept !== undefined && kept !== obj) this.store.set(key, kept);
  }
}
