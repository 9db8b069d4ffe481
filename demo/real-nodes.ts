// `npm start -- --real-nodes`: the GPU story on real kubelets, with the same narrated view as the KWOK demo.
// The image is built from the Dockerfile (BuildKit), a control plane and a real kubelet node with containerd
// start (test/realnodes: the harness the real-node tests use), and nodecare is installed as shipped
// (`kubectl apply -k`, only the image overridden). Then a second node joins with `--register-with-taints`
// carrying the bootstrap taint and waits, held by nodecare, until its GPU device plugin has registered with its
// kubelet; the GPU workload that was pending runs there. Then the device plugin stops (runtime taint) and comes
// back (cleared). Root only: kubelets need it.
//
// With --once it runs without the live screen, checks every phase and exits 0, or 1 naming the phase that was
// not reached; otherwise it keeps the cluster until Ctrl-C.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  ExtensionState,
} from '../api/index.ts';
import { buildImage, describeImage } from '../test/image/image.ts';
import {
  TESTBIN_IMAGE,
  applyShipped,
  kustomizationWithImage,
  writeTestbinArchive,
} from '../test/realnodes/install.ts';
import {
  startNodes,
  startRealNodeControlPlane,
  type RealNodeControlPlane,
  type RealNodes,
} from '../test/realnodes/realnodes.ts';
import { ClusterObserver, PhaseError, type Snapshot } from './observer.ts';
import { LineOutput, TtyOutput, type Output } from './output.ts';
import { autoscalerLines, renderStatus, type NodeStatus } from './view.ts';

const ROOT = join(import.meta.dirname, '..');
const FIXTURES = join(ROOT, 'test', 'realnodes', 'fixtures');
const GPU_EXAMPLE = join(ROOT, 'manifests', 'examples', 'gpu-device-plugin.yaml');
const FIRST = 'node-1';
const JOINING = 'node-2';
const WORKLOAD = { name: 'gpu-workload', namespace: 'default', selector: 'app=gpu-workload' };
/** The device plugin DaemonSet (test/realnodes/fixtures/device-plugin.yaml) runs where this label is on. */
const PLUGIN_LABEL = 'nodecare.test/device-plugin';
/** The shipped example SystemExtension's name (manifests/examples/gpu-device-plugin.yaml). */
const EXTENSION = 'nvidia-device-plugin';

export const REAL_NODE_PHASES = {
  installed: 'nodecare installed as shipped: the agent Ready on the first node, the controller Available',
  'pod-pending': 'the GPU workload was Pending: no node offered nvidia.com/gpu',
  'node-held': `${JOINING} joined with the bootstrap taint from --register-with-taints and was held`,
  released: `the device plugin on ${JOINING} reported healthy GPUs: the extension turned Healthy, the bootstrap taint went`,
  'gpus-registered': `${JOINING}'s kubelet reports the GPUs the device plugin registered (nvidia.com/gpu capacity)`,
  'pod-running': `the GPU workload was bound to ${JOINING} and running`,
  'plugin-lost': 'the device plugin stopped: the runtime taint went on',
  'plugin-back': 'the device plugin came back: the runtime taint went off',
} as const;
type Phase = keyof typeof REAL_NODE_PHASES;

export interface RealNodesOptions {
  once: boolean;
}

/** The one line that says why the real-node demo cannot run here, or undefined. */
export function realNodesDemoRefusal(): string | undefined {
  const uid = process.getuid?.();
  return uid === 0
    ? undefined
    : `demo: --real-nodes needs root (it runs kubelets and containerd, with namespaces, cgroups and addresses on lo); this is uid ${uid}. Without --real-nodes the demo runs on KWOK nodes as any user.`;
}

export async function runRealNodesDemo(options: RealNodesOptions): Promise<never> {
  const refusal = realNodesDemoRefusal();
  if (refusal) {
    process.stderr.write(`${refusal}\n`);
    process.exit(2);
  }
  const { once } = options;
  const tty = !once && process.stdout.isTTY === true;
  const out: Output = tty ? new TtyOutput() : new LineOutput();
  const abort = new AbortController();
  const startMs = Date.now();
  const reached = new Map<Phase, number>();
  let plane: RealNodeControlPlane | undefined;
  let cluster: RealNodes | undefined;
  let observer: ClusterObserver | undefined;
  let stopping: Promise<never> | undefined;
  // Starts under way (the image build, the control plane, the nodes, a node joining): a stop meanwhile waits
  // for each to end, so that what it made is stopped too, not left running with its addresses and mounts.
  const underway = new Set<Promise<unknown>>();
  const begin = async <T>(start: Promise<T>, keep: (made: T) => void = () => undefined): Promise<T> => {
    const kept = start.then((made) => {
      keep(made);
      return made;
    });
    underway.add(kept);
    try {
      return await kept;
    } finally {
      underway.delete(kept);
      abort.signal.throwIfAborted();
    }
  };

  const shutdown = (code: number, why?: string): Promise<never> =>
    (stopping ??= (async (): Promise<never> => {
      abort.abort(new Error('stopping'));
      observer?.stop();
      out.close();
      if (why) out.say(why);
      if (underway.size > 0) {
        out.say('Waiting for the start under way to end, to stop what it made…');
        await Promise.allSettled(underway);
      }
      out.say('Stopping the nodes (kubelets, containerd, their pods and mounts) and the control plane…');
      await cluster?.stop().catch((err: unknown) => out.say(`Stopping the nodes failed: ${String(err)}`));
      await plane
        ?.stop()
        .catch((err: unknown) => out.say(`Stopping the control plane failed: ${String(err)}`));
      out.say('Stopped.');
      process.exit(code);
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void shutdown(once ? 1 : 0, `${signal}: stopping the demo.`));
  process.stdout.on('error', () => undefined);

  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const { code, stdout, stderr } = await plane!.kubectl(args, input);
    if (code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${stderr.trim() || `exit code ${code}`}`);
    return stdout;
  };
  const phase = (id: Phase, detail: string): void => {
    reached.set(id, Date.now());
    out.say(`✔ PHASE ${id}: ${REAL_NODE_PHASES[id]} — ${detail}`);
  };
  const waitNode = (
    id: Phase,
    what: string,
    check: (s: NodeStatus | undefined, snap: Snapshot) => boolean,
    ms = 180_000,
  ) =>
    observer!.waitFor(id, what, (snap) => check(ClusterObserver.node(snap, JOINING), snap), ms, abort.signal);
  const workloadPod = (snap: Snapshot) => snap.pods.find((p) => p.metadata?.name === WORKLOAD.name);

  try {
    out.say(
      'Building the nodecare image from the Dockerfile with BuildKit (the first run builds BuildKit too)…',
    );
    const image = await begin(buildImage((line) => out.say(line)));
    out.say(`Image: ${describeImage(image)}`);
    out.say(
      'Starting a control plane and a real kubelet node with containerd (the first run builds the kubelet)…',
    );
    plane = await begin(
      startRealNodeControlPlane({ log: (line) => out.say(line) }),
      (made) => (plane = made),
    );
    cluster = await begin(
      startNodes(plane, { nodes: [{ name: FIRST }], log: (line) => out.say(line) }),
      (made) => (cluster = made),
    );
    const testbin = await writeTestbinArchive(join(plane.slot.dir, 'testbin.oci.tar'), cluster.parts);
    for (const node of cluster.nodes)
      for (const archive of [image.archive, testbin]) await node.importImage(archive);
    out.setHeader([
      `nodecare on real kubelets — Kubernetes ${plane.version} at ${plane.server}${once ? '' : ' — Ctrl-C stops everything'}`,
      ...(once ? [] : [`kubectl: ${plane.binDir}/kube-testenv kubectl --kubeconfig=${plane.kubeconfigPath}`]),
    ]);

    observer = new ClusterObserver(plane.kubeconfigPath, {
      namespace: WORKLOAD.namespace,
      labelSelector: WORKLOAD.selector,
      nodeClaims: false,
    });
    observer.onSnapshot((snapshot) => out.snapshot(snapshot));
    observer.start();

    // The overlay lives in the slot's directory, removed with the slot when the demo stops.
    const overlay = kustomizationWithImage(image.ref, [], plane.slot.dir);
    out.say(
      `Installing nodecare as shipped: kubectl apply -k ${overlay} (manifests/ with only the image set to ${image.ref})…`,
    );
    try {
      await applyShipped(kubectl, overlay, 240);
    } catch (err) {
      throw new PhaseError('installed', err instanceof Error ? err.message : String(err));
    }
    phase('installed', `the agent DaemonSet rolled out on ${FIRST}, the controller Deployment is Available`);
    out.live();

    // The shipped example SystemExtension at demo speed: 2 s probes, 10 s of start-up grace (not 10 minutes).
    const example = load(readFileSync(GPU_EXAMPLE, 'utf8')) as { spec: Record<string, unknown> };
    example.spec.periodSeconds = 2;
    example.spec.startupGraceSeconds = 10;
    await kubectl(['apply', '-f', '-'], JSON.stringify(example));
    await kubectl(['apply', '-f', join(FIXTURES, 'device-plugin.yaml')]);
    out.say(
      `Registered the shipped example SystemExtension ${EXTENSION} (devicePlugin probe, minHealthy 1) for ` +
        'nodes labelled nvidia.com/gpu.present=true, and the device plugin DaemonSet (a real plugin speaking the ' +
        "kubelet's device plugin API).",
    );
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: WORKLOAD.name, namespace: WORKLOAD.namespace, labels: { app: WORKLOAD.name } },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'main',
              image: TESTBIN_IMAGE,
              imagePullPolicy: 'Never',
              args: ['pause'],
              resources: { limits: { 'nvidia.com/gpu': '1' } },
            },
          ],
        },
      }),
    );
    await observer.waitFor(
      'pod-pending',
      'the GPU workload Pending',
      (s) => workloadPod(s)?.status?.phase === 'Pending' && !workloadPod(s)?.spec?.nodeName,
      60_000,
      abort.signal,
    );
    phase('pod-pending', `pod ${WORKLOAD.name} asks for nvidia.com/gpu: 1 and no node has one`);

    out.say(
      `${JOINING} joins (a new GPU machine booting): its kubelet registers it with ` +
        `--register-with-taints=${BOOTSTRAP}=:NoSchedule, so it is held from its first moment.`,
    );
    const joined = Date.now();
    await begin(
      cluster.add({
        name: JOINING,
        registerWithTaints: [`${BOOTSTRAP}=:NoSchedule`],
        labels: { 'nvidia.com/gpu.present': 'true', [PLUGIN_LABEL]: 'on' },
        images: [image.archive, testbin],
      }),
    );
    await waitNode(
      'node-held',
      `${JOINING} held with the bootstrap taint`,
      (s) => !!s && s.taints.includes('bootstrap'),
    );
    phase(
      'node-held',
      `${JOINING} registered with the bootstrap taint; the scheduler keeps the GPU pod off it`,
    );
    await waitNode(
      'released',
      `${JOINING} released`,
      (st) =>
        st?.state === 'Ready' &&
        !st.taints.includes('bootstrap') &&
        st.condition?.status === 'True' &&
        st.extensions.some((e) => e.name === EXTENSION && e.state === ExtensionState.Healthy),
    );
    phase(
      'released',
      `${JOINING} schedulable ${((Date.now() - joined) / 1000).toFixed(1)} s after it started joining`,
    );
    // The probe asks the plugin itself (ListAndWatch); the kubelet publishes the capacity with its next status.
    await waitNode('gpus-registered', `nvidia.com/gpu capacity on ${JOINING}`, (_st, snap) => {
      const node = snap.nodes.find((n) => n.metadata?.name === JOINING);
      const gpus = node?.status?.capacity?.['nvidia.com/gpu'];
      return !!gpus && gpus !== '0';
    });
    phase('gpus-registered', `${JOINING} has nvidia.com/gpu capacity`);
    await observer.waitFor(
      'pod-running',
      `the GPU workload running on ${JOINING}`,
      (s) => workloadPod(s)?.spec?.nodeName === JOINING && workloadPod(s)?.status?.phase === 'Running',
      120_000,
      abort.signal,
    );
    phase('pod-running', `pod ${WORKLOAD.name} runs on ${JOINING} with a GPU the device plugin allocated`);

    out.say(
      `Stopping the device plugin on ${JOINING} (its DaemonSet pod goes): the devicePlugin probe fails.`,
    );
    await kubectl(['label', 'node', JOINING, `${PLUGIN_LABEL}-`]);
    await waitNode(
      'plugin-lost',
      `the runtime taint on ${JOINING}`,
      (s) => !!s && s.taints.includes('runtime'),
    );
    phase('plugin-lost', `${JOINING} Degraded with the runtime taint ${RUNTIME}`);
    await kubectl(['label', 'node', JOINING, `${PLUGIN_LABEL}=on`]);
    await waitNode(
      'plugin-back',
      `the runtime taint gone from ${JOINING}`,
      (s) => s?.state === 'Ready' && !s.taints.includes('runtime') && s.condition?.status === 'True',
    );
    phase('plugin-back', `${JOINING} Ready again`);
  } catch (err) {
    if (abort.signal.aborted) return shutdown(1);
    const failed = err instanceof PhaseError ? err.phase : 'setup';
    out.say(`✘ PHASE ${failed} NOT REACHED: ${err instanceof Error ? err.message : String(err)}`);
    const latest = observer?.latest;
    if (latest && !tty)
      for (const line of [
        ...renderStatus(latest.nodes, latest.leases, new Date()),
        ...autoscalerLines(undefined, latest.pods),
      ])
        out.say(line);
    for (const line of summary(reached, startMs)) out.say(line);
    return shutdown(1);
  }
  for (const line of summary(reached, startMs)) out.say(line);
  if (once) return shutdown(0, `Every phase reached in ${Math.floor((Date.now() - startMs) / 1000)} s.`);
  out.say('The story is over; the cluster keeps running for a look with kubectl. Ctrl-C stops everything.');
  return new Promise<never>(() => undefined);
}

function summary(reached: ReadonlyMap<Phase, number>, startMs: number): string[] {
  const ids = Object.keys(REAL_NODE_PHASES) as Phase[];
  return [
    `Summary: ${reached.size} of ${ids.length} phases reached`,
    ...ids.map((id) => {
      const at = reached.get(id);
      const when = at === undefined ? '' : `+${Math.floor((at - startMs) / 1000)}s`;
      return `  ${at === undefined ? '✘' : '✔'} ${id.padEnd(18)} ${when.padStart(5)}  ${REAL_NODE_PHASES[id]}`;
    }),
  ];
}
