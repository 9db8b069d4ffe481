// What the demo sees of the cluster: it lists the nodes, nodecare's Leases, ClusterHealth, Karpenter's
// NodeClaims and the workload's pods about once a second (the demo is not resource-constrained, so plain
// polling keeps it simple) and lets the scenario wait for a state.

import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  CLUSTER_HEALTH,
  LEASE_NAMESPACE,
  LeaseLabel,
  decodeLease,
  type ObservedLease,
} from '../api/index.ts';
import { listNodeClaims, type NodeClaim } from '../test/autoscalers/karpenter.ts';
import { nodeStatuses, type HealthCondition, type NodeStatus } from './view.ts';

export interface Snapshot {
  at: Date;
  nodes: V1Node[];
  leases: ObservedLease[];
  statuses: NodeStatus[];
  /** ClusterHealth `cluster`'s conditions; undefined while the controller has not written it. */
  clusterHealth: HealthCondition[] | undefined;
  /** Karpenter's NodeClaims (every NodePool); undefined where the observer does not list them. */
  nodeClaims: NodeClaim[] | undefined;
  /** The workload's pods. */
  pods: V1Pod[];
  /** Set where there is no workload to follow (the existing-cluster demo): the view shows no workload line. */
  noWorkload?: true;
}

/** Which pods the view follows. */
export interface WorkloadSelector {
  namespace: string;
  labelSelector: string;
  /** Whether Karpenter's NodeClaims are listed (default true; a cluster without Karpenter has none). */
  nodeClaims?: boolean;
  /** false: no workload (no pods listed; namespace and labelSelector are not used). */
  pods?: false;
  /** Which nodes are listed (a label selector; default every node): on a user's cluster, only the demo's. */
  nodeSelector?: string;
}

interface Waiter {
  check: (snapshot: Snapshot) => boolean;
  resolve: (snapshot: Snapshot) => void;
}

/** A phase of the story that did not happen as it should. */
export class PhaseError extends Error {
  readonly phase: string;
  constructor(phase: string, message: string) {
    super(message);
    this.phase = phase;
  }
}

/** A phase not reached in time. */
export class PhaseTimeout extends PhaseError {}

export class ClusterObserver {
  latest: Snapshot | undefined;
  /** The last poll's error, if it failed (cleared by the next successful poll). */
  lastError: string | undefined;
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly waiters = new Set<Waiter>();
  private readonly listeners: Array<(snapshot: Snapshot) => void> = [];
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private readonly intervalMs: number;
  private readonly workload: WorkloadSelector;

  constructor(kubeconfigPath: string, workload: WorkloadSelector, intervalMs = 1000) {
    this.intervalMs = intervalMs;
    this.workload = workload;
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    this.core = kc.makeApiClient(CoreV1Api);
    this.coordination = kc.makeApiClient(CoordinationV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
  }

  onSnapshot(listener: (snapshot: Snapshot) => void): void {
    this.listeners.push(listener);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.poll(), this.intervalMs);
    void this.poll();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const [nodes, leases, health, nodeClaims, pods] = await Promise.all([
        this.core.listNode(this.workload.nodeSelector ? { labelSelector: this.workload.nodeSelector } : {}),
        this.coordination.listNamespacedLease({ namespace: LEASE_NAMESPACE, labelSelector: LeaseLabel.role }),
        this.custom
          .getClusterCustomObject({
            group: API_GROUP,
            version: API_VERSION,
            plural: CLUSTER_HEALTH.plural,
            name: CLUSTER_HEALTH.name,
          })
          .then(
            (obj) => (obj as { status?: { conditions?: HealthCondition[] } }).status?.conditions ?? [],
            (err: unknown) => {
              // Not written yet (404) is normal before the controller's first roll-up.
              if ((err as { code?: number }).code === 404) return undefined;
              throw err;
            },
          ),
        this.workload.nodeClaims === false ? Promise.resolve(undefined) : listNodeClaims(this.custom),
        this.workload.pods === false
          ? Promise.resolve({ items: [] })
          : this.core.listNamespacedPod({
              namespace: this.workload.namespace,
              labelSelector: this.workload.labelSelector,
            }),
      ]);
      const observed = leases.items.flatMap((lease) => {
        const decoded = decodeLease({ metadata: lease.metadata ?? {}, spec: lease.spec });
        return decoded ? [decoded] : [];
      });
      const at = new Date();
      const snapshot: Snapshot = {
        at,
        nodes: nodes.items,
        leases: observed,
        statuses: nodeStatuses(nodes.items, observed, at, { nodeClaims: nodeClaims ?? [] }),
        clusterHealth: health,
        nodeClaims,
        pods: pods.items,
        ...(this.workload.pods === false ? { noWorkload: true as const } : {}),
      };
      this.latest = snapshot;
      this.lastError = undefined;
      for (const listener of this.listeners) listener(snapshot);
      for (const waiter of [...this.waiters]) {
        if (waiter.check(snapshot)) {
          this.waiters.delete(waiter);
          waiter.resolve(snapshot);
        }
      }
    } catch (err) {
      this.lastError = err instanceof Error ? err.message.split('\n')[0] : String(err);
    } finally {
      this.polling = false;
    }
  }

  /**
   * Resolves with the first snapshot for which `check` holds; rejects with PhaseTimeout naming `phase` after
   * `timeoutMs`, or when `signal` aborts.
   */
  waitFor(
    phase: string,
    what: string,
    check: (snapshot: Snapshot) => boolean,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<Snapshot> {
    if (this.latest && check(this.latest)) return Promise.resolve(this.latest);
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.waiters.delete(waiter);
      };
      const waiter: Waiter = {
        check,
        resolve: (snapshot) => {
          done();
          resolve(snapshot);
        },
      };
      const onAbort = (): void => {
        done();
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      const timer = setTimeout(() => {
        done();
        const error = this.lastError ? ` (last API error: ${this.lastError})` : '';
        reject(new PhaseTimeout(phase, `${what} not reached within ${timeoutMs / 1000} s${error}`));
      }, timeoutMs);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  /** The status of one node in a snapshot. */
  static node(snapshot: Snapshot, name: string): NodeStatus | undefined {
    return snapshot.statuses.find((s) => s.name === name);
  }
}
