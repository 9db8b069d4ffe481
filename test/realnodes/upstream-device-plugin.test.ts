// Device plugins as upstream writes them, on real kubelets (issue 49 items 1 and 2; docs/extensions.md,
// "GPU device plugin"):
// - Kubernetes' own device plugin stub (pkg/kubelet/cm/devicemanager/plugin/v1beta1, the code behind
//   test/images/sample-device-plugin), unchanged, run by kubernetes/stub-plugin with a control socket: after
//   hundreds of nodecare probes its goroutine count has not grown, and a health change made through the stub
//   reaches the kubelet's stream and the node's allocatable, which nodecare judges by `minHealthy`. The
//   probe as it was (ListAndWatch, first answer, cancel) is run last, to show what it did: every call leaves
//   a handler behind, and the next health change goes to one of them instead of the kubelet.
// - test/images/sample-device-plugin with its e2e DaemonSet (test/e2e/testing-manifests/sample-device-plugin/
//   sample-device-plugin.yaml, read from the k8s.io/kubernetes module in the Go module cache), only its image
//   changed: a node joins held until the plugin's devices are Healthy; the plugin crashes until the kubelet
//   counts none (runtime taint), then it is left to come back (taint cleared).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, credentials, Metadata } from '@grpc/grpc-js';
import { load } from 'js-yaml';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { devicePluginProbe } from '../../agent/probes/devicePlugin.ts';
import { method, PROTO_FILES } from '../../agent/probes/proto.ts';
import { testContext } from '../../agent/probes/testing.ts';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
} from '../../api/index.ts';
import { kubectl, realNodes, removeNode, type TestNode } from './client.ts';
import {
  ROOT,
  describeView,
  getJson,
  getNode,
  healthyView,
  runCli,
  until,
  untilView,
  viewOf,
  type Pod,
} from './cluster.ts';
import {
  KUBERNETES_IMAGES,
  kubernetesSource,
  writeKubernetesImages,
  type KubernetesImages,
} from './kubernetes/images.ts';
import { ensureNodeParts } from './realnodes.ts';
import {
  JOINING,
  NodecareInstall,
  breaksAndRecovers,
  joinsHeldUntilHealthy,
  leaseAnnotation,
  leaseState,
  readyPodOn,
  storyLog,
} from './upstream/stories.ts';

const notRun = inject('realNodesNotRun');
const log = storyLog('device-plugin');

const STUB = {
  extension: 'stub-devices',
  resource: 'example.com/stub',
  devices: 8,
  socket: '/var/lib/kubelet/device-plugins/stub.sock',
  control: '/var/lib/stub-plugin/control.sock',
};
const SAMPLE = {
  extension: 'sample-device-plugin',
  resource: 'example.com/resource',
  selector: 'k8s-app=sample-device-plugin',
  manifest: 'test/e2e/testing-manifests/sample-device-plugin/sample-device-plugin.yaml',
};
/** What the test changes in the upstream DaemonSet, and why; nothing else is changed. */
/** NVIDIA's k8s-device-plugin DaemonSet tolerates this alone (deployments/static/nvidia-device-plugin.yml). */
const NVIDIA_TOLERATIONS = [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }];
const TOLERATIONS_COMPONENT = join(ROOT, 'manifests', 'components', 'extension-daemonset-tolerations');
const SAMPLE_CHANGES = [
  'image: registry.k8s.io/e2e-test-images/sample-device-plugin:1.8.0 -> the image built from k8s.io/kubernetes v1.37.2 test/images/sample-device-plugin (its Dockerfile layout)',
];

interface DaemonSet {
  metadata: { name: string; namespace: string };
  spec: {
    template: {
      spec: {
        containers: { image: string }[];
        tolerations?: { key?: string; operator?: string; effect?: string }[];
      };
    };
  };
}

/** The stub's control socket (stub-plugin/main.go), reached through the node's directory on this machine. */
class StubControl {
  private readonly agent: Agent;
  constructor(node: TestNode) {
    this.agent = new Agent({ connect: { socketPath: node.hostPath(STUB.control) } });
  }
  async goroutines(): Promise<number> {
    const { body } = await request('http://stub/goroutines', { dispatcher: this.agent });
    return ((await body.json()) as { goroutines: number }).goroutines;
  }
  /** The fewest goroutines over a few readings: the agent's own short calls come and go meanwhile. */
  async settledGoroutines(): Promise<number> {
    let fewest = Infinity;
    for (let i = 0; i < 6; i++) {
      fewest = Math.min(fewest, await this.goroutines());
      await sleep(300);
    }
    return fewest;
  }
  /** Sets one device's health through the stub's Update; true when a ListAndWatch handler took the list. */
  async setHealth(device: string, health: 'Healthy' | 'Unhealthy'): Promise<boolean> {
    const { statusCode, body } = await request(`http://stub/health?device=${device}&health=${health}`, {
      method: 'PUT',
      dispatcher: this.agent,
    });
    const text = await body.text();
    if (statusCode !== 200) throw new Error(`stub control: ${statusCode} ${text}`);
    return (JSON.parse(text) as { taken: boolean }).taken;
  }
  close(): Promise<void> {
    return this.agent.close();
  }
}

async function resourceCounts(node: string, resource: string): Promise<string> {
  const { status } = await getNode(node);
  return `${status.allocatable?.[resource] ?? 'none'} of ${status.capacity?.[resource] ?? 'none'}`;
}

/** The probe as nodecare ran it before issue 49: open ListAndWatch, take the first answer, cancel. */
async function oldProbe(socket: string): Promise<void> {
  const listAndWatch = method(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin', 'ListAndWatch');
  const client = new Client(`unix://${socket}`, credentials.createInsecure());
  try {
    await new Promise<void>((resolve, reject) => {
      const call = client.makeServerStreamRequest(
        listAndWatch.path,
        listAndWatch.requestSerialize,
        listAndWatch.responseDeserialize,
        {},
        new Metadata(),
      );
      call.once('data', () => {
        call.cancel();
        resolve();
      });
      call.on('error', (err: { code?: number }) => (err.code === 1 ? resolve() : reject(err)));
    });
  } finally {
    client.close();
  }
}

describe.skipIf(notRun !== '')(
  `device plugins (upstream) on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const install = notRun ? undefined : new NodecareInstall(inject('nodecareImage').ref);
    const node1 = notRun ? undefined : realNodes()[0];
    let images: KubernetesImages;
    let sampleDaemonSet: DaemonSet;
    let control: StubControl | undefined;
    let joined: TestNode | undefined;

    beforeAll(async () => {
      const parts = await ensureNodeParts();
      images = await writeKubernetesImages(parts, inject('realNodesSlotDir'));
      const source = await kubernetesSource();
      sampleDaemonSet = load(readFileSync(join(source, SAMPLE.manifest), 'utf8')) as DaemonSet;
      log(`upstream DaemonSet: ${join(source, SAMPLE.manifest)}`);
      for (const change of SAMPLE_CHANGES) log(`changed: ${change}`);
      sampleDaemonSet.spec.template.spec.containers[0]!.image = KUBERNETES_IMAGES.sampleDevicePlugin;
      for (const node of realNodes()) {
        await node.importImage(images.sampleDevicePlugin);
        await node.importImage(images.stubPlugin);
      }
      await install!.install();
    }, 600_000);

    afterAll(async () => {
      await control?.close();
      await install?.teardown(async () => {
        await kubectl(['delete', 'systemextension', STUB.extension, SAMPLE.extension, '--ignore-not-found']);
        await kubectl(['delete', 'daemonset', '-n', 'kube-system', 'stub-plugin', '--ignore-not-found']);
        await kubectl(['delete', '--ignore-not-found', '-f', '-'], JSON.stringify(sampleDaemonSet));
      });
    });

    it("Kubernetes' device plugin stub: hundreds of probes leave its goroutines as they were, and a device going bad through the stub reaches the kubelet, the node's allocatable and nodecare (minHealthy 8 of 8)", async () => {
      const node = node1!;
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'apps/v1',
          kind: 'DaemonSet',
          metadata: { name: 'stub-plugin', namespace: 'kube-system' },
          spec: {
            selector: { matchLabels: { app: 'stub-plugin' } },
            template: {
              metadata: { labels: { app: 'stub-plugin' } },
              spec: {
                nodeSelector: { 'kubernetes.io/hostname': node.name },
                tolerations: [{ operator: 'Exists' }],
                terminationGracePeriodSeconds: 2,
                containers: [
                  {
                    name: 'stub',
                    image: KUBERNETES_IMAGES.stubPlugin,
                    imagePullPolicy: 'Never',
                    args: [
                      `--resource=${STUB.resource}`,
                      `--devices=${STUB.devices}`,
                      `--socket=${STUB.socket}`,
                      `--control=${STUB.control}`,
                    ],
                    volumeMounts: [
                      { name: 'device-plugins', mountPath: '/var/lib/kubelet/device-plugins' },
                      { name: 'control', mountPath: '/var/lib/stub-plugin' },
                    ],
                  },
                ],
                volumes: [
                  { name: 'device-plugins', hostPath: { path: '/var/lib/kubelet/device-plugins' } },
                  { name: 'control', hostPath: { path: '/var/lib/stub-plugin', type: 'DirectoryOrCreate' } },
                ],
              },
            },
          },
        }),
      );
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: STUB.extension },
          spec: {
            nodeSelector: { matchLabels: { 'kubernetes.io/hostname': node.name } },
            probe: {
              devicePlugin: { resource: STUB.resource, minHealthy: STUB.devices, socket: STUB.socket },
            },
            periodSeconds: 2,
            failureThreshold: 1,
            startupGraceSeconds: 0,
          },
        }),
      );
      await readyPodOn('kube-system', 'app=stub-plugin', node.name);
      await until(`${STUB.resource} 8 of 8 on ${node.name}`, async () =>
        (await resourceCounts(node.name, STUB.resource)) === '8 of 8' ? true : undefined,
      );
      await until(`${STUB.extension} Healthy on ${node.name}`, async () =>
        (await leaseState(node.name, STUB.extension)) === 'Healthy' ? true : undefined,
      );
      await untilView(node.name, 'healthy with the stub registered', healthyView);
      control = new StubControl(node);

      // Hundreds of probes, as nodecare runs them, straight at the stub's socket (the agent on the node keeps
      // probing it every 2 s meanwhile).
      const before = await control.settledGoroutines();
      const facts = async () => {
        const { status } = await getNode(node.name);
        return { capacity: status.capacity ?? {}, allocatable: status.allocatable ?? {}, conditions: [] };
      };
      const nodeFacts = await facts();
      const PROBES = 500;
      for (let i = 0; i < PROBES; i++) {
        const result = await devicePluginProbe(
          {
            kind: 'devicePlugin',
            resource: STUB.resource,
            minHealthy: STUB.devices,
            socket: node.hostPath(STUB.socket),
          },
          testContext({ node: nodeFacts }),
        );
        expect(result.outcome, result.message).toBe('Healthy');
      }
      const after = await control.settledGoroutines();
      log(`stub goroutines before ${PROBES} probes: ${before}, after: ${after}`);
      expect(after).toBeLessThanOrEqual(before + 2);

      // A device goes bad through the stub: the kubelet's stream hears it, the node's allocatable drops, and
      // nodecare says so by minHealthy (8 of 8 wanted) and taints the node.
      expect(await control.setHealth('Dev-3', 'Unhealthy')).toBe(true);
      await until(`${STUB.resource} 7 of 8 on ${node.name}`, async () =>
        (await resourceCounts(node.name, STUB.resource)) === '7 of 8' ? true : undefined,
      );
      log(
        `Dev-3 Unhealthy through the stub: the kubelet counts ${await resourceCounts(node.name, STUB.resource)}`,
      );
      const tainted = await untilView(
        node.name,
        'the runtime taint for a device gone bad',
        (v) => v.runtimeTaint,
      );
      expect(await leaseState(node.name, STUB.extension)).toBe('Unhealthy');
      const message = await leaseAnnotation(node.name, STUB.extension, 'message');
      expect(message).toContain(`7 of 8 ${STUB.resource} devices Healthy (kubelet), want at least 8`);
      log(`nodecare: ${describeView(tainted)}, lease: ${message}`);

      expect(await control.setHealth('Dev-3', 'Healthy')).toBe(true);
      await untilView(node.name, 'healthy again once Dev-3 recovered', healthyView);
      log(
        `Dev-3 Healthy again: the kubelet counts ${await resourceCounts(node.name, STUB.resource)}, taint cleared`,
      );
      const settled = await control.settledGoroutines();
      expect(settled).toBeLessThanOrEqual(before + 2);

      // The probe as it was: every call leaves a ListAndWatch handler behind on the stub's one update channel.
      const OLD = 50;
      for (let i = 0; i < OLD; i++) await oldProbe(node.hostPath(STUB.socket));
      const leaked = await control.settledGoroutines();
      log(
        `the old probe (ListAndWatch, first answer, cancel) ${OLD} times: goroutines ${settled} -> ${leaked}`,
      );
      expect(leaked).toBeGreaterThanOrEqual(settled + OLD);
      // The kubelet's handler is the oldest waiter: one update reaches it and puts it behind the leaked ones,
      // and the next, a GPU going bad, goes to a handler whose stream is gone.
      expect(await control.setHealth('Dev-3', 'Healthy')).toBe(true);
      expect(await control.setHealth('Dev-5', 'Unhealthy')).toBe(true);
      await sleep(25_000); // more than two of the kubelet's node status updates (10 s)
      const missed = await resourceCounts(node.name, STUB.resource);
      log(`Dev-5 Unhealthy through the stub after the old probe: the kubelet still counts ${missed}`);
      expect(missed).toBe('8 of 8');

      // Done: the stub goes (its leaked handlers with it) and the node stays healthy.
      await kubectl(['delete', 'systemextension', STUB.extension]);
      await kubectl(['delete', 'daemonset', '-n', 'kube-system', 'stub-plugin', '--wait=true']);
      await untilView(node.name, 'healthy once the stub is gone', healthyView);
    });

    it('sample-device-plugin with its e2e DaemonSet: a node joins held until the kubelet counts its 2 devices Healthy', async () => {
      await kubectl(['apply', '-f', '-'], JSON.stringify(sampleDaemonSet));
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: SAMPLE.extension },
          spec: {
            nodeSelector: { matchLabels: { 'nodecare.test/upstream': 'sample-device-plugin' } },
            probe: { devicePlugin: { resource: SAMPLE.resource, minHealthy: 2 } },
            periodSeconds: 2,
            failureThreshold: 1,
            startupGraceSeconds: 10,
          },
        }),
      );
      joined = await joinsHeldUntilHealthy({
        extension: SAMPLE.extension,
        log,
        join: () =>
          install!.join({ 'nodecare.test/upstream': 'sample-device-plugin' }, [
            inject('nodecareImage').archive,
            images.sampleDevicePlugin,
          ]),
        started: async () => {
          const pod = await readyPodOn('kube-system', SAMPLE.selector, JOINING);
          const counts = await until(`${SAMPLE.resource} registered on ${JOINING}`, async () => {
            const c = await resourceCounts(JOINING, SAMPLE.resource);
            return c === '2 of 2' ? c : undefined;
          });
          return `pod ${pod.metadata.name} Ready, the kubelet counts ${counts} ${SAMPLE.resource}`;
        },
      });
      expect(await leaseAnnotation(JOINING, SAMPLE.extension, 'message')).toBe(
        `2 of 2 ${SAMPLE.resource} devices Healthy (kubelet)`,
      );
    });

    it('sample-device-plugin crashing until the kubelet counts no device → the runtime taint; left to restart → cleared', async () => {
      const node = joined!;
      let killing = true;
      let kills = 0;
      let crashLoop: Promise<void> | undefined;
      await breaksAndRecovers({
        extension: SAMPLE.extension,
        log,
        timeoutMs: 180_000,
        breakIt: async () => {
          crashLoop = (async () => {
            while (killing) {
              const pod = (
                await getJson<{ items: Pod[] }>(['get', 'pods', '-n', 'kube-system', '-l', SAMPLE.selector])
              ).items.find((p) => p.spec.nodeName === JOINING);
              const id = pod?.status.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
              const running = id
                ? (await node.ctr(['tasks', 'ls'])).stdout.split('\n').find((l) => l.startsWith(id))
                : undefined;
              if (id && running?.includes('RUNNING')) {
                await node.ctr(['tasks', 'kill', '-s', 'SIGKILL', id]);
                kills++;
              }
              await sleep(500);
            }
          })();
          return `the plugin's container killed with SIGKILL whenever the kubelet starts it again`;
        },
        mend: async () => {
          killing = false;
          await crashLoop;
          return `after ${kills} kills, the kubelet is left to restart it (its back-off); it counts ${await resourceCounts(JOINING, SAMPLE.resource)} now`;
        },
      });
      const taints = (await getNode(JOINING)).spec.taints ?? [];
      expect(taints.map((t) => t.key)).not.toContain(RUNTIME);
      log(`${JOINING}: ${describeView(viewOf(await getNode(JOINING)))}`);
    });

    it("NVIDIA's stock tolerations (nvidia.com/gpu only) on the sample plugin, without nodecare's tolerations policy: the DaemonSet gets no pod on the held node, and explain names it", async () => {
      await removeNode(JOINING);
      await kubectl(['delete', '-f', '-', '--wait=true'], JSON.stringify(sampleDaemonSet));
      const nvidiaStyle = structuredClone(sampleDaemonSet);
      nvidiaStyle.spec.template.spec.tolerations = NVIDIA_TOLERATIONS;
      log(
        `the sample plugin's DaemonSet again, with NVIDIA's tolerations: ${JSON.stringify(NVIDIA_TOLERATIONS)}`,
      );
      await kubectl(['apply', '-f', '-'], JSON.stringify(nvidiaStyle));
      joined = await install!.join({ 'nodecare.test/upstream': 'sample-device-plugin' }, [
        inject('nodecareImage').archive,
        images.sampleDevicePlugin,
      ]);
      await until(`${JOINING} Ready`, async () =>
        viewOf(await getNode(JOINING)).ready?.status === 'True' ? true : undefined,
      );
      const explain = await until('explain naming the DaemonSet kept off', async () => {
        const out = await runCli(['explain', JOINING, `--kubeconfig=${inject('kubeconfig')}`]);
        return out.stdout.includes('Extension workloads kept off by nodecare') ? out.stdout : undefined;
      });
      const line = explain
        .split('\n')
        .find((l: string) => l.includes('DaemonSet kube-system/sample-device-plugin-beta'));
      log(`kubectl nodecare explain ${JOINING}: ${line?.trim()}`);
      expect(line).toContain(
        'does not tolerate startup-taint.cluster-autoscaler.kubernetes.io/meta-readiness',
      );
      // The node's condition says it too, whatever the cluster version.
      const view = await untilView(JOINING, 'the condition naming the DaemonSet kept off', (v) =>
        (v.condition?.message ?? '').includes(
          'DaemonSet kube-system/sample-device-plugin-beta does not tolerate',
        ),
      );
      log(`${JOINING} ExtensionsReady: ${view.condition?.message}`);
      expect(view.condition?.message).toContain(`does not tolerate ${BOOTSTRAP}: its pod cannot start here`);
      expect(view.bootstrapTaint).toBe(true);
      // No pod of this DaemonSet for the node (the stock one's pods may still be going: they are not its).
      const daemonSet = await getJson<{ metadata: { uid: string } }>([
        'get',
        'daemonset',
        '-n',
        'kube-system',
        sampleDaemonSet.metadata.name,
      ]);
      const pods = (
        await getJson<{
          items: (Pod & { metadata: { ownerReferences?: { uid: string }[]; deletionTimestamp?: string } })[];
        }>(['get', 'pods', '-n', 'kube-system', '-l', SAMPLE.selector])
      ).items;
      const ours = pods.filter(
        (p) =>
          p.spec.nodeName === JOINING &&
          p.metadata.ownerReferences?.some((o) => o.uid === daemonSet.metadata.uid),
      );
      expect(ours.map((p) => p.metadata.name)).toEqual([]);
      log(`${JOINING} held, no plugin pod for it: ${describeView(view)}`);
    });

    it("with nodecare's tolerations policy installed, the same DaemonSet's next write gets nodecare's tolerations: its pod lands on the held node, which is released", async () => {
      await install!.install([TOLERATIONS_COMPONENT]);
      log(
        'nodecare re-applied with the kustomize component extension-daemonset-tolerations (MutatingAdmissionPolicy)',
      );
      // The API server loads a new policy a moment after it is written (its admission plugin watches
      // policies and bindings): a DaemonSet write before that is admitted as written. In force once a
      // server-side dry run of a write to this DaemonSet shows the tolerations (the CI run of 26431b2
      // restarted it too soon and got none).
      const inForce = Date.now();
      await until(
        'the DaemonSet tolerations policy in force',
        async () => {
          const dryRun = await getJson<DaemonSet>([
            'patch',
            'daemonset',
            '-n',
            'kube-system',
            sampleDaemonSet.metadata.name,
            '--type=merge',
            '-p',
            JSON.stringify({
              metadata: { annotations: { 'nodecare.test/policy-probe': String(Date.now()) } },
            }),
            '--dry-run=server',
          ]);
          const keys = (dryRun.spec.template.spec.tolerations ?? []).map((t) => t.key);
          return keys.includes(BOOTSTRAP) && keys.includes(RUNTIME) ? true : undefined;
        },
        { timeoutMs: 30_000 },
      );
      log(`the policy was in force ${((Date.now() - inForce) / 1000).toFixed(1)}s after the apply returned`);
      await kubectl(['rollout', 'restart', 'daemonset', '-n', 'kube-system', sampleDaemonSet.metadata.name]);
      const template = await getJson<DaemonSet>([
        'get',
        'daemonset',
        '-n',
        'kube-system',
        sampleDaemonSet.metadata.name,
      ]);
      const tolerations = template.spec.template.spec.tolerations ?? [];
      log(`after kubectl rollout restart, the DaemonSet tolerates: ${JSON.stringify(tolerations)}`);
      expect(tolerations).toEqual(
        expect.arrayContaining([
          ...NVIDIA_TOLERATIONS,
          expect.objectContaining({ key: BOOTSTRAP, operator: 'Exists', effect: 'NoSchedule' }),
          expect.objectContaining({ key: RUNTIME, operator: 'Exists', effect: 'NoSchedule' }),
        ]),
      );
      const pod = await readyPodOn('kube-system', SAMPLE.selector, JOINING);
      log(
        `pod ${pod.metadata.name} Ready on ${JOINING}; the kubelet counts ${await resourceCounts(JOINING, SAMPLE.resource)}`,
      );
      const released = await untilView(
        JOINING,
        'released once the plugin could run there',
        healthyView,
        180_000,
      );
      log(
        `${JOINING} released: ${describeView(released)}, lease ${await leaseAnnotation(JOINING, SAMPLE.extension, 'message')}`,
      );
    });
  },
);
