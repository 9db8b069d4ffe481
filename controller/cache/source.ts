// One list-and-watch source that knows whether it is in sync, relisting after a failure with a capped
// backoff (client-go's ListAndWatch), over lib/kube's Reflector.

import type { KubeClient } from '../../lib/kube/client.ts';
import { isKubeError, KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { Backoff, WATCH_BACKOFF } from '../../lib/kube/backoff.ts';
import { Reflector, type ReflectorOptions } from '../../lib/kube/reflector.ts';

interface Meta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/**
 * The client a relisting reflector uses. A new reflector reads a 404 on its first list as "this resource
 * type does not exist" and syncs empty; in a relist that would wipe what we know whenever an API server
 * that just restarted does not serve a CRD's path yet. Here a 404 is an error to retry with backoff: the
 * source stays out of sync until a real list replaces what it knew.
 */
function relistClient(client: KubeClient): KubeClient {
  return Object.create(client, {
    get: {
      value: async (...args: Parameters<KubeClient['get']>): Promise<unknown> => {
        try {
          return await client.get(...args);
        } catch (err) {
          if (!isKubeError(err, KubeErrorCode.NotFound)) throw err;
          throw new KubeError(KubeErrorCode.ServerError, err.status, `${err.message} (while relisting)`);
        }
      },
    },
  }) as KubeClient;
}

/** A source that stayed in sync this long has recovered: its next relist starts from the shortest backoff. */
const STABLE_MS = 60_000;

export interface SourceOptions<R, T> extends ReflectorOptions<R, T> {
  /** Called whenever `synced` turns, either way. */
  syncChanged?(): void;
}

/**
 * One list-and-watch source that knows whether it is in sync. After a failed list or watch it is not: it
 * may have missed events. It relists (as client-go's ListAndWatch does after every failure, keeping what it
 * knew so the differences come out as updates and deletions), after a capped backoff so a server that keeps
 * failing is not hammered with lists, and is in sync again once that list is in.
 */
export class Source<R extends Meta, T> {
  private readonly options: SourceOptions<R, T>;
  private readonly backoff: Backoff;
  private reflector: Reflector<R, T>;
  private fresh = false;
  private syncedAtMs = 0;
  private running = false;
  private stopping = new AbortController();
  private restarting: Promise<void> = Promise.resolve();

  constructor(options: SourceOptions<R, T>) {
    this.options = options;
    this.backoff = new Backoff(WATCH_BACKOFF, options.random);
    this.reflector = this.make(new Map(), options.client);
  }

  get store(): Map<string, T> {
    return this.reflector.store;
  }

  /** The last list is complete and no list or watch failed since. */
  get synced(): boolean {
    return this.fresh;
  }

  start(): void {
    this.running = true;
    this.stopping = new AbortController();
    this.reflector.start();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    await this.restarting;
    await this.reflector.stop();
  }

  private make(known: Map<string, T>, client: KubeClient): Reflector<R, T> {
    const { handlers, clock } = this.options;
    const reflector = new Reflector<R, T>({
      ...this.options,
      client,
      handlers: {
        ...handlers,
        synced: () => {
          const turned = !this.fresh;
          this.fresh = true;
          this.syncedAtMs = clock.monotonic();
          handlers.synced?.();
          if (turned) this.options.syncChanged?.();
        },
        error: (err) => {
          handlers.error?.(err);
          this.relist();
        },
      },
    });
    for (const [key, value] of known) reflector.store.set(key, value);
    return reflector;
  }

  private relist(): void {
    // Before the first complete list the reflector keeps retrying its list by itself.
    if (!this.fresh || !this.running) return;
    this.fresh = false;
    this.options.syncChanged?.();
    const { clock } = this.options;
    if (clock.monotonic() - this.syncedAtMs >= STABLE_MS) this.backoff.reset();
    const delayMs = this.backoff.next();
    const failed = this.reflector;
    const stopping = this.stopping.signal;
    this.restarting = (async () => {
      await failed.stop();
      await clock.sleep(delayMs, stopping).catch(() => undefined);
      if (!this.running) return;
      this.reflector = this.make(failed.store, relistClient(this.options.client));
      this.reflector.start();
    })();
  }
}
