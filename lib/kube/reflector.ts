// List-then-watch into a local store, as client-go's reflector: paginated LIST, WATCH from its
// resourceVersion with bookmarks and a server-side timeout, resume from the last seen resourceVersion when a
// watch ends, relist on 410 Gone, capped backoff on errors. Objects are transformed on ingest so the store
// keeps only what the program needs (docs/adr/0001).

import type { Clock } from '../clock.ts';
import { Backoff, WATCH_BACKOFF } from './backoff.ts';
import type { KubeClient, Query } from './client.ts';
import { isKubeError, KubeErrorCode } from './errors.ts';

interface Meta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

interface ListBody<R> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: R[];
}

export interface ReflectorHandlers<T> {
  /** A new object, or one seen again on a relist. */
  added?(obj: T): void;
  updated?(obj: T, old: T): void;
  deleted?(obj: T): void;
  /** The first complete LIST has been applied (and again after each relist). */
  synced?(): void;
  /** A list or watch failed; the reflector retries on its own. */
  error?(err: unknown): void;
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
  random?: () => number;
}

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
  private controller: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(options: ReflectorOptions<R, T>) {
    this.options = options;
    this.backoff = new Backoff(WATCH_BACKOFF, options.random);
  }

  get synced(): boolean {
    return this.hasSynced;
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
    const { clock, handlers } = this.options;
    while (!signal.aborted) {
      try {
        if (!this.resourceVersion) await this.list(signal);
        await this.watch(signal);
        this.backoff.reset();
      } catch (err) {
        if (signal.aborted) return;
        if (isKubeError(err, KubeErrorCode.Gone)) {
          this.resourceVersion = ''; // history compacted: relist, then watch again
          continue;
        }
        if (isKubeError(err, KubeErrorCode.NotFound) && !this.hasSynced) {
          // The resource type does not exist (a CRD not installed yet): an empty collection, so dependants
          // can start. Only before the first sync: a later 404 keeps what is known and retries.
          this.applyList(new Map());
        }
        handlers.error?.(err);
        const delay = isKubeError(err) && err.retryAfterMs ? err.retryAfterMs : this.backoff.next();
        await clock.sleep(delay, signal).catch(() => undefined);
      }
    }
  }

  private async list(signal: AbortSignal): Promise<void> {
    const { client, path, transform, pageSize = 500 } = this.options;
    const fresh = new Map<string, T>();
    let continueToken: string | undefined;
    let resourceVersion: string;
    do {
      const page = await client.get<ListBody<R>>(path, {
        query: { ...this.selectors(), limit: pageSize, continue: continueToken },
        timeoutMs: 60_000,
        signal,
      });
      for (const raw of page.items ?? []) {
        const obj = transform(raw);
        if (obj !== undefined) fresh.set(objectKey(raw), obj);
      }
      continueToken = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? '';
    } while (continueToken);
    this.applyList(fresh);
    this.resourceVersion = resourceVersion;
  }

  /** Replaces the store with a complete list, emitting the differences, and marks the reflector synced. */
  private applyList(fresh: Map<string, T>): void {
    const { handlers } = this.options;
    for (const [key, old] of this.store) {
      if (!fresh.has(key)) {
        this.store.delete(key);
        handlers.deleted?.(old);
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.store.get(key);
      this.store.set(key, obj);
      if (old === undefined) handlers.added?.(obj);
      else handlers.updated?.(obj, old);
    }
    this.hasSynced = true;
    handlers.synced?.();
  }

  private async watch(signal: AbortSignal): Promise<void> {
    const { client, path, transform, handlers, random = Math.random } = this.options;
    // Like client-go: the server ends the watch after 5-10 minutes and we resume from the last version.
    const timeoutSeconds = 300 + Math.floor(random() * 300);
    await client.watch<R>(
      path,
      {
        ...this.selectors(),
        resourceVersion: this.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
      },
      (event) => {
        const rv = event.object.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (event.type === 'BOOKMARK') return;
        const key = objectKey(event.object);
        const old = this.store.get(key);
        if (event.type === 'DELETED') {
          if (old !== undefined) {
            this.store.delete(key);
            handlers.deleted?.(old);
          }
          return;
        }
        const obj = transform(event.object);
        if (obj === undefined) {
          if (old !== undefined) {
            this.store.delete(key);
            handlers.deleted?.(old);
          }
          return;
        }
        this.store.set(key, obj);
        if (old === undefined) handlers.added?.(obj);
        else handlers.updated?.(obj, old);
      },
      signal,
    );
  }
}
