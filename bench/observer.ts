// What the benchmark measures with: its own watches on the nodecare Leases, the Nodes and the Events, each
// event stamped with the monotonic time it arrived. Every figure comes from observed API state, never from
// what the programs say about themselves. Only a few fields of each object are kept.

import {
  API_GROUP,
  API_VERSION,
  CLUSTER_HEALTH,
  DEFAULT_BOOTSTRAP_TAINT_KEY,
  DEFAULT_RUNTIME_TAINT_KEY,
  LEASE_NAMESPACE,
  LeaseAnnotation,
  LeaseLabel,
  NODE_CONDITION_TYPE,
  NODE_STATUS_LABEL,
} from '../api/index.ts';
import { systemClock } from '../lib/clock.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { Reflector } from '../lib/kube/reflector.ts';
import { leasesPath } from '../lib/kube/paths.ts';

export interface SeenNode {
  name: string;
  bootstrapTaint: boolean;
  runtimeTaint: boolean;
  label: string;
  condition: string;
  conditionReason: string;
}

export interface SeenLease {
  name: string;
  state: string;
}

export interface RawNode {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: { taints?: Array<{ key: string }> };
  status?: { conditions?: Array<{ type: string; status: string; reason?: string }> };
}

interface RawLease {
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
}

export function toSeenNode(raw: RawNode): SeenNode {
  const taints = raw.spec?.taints ?? [];
  const condition = raw.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE);
  return {
    name: raw.metadata?.name ?? '',
    bootstrapTaint: taints.some((t) => t.key === DEFAULT_BOOTSTRAP_TAINT_KEY),
    runtimeTaint: taints.some((t) => t.key === DEFAULT_RUNTIME_TAINT_KEY),
    label: raw.metadata?.labels?.[NODE_STATUS_LABEL] ?? '',
    condition: condition?.status ?? '',
    conditionReason: condition?.reason ?? '',
  };
}

interface Waiter<T> {
  test(obj: T): boolean;
  resolve(atMs: number): void;
}

/** A watch of one collection with arrival times, event counts and waiters on a predicate per object. */
class Watched<R extends { metadata?: { name?: string } }, T extends { name: string }> {
  readonly reflector: Reflector<R, T>;
  /** Watch events (added or updated) received, i.e. writes observed. */
  writes = 0;
  private readonly waiters = new Map<string, Set<Waiter<T>>>();
  private onChange: ((obj: T, atMs: number) => void) | undefined;

  constructor(client: KubeClient, path: string, transform: (raw: R) => T, labelSelector?: string) {
    this.reflector = new Reflector<R, T>({
      client,
      clock: systemClock,
      path,
      labelSelector,
      transform,
      handlers: {
        added: (obj) => this.seen(obj, true),
        updated: (obj) => this.seen(obj, true),
        // A quiet watch (no events, no bookmark) times out and resumes by itself: not worth a line.
        error: (err) => {
          if (!isKubeError(err, KubeErrorCode.Timeout))
            process.stderr.write(`[bench] watch ${path}: ${String(err)}\n`);
        },
      },
    });
  }

  /** Every object change from now on (for convergence checks). */
  listen(fn: ((obj: T, atMs: number) => void) | undefined): void {
    this.onChange = fn;
  }

  private seen(obj: T, write: boolean): void {
    const atMs = performance.now();
    if (write && this.reflector.synced) this.writes++;
    this.onChange?.(obj, atMs);
    const waiting = this.waiters.get(obj.name);
    if (!waiting) return;
    for (const w of [...waiting]) {
      if (w.test(obj)) {
        waiting.delete(w);
        w.resolve(atMs);
      }
    }
    if (waiting.size === 0) this.waiters.delete(obj.name);
  }

  /**
   * Resolves with the arrival time of the first event after this call in which `name` satisfies `test`
   * (at once if its current state does), or undefined after `timeoutMs`.
   */
  waitFor(name: string, test: (obj: T) => boolean, timeoutMs: number): Promise<number | undefined> {
    const current = this.reflector.store.get(name);
    if (current && test(current)) return Promise.resolve(performance.now());
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.get(name)?.delete(waiter);
        resolve(undefined);
      }, timeoutMs);
      const waiter: Waiter<T> = {
        test,
        resolve: (atMs) => {
          clearTimeout(timer);
          resolve(atMs);
        },
      };
      let set = this.waiters.get(name);
      if (!set) {
        set = new Set();
        this.waiters.set(name, set);
      }
      set.add(waiter);
    });
  }

  get(name: string): T | undefined {
    return this.reflector.store.get(name);
  }
}

export class Observer {
  readonly nodes: Watched<RawNode, SeenNode>;
  readonly leases: Watched<RawLease, SeenLease>;
  readonly events: Watched<RawLease, { name: string }>;
  /** ClusterHealth `cluster`: each watch event is one write of the roll-up. */
  readonly clusterHealth: Watched<RawLease, { name: string }>;

  constructor(client: KubeClient) {
    this.nodes = new Watched(client, '/api/v1/nodes', toSeenNode);
    this.leases = new Watched(
      client,
      leasesPath(LEASE_NAMESPACE),
      (raw: RawLease) => ({
        name: raw.metadata?.name ?? '',
        state: raw.metadata?.annotations?.[LeaseAnnotation.state] ?? '',
      }),
      LeaseLabel.role,
    );
    // Events written by anyone (the controller records them on transitions only).
    this.events = new Watched(client, '/api/v1/events', (raw: RawLease) => ({
      name: `${raw.metadata?.namespace ?? ''}/${raw.metadata?.name ?? ''}`,
    }));
    this.clusterHealth = new Watched(
      client,
      `/apis/${API_GROUP}/${API_VERSION}/${CLUSTER_HEALTH.plural}`,
      (raw: RawLease) => ({ name: raw.metadata?.name ?? '' }),
    );
  }

  async start(): Promise<void> {
    this.nodes.reflector.start();
    this.leases.reflector.start();
    this.events.reflector.start();
    this.clusterHealth.reflector.start();
    while (!(
      this.nodes.reflector.synced &&
      this.leases.reflector.synced &&
      this.events.reflector.synced &&
      this.clusterHealth.reflector.synced
    ))
      await new Promise((r) => setTimeout(r, 50));
  }

  async stop(): Promise<void> {
    await Promise.all([
      this.nodes.reflector.stop(),
      this.leases.reflector.stop(),
      this.events.reflector.stop(),
      this.clusterHealth.reflector.stop(),
    ]);
  }

  /** Writes observed so far: lease, node, event and roll-up changes. */
  writeCount(): { leases: number; nodes: number; events: number; clusterHealth: number } {
    return {
      leases: this.leases.writes,
      nodes: this.nodes.writes,
      events: this.events.writes,
      clusterHealth: this.clusterHealth.writes,
    };
  }

  /**
   * Resolves with the arrival time at which every node in `expected` satisfied its predicate, or undefined
   * after `timeoutMs` (with the names still waiting in `missing`), and the arrival time of the first node change
   * seen after the call (`firstChangeAtMs`: the first node write that reached this watch).
   */
  async converged(
    expected: Map<string, (node: SeenNode) => boolean>,
    timeoutMs: number,
  ): Promise<{ atMs: number | undefined; missing: string[]; firstChangeAtMs: number | undefined }> {
    const pending = new Set<string>();
    for (const [name, test] of expected) {
      const node = this.nodes.get(name);
      if (!node || !test(node)) pending.add(name);
    }
    if (pending.size === 0) return { atMs: performance.now(), missing: [], firstChangeAtMs: undefined };
    let firstChangeAtMs: number | undefined;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.nodes.listen(undefined);
        resolve({ atMs: undefined, missing: [...pending], firstChangeAtMs });
      }, timeoutMs);
      this.nodes.listen((node, atMs) => {
        firstChangeAtMs ??= atMs;
        const test = expected.get(node.name);
        if (!test) return;
        if (test(node)) pending.delete(node.name);
        else pending.add(node.name);
        if (pending.size === 0) {
          clearTimeout(timer);
          this.nodes.listen(undefined);
          resolve({ atMs, missing: [], firstChangeAtMs });
        }
      });
    });
  }
}
