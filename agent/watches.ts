// What the agent watches, stripped on ingest to what it uses: its own Node (field selector), the
// SystemExtensions (parsed once per change), and — only while a probe needs them — the pods on its node
// (podReady) and the ResourceSlices published for it (resourceSlices).

import { existsSync } from '../lib/fs.ts';
import {
  GROUP_VERSION,
  SYSTEM_EXTENSION,
  parseSystemExtension,
  type LabelSelector,
  type ParsedSystemExtension,
  type ProbeWatch,
  type SystemExtensionObject,
} from '../api/index.ts';
import { matchesSelector } from '../api/selector.ts';
import type { Clock } from '../lib/clock.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { Reflector, type ReflectorHandlers } from '../lib/kube/reflector.ts';
import type { Logger } from '../lib/log.ts';
import type { AgentMetrics } from './metrics.ts';
import { loadKubeletPods, type KubeletPods, type PodFacts, type SliceFacts } from './probes/index.ts';
import {
  toNodeSnapshot,
  toPodEntry,
  toSliceFacts,
  type NodeSnapshot,
  type PodEntry,
  type RawNode,
  type RawPod,
  type RawSlice,
} from './watched.ts';

/** How long a podReady probe waits for a pod source that just started to list (its timeout still applies). */
const POD_SYNC_WAIT_MS = 5_000;

function deferred(): { promise: Promise<void>; resolve(): void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Where the podReady probe's pods come from: this node's kubelet (its Pods API) or the API server. */
export type PodSource = 'kubelet' | 'apiserver';

/**
 * After the API server refused this agent the list of its node's pods (no right to list pods: the default
 * install grants none), it asks again this much later: the right may be granted (the component
 * agent-pods-from-api-server), and an agent per node asking every 30 s would be a load of refusals for nothing.
 */
export const POD_DENIED_RETRY_MS = 5 * 60_000;

/**
 * What a podReady probe says on a node with neither source: the kubelet's Pods API is not at `socket`, and the
 * API server refused the pod list (short enough for a Lease message, which keeps 256 characters with the
 * probe's own prefix).
 */
export function podsDeniedMessage(socket: string): string {
  const where = socket === '' ? 'is not used' : `is not at ${socket}`;
  // The remedies first: a long socket path is what a Lease's cap cuts.
  return `no pod source: add the component agent-kubelet-pods-api (the kubelet's Pods API ${where}) or agent-pods-from-api-server (this agent may not list pods); docs/agent.md, podReady`;
}

/**
 * Where podReady would read pods, as known at start (before any probe asks): the kubelet's Pods API where its
 * socket is there, else the API server (which needs the right to list pods). The kubelet may still answer
 * UNIMPLEMENTED, and the API server may refuse: the agent then says so again (onPodSource, onPodsDenied).
 */
export function podSourceAtStart(
  socket: string,
  exists: (path: string) => boolean = existsSync,
): { source: PodSource; why: string } {
  if (socket === '') return { source: 'apiserver', why: "--kubelet-pods-api-socket is ''" };
  if (exists(socket)) return { source: 'kubelet', why: `the kubelet's Pods API socket is at ${socket}` };
  return {
    source: 'apiserver',
    why: `no socket at ${socket} (the component agent-kubelet-pods-api mounts it where the kubelet serves the Pods API); the API server needs the right to list pods (the component agent-pods-from-api-server)`,
  };
}

/** What the agent's probes need watched besides its Node and the SystemExtensions (api/probe-kinds.ts). */
export type OnDemandWatches = Record<ProbeWatch, boolean>;

export interface WatchDeps {
  client: KubeClient;
  clock: Clock;
  nodeName: string;
  /**
   * The kubelet's Pods API socket ('' or absent: never): where it exists, the pods come from this node's
   * kubelet instead of a pod watch through the API server (agent/probes/kubelet-pods.ts).
   */
  kubeletPodsSocket?: string;
  /** Which source the pods now come from (for the log and the metric). */
  onPodSource?(source: PodSource): void;
  /**
   * The API server refused the pod list (403: the agent may not list pods) with no kubelet Pods API to read
   * instead (true), or a later list was allowed (false). Called on each change only.
   */
  onPodsDenied?(denied: boolean, err?: unknown): void;
  onChange(): void;
  onError(source: string, err: unknown): void;
  /** An object the agent could not handle (a poison object); it was skipped. */
  onSkipped(source: string, key: string, err: unknown): void;
}

/** The agent's reports of watch trouble: each failure counted and warned about, a poison object logged. */
export function watchReports(
  log: Logger,
  metrics: Pick<AgentMetrics, 'watchErrors'>,
): Pick<WatchDeps, 'onError' | 'onSkipped'> {
  return {
    onError: (source, err) => {
      metrics.watchErrors.inc({ source });
      log.warn({ err, source }, 'Watch failed; retrying with backoff');
    },
    onSkipped: (source, key, err) =>
      log.error({ err, source, object: key }, 'Skipped an object that could not be handled'),
  };
}

export class AgentWatches {
  readonly node: Reflector<RawNode, NodeSnapshot>;
  readonly systemExtensions: Reflector<
    SystemExtensionObject & { metadata: { name?: string } },
    ParsedSystemExtension
  >;
  private pods: Reflector<RawPod, PodEntry> | undefined;
  private kubeletPods: KubeletPods | undefined;
  /** The pod watch is wanted (a podReady probe is registered). */
  private podsWanted = false;
  /** Resolves when the current pod source has its first complete list (a new one per source). */
  private podsSynced = deferred();
  /** The API server refused the pod list; a retry waits POD_DENIED_RETRY_MS (ended by stop or no longer wanted). */
  private podsDenied = false;
  private deniedRetry: AbortController | undefined;
  private slices: Reflector<RawSlice, SliceFacts> | undefined;
  private readonly deps: WatchDeps;

  constructor(deps: WatchDeps) {
    this.deps = deps;
    const handlers = <T>(source: string): ReflectorHandlers<T> => ({
      added: () => deps.onChange(),
      updated: () => deps.onChange(),
      deleted: () => deps.onChange(),
      synced: () => deps.onChange(),
      error: (err) => deps.onError(source, err),
      skipped: (err, key) => deps.onSkipped(source, key, err),
    });
    this.node = new Reflector({
      client: deps.client,
      clock: deps.clock,
      path: '/api/v1/nodes',
      fieldSelector: `metadata.name=${deps.nodeName}`,
      transform: toNodeSnapshot,
      handlers: handlers<NodeSnapshot>('node'),
    });
    this.systemExtensions = new Reflector({
      client: deps.client,
      clock: deps.clock,
      path: `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`,
      transform: parseSystemExtension,
      handlers: handlers<ParsedSystemExtension>('systemextensions'),
    });
  }

  start(): void {
    this.node.start();
    this.systemExtensions.start();
  }

  get synced(): boolean {
    return this.node.synced && this.systemExtensions.synced;
  }

  currentNode(): NodeSnapshot | undefined {
    return this.node.store.values().next().value;
  }

  /** Starts or stops the pod and ResourceSlice watches so each runs only while some probe needs it. */
  setWatches(wanted: OnDemandWatches): void {
    this.setPodWatch(wanted.pods);
    if (wanted.resourceSlices && !this.slices) {
      this.slices = new Reflector({
        client: this.deps.client,
        clock: this.deps.clock,
        path: '/apis/resource.k8s.io/v1/resourceslices',
        fieldSelector: `spec.nodeName=${this.deps.nodeName}`,
        transform: toSliceFacts,
        handlers: {
          error: (err) => this.deps.onError('resourceslices', err),
          skipped: (err, key) => this.deps.onSkipped('resourceslices', key, err),
        },
      });
      this.slices.start();
    } else if (!wanted.resourceSlices && this.slices) {
      void this.slices.stop();
      this.slices = undefined;
    }
  }

  /** The ResourceSlices published for this node (empty while no probe asked for them). */
  async resourceSlices(): Promise<SliceFacts[]> {
    const slices = this.slices;
    if (!slices) return [];
    // Before Kubernetes 1.34 the type is not served: say so rather than read it as "no slices".
    if (slices.notServed)
      throw new Error(
        'this API server does not serve resource.k8s.io/v1 ResourceSlices (Kubernetes 1.34 or later)',
      );
    if (!slices.synced) throw new Error('ResourceSlice cache not synced yet');
    return [...slices.store.values()];
  }

  /**
   * Starts or stops the pod source: the kubelet's Pods API where its socket exists, else (or once the kubelet
   * says it does not serve it) a watch of this node's pods through the API server.
   */
  private setPodWatch(wanted: boolean): void {
    this.podsWanted = wanted;
    if (!wanted) {
      this.deniedRetry?.abort();
      this.deniedRetry = undefined;
      this.kubeletPods?.stop();
      this.kubeletPods = undefined;
      void this.pods?.stop();
      this.pods = undefined;
      return;
    }
    if (this.pods || this.kubeletPods || this.deniedRetry) return;
    this.podsSynced = deferred();
    const socket = this.deps.kubeletPodsSocket ?? '';
    if (socket !== '' && existsSync(socket)) void this.startKubeletPods(socket);
    else this.startApiServerPods();
  }

  private async startKubeletPods(socket: string): Promise<void> {
    const KubeletPodsClass = await loadKubeletPods();
    if (!this.podsWanted || this.pods || this.kubeletPods) return;
    const source = new KubeletPodsClass({
      socket,
      clock: this.deps.clock,
      onChange: () => {
        if (source.synced && this.kubeletPods === source) this.podsSynced.resolve();
        if (source.unimplemented && this.kubeletPods === source) {
          // This kubelet does not serve the Pods API (its feature gate is off): the API server it is.
          source.stop();
          this.kubeletPods = undefined;
          this.startApiServerPods();
        }
        this.deps.onChange();
      },
      onError: (err) => this.deps.onError('kubelet-pods', err),
    });
    this.kubeletPods = source;
    source.start();
    this.deps.onPodSource?.('kubelet');
  }

  private startApiServerPods(): void {
    const reflector: Reflector<RawPod, PodEntry> = new Reflector({
      client: this.deps.client,
      clock: this.deps.clock,
      path: '/api/v1/pods',
      fieldSelector: `spec.nodeName=${this.deps.nodeName}`,
      transform: toPodEntry,
      handlers: {
        synced: () => {
          this.podsSynced.resolve();
          if (!this.podsDenied) return;
          this.podsDenied = false;
          this.deps.onPodsDenied?.(false);
        },
        error: (err) => {
          if (isKubeError(err, KubeErrorCode.Forbidden) && !reflector.synced) this.refused(reflector, err);
          else this.deps.onError('pods', err);
        },
        skipped: (err, key) => this.deps.onSkipped('pods', key, err),
      },
    });
    this.pods = reflector;
    reflector.start();
    // A retry after a refusal is not a new source: the refusal stands until a list is allowed (synced above).
    if (!this.podsDenied) this.deps.onPodSource?.('apiserver');
  }

  /**
   * The API server refused the pod list: said once, probes answered at once (podsMatching), and asked again
   * POD_DENIED_RETRY_MS later rather than at the reflector's backoff.
   */
  private refused(reflector: Reflector<RawPod, PodEntry>, err: unknown): void {
    if (this.pods !== reflector) return;
    void reflector.stop();
    this.pods = undefined;
    if (!this.podsDenied) {
      this.podsDenied = true;
      this.deps.onPodsDenied?.(true, err);
    }
    this.podsSynced.resolve();
    const retry = new AbortController();
    this.deniedRetry = retry;
    void this.deps.clock.sleep(POD_DENIED_RETRY_MS, retry.signal).then(
      () => {
        if (this.deniedRetry !== retry) return;
        this.deniedRetry = undefined;
        if (!this.podsWanted || this.pods || this.kubeletPods) return;
        this.podsSynced = deferred();
        this.startApiServerPods();
      },
      () => undefined,
    );
  }

  async podsMatching(namespace: string, selector: LabelSelector): Promise<PodFacts[]> {
    // A source just started (the agent restarted, a podReady probe was registered) lists within moments: wait
    // for it, bounded, rather than report "could not determine" for a pod that is Ready.
    if (this.podsWanted && !this.podsDenied && !(this.kubeletPods ?? this.pods)?.synced)
      await Promise.race([this.podsSynced.promise, this.deps.clock.sleep(POD_SYNC_WAIT_MS)]);
    const pods = this.kubeletPods ?? this.pods;
    if (this.podsDenied && !pods?.synced)
      throw new Error(podsDeniedMessage(this.deps.kubeletPodsSocket ?? ''));
    if (!pods) {
      if (this.podsWanted) throw new Error('pod source not started yet');
      return [];
    }
    if (!pods.synced)
      throw new Error(
        this.kubeletPods
          ? "the kubelet's Pods API has not sent its pod list yet"
          : 'pod cache not synced yet',
      );
    return [...pods.store.values()]
      .filter((p) => p.namespace === namespace && matchesSelector(selector, p.labels))
      .map(({ name, ready }) => ({ name, ready }));
  }

  async stop(): Promise<void> {
    this.deniedRetry?.abort();
    this.deniedRetry = undefined;
    await Promise.all([
      this.node.stop(),
      this.systemExtensions.stop(),
      this.pods?.stop(),
      this.kubeletPods?.stop(),
      this.slices?.stop(),
    ]);
  }
}
