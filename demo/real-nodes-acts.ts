// The acts of `npm start -- --real-nodes` (demo/real-nodes.ts), in order, on its stage (real-nodes-stage.ts):
// build and start (the image, a control plane, a real kubelet node), install nodecare as shipped, ask for a GPU,
// a GPU node joins held by --register-with-taints until its kubelet counts the device plugin's GPUs healthy,
// the pod runs, the plugin is lost and comes back.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  ExtensionState,
} from '../api/index.ts';
import { buildImage, describeImage, type BuiltImage } from '../test/image/image.ts';
import {
  TESTBIN_IMAGE,
  applyShipped,
  kustomizationWithImage,
  writeTestbinArchive,
} from '../test/realnodes/install.ts';
import { startNodes, startRealNodeControlPlane } from '../test/realnodes/realnodes.ts';
import { ClusterObserver, PhaseError } from './observer.ts';
import {
  EXTENSION,
  FIRST,
  JOINING,
  PLUGIN_LABEL,
  WORKLOAD,
  type RealNodesStage,
} from './real-nodes-stage.ts';

const ROOT = join(import.meta.dirname, '..');
const FIXTURES = join(ROOT, 'test', 'realnodes', 'fixtures');
const GPU_EXAMPLE = join(ROOT, 'manifests', 'examples', 'gpu-device-plugin.yaml');

/** What the first act leaves: the image built from the Dockerfile and the test workloads' image archive. */
export interface Images {
  image: BuiltImage;
  testbin: string;
}

/** Builds the image, starts a control plane and the first real node with both images, and the view. */
export async function buildAndStart(stage: RealNodesStage): Promise<Images> {
  stage.out.say(
    'Building the nodecare image from the Dockerfile with BuildKit (the first run builds BuildKit too)…',
  );
  const image = await stage.begin(buildImage((line) => stage.out.say(line)));
  stage.out.say(`Image: ${describeImage(image)}`);
  stage.out.say(
    'Starting a control plane and a real kubelet node with containerd (the first run builds the kubelet)…',
  );
  const plane = await stage.begin(
    startRealNodeControlPlane({ log: (line) => stage.out.say(line) }),
    (made) => (stage.plane = made),
  );
  const cluster = await stage.begin(
    startNodes(plane, { nodes: [{ name: FIRST }], log: (line) => stage.out.say(line) }),
    (made) => (stage.cluster = made),
  );
  const testbin = await writeTestbinArchive(join(plane.slot.dir, 'testbin.oci.tar'), cluster.parts);
  for (const node of cluster.nodes)
    for (const archive of [image.archive, testbin]) await node.importImage(archive);
  stage.out.setHeader([
    `nodecare on real kubelets — Kubernetes ${plane.version} at ${plane.server}${stage.once ? '' : ' — Ctrl-C stops everything'}`,
    ...(stage.once
      ? []
      : [`kubectl: ${plane.binDir}/kube-testenv kubectl --kubeconfig=${plane.kubeconfigPath}`]),
  ]);

  const observer = (stage.observer = new ClusterObserver(plane.kubeconfigPath, {
    namespace: WORKLOAD.namespace,
    labelSelector: WORKLOAD.selector,
    nodeClaims: false,
  }));
  observer.onSnapshot((snapshot) => stage.out.snapshot(snapshot));
  observer.start();

  return { image, testbin };
}

/** nodecare installed as shipped: kubectl apply -k with only the image set. */
export async function install(stage: RealNodesStage, { image }: Images): Promise<void> {
  // The overlay lives in the slot's directory, removed with the slot when the demo stops.
  const overlay = kustomizationWithImage(image.ref, [], stage.planeDir());
  stage.out.say(
    `Installing nodecare as shipped: kubectl apply -k ${overlay} (manifests/ with only the image set to ${image.ref})…`,
  );
  try {
    await applyShipped((args) => stage.kubectl(args), overlay, 240);
  } catch (err) {
    throw new PhaseError('installed', err instanceof Error ? err.message : String(err));
  }
  stage.phase(
    'installed',
    `the agent DaemonSet rolled out on ${FIRST}, the controller Deployment is Available`,
  );
  stage.out.live();
}

/** The shipped example SystemExtension, a real device plugin DaemonSet, and a pod asking for a GPU. */
export async function askForGpu(stage: RealNodesStage): Promise<void> {
  // The shipped example SystemExtension at demo speed: 2 s probes, 10 s of start-up grace (not 10 minutes).
  const example = load(readFileSync(GPU_EXAMPLE, 'utf8')) as { spec: Record<string, unknown> };
  example.spec.periodSeconds = 2;
  example.spec.startupGraceSeconds = 10;
  await stage.kubectl(['apply', '-f', '-'], JSON.stringify(example));
  await stage.kubectl(['apply', '-f', join(FIXTURES, 'device-plugin.yaml')]);
  stage.out.say(
    `Registered the shipped example SystemExtension ${EXTENSION} for nodes labelled ` +
      'nvidia.com/gpu.present=true (a devicePlugin probe: at least 1 nvidia.com/gpu allocatable as the ' +
      "kubelet counts the plugin's devices, and the plugin's socket answering GetDevicePluginOptions; it never " +
      "opens ListAndWatch, the kubelet's stream), and the device plugin DaemonSet (a real plugin speaking the " +
      "kubelet's device plugin API).",
  );
  await stage.kubectl(
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
  await stage
    .view()
    .waitFor(
      'pod-pending',
      'the GPU workload Pending',
      (s) => stage.workloadPod(s)?.status?.phase === 'Pending' && !stage.workloadPod(s)?.spec?.nodeName,
      60_000,
      stage.signal,
    );
  stage.phase('pod-pending', `pod ${WORKLOAD.name} asks for nvidia.com/gpu: 1 and no node has one`);
}

/** A GPU node joins held by the bootstrap taint; released once its kubelet counts the plugin's GPUs healthy. */
export async function joinHeldReleased(stage: RealNodesStage, { image, testbin }: Images): Promise<void> {
  stage.out.say(
    `${JOINING} joins (a new GPU machine booting): its kubelet registers it with ` +
      `--register-with-taints=${BOOTSTRAP}=:NoSchedule, so it is held from its first moment.`,
  );
  const joined = Date.now();
  await stage.begin(
    stage.nodes().add({
      name: JOINING,
      registerWithTaints: [`${BOOTSTRAP}=:NoSchedule`],
      labels: { 'nvidia.com/gpu.present': 'true', [PLUGIN_LABEL]: 'on' },
      images: [image.archive, testbin],
    }),
  );
  await stage.waitNode(
    'node-held',
    `${JOINING} held with the bootstrap taint`,
    (s) => !!s && s.taints.includes('bootstrap'),
  );
  stage.phase(
    'node-held',
    `${JOINING} registered with the bootstrap taint; the scheduler keeps the GPU pod off it`,
  );
  await stage.waitNode(
    'released',
    `${JOINING} released`,
    (st) =>
      st?.state === 'Ready' &&
      !st.taints.includes('bootstrap') &&
      st.condition?.status === 'True' &&
      st.extensions.some((e) => e.name === EXTENSION && e.state === ExtensionState.Healthy),
  );
  stage.phase(
    'released',
    `${JOINING} schedulable ${((Date.now() - joined) / 1000).toFixed(1)} s after it started joining`,
  );
}

/** The kubelet publishes the GPUs and the pod runs on them. */
export async function gpuWorkloadRuns(stage: RealNodesStage): Promise<void> {
  // The probe counted these before the release (the kubelet's allocatable against its capacity), so this
  // holds by now: it is what the scheduler needs to place the pod.
  let counts = '';
  await stage.waitNode('gpus-registered', `nvidia.com/gpu capacity on ${JOINING}`, (_st, snap) => {
    const status = snap.nodes.find((n) => n.metadata?.name === JOINING)?.status;
    const gpus = status?.capacity?.['nvidia.com/gpu'];
    counts = `capacity ${gpus}, allocatable ${status?.allocatable?.['nvidia.com/gpu']}`;
    return !!gpus && gpus !== '0';
  });
  stage.phase('gpus-registered', `${JOINING}'s kubelet reports nvidia.com/gpu ${counts}`);
  await stage
    .view()
    .waitFor(
      'pod-running',
      `the GPU workload running on ${JOINING}`,
      (s) =>
        stage.workloadPod(s)?.spec?.nodeName === JOINING && stage.workloadPod(s)?.status?.phase === 'Running',
      120_000,
      stage.signal,
    );
  stage.phase(
    'pod-running',
    `pod ${WORKLOAD.name} runs on ${JOINING} with a GPU the device plugin allocated`,
  );
}

/** The device plugin is lost (runtime taint) and comes back. */
export async function pluginLostAndBack(stage: RealNodesStage): Promise<void> {
  stage.out.say(
    `Stopping the device plugin on ${JOINING} (its DaemonSet pod goes): its socket stops answering, so ` +
      'GetDevicePluginOptions fails at once, and its kubelet counts its GPUs unhealthy (none allocatable).',
  );
  await stage.kubectl(['label', 'node', JOINING, `${PLUGIN_LABEL}-`]);
  const lost = await stage.waitNode(
    'plugin-lost',
    `the runtime taint on ${JOINING}`,
    (s) => !!s && s.taints.includes('runtime'),
  );
  const failed = ClusterObserver.node(lost, JOINING)?.extensions.find((e) => e.name === EXTENSION);
  stage.phase(
    'plugin-lost',
    `${JOINING} Degraded with the runtime taint ${RUNTIME}; ${EXTENSION} ${failed?.state} (${failed?.reason})`,
  );
  await stage.kubectl(['label', 'node', JOINING, `${PLUGIN_LABEL}=on`]);
  await stage.waitNode(
    'plugin-back',
    `the runtime taint gone from ${JOINING}`,
    (s) => s?.state === 'Ready' && !s.taints.includes('runtime') && s.condition?.status === 'True',
  );
  stage.phase('plugin-back', `${JOINING} Ready again`);
}
