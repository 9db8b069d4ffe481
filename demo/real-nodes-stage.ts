// The stage of `npm start -- --real-nodes` (demo/real-nodes.ts): the output, what the run started (the control
// plane, the real nodes, the view) and stops however it ends, even while a start is under way, the phases
// reached, and the waits and the kubectl the acts (real-nodes-acts.ts) share.

import type { RealNodeControlPlane, RealNodes } from '../test/realnodes/realnodes.ts';
import { ClusterObserver, type Snapshot } from './observer.ts';
import { LineOutput, TtyOutput, type Output } from './output.ts';
import { autoscalerLines, renderStatus, type NodeStatus } from './view.ts';

export const FIRST = 'node-1';
export const JOINING = 'node-2';
export const WORKLOAD = { name: 'gpu-workload', namespace: 'default', selector: 'app=gpu-workload' };
/** The device plugin DaemonSet (test/realnodes/fixtures/device-plugin.yaml) runs where this label is on. */
export const PLUGIN_LABEL = 'nodecare.test/device-plugin';
/** The shipped example SystemExtension's name (manifests/examples/gpu-device-plugin.yaml). */
export const EXTENSION = 'nvidia-device-plugin';

export const REAL_NODE_PHASES = {
  installed: 'nodecare installed as shipped: the agent Ready on the first node, the controller Available',
  'pod-pending': 'the GPU workload was Pending: no node offered nvidia.com/gpu',
  'node-held': `${JOINING} joined with the bootstrap taint from --register-with-taints and was held`,
  released: `${JOINING}'s kubelet counted the device plugin's GPUs healthy (allocatable): the extension turned Healthy, the bootstrap taint went`,
  'gpus-registered': `${JOINING}'s kubelet reports the GPUs the device plugin registered (nvidia.com/gpu capacity)`,
  'pod-running': `the GPU workload was bound to ${JOINING} and running`,
  'plugin-lost': 'the device plugin stopped: the runtime taint went on',
  'plugin-back': 'the device plugin came back: the runtime taint went off',
} as const;
export type Phase = keyof typeof REAL_NODE_PHASES;

export class RealNodesStage {
  readonly once: boolean;
  readonly tty: boolean;
  readonly out: Output;
  readonly startMs = Date.now();
  plane: RealNodeControlPlane | undefined;
  cluster: RealNodes | undefined;
  observer: ClusterObserver | undefined;
  private readonly abort = new AbortController();
  private readonly reached = new Map<Phase, number>();
  /** Starts under way: a stop waits for each to end, so that what it made is stopped too. */
  private readonly underway = new Set<Promise<unknown>>();
  private stopping: Promise<never> | undefined;

  constructor(once: boolean) {
    this.once = once;
    this.tty = !once && process.stdout.isTTY === true;
    this.out = this.tty ? new TtyOutput() : new LineOutput();
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** Awaits `start`, tracked until it ends (`keep` records what it made at once, for a stop meanwhile). */
  async begin<T>(start: Promise<T>, keep: (made: T) => void = () => undefined): Promise<T> {
    const kept = start.then((made) => {
      keep(made);
      return made;
    });
    this.underway.add(kept);
    try {
      return await kept;
    } finally {
      this.underway.delete(kept);
      this.abort.signal.throwIfAborted();
    }
  }

  /** The real nodes (started by the first act). */
  nodes(): RealNodes {
    if (!this.cluster) throw new Error('the nodes are not started');
    return this.cluster;
  }

  /** The cluster's view (started by the first act). */
  view(): ClusterObserver {
    if (!this.observer) throw new Error('the view is not started');
    return this.observer;
  }

  /** The control plane's slot directory, removed with it. */
  planeDir(): string {
    if (!this.plane) throw new Error('the control plane is not started');
    return this.plane.slot.dir;
  }

  /** Runs kubectl against the control plane; rejects with its stderr when it fails. */
  async kubectl(args: string[], input?: string): Promise<string> {
    if (!this.plane) throw new Error('the control plane is not started');
    const { code, stdout, stderr } = await this.plane.kubectl(args, input);
    if (code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${stderr.trim() || `exit code ${code}`}`);
    return stdout;
  }

  phase(id: Phase, detail: string): void {
    this.reached.set(id, Date.now());
    this.out.say(`✔ PHASE ${id}: ${REAL_NODE_PHASES[id]} — ${detail}`);
  }

  waitNode(
    id: Phase,
    what: string,
    check: (s: NodeStatus | undefined, snap: Snapshot) => boolean,
    ms = 180_000,
  ): Promise<Snapshot> {
    const onJoining = (snap: Snapshot): boolean => check(ClusterObserver.node(snap, JOINING), snap);
    return this.view().waitFor(id, what, onJoining, ms, this.abort.signal);
  }

  workloadPod(snap: Snapshot): Snapshot['pods'][number] | undefined {
    return snap.pods.find((p) => p.metadata?.name === WORKLOAD.name);
  }

  /** The last view (for a log without a live screen) and the summary, after `failed` was not reached. */
  reportFailure(failed: string, message: string): void {
    this.out.say(`✘ PHASE ${failed} NOT REACHED: ${message}`);
    const latest = this.observer?.latest;
    if (latest && !this.tty)
      for (const line of [
        ...renderStatus(latest.nodes, latest.leases, new Date()),
        ...autoscalerLines(undefined, latest.pods),
      ])
        this.out.say(line);
    for (const line of this.summary()) this.out.say(line);
  }

  summary(): string[] {
    const ids = Object.keys(REAL_NODE_PHASES) as Phase[];
    return [
      `Summary: ${this.reached.size} of ${ids.length} phases reached`,
      ...ids.map((id) => {
        const at = this.reached.get(id);
        const when = at === undefined ? '' : `+${Math.floor((at - this.startMs) / 1000)}s`;
        return `  ${at === undefined ? '✘' : '✔'} ${id.padEnd(18)} ${when.padStart(5)}  ${REAL_NODE_PHASES[id]}`;
      }),
    ];
  }

  /** Stops whatever was started (waiting for starts under way) and exits with `code`. */
  shutdown(code: number, why?: string): Promise<never> {
    return (this.stopping ??= (async (): Promise<never> => {
      const { out } = this;
      this.abort.abort(new Error('stopping'));
      this.observer?.stop();
      out.close();
      if (why) out.say(why);
      if (this.underway.size > 0) {
        out.say('Waiting for the start under way to end, to stop what it made…');
        await Promise.allSettled(this.underway);
      }
      out.say('Stopping the nodes (kubelets, containerd, their pods and mounts) and the control plane…');
      await this.cluster
        ?.stop()
        .catch((err: unknown) => out.say(`Stopping the nodes failed: ${String(err)}`));
      await this.plane
        ?.stop()
        .catch((err: unknown) => out.say(`Stopping the control plane failed: ${String(err)}`));
      out.say('Stopped.');
      process.exit(code);
    })());
  }
}
