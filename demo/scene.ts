// The stage the demo's acts play on (acts.ts): the cluster, the observer's view, the output, the timing and the
// autoscaler's record, with the waits the acts share. It adopts every node that appears (starting its agent;
// the first is the GPU node, which it boots: its extensions, and the kubelet's part for its GPUs) and remembers
// every ClusterHealth state seen.

import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { DemoCluster, DemoNode, GpuNodeEndpoints } from './cluster.ts';
import { GPU_RESOURCE } from './endpoints.ts';
import { ClusterObserver, type Snapshot } from './observer.ts';
import type { AutoscalerRecord, PhaseId, ScenarioOutput, ScenarioTiming } from './story.ts';
import { NodeState, type NodeStatus } from './view.ts';

export function record(autoscaler: AutoscalerRecord, snapshot: Snapshot): void {
  for (const claim of snapshot.nodeClaims ?? []) autoscaler.nodeClaims.add(claim.metadata.name);
  const held = new Set(snapshot.statuses.filter((s) => s.taints.includes('bootstrap')).map((s) => s.name));
  for (const pod of snapshot.pods) {
    const node = pod.spec?.nodeName;
    if (!node && held.size > 0 && pod.status?.phase === 'Pending') autoscaler.podPendingWhileHeld = true;
    if (node && held.has(node)) autoscaler.podBoundWhileHeld = true;
  }
}

export const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** Ready, with neither of nodecare's taints (the existing-cluster demo's node keeps a taint of its own). */
export function isReady(status: NodeStatus | undefined): boolean {
  return (
    status?.state === NodeState.Ready &&
    !status.taints.includes('bootstrap') &&
    !status.taints.includes('runtime') &&
    status.condition?.status === 'True'
  );
}

/** The roll-up condition every node's extensions feed in the demo. */
export const EVERY_NODE_READY = 'EveryNodeReady';

export function everyNodeReady(
  snapshot: Snapshot,
): { status: string; reason?: string; message?: string } | undefined {
  return snapshot.clusterHealth?.find((c) => c.type === EVERY_NODE_READY);
}

export function describeExtension(status: NodeStatus | undefined, name: string): string {
  const ext = status?.extensions.find((e) => e.name === name);
  return ext ? `${name} ${ext.state ?? 'no lease'} (${ext.reason})` : `${name} (not reported)`;
}

/** The node's GPUs as its kubelet counts them: all in capacity, the Healthy ones in allocatable. */
export function gpuCounts(
  snapshot: Snapshot,
  name: string,
): { capacity: string | undefined; allocatable: string | undefined } {
  const status = snapshot.nodes.find((n) => n.metadata?.name === name)?.status;
  return {
    capacity: status?.capacity?.[GPU_RESOURCE],
    allocatable: status?.allocatable?.[GPU_RESOURCE],
  };
}

export function describeGpus(snapshot: Snapshot, name: string): string {
  const { capacity, allocatable } = gpuCounts(snapshot, name);
  return `kubelet: ${GPU_RESOURCE} capacity ${capacity ?? '-'}, allocatable ${allocatable ?? '-'}`;
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** Whether KWOK has turned the node Ready: its node-initialize stage, the one that writes allocatable, is done. */
export function kwokReady(node: V1Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * The GPU node's extensions start: its device plugin serves at once with its GPUs Unhealthy (the driver
 * loads), kube-proxy and the logging agent start a few seconds later, and the GPUs turn Healthy after
 * `gpuHealthyAfterMs`.
 */
export async function startGpuExtensions(
  eps: GpuNodeEndpoints,
  name: string,
  timing: ScenarioTiming,
  out: ScenarioOutput,
  signal: AbortSignal,
): Promise<void> {
  const later = (ms: number, what: () => Promise<void>, said: string): Promise<void> =>
    sleep(ms, signal)
      .then(what)
      .then(() => out.say(said))
      .catch((err: unknown) => {
        if (!signal.aborted) out.say(`On ${name}: ${String(err)}`);
      });
  await Promise.all([
    later(
      0,
      () => eps.devicePlugin.start(),
      `gpu-plugin on ${name} is up, its GPU not healthy yet (driver loading): ${eps.devicePlugin.description}`,
    ),
    later(
      timing.kubeProxyDelayMs,
      () => eps.kubeProxy.start(),
      `kube-proxy on ${name} is up: ${eps.kubeProxy.description}`,
    ),
    later(
      timing.logAgentDelayMs,
      () => eps.logAgent.start(),
      `log-agent on ${name} is up: ${eps.logAgent.description}`,
    ),
    later(
      timing.gpuHealthyAfterMs,
      async () => eps.devicePlugin.setDevicesHealthy(true),
      `The GPU driver on ${name} has loaded: gpu-plugin now lists its GPU Healthy on the kubelet's ` +
        'ListAndWatch stream.',
    ),
  ]);
}

export class Scene {
  readonly proxy: GpuNodeEndpoints['kubeProxy'];
  /** Every ClusterHealth state seen, so a short-lived one (Progressing while booting) is not missed. */
  readonly healthSeen = new Set<string>();
  /** The agents started and the GPU node's boot, under way. */
  readonly starts: Array<Promise<void>> = [];
  readonly cluster: DemoCluster;
  readonly observer: ClusterObserver;
  readonly out: ScenarioOutput;
  readonly timing: ScenarioTiming;
  readonly autoscaler: AutoscalerRecord;
  readonly signal: AbortSignal;
  private readonly endpoints: GpuNodeEndpoints;

  constructor(
    cluster: DemoCluster,
    observer: ClusterObserver,
    out: ScenarioOutput,
    timing: ScenarioTiming,
    autoscaler: AutoscalerRecord,
    signal: AbortSignal,
  ) {
    this.cluster = cluster;
    this.observer = observer;
    this.out = out;
    this.timing = timing;
    this.autoscaler = autoscaler;
    this.signal = signal;
    if (!cluster.endpoints) throw new Error("the GPU node's extensions are not registered");
    this.endpoints = cluster.endpoints;
    this.proxy = cluster.endpoints.kubeProxy;
  }

  /** A phase timeout, scaled for a loaded machine. */
  t(ms: number): number {
    return ms * this.timing.timeoutFactor;
  }

  /** Starts following the view: every node gets its agent as soon as it appears (the agent DaemonSet's pod). */
  follow(): void {
    const { cluster, out, signal } = this;
    this.observer.onSnapshot((snapshot) => {
      record(this.autoscaler, snapshot);
      const c = everyNodeReady(snapshot);
      if (c) this.healthSeen.add(`${c.status}/${c.reason ?? ''}`);
      for (const node of snapshot.nodes) {
        const name = node.metadata?.name;
        if (!name || cluster.nodes.some((n) => n.name === name)) continue;
        const first = cluster.nodes.length === 0;
        const adopted = cluster.adopt(name);
        if (!first) out.say(`${name} appeared.`);
        const boot = first ? this.bootGpuNode(adopted) : this.startAgent(adopted);
        this.starts.push(
          boot.catch((err: unknown) => {
            if (!signal.aborted) out.say(`Could not boot ${name}: ${String(err)}`);
          }),
        );
      }
    });
  }

  private async startAgent(node: DemoNode): Promise<void> {
    this.out.say(`Starting the nodecare-agent of ${node.name}.`);
    await this.cluster.startAgent(node);
  }

  /**
   * The GPU node boots: its extensions start; once KWOK has turned it Ready, the kubelet's part (played by the
   * demo, kubelet.ts) zeroes its GPUs and from then on counts them from the plugin's ListAndWatch stream; then
   * its agent starts, so it never reads the GPUs Karpenter's KWOK provider wrote when it created the Node.
   */
  private async bootGpuNode(node: DemoNode): Promise<void> {
    const { out, signal } = this;
    out.say(`${node.name} appeared (a GPU machine booting).`);
    const extensions = startGpuExtensions(this.endpoints, node.name, this.timing, out, signal);
    await this.observer.waitFor(
      'node-launched',
      `${node.name} Ready (KWOK)`,
      (s) => kwokReady(s.nodes.find((n) => n.metadata?.name === node.name)),
      this.t(60_000),
      signal,
    );
    out.say(
      `${node.name} is Ready (KWOK). The demo plays its kubelet's device manager: the one client of ` +
        `gpu-plugin's ListAndWatch, it writes every GPU to the node's status.capacity[${GPU_RESOURCE}] and the ` +
        'Healthy ones to status.allocatable (KWOK nodes have no kubelet).',
    );
    await this.cluster.startKubelet(node, (line) => out.say(line));
    await this.startAgent(node);
    await extensions;
  }

  waitNode(
    phase: PhaseId,
    name: string,
    what: string,
    check: (status: NodeStatus | undefined, snapshot: Snapshot) => boolean,
    timeoutMs: number,
  ): Promise<Snapshot> {
    return this.observer.waitFor(
      phase,
      `${name}: ${what}`,
      (s) => check(ClusterObserver.node(s, name), s),
      this.t(timeoutMs),
      this.signal,
    );
  }

  waitHealth(
    phase: PhaseId,
    what: string,
    check: (c: ReturnType<typeof everyNodeReady>) => boolean,
    timeoutMs: number,
  ): Promise<Snapshot> {
    return this.observer.waitFor(
      phase,
      `ClusterHealth ${EVERY_NODE_READY} ${what}`,
      (s) => check(everyNodeReady(s)),
      this.t(timeoutMs),
      this.signal,
    );
  }

  /** The demo's one workload pod, as the snapshot shows it. */
  workload(s: Snapshot): V1Pod | undefined {
    return s.pods[0];
  }
}
