// nodecare as a user installs it, on real kubelets: the image built from the Dockerfile (global-setup.ts),
// `kubectl apply -k` of manifests/ with only the image overridden, the agent DaemonSet on every node with its
// real host mounts and its kubelet-issued token, the controller Deployment on the pod network. Then the stories
// of docs/install.md, each on real nodes: a node joining with the bootstrap taint from `--register-with-taints`
// until its GPU device plugin (registered through the kubelet) is healthy; the plugin killed and restarted; a
// DaemonSet pod whose readiness the kubelet probes; the agent's pod deleted and its container killed; a reboot;
// and `kubectl nodecare uninstall` leaving nothing behind. The tests run in order and build on each other.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { load } from 'js-yaml';
import { request } from 'undici';
import { afterAll, describe, expect, inject, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  LEASE_NAMESPACE,
  buildLease,
  extensionLeaseName,
} from '../../api/index.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { addNode, kubectl, realNodes, removeNode, waitNodesReady, type TestNode } from './client.ts';
import {
  ROOT,
  SYSTEM,
  describeView,
  expectNothingOfNodecareLeft,
  getJson,
  getNode,
  getPods,
  healthyView,
  jwtClaims,
  applyShipped,
  kustomizationWithImage,
  podReady,
  podToken,
  runCli,
  until,
  untilView,
  viewOf,
  watchView,
  type Condition,
  type Node,
  type Pod,
} from './cluster.ts';
import { leasesPath } from '../../lib/kube/paths.ts';

const notRun = inject('realNodesNotRun');
const FIXTURES = join(import.meta.dirname, 'fixtures');
const MANIFESTS = join(import.meta.dirname, '..', '..', 'manifests');
/** Every node here is a 1.37 kubelet serving the Pods API: mounted as a user of such a cluster would (issue 50 item 11). */
const KUBELET_PODS_API = join(MANIFESTS, 'components', 'agent-kubelet-pods-api');
const AGENT_SELECTOR = 'app.kubernetes.io/name=nodecare-agent';
const CONTROLLER_SELECTOR = 'app.kubernetes.io/name=nodecare-controller';
/** The shipped example SystemExtension for a GPU device plugin, at test speed (see the first story). */
const GPU_EXAMPLE = join(ROOT, 'manifests', 'examples', 'gpu-device-plugin.yaml');

/** One line per measured figure, so the suite's output shows them. */
/** An API server audit event, as much as the tests read. */
interface AuditEvent {
  stage?: string;
  verb?: string;
  requestURI?: string;
  user?: { username?: string };
  objectRef?: { resource?: string };
}

/** Sets one node condition as its owner would: a strategic merge patch of the status, keyed by type. */
async function setNodeCondition(node: string, condition: Record<string, string>): Promise<void> {
  await kubectl([
    'patch',
    'node',
    node,
    '--subresource=status',
    '--type=strategic',
    '-p',
    JSON.stringify({ status: { conditions: [condition] } }),
  ]);
}

function report(line: string): void {
  process.stderr.write(`[realnodes] ${line}\n`);
}

async function agentPodOn(node: string): Promise<Pod> {
  return until(`a Ready nodecare-agent pod on ${node}`, async () => {
    const pod = (await getPods(SYSTEM, AGENT_SELECTOR)).find((p) => p.spec.nodeName === node);
    return pod && podReady(pod) ? pod : undefined;
  });
}

async function leaseState(node: string, extension: string): Promise<string | undefined> {
  const out = await kubectl([
    'get',
    'lease',
    '-n',
    LEASE_NAMESPACE,
    extensionLeaseName(node, extension),
    '-o',
    'jsonpath={.metadata.annotations.nodecare\\.io/state}',
    '--ignore-not-found',
  ]);
  return out.trim() || undefined;
}

/** When the Node events with `reason` happened (ms since the epoch), oldest first. */
async function eventTimes(node: string, reason: string): Promise<number[]> {
  const list = await getJson<{
    items: { eventTime?: string; firstTimestamp?: string; lastTimestamp?: string }[];
  }>([
    'get',
    'events',
    '-A',
    '--field-selector',
    `involvedObject.kind=Node,involvedObject.name=${node},reason=${reason}`,
  ]);
  return list.items
    .map((e) => Date.parse(e.eventTime ?? e.lastTimestamp ?? e.firstTimestamp ?? ''))
    .filter((t) => !Number.isNaN(t))
    .sort((a, b) => a - b);
}

async function events(node: string, reason: string): Promise<number> {
  const list = await getJson<{ items: { involvedObject: { name: string }; reason: string }[] }>([
    'get',
    'events',
    '-A',
    '--field-selector',
    `involvedObject.kind=Node,involvedObject.name=${node},reason=${reason}`,
  ]);
  return list.items.length;
}

describe.skipIf(notRun !== '')(
  `nodecare as shipped on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const nodes = notRun ? [] : realNodes();
    const image = notRun ? undefined : inject('nodecareImage');
    const kubeconfig = notRun ? '' : inject('kubeconfig');
    let installDir = '';
    let uninstalled = false;
    let node4: TestNode | undefined;
    // The overlays and the copied component, as a user's would be: outside the repository, removed at the end.
    const scratch = notRun ? '' : mkdtempSync(join(tmpdir(), 'nodecare-shipped-'));

    afterAll(async () => {
      // The suite's other files find the 3 nodes they started with.
      if (node4) await removeNode(node4.name);
      // A failed story must not leave an install behind for the next file of the suite.
      if (!uninstalled && installDir) {
        await runCli(['uninstall', '--yes', `--kubeconfig=${kubeconfig}`]).catch(() => undefined);
        await kubectl(['delete', '-k', installDir, '--ignore-not-found', '--wait=false']).catch(() => '');
      }
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });

    it('kubectl apply -k, overriding only the image: the agent Ready on every node, the controller Available, nodes adopted untainted', async () => {
      installDir = kustomizationWithImage(image!.ref, [KUBELET_PODS_API], scratch);
      await applyShipped(kubectl, installDir, 180);
      const agents = await getPods(SYSTEM, AGENT_SELECTOR);
      expect(agents.map((p) => p.spec.nodeName).sort()).toEqual(nodes.map((n) => n.name).sort());
      expect(agents.every(podReady)).toBe(true);
      const controllers = (await getPods(SYSTEM, CONTROLLER_SELECTOR)).filter(podReady);
      expect(controllers).toHaveLength(2);
      // Every pod runs the image built from the Dockerfile, by its digest.
      const images = await getJson<{ items: { status: { containerStatuses: { imageID: string }[] } }[] }>([
        'get',
        'pods',
        '-n',
        SYSTEM,
      ]);
      for (const pod of images.items)
        expect(pod.status.containerStatuses[0]!.imageID).toContain(image!.configDigest);
      // The nodes were there before nodecare: adopted, never held (docs/adr/0002).
      for (const node of nodes) {
        const view = await untilView(node.name, 'healthy', healthyView);
        expect(view.bootstrapTaint).toBe(false);
      }
    });

    it("the agent's token is the kubelet's: the admission policy admits its own node's Lease and denies another node's", async () => {
      const node = nodes[0]!;
      const pod = await agentPodOn(node.name);
      const token = await podToken(node, pod.metadata.uid);
      const claims = jwtClaims(token) as {
        sub?: string;
        'kubernetes.io'?: { node?: { name?: string }; pod?: { name?: string } };
      };
      expect(claims.sub).toBe('system:serviceaccount:nodecare-system:nodecare-agent');
      expect(claims['kubernetes.io']?.node?.name).toBe(node.name);
      expect(claims['kubernetes.io']?.pod?.name).toBe(pod.metadata.name);

      const doc = JSON.parse(readFileSync(kubeconfig, 'utf8')) as { users: { user: unknown }[] };
      for (const user of doc.users) user.user = { token };
      const path = join(installDir, 'agent.kubeconfig');
      writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
      const client = new KubeClient(await loadConnection(path), { userAgent: 'nodecare-realnodes-test' });
      const leases = leasesPath(LEASE_NAMESPACE);
      const leaseFor = async (name: string) => {
        const n = await getJson<{ metadata: { uid: string } }>(['get', 'node', name]);
        return buildLease({
          node: { name, uid: n.metadata.uid },
          extension: 'token-check',
          holderIdentity: 'realnodes-test',
          leaseDurationSeconds: 30,
          renewTime: new Date(),
          bootId: 'test',
          record: {
            state: 'Healthy',
            reason: 'ProbeSucceeded',
            message: 'ok',
            since: new Date().toISOString(),
          },
        });
      };
      try {
        const own = await leaseFor(node.name);
        await client.request('POST', leases, { body: own });
        await client.request('DELETE', `${leases}/${own.metadata.name}`);
        const other = await leaseFor(nodes[1]!.name);
        const denied = await client.request('POST', leases, { body: other }).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(denied).toBeInstanceOf(KubeError);
        expect((denied as KubeError).code).toBe(KubeErrorCode.Forbidden);
        expect((denied as KubeError).message).toContain('nodecare-agent-own-node-leases');
        expect((denied as KubeError).message).toContain(`an agent on node ${node.name}`);
      } finally {
        await client.close();
      }
    });

    it("the agent container sees the host only through the documented read-only mounts, and a file probe reaches the node's /run/nodecare", async () => {
      const node = nodes[0]!;
      // The agent's own mount table, read from the host: containers share its PID namespace here.
      const tasks = await node.ctr(['tasks', 'ls']);
      const pod = await agentPodOn(node.name);
      const id = pod.status.containerStatuses![0]!.containerID!.replace(/^containerd:\/\//, '');
      const pid = /^(\S+)\s+(\d+)/m.exec(tasks.stdout.split('\n').find((l) => l.startsWith(id)) ?? '')?.[2];
      expect(pid, tasks.stdout).toBeDefined();
      const mounts = readFileSync(`/proc/${pid}/mountinfo`, 'utf8')
        .trim()
        .split('\n')
        .map((line) => {
          const [pre, post] = line.split(' - ');
          const fields = pre!.split(' ');
          return { path: fields[4]!, options: fields[5]!.split(','), fstype: post!.split(' ')[0]! };
        });
      const readOnly = (m: { options: string[] }): boolean => m.options.includes('ro');
      expect(readOnly(mounts.find((m) => m.path === '/')!)).toBe(true);
      // Memory and kernel file systems are the container's own; anything else is the node's disk.
      const own = new Set(['tmpfs', 'proc', 'sysfs', 'devpts', 'mqueue', 'cgroup', 'cgroup2', 'overlay']);
      const fromHost = mounts.filter((m) => !own.has(m.fstype));
      // The kubelet's per-pod files (a pod's own, not the node's state) and the documented host paths.
      const podFiles = ['/etc/hosts', '/etc/hostname', '/etc/resolv.conf', '/dev/termination-log'];
      const documented = [
        '/var/lib/kubelet/device-plugins',
        '/var/lib/kubelet/plugins_registry',
        '/run/nodecare',
        // The kubelet's Pods API socket, where podReady reads this node's pods (issue 23 item 6): the component
        // agent-kubelet-pods-api, type Directory (the 1.37 kubelet made it; nodecare creates nothing there).
        '/var/lib/kubelet/pods-api',
      ];
      expect(
        fromHost
          .map((m) => m.path)
          .filter((p) => !podFiles.includes(p))
          .sort(),
      ).toEqual([...documented].sort());
      for (const m of fromHost.filter((x) => documented.includes(x.path)))
        expect(readOnly(m), m.path).toBe(true);
      // What the agent can write at all: its in-memory /tmp and the pod's own files, nothing of the node's.
      const writable = fromHost.filter((m) => !readOnly(m)).map((m) => m.path);
      expect(
        writable.every((p) => podFiles.includes(p)),
        writable.join(' '),
      ).toBe(true);

      // A heartbeat file on the node, through the shipped /run/nodecare mount, registered by annotation.
      const heartbeat = node.hostPath('/run/nodecare/realnodes.heartbeat');
      writeFileSync(heartbeat, 'alive\n');
      await kubectl([
        'annotate',
        'node',
        node.name,
        `extensions.nodecare.io/heartbeat-file=${JSON.stringify({
          probe: { file: { path: '/run/nodecare/realnodes.heartbeat' } },
          periodSeconds: 2,
        })}`,
      ]);
      await until('the heartbeat-file lease Healthy', async () =>
        (await leaseState(node.name, 'heartbeat-file')) === 'Healthy' ? true : undefined,
      );
      rmSync(heartbeat);
      await until('the heartbeat-file lease not Healthy once the file is gone', async () => {
        const state = await leaseState(node.name, 'heartbeat-file');
        return state && state !== 'Healthy' ? state : undefined;
      });
      await kubectl(['annotate', 'node', node.name, 'extensions.nodecare.io/heartbeat-file-']);
      await untilView(node.name, 'healthy again without the annotation', healthyView);
    });

    it('a node joining with --register-with-taints is held until its GPU device plugin has registered with the kubelet, then the pending pod runs there', async () => {
      // The shipped example SystemExtension, at test speed: 2 s probes, and 10 s of start-up grace instead of
      // 10 minutes so that the next story sees a failure as a failure.
      const example = load(readFileSync(GPU_EXAMPLE, 'utf8')) as { spec: Record<string, unknown> };
      example.spec.periodSeconds = 2;
      example.spec.startupGraceSeconds = 10;
      await kubectl(['apply', '-f', '-'], JSON.stringify(example));
      await kubectl(['apply', '-f', join(FIXTURES, 'device-plugin.yaml')]);
      // The workload: no toleration, pinned to the node that is about to join. The scheduler keeps it pending.
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: 'gpu-workload', namespace: 'default' },
          spec: {
            nodeSelector: { 'kubernetes.io/hostname': 'node-4' },
            terminationGracePeriodSeconds: 1,
            containers: [
              { name: 'main', image: 'nodecare.test/testbin:1', imagePullPolicy: 'Never', args: ['pause'] },
            ],
          },
        }),
      );

      // Sampled from before the node exists: whenever node-4 carried the bootstrap taint, the pod was unbound.
      // The pod is read before the node, never at the same time: the scheduler binds it within milliseconds of
      // the taint's removal, so two reads in flight together could pair a node read just before the removal
      // with a pod read just after the binding (a CI run on 2026-11-28 did). Read in this order, a bound pod
      // with the taint on the node later means the taint came back.
      const samples: { taints: string[]; bound: boolean }[] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const pod = await getJson<Pod>(['get', 'pod', '-n', 'default', 'gpu-workload']);
          const node = await getNode('node-4').catch(() => undefined);
          if (node)
            samples.push({ taints: (node.spec.taints ?? []).map((t) => t.key), bound: !!pod.spec.nodeName });
          await sleep(200);
        }
      })();
      const joined = Date.now();
      try {
        node4 = await addNode({
          name: 'node-4',
          registerWithTaints: [`${BOOTSTRAP}=:NoSchedule`],
          labels: { 'nvidia.com/gpu.present': 'true', 'nodecare.test/device-plugin': 'on' },
          images: [image!.archive, inject('testbinArchive')],
        });
        await waitNodesReady(['node-4']);
        await untilView('node-4', 'released (healthy, no bootstrap taint)', healthyView);
      } finally {
        sampling = false;
        await sampler;
      }
      // The kubelet registered the node with the taint: the first look at it found it, and the controller
      // never had to add it. While it was there, the pod stayed unbound.
      expect(samples[0]?.taints, 'node-4 at first sight').toContain(BOOTSTRAP);
      expect(samples.filter((x) => x.taints.includes(BOOTSTRAP) && x.bound)).toEqual([]);
      // And it was the bootstrap taint that held the pod: for a while it was the node's only taint (the
      // kubelet's not-ready taint gone), and the pod still waited.
      const heldByUsAlone = samples.filter((x) => x.taints.join() === BOOTSTRAP && !x.bound);
      expect(heldByUsAlone.length, JSON.stringify(samples)).toBeGreaterThan(0);

      await agentPodOn('node-4');
      const capacity = await until('nvidia.com/gpu capacity on node-4', async () => {
        const gpus = (await getNode('node-4')).status.capacity?.['nvidia.com/gpu'];
        return gpus && gpus !== '0' ? gpus : undefined;
      });
      expect(capacity).toBe('2');
      expect(await leaseState('node-4', 'nvidia-device-plugin')).toBe('Healthy');
      expect(await events('node-4', 'BootstrapTaintAdded')).toBe(0);
      const removed = await eventTimes('node-4', 'BootstrapTaintRemoved');
      expect(removed).toHaveLength(1);

      const running = await until('gpu-workload running on node-4', async () => {
        const pod = await getJson<Pod>(['get', 'pod', '-n', 'default', 'gpu-workload']);
        return pod.spec.nodeName === 'node-4' && podReady(pod) ? pod : undefined;
      });
      expect(running.spec.nodeName).toBe('node-4');
      // The scheduler's own account of why it waited: an untolerated taint (node-4's was ours alone, above).
      const failed = await getJson<{ items: { message: string }[] }>([
        'get',
        'events',
        '-n',
        'default',
        '--field-selector',
        'involvedObject.name=gpu-workload,reason=FailedScheduling',
      ]);
      const onTaint = failed.items
        .map((e) => e.message)
        .find((m) => m.startsWith('0/4 nodes') && m.includes('untolerated taint'));
      expect(onTaint, failed.items.map((e) => e.message).join('\n')).toBeDefined();
      report(`gpu-workload was pending: ${onTaint}`);
      const created = Date.parse((await getNode('node-4')).metadata.creationTimestamp);
      const schedulableAt = removed[0]!;
      report(
        `node-4: registration → schedulable ${((schedulableAt - created) / 1000).toFixed(1)}s ` +
          `(join requested → schedulable ${((schedulableAt - joined) / 1000).toFixed(1)}s; ` +
          `the event's clock has 1 s steps)`,
      );
    });

    it('the device plugin killed → the runtime taint; started again → registered again and the taint cleared', async () => {
      await kubectl(['label', 'node', 'node-4', 'nodecare.test/device-plugin-']);
      const failed = await untilView(
        'node-4',
        'runtime taint after the device plugin went',
        (v) => v.runtimeTaint && v.condition?.status === 'False',
      );
      expect(failed.label).toBe('unhealthy');
      expect(await leaseState('node-4', 'nvidia-device-plugin')).toBe('Unhealthy');
      report(`device plugin gone: ${describeView(failed)}`);

      await kubectl(['label', 'node', 'node-4', 'nodecare.test/device-plugin=on']);
      await untilView('node-4', 'runtime taint cleared after the device plugin came back', healthyView);
      expect(await leaseState('node-4', 'nvidia-device-plugin')).toBe('Healthy');
    });

    it('maintenance (issue 23 item 2): node-4 cordoned and DrainInProgress (KEP-5683, gate on): its device plugin gone is expected (InMaintenance, no Warning), the runtime taint stays until the maintenance ends', async () => {
      const started = Date.now();
      await kubectl(['cordon', 'node-4']);
      // What a drain tool sets beside the cordon (the admin owns the condition; the kubelet keeps it).
      await setNodeCondition('node-4', {
        type: 'DrainInProgress',
        status: 'True',
        reason: 'NodeDrain',
        message: 'kernel update',
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      });
      await kubectl(['label', 'node', 'node-4', 'nodecare.test/device-plugin-']);
      const held = await untilView(
        'node-4',
        'InMaintenance with the runtime taint after the device plugin went',
        (v) => v.condition?.reason === 'InMaintenance' && v.runtimeTaint,
      );
      expect(held.label).toBe('maintenance');
      expect(held.condition?.message).toContain('(DrainInProgress: NodeDrain: kernel update)');
      report(`node-4 in maintenance, device plugin gone: ${describeView(held)}`);
      await until('a MaintenanceStarted event', async () =>
        (await events('node-4', 'MaintenanceStarted')) > 0 ? true : undefined,
      );
      expect((await eventTimes('node-4', 'ExtensionUnhealthy')).filter((t) => t >= started)).toEqual([]);

      await kubectl(['label', 'node', 'node-4', 'nodecare.test/device-plugin=on']);
      const recovered = await untilView(
        'node-4',
        'healthy again while maintained',
        (v) => v.condition?.reason === 'AllExtensionsHealthy',
      );
      expect(recovered.runtimeTaint).toBe(true);

      await setNodeCondition('node-4', { type: 'DrainInProgress', status: 'False', reason: 'Done' });
      await kubectl(['uncordon', 'node-4']);
      await untilView('node-4', 'runtime taint cleared once out of maintenance', healthyView);
      await until('a MaintenanceEnded event', async () =>
        (await events('node-4', 'MaintenanceEnded')) > 0 ? true : undefined,
      );
    });

    it('podReady: a DaemonSet pod whose readiness the kubelet probes turns unready → the runtime taint; ready again → cleared', async () => {
      await kubectl(['apply', '-f', join(FIXTURES, 'log-agent.yaml')]);
      await kubectl(['rollout', 'status', '-n', 'kube-system', 'daemonset/test-log-agent', '--timeout=120s']);
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: 'log-agent' },
          spec: {
            probe: {
              podReady: { namespace: 'kube-system', selector: { matchLabels: { app: 'test-log-agent' } } },
            },
            periodSeconds: 2,
            failureThreshold: 1,
            startupGraceSeconds: 0,
          },
        }),
      );
      const node = nodes[0]!;
      await until('the log-agent lease Healthy on every node', async () => {
        const states = await Promise.all(
          ['node-1', 'node-2', 'node-3', 'node-4'].map((n) => leaseState(n, 'log-agent')),
        );
        return states.every((s) => s === 'Healthy') ? states : undefined;
      });
      const flip = async (to: 'fail' | 'ok'): Promise<void> => {
        const res = await request(`http://${node.ip}:9700/${to}`, { method: 'POST' });
        expect(res.statusCode).toBe(200);
        await res.body.dump();
      };
      await flip('fail');
      const failed = await untilView(
        node.name,
        'runtime taint after the pod turned unready',
        (v) => v.runtimeTaint,
      );
      expect(await leaseState(node.name, 'log-agent')).toBe('Unhealthy');
      report(`log-agent unready on ${node.name}: ${describeView(failed)}`);
      // Only that node: the others keep serving.
      for (const other of ['node-2', 'node-3', 'node-4'])
        expect(viewOf(await getNode(other)).runtimeTaint).toBe(false);
      await flip('ok');
      await untilView(node.name, 'runtime taint cleared after the pod turned ready', healthyView);

      // Kubernetes 1.37's kubelet serves its Pods API (KEP-4188, beta, on by default): every agent read its
      // node's pods there, and asked the API server for none (its audit log records the agents' requests).
      for (const n of nodes) {
        const pod = await agentPodOn(n.name);
        const logs = await kubectl(['logs', '-n', SYSTEM, pod.metadata.name]);
        expect(logs, n.name).toMatch(/"source":"kubelet"[^\n]*podReady pod source chosen/);
        expect(logs, n.name).not.toMatch(/"source":"apiserver"[^\n]*podReady pod source chosen/);
      }
      const podRequests = readFileSync(inject('realNodesAuditLog'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as AuditEvent)
        .filter(
          (e) =>
            e.stage === 'ResponseComplete' &&
            e.user?.username === `system:serviceaccount:${SYSTEM}:nodecare-agent` &&
            e.objectRef?.resource === 'pods',
        );
      expect(podRequests.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
      report(
        `podReady on ${nodes.length} nodes read pods from the kubelet's Pods API: 0 agent pod requests to the API server`,
      );
    });

    it("csi: a CSI driver's socket reached through the host directory the docs say to add (kustomize component) → Healthy; the driver gone → the runtime taint; back → cleared", async () => {
      const driverDir = '/var/lib/kubelet/plugins/test.csi.nodecare.io';
      // Mounted with type Directory: the directory must be on every node the agent runs on (as a driver's
      // would be once its DaemonSet runs everywhere); nothing is created by nodecare.
      for (const node of [...nodes, node4!]) mkdirSync(node.hostPath(driverDir), { recursive: true });
      await kubectl([
        'label',
        'node',
        'node-1',
        'nodecare.test/csi-driver=on',
        'nodecare.test/csi-node=true',
      ]);
      await kubectl(['apply', '-f', join(FIXTURES, 'csi-driver.yaml')]);
      await kubectl([
        'rollout',
        'status',
        '-n',
        'kube-system',
        'daemonset/test-csi-driver',
        '--timeout=120s',
      ]);
      // What docs/install.md says to do: copy the component, set its path, list it in your overlay.
      const component = join(scratch, 'agent-host-directory');
      mkdirSync(component);
      writeFileSync(
        join(component, 'kustomization.yaml'),
        readFileSync(join(MANIFESTS, 'components', 'agent-host-directory', 'kustomization.yaml'), 'utf8')
          .replaceAll('/var/lib/kubelet/plugins/ebs.csi.aws.com', driverDir)
          .replaceAll('host-directory-ebs-csi', 'host-directory-test-csi'),
      );
      const overlay = kustomizationWithImage(image!.ref, [KUBELET_PODS_API, component], scratch);
      await kubectl(['apply', '--server-side', '-k', overlay]);
      installDir = overlay;
      await kubectl(['rollout', 'status', '-n', SYSTEM, 'daemonset/nodecare-agent', '--timeout=180s']);
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: 'test-csi-driver' },
          spec: {
            // The node that needs the driver (not the label that starts and stops the driver).
            nodeSelector: { matchLabels: { 'nodecare.test/csi-node': 'true' } },
            probe: { csi: { socket: `${driverDir}/csi.sock` } },
            periodSeconds: 2,
            failureThreshold: 1,
            startupGraceSeconds: 0,
          },
        }),
      );
      await until('the test-csi-driver lease Healthy on node-1', async () =>
        (await leaseState('node-1', 'test-csi-driver')) === 'Healthy' ? true : undefined,
      );
      await untilView('node-1', 'healthy with the CSI driver', healthyView);

      await kubectl(['label', 'node', 'node-1', 'nodecare.test/csi-driver-']);
      const failed = await untilView(
        'node-1',
        'runtime taint after the CSI driver went',
        (v) => v.runtimeTaint,
      );
      expect(await leaseState('node-1', 'test-csi-driver')).toBe('Unhealthy');
      report(`CSI driver gone: ${describeView(failed)}`);
      await kubectl(['label', 'node', 'node-1', 'nodecare.test/csi-driver=on']);
      await untilView('node-1', 'runtime taint cleared after the CSI driver came back', healthyView);
      expect(await leaseState('node-1', 'test-csi-driver')).toBe('Healthy');
    });

    it('the agent pod deleted, then its container killed: back each time, heartbeats continue, the node never flaps', async () => {
      const node = nodes[1]!;
      const before = await agentPodOn(node.name);
      const views = await watchView(
        node.name,
        async () => {
          await kubectl(['delete', 'pod', '-n', SYSTEM, before.metadata.name, '--wait=true']);
          const after = await until('a new agent pod Ready', async () => {
            const pod = await agentPodOn(node.name);
            return pod.metadata.uid !== before.metadata.uid ? pod : undefined;
          });
          const container = after.status.containerStatuses![0]!;
          const id = container.containerID!.replace(/^containerd:\/\//, '');
          const killed = await node.ctr(['tasks', 'kill', '--signal', 'SIGKILL', id]);
          expect(killed.code, killed.stderr).toBe(0);
          await until('the agent container restarted and Ready', async () => {
            const pod = await agentPodOn(node.name);
            const status = pod.status.containerStatuses![0]!;
            return pod.metadata.uid === after.metadata.uid && status.restartCount > container.restartCount
              ? pod
              : undefined;
          });
        },
        5_000,
      );
      expect(views.length).toBeGreaterThan(10);
      const flaps = views.filter((v) => !healthyView(v));
      expect(flaps.map(describeView)).toEqual([]);
    });

    it('a reboot (every process of the node killed, a new boot ID): bootstrap taint again until its extensions are healthy on the new boot', async () => {
      const node = node4!;
      const bootBefore = (await getNode(node.name)).status.nodeInfo?.bootID;
      const views = await watchView(node.name, async () => {
        await node.restart();
        await until('a new boot ID on node-4', async () => {
          const id = (await getNode(node.name)).status.nodeInfo?.bootID;
          return id && id !== bootBefore ? id : undefined;
        });
        await untilView(node.name, 'released again after the reboot', healthyView);
      });
      const retainted = views.findIndex((v) => v.bootstrapTaint);
      expect(retainted, 'the bootstrap taint was never seen after the reboot').toBeGreaterThanOrEqual(0);
      // Once released, it stays released; the runtime taint never shows (a reboot is bootstrap, not failure).
      expect(views.slice(retainted).some((v) => v.runtimeTaint)).toBe(false);
      expect(healthyView(views.at(-1)!)).toBe(true);
      await waitNodesReady(['node-4']);
    });

    it("a kubelet stopped for good: Kubernetes marks the node NotReady, and nodecare's condition, label and ClusterHealth agree and say why", async () => {
      const node = node4!;
      // Only the kubelet dies: containerd and the agent's container run on and keep reporting, which is
      // exactly when nodecare must not call the node healthy.
      await node.killForGood();
      try {
        await expectNotReadyReported(node.name);
      } finally {
        // The operator's answer to a dead machine: it leaves the cluster (its pods are garbage-collected). Done
        // even when an assertion failed, so the uninstall below does not wait on a pod no kubelet can stop.
        await removeNode(node.name);
        node4 = undefined;
      }
    });

    async function expectNotReadyReported(nodeName: string): Promise<void> {
      // The agent's kubelet-backed probes turn Unknown (ExtensionsUnknown) as soon as the kubelet dies, before
      // the node lifecycle controller marks Ready Unknown after its grace period; so wait for the controller's
      // verdict on the NotReady node, not for the first view in which both have changed.
      const notReady = await untilView(
        nodeName,
        'nodecare reports the kubelet not ready (ExtensionsReady Unknown/NodeNotReady)',
        (v) => v.ready?.status !== 'True' && v.condition?.reason === 'NodeNotReady',
        120_000,
      );
      expect(notReady.condition?.status).toBe('Unknown');
      expect(notReady.condition?.message).toContain(notReady.ready!.reason!);
      expect(notReady.label).toBe('unknown');
      expect(notReady.runtimeTaint).toBe(false);
      report(`${nodeName} with its kubelet gone: ${describeView(notReady)}: ${notReady.condition?.message}`);
      const rollup = await until('ClusterHealth EveryNodeReady naming the node', async () => {
        const health = await getJson<{ status?: { conditions?: Condition[] } }>([
          'get',
          'clusterhealth',
          'cluster',
        ]);
        const every = health.status?.conditions?.find((c) => c.type === 'EveryNodeReady');
        return every && every.status !== 'True' && every.message?.includes(nodeName) ? every : undefined;
      });
      expect(rollup.message).toMatch(/not ready/i);
      report(`ClusterHealth EveryNodeReady ${rollup.status}/${rollup.reason}: ${rollup.message}`);
    }

    it('kubectl nodecare uninstall, then kubectl delete -k: no nodecare taint, label, condition, lease, pod or object left; the kubelets still run', async () => {
      const result = await runCli(['uninstall', '--yes', `--kubeconfig=${kubeconfig}`]);
      expect(result.code, result.stderr + result.stdout).toBe(0);
      // The uninstall deleted the workloads already (docs/install.md: hence --ignore-not-found).
      await kubectl(['delete', '-k', installDir, '--ignore-not-found', '--wait=true', '--timeout=120s']);
      uninstalled = true;
      const all = await getJson<{ items: Node[] }>(['get', 'nodes']);
      expect(all.items.map((n) => n.metadata.name).sort()).toEqual(nodes.map((n) => n.name).sort());
      await expectNothingOfNodecareLeft(nodes);
      await kubectl([
        'delete',
        '-f',
        join(FIXTURES, 'device-plugin.yaml'),
        '-f',
        join(FIXTURES, 'log-agent.yaml'),
        '-f',
        join(FIXTURES, 'csi-driver.yaml'),
      ]);
      await kubectl(['delete', 'pod', '-n', 'default', 'gpu-workload', '--ignore-not-found', '--wait=false']);
    });
  },
);
