// A CSI node plugin registering with the kubelet through its plugin watcher, on real kubelets (issue 49;
// docs/extensions.md, "CSI driver"). The Go module proxy refuses both halves of the kubernetes-csi reference
// pair, csi-driver-host-path and node-driver-registrar (REFUSED: every version), so the CSI class is shown
// with another upstream driver of the class: Kubernetes' own mock CSI driver, the one its e2e storage tests
// run (k8s.io/kubernetes test/e2e/storage/drivers/csi-test, built unchanged by kubernetes/csi-mock), installed
// from its e2e manifests (test/e2e/testing-manifests/storage-csi/mock: csi-mock-driver.yaml, csi-mock-rbac.yaml,
// csi-mock-driverinfo.yaml, read from the k8s.io/kubernetes module in the Go module cache) with the changes
// CHANGES lists. The registrar half is NOT upstream: kubernetes/csi-registrar is nodecare's own program,
// written to node-driver-registrar's contract, because no registrar is served.
//
// The SystemExtension's `csi` probe calls Identity/Probe on the driver's socket on the host, the
// --kubelet-registration-path the manifest gives, through the host directory the docs say to add (the
// kustomize component agent-host-directory, its path set). A node joins held until the kubelet has registered
// the driver (its CSINode lists it with the node ID of the driver's NodeGetInfo) and the probe is Healthy;
// the driver is killed (SIGKILL) until the runtime taint goes on, then left to the kubelet, which restarts it,
// and the taint comes off; the driver hangs (SIGSTOP), the runtime taint; it resumes (SIGCONT), cleared.

import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dump, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubectl, realNodes, type TestNode } from './client.ts';
import { ROOT, getJson, getNode, until, type K8sObject, type Pod } from './cluster.ts';
import {
  KUBERNETES_IMAGES,
  kubernetesSource,
  writeKubernetesImages,
  type KubernetesImages,
} from './kubernetes/images.ts';
import { ensureNodeParts } from './realnodes.ts';
import {
  JOINING,
  NODECARE_TOLERATIONS,
  NodecareInstall,
  breaksAndRecovers,
  containerPid,
  joinsHeldUntilHealthy,
  leaseAnnotation,
  readyPodOn,
  storyLog,
} from './upstream/stories.ts';

const notRun = inject('realNodesNotRun');
const log = storyLog('csi');
const EXTENSION = 'csi-mock';
const NAMESPACE = 'default'; // where csi-mock-rbac.yaml's bindings look for the csi-mock ServiceAccount
const SELECTOR = 'app=csi-mockplugin';
const NODE_LABEL = { 'nodecare.test/upstream': 'csi' };
const MANIFESTS = 'test/e2e/testing-manifests/storage-csi/mock';
/** The manifests' namespaced kinds (the others are cluster-scoped: ClusterRoleBinding, CSIDriver). */
const NAMESPACED = new Set(['ServiceAccount', 'StatefulSet']);

/** The Go module proxy's answer for each half of the kubernetes-csi pair (`go list -m -versions`). */
const REFUSED = [
  'github.com/kubernetes-csi/csi-driver-host-path',
  'github.com/kubernetes-csi/node-driver-registrar',
].map(
  (module) =>
    `${module}: reading .../${module}/@v/list: 403 Forbidden, server response: This module version is not available.`,
);

/** What the test changes in the upstream manifests, and why; nothing else is changed. */
const CHANGES = [
  `mock container image: registry.k8s.io/sig-storage/hostpathplugin:v1.17.1 (csi-driver-host-path, refused: ${REFUSED[0]}) -> Kubernetes' mock CSI driver built from k8s.io/kubernetes v1.37.2 test/e2e/storage/drivers/csi-test (mock/service and driver, unchanged; kubernetes/csi-mock/main.go takes the container's args as the manifest gives them), the driver e2e runs in its embedded mode`,
  `driver-registrar container image: registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0 -> NOT UPSTREAM: nodecare's own registrar (kubernetes/csi-registrar/main.go) written to node-driver-registrar's contract (<driver>-reg.sock, GetInfo, NotifyRegistrationStatus, /healthz), because the Go module proxy refuses it: ${REFUSED[1]}`,
  'csi-provisioner container removed: it is the controller side (creates PersistentVolumes for claims), not part of the node plugin, its registration or its health; github.com/kubernetes-csi/external-provisioner/v6 v6.3.0 is served, but it pins a second Kubernetes tree (k8s.io/kubernetes v1.36.1, controller-runtime) to compile, and its ClusterRole (external-provisioner-runner) is not among these manifests',
  "CSIDriver mock.storage.k8s.io (csi-mock-driverinfo.yaml): `spec: {}` where the file has none (it says e2e's PatchCSIDeployment() fills the spec in; kubectl refuses a CSIDriver without one), so the API server's defaults apply",
  `StatefulSet pod template: nodeSelector ${JSON.stringify(NODE_LABEL)} (the joining node; e2e's PatchCSIDeployment pins these pods to one node too) and tolerations of nodecare's two taints (docs/install.md: the node is held by the bootstrap taint until the driver is up)`,
];

interface Container {
  name: string;
  image: string;
  args?: string[];
}
type Workload = K8sObject & {
  spec: {
    template: {
      spec: { containers: Container[]; nodeSelector?: Record<string, string>; tolerations?: object[] };
    };
  };
};
interface CsiNode {
  spec: { drivers?: { name: string; nodeID: string }[] | null };
}

/** The three e2e manifests of the mock driver, with CHANGES applied. */
function upstreamObjects(source: string): { objects: K8sObject[]; socket: string } {
  const read = (file: string): K8sObject[] =>
    loadAll(readFileSync(join(source, MANIFESTS, file), 'utf8')).filter(Boolean) as K8sObject[];
  const [statefulSet] = read('csi-mock-driver.yaml') as Workload[];
  const pod = statefulSet!.spec.template.spec;
  pod.containers = pod.containers.filter((c) => c.name !== 'csi-provisioner');
  const container = (name: string): Container => {
    const found = pod.containers.find((c) => c.name === name);
    if (!found) throw new Error(`no ${name} container in ${MANIFESTS}/csi-mock-driver.yaml`);
    return found;
  };
  container('mock').image = KUBERNETES_IMAGES.csiMock;
  const registrar = container('driver-registrar');
  registrar.image = KUBERNETES_IMAGES.csiRegistrar;
  pod.nodeSelector = NODE_LABEL;
  pod.tolerations = NODECARE_TOLERATIONS;
  const socket = registrar.args
    ?.find((a) => a.startsWith('--kubelet-registration-path='))
    ?.slice('--kubelet-registration-path='.length);
  if (!socket) throw new Error('no --kubelet-registration-path in the driver-registrar container');
  const [csiDriver] = read('csi-mock-driverinfo.yaml');
  csiDriver!['spec'] ??= {};
  const objects = [...read('csi-mock-rbac.yaml'), csiDriver!, statefulSet!].map((o) =>
    NAMESPACED.has(o.kind) ? { ...o, metadata: { ...o.metadata, namespace: NAMESPACE } } : o,
  );
  return { objects, socket };
}

/** The driver names and node IDs the node's CSINode lists (none before the kubelet registered one). */
async function csiNodeDrivers(node: string): Promise<Record<string, string>> {
  const csiNode = await getJson<CsiNode>(['get', 'csinode', node]).catch(() => undefined);
  return Object.fromEntries((csiNode?.spec.drivers ?? []).map((d) => [d.name, d.nodeID]));
}

/** The gRPC calls the mock driver logged (its interceptor logs each as `gRPCCall: {json}`). */
async function driverCalls(pod: Pod): Promise<{ Method: string; Response?: Record<string, unknown> }[]> {
  const out = await kubectl(['logs', '-n', NAMESPACE, pod.metadata.name, '-c', 'mock']);
  return out
    .split('\n')
    .map((line) => /gRPCCall: (\{.*\})\s*$/.exec(line)?.[1])
    .filter((json): json is string => json !== undefined)
    .map((json) => JSON.parse(json) as { Method: string; Response?: Record<string, unknown> });
}

/** The mock container's ID on the joining node, while containerd runs it. */
async function runningMock(node: TestNode): Promise<string | undefined> {
  const pod = (await getJson<{ items: Pod[] }>(['get', 'pods', '-n', NAMESPACE, '-l', SELECTOR])).items.find(
    (p) => p.spec.nodeName === JOINING,
  );
  const id = pod?.status.containerStatuses
    ?.find((s) => s.name === 'mock')
    ?.containerID?.replace(/^containerd:\/\//, '');
  if (!id) return undefined;
  const task = (await node.ctr(['tasks', 'ls'])).stdout.split('\n').find((l) => l.startsWith(id));
  return task?.includes('RUNNING') ? id : undefined;
}

describe.skipIf(notRun !== '')(
  `Kubernetes' mock CSI driver (upstream) with nodecare's own registrar (node-driver-registrar is refused by the Go module proxy) on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const install = notRun ? undefined : new NodecareInstall(inject('nodecareImage').ref);
    let images: KubernetesImages;
    let objects: K8sObject[] = [];
    let socket = '';
    let joined: TestNode | undefined;
    const list = (): string => dump({ apiVersion: 'v1', kind: 'List', items: objects });

    beforeAll(async () => {
      const parts = await ensureNodeParts();
      images = await writeKubernetesImages(parts, inject('realNodesSlotDir'));
      const source = await kubernetesSource();
      ({ objects, socket } = upstreamObjects(source));
      log(
        `upstream manifests: ${join(source, MANIFESTS)} (csi-mock-driver.yaml, csi-mock-rbac.yaml, csi-mock-driverinfo.yaml)`,
      );
      for (const change of CHANGES) log(`changed: ${change}`);
      // What docs/install.md says to do for a csi probe: copy the component, set the driver's directory.
      const dir = dirname(socket);
      const component = join(install!.scratch, 'agent-host-directory');
      mkdirSync(component);
      writeFileSync(
        join(component, 'kustomization.yaml'),
        readFileSync(
          join(ROOT, 'manifests', 'components', 'agent-host-directory', 'kustomization.yaml'),
          'utf8',
        )
          .replaceAll('/var/lib/kubelet/plugins/ebs.csi.aws.com', dir)
          .replaceAll('host-directory-ebs-csi', 'host-directory-csi-mock'),
      );
      // The component mounts the directory with type Directory: it must be on every node the agent runs on.
      // The driver runs only on the joining node here (where its pod makes the directory); on the suite's
      // other nodes the test makes it, as the driver's pods would on nodes that run it.
      for (const node of realNodes()) mkdirSync(node.hostPath(dir), { recursive: true });
      await install!.install([component]);
      log(`nodecare installed with the kustomize component agent-host-directory for ${dir}`);
    }, 600_000);

    afterAll(async () => {
      await install?.teardown(async () => {
        await kubectl(['delete', 'systemextension', EXTENSION, '--ignore-not-found']);
        await kubectl(['delete', '--ignore-not-found', '--wait=true', '-f', '-'], list());
        // nodecare as the next upstream file expects it: without this file's host directory.
        await install.install();
        for (const node of realNodes())
          rmSync(node.hostPath(dirname(socket)), { recursive: true, force: true });
      });
    });

    it("a node joins held until the kubelet registered the mock driver (its CSINode lists it, with the driver's NodeGetInfo node ID) and the csi probe answers Healthy", async () => {
      await kubectl(['apply', '-f', '-'], list());
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: EXTENSION },
          spec: {
            nodeSelector: { matchLabels: NODE_LABEL },
            probe: { csi: { socket } },
            periodSeconds: 2,
            timeoutSeconds: 1,
            failureThreshold: 1,
            startupGraceSeconds: 10,
          },
        }),
      );
      let driver = '';
      joined = await joinsHeldUntilHealthy({
        extension: EXTENSION,
        log,
        join: () =>
          install!.join(NODE_LABEL, [inject('nodecareImage').archive, images.csiMock, images.csiRegistrar]),
        started: async () => {
          const pod = await readyPodOn(NAMESPACE, SELECTOR, JOINING);
          const drivers = await until(`a CSI driver in ${JOINING}'s CSINode`, async () => {
            const d = await csiNodeDrivers(JOINING);
            return Object.keys(d).length ? d : undefined;
          });
          driver = Object.keys(drivers)[0]!;
          return `pod ${pod.metadata.name} Ready; the kubelet registered ${driver}: CSINode ${JOINING} lists ${JSON.stringify(drivers)}`;
        },
      });
      const pod = await readyPodOn(NAMESPACE, SELECTOR, JOINING);
      const calls = await driverCalls(pod);
      // The registrar asked the driver's name; the kubelet, once registered, asked its node ID.
      const name = calls.find((c) => c.Method === '/csi.v1.Identity/GetPluginInfo')?.Response?.['name'];
      const nodeInfo = calls.find((c) => c.Method === '/csi.v1.Node/NodeGetInfo');
      expect(name).toBe(driver);
      expect(nodeInfo, 'the kubelet called NodeGetInfo').toBeDefined();
      const drivers = await csiNodeDrivers(JOINING);
      log(
        `the driver's own log: GetPluginInfo -> ${JSON.stringify(name)}; NodeGetInfo -> ${JSON.stringify(nodeInfo!.Response)}; CSINode ${JOINING}: ${driver} nodeID ${JSON.stringify(drivers[driver])}`,
      );
      expect(drivers[driver]).toBe(nodeInfo!.Response?.['node_id']);
      const annotation = (await getNode(JOINING)).metadata.annotations?.['csi.volume.kubernetes.io/nodeid'];
      log(`${JOINING} annotation csi.volume.kubernetes.io/nodeid: ${annotation}`);
      const registration = join('/var/lib/kubelet/plugins_registry', `${driver}-reg.sock`);
      const registrar = await kubectl(['logs', '-n', NAMESPACE, pod.metadata.name, '-c', 'driver-registrar']);
      const notified = registrar
        .split('\n')
        .find((l) => l.includes('Received NotifyRegistrationStatus call'));
      log(`registrar (nodecare's own) on ${registration}: ${notified?.replace(/^.*\] /, '')}`);
      expect(notified).toContain('registered=true');
      const probes = calls.filter((c) => c.Method === '/csi.v1.Identity/Probe').length;
      log(
        `nodecare's csi probe: ${probes} Identity/Probe calls in the driver's log so far; lease: ${await leaseAnnotation(JOINING, EXTENSION, 'message')}`,
      );
      expect(probes).toBeGreaterThan(0);
    });

    it('the mock driver killed (SIGKILL) whenever it runs → the runtime taint; left to the kubelet, which restarts it → cleared, the registration kept', async () => {
      const node = joined!;
      let killing = true;
      let kills = 0;
      let crashLoop: Promise<void> | undefined;
      const restarts = async (): Promise<number> =>
        (await readyPodOn(NAMESPACE, SELECTOR, JOINING)).status.containerStatuses?.find(
          (s) => s.name === 'mock',
        )?.restartCount ?? 0;
      const before = await restarts();
      const stopKilling = async (): Promise<void> => {
        killing = false;
        await crashLoop;
      };
      await breaksAndRecovers({
        extension: EXTENSION,
        log,
        timeoutMs: 180_000,
        breakIt: async () => {
          crashLoop = (async () => {
            while (killing) {
              const id = await runningMock(node);
              if (id) {
                await node.ctr(['tasks', 'kill', '-s', 'SIGKILL', id]);
                kills++;
              }
              await sleep(500);
            }
          })();
          return "the mock container's process killed with SIGKILL whenever the kubelet starts it again";
        },
        mend: async () => {
          await stopKilling();
          return `after ${kills} kills, the kubelet is left to restart it (its back-off)`;
        },
      }).finally(stopKilling);
      const after = await restarts();
      log(
        `the kubelet restarted the mock container ${after - before} times; CSINode ${JOINING} still lists ${JSON.stringify(await csiNodeDrivers(JOINING))}`,
      );
      expect(after).toBeGreaterThan(before);
      expect(Object.keys(await csiNodeDrivers(JOINING)).length).toBeGreaterThan(0);
    });

    it('the mock driver hangs (SIGSTOP) → Identity/Probe times out, the runtime taint; resumed (SIGCONT) → cleared', async () => {
      const pod = await readyPodOn(NAMESPACE, SELECTOR, JOINING);
      const pid = await containerPid(joined!, pod, 'mock');
      await breaksAndRecovers({
        extension: EXTENSION,
        log,
        breakIt: async () => {
          process.kill(pid, 'SIGSTOP');
          return `the mock driver (pid ${pid}) stopped with SIGSTOP: its socket accepts connections, no call is answered`;
        },
        mend: async () => {
          process.kill(pid, 'SIGCONT');
          return `the mock driver (pid ${pid}) resumed with SIGCONT`;
        },
      });
      log(`lease: ${await leaseAnnotation(JOINING, EXTENSION, 'message')}`);
    });
  },
);
