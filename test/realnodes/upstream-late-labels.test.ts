// Late labels on real kubelets (issue 49 item 4; docs/adr/0019, docs/extensions.md "Labels set after
// registration"): the labeler is node-feature-discovery (sigs.k8s.io/node-feature-discovery, built from its
// module by upstream/build.sh), installed from the module's deployment/overlays/default (CRDs, RBAC, nfd-master,
// nfd-worker, nfd-gc), rendered by kubectl's kustomize from the Go module cache, with the changes CHANGES lists.
// The GPU is Kubernetes' sample-device-plugin with its e2e DaemonSet, made to run only where NFD's feature
// label is, as GPU device plugins are deployed. A SystemExtension selects nodes by that label and, with
// spec.labelWait, holds new nodes of the GPU pool for it:
// 1. node-4 joins the pool with the bootstrap taint; 20 s after its creation a feature file appears on it (what
//    a driver install would advertise through NFD's local source), NFD labels the node, the plugin starts
//    there; the node is held throughout until the plugin's Lease is Healthy.
// 2. node-4 joins again and never gets the label: it is released once labelWait.waitSeconds after its
//    creation have passed, with a LabelWaitEnded event.

import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dump, load, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP } from '../../api/index.ts';
import { kubectl, realNodes, removeNode } from './client.ts';
import {
  describeView,
  getJson,
  getNode,
  getPods,
  until,
  viewOf,
  type NodecareView,
  type K8sObject,
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
  NODECARE_TOLERATIONS,
  NodecareInstall,
  joinsHeldUntilHealthy,
  leaseState,
  readyPodOn,
  storyLog,
} from './upstream/stories.ts';
import { ensureUpstream, type UpstreamBuild } from './upstream/upstream.ts';

const notRun = inject('realNodesNotRun');
const log = storyLog('late-labels');

const EXTENSION = 'sample-device-plugin';
const RESOURCE = 'example.com/resource';
/** The label NFD sets from the feature file below (its local source prefixes feature.node.kubernetes.io/). */
const FEATURE_LABEL = 'feature.node.kubernetes.io/fake-gpu.present';
/** The label a GPU node pool has at registration (Karpenter's karpenter.sh/nodepool, a node group label). */
const POOL = { key: 'nodecare.test/pool', value: 'gpu' };
/** When the feature file appears on the GPU node, after its creation. */
const LABEL_AFTER_MS = 20_000;
const WAIT_SECONDS = { labeled: 90, neverLabeled: 30 };
const NFD_NAMESPACE = 'node-feature-discovery';
const NFD_IMAGE = 'registry.k8s.io/nfd/node-feature-discovery:v0.18.3';
/** Where the worker reads feature files on the node (CHANGES: a directory of the node's own). */
const FEATURES_DIR = '/var/lib/node-feature-discovery/features.d';
const SAMPLE_MANIFEST = 'test/e2e/testing-manifests/sample-device-plugin/sample-device-plugin.yaml';
const SAMPLE_SELECTOR = 'k8s-app=sample-device-plugin';

/** What the test changes in the upstream files, and why; nothing else is changed. */
const CHANGES = [
  `NFD (deployment/overlays/default): image ${NFD_IMAGE} -> the image built from sigs.k8s.io/node-feature-discovery v0.18.3 (nfd-master, nfd-worker, nfd-gc in /usr/bin and the example worker config, as its Dockerfile lays them out)`,
  `NFD nfd-worker DaemonSet: nodecare's two tolerations added (docs/install.md: a labeler a held node waits for must run there; the stock worker tolerates no taint)`,
  `NFD nfd-worker DaemonSet: the features-d hostPath /etc/kubernetes/node-feature-discovery/features.d/ -> ${FEATURES_DIR} (the test's nodes share the machine's /etc; /var/lib is each node's own)`,
  'NFD ConfigMap nfd-worker-conf: core.sleepInterval 60s -> 5s (every key of the shipped example is commented out; a feature file is then a label within 5 s)',
  `sample-device-plugin (e2e DaemonSet): image registry.k8s.io/e2e-test-images/sample-device-plugin:1.8.0 -> the image built from k8s.io/kubernetes v1.37.2 test/images/sample-device-plugin`,
  `sample-device-plugin (e2e DaemonSet): nodeSelector ${FEATURE_LABEL}: "true" added (the e2e DaemonSet runs on every node; a GPU plugin runs where the GPU label is, as NVIDIA's chart selects nodes by NFD's labels)`,
];

interface PodTemplateOwner extends K8sObject {
  spec: {
    template: {
      spec: {
        nodeSelector?: Record<string, string>;
        tolerations?: object[];
        containers: { image: string }[];
        volumes?: { name: string; hostPath?: { path: string } }[];
      };
    };
  };
}

interface NodeEvent {
  reason?: string;
  type?: string;
  note?: string;
  regarding?: { uid?: string };
}

const list = (items: K8sObject[]): string => dump({ apiVersion: 'v1', kind: 'List', items });

/** NFD's default overlay, rendered by kubectl's kustomize from the module's source, with CHANGES applied. */
async function nfdManifests(build: UpstreamBuild): Promise<K8sObject[]> {
  const rendered = await kubectl(['kustomize', join(build.moduleDir, 'deployment', 'overlays', 'default')]);
  const objects = (loadAll(rendered) as K8sObject[]).filter(Boolean);
  for (const object of objects) {
    const pod = (object as PodTemplateOwner).spec?.template?.spec;
    for (const container of pod?.containers ?? [])
      if (container.image === NFD_IMAGE) container.image = build.image;
    if (object.kind === 'DaemonSet' && object.metadata.name === 'nfd-worker') {
      pod!.tolerations = [...(pod!.tolerations ?? []), ...NODECARE_TOLERATIONS];
      pod!.volumes!.find((v) => v.name === 'features-d')!.hostPath!.path = FEATURES_DIR;
    }
    if (object.kind === 'ConfigMap' && object.metadata.name.startsWith('nfd-worker-conf'))
      (object as K8sObject & { data: Record<string, string> }).data['nfd-worker.conf'] = dump({
        core: { sleepInterval: '5s' },
      });
  }
  return objects;
}

/** The e2e DaemonSet of test/images/sample-device-plugin with CHANGES applied. */
async function sampleDaemonSet(): Promise<PodTemplateOwner> {
  const source = await kubernetesSource();
  const daemonSet = load(readFileSync(join(source, SAMPLE_MANIFEST), 'utf8')) as PodTemplateOwner;
  const pod = daemonSet.spec.template.spec;
  pod.containers[0]!.image = KUBERNETES_IMAGES.sampleDevicePlugin;
  pod.nodeSelector = { ...pod.nodeSelector, [FEATURE_LABEL]: 'true' };
  return daemonSet;
}

function systemExtension(waitSeconds: number): string {
  return JSON.stringify({
    apiVersion: 'nodecare.io/v1alpha1',
    kind: 'SystemExtension',
    metadata: { name: EXTENSION },
    spec: {
      nodeSelector: { matchLabels: { [FEATURE_LABEL]: 'true' } },
      labelWait: { waitSeconds, nodeSelector: { matchLabels: { [POOL.key]: POOL.value } } },
      probe: { devicePlugin: { resource: RESOURCE, minHealthy: 2 } },
      periodSeconds: 2,
      failureThreshold: 1,
      startupGraceSeconds: 10,
    },
  });
}

/** The condition's item for the wait: its end is the node's creation plus waitSeconds (docs/adr/0019). */
function waitMessage(createdMs: number, waitSeconds: number): string {
  const end = new Date(createdMs + waitSeconds * 1000).toISOString();
  return `${EXTENSION} waiting until ${end} for node label ${FEATURE_LABEL} (SystemExtension spec.labelWait)`;
}

async function pluginPodsOn(node: string): Promise<string[]> {
  return (await getPods('kube-system', SAMPLE_SELECTOR))
    .filter((p) => p.spec.nodeName === node)
    .map((p) => p.metadata.name);
}

async function resourceCounts(node: string): Promise<string> {
  const { status } = await getNode(node);
  return `${status.allocatable?.[RESOURCE] ?? 'none'} of ${status.capacity?.[RESOURCE] ?? 'none'}`;
}

/** Seconds since the node's creation (its creationTimestamp, what the wait is measured from). */
function sinceCreation(createdMs: number): string {
  return `+${((Date.now() - createdMs) / 1000).toFixed(1)}s`;
}

/** NFD's own labels on a node (feature.node.kubernetes.io/*), as `key=value`. */
function nfdLabels(labels: Record<string, string> | undefined): string[] {
  return Object.entries(labels ?? {})
    .filter(([key]) => key.startsWith('feature.node.kubernetes.io/'))
    .map(([key, value]) => `${key}=${value}`);
}

/** Removes what NFD wrote on a node (its labels and annotations), as its prune overlay does. */
async function pruneNfd(node: string): Promise<void> {
  const { metadata } = await getNode(node);
  const labels = Object.keys(metadata.labels ?? {}).filter((k) =>
    k.startsWith('feature.node.kubernetes.io/'),
  );
  const annotations = Object.keys(metadata.annotations ?? {}).filter((k) =>
    k.startsWith('nfd.node.kubernetes.io/'),
  );
  if (labels.length) await kubectl(['label', 'node', node, ...labels.map((k) => `${k}-`)]);
  if (annotations.length) await kubectl(['annotate', 'node', node, ...annotations.map((k) => `${k}-`)]);
}

describe.skipIf(notRun !== '')(
  `late labels: node-feature-discovery (upstream) labels a GPU node after registration, on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const install = notRun ? undefined : new NodecareInstall(inject('nodecareImage').ref);
    let nfd: UpstreamBuild;
    let nfdObjects: K8sObject[] = [];
    let sample: PodTemplateOwner | undefined;
    let images: KubernetesImages;

    beforeAll(async () => {
      nfd = await ensureUpstream('nfd', log);
      images = await writeKubernetesImages(await ensureNodeParts(), inject('realNodesSlotDir'));
      nfdObjects = await nfdManifests(nfd);
      sample = await sampleDaemonSet();
      log(`upstream: ${join(nfd.moduleDir, 'deployment', 'overlays', 'default')} (kubectl kustomize)`);
      log(`upstream: ${join(await kubernetesSource(), SAMPLE_MANIFEST)}`);
      for (const change of CHANGES) log(`changed: ${change}`);
      await install!.install();
      await install!.importEverywhere(nfd);
      await kubectl(['apply', '--server-side', '-f', '-'], list(nfdObjects));
      await kubectl(['rollout', 'status', '-n', NFD_NAMESPACE, 'deployment/nfd-master', '--timeout=180s']);
      await kubectl(['rollout', 'status', '-n', NFD_NAMESPACE, 'daemonset/nfd-worker', '--timeout=180s']);
      const labeled = await until(`NFD's labels on ${realNodes()[0]!.name}`, async () => {
        const found = nfdLabels((await getNode(realNodes()[0]!.name)).metadata.labels);
        return found.length ? found : undefined;
      });
      log(`NFD runs: ${realNodes()[0]!.name} has ${labeled.length} feature.node.kubernetes.io labels`);
      await kubectl(['apply', '-f', '-'], JSON.stringify(sample));
      await kubectl(['apply', '-f', '-'], systemExtension(WAIT_SECONDS.labeled));
      log(
        `SystemExtension ${EXTENSION}: devicePlugin ${RESOURCE} minHealthy 2 on nodes with ${FEATURE_LABEL}=true; labelWait ${WAIT_SECONDS.labeled}s for new nodes with ${POOL.key}=${POOL.value}`,
      );
    }, 1_800_000);

    afterAll(async () => {
      await install?.teardown(async () => {
        await kubectl(['delete', 'systemextension', EXTENSION, '--ignore-not-found']);
        if (sample) await kubectl(['delete', '--ignore-not-found', '-f', '-'], JSON.stringify(sample));
        await kubectl(['delete', '--ignore-not-found', '--wait=true', '-f', '-'], list(nfdObjects));
        for (const node of realNodes()) await pruneNfd(node.name);
      });
    });

    it(`a GPU-pool node whose feature label NFD sets ${LABEL_AFTER_MS / 1000} s after its creation stays held until its device plugin is Healthy`, async () => {
      let createdMs = 0;
      let labelSeenMs = 0;
      const node = await joinsHeldUntilHealthy({
        extension: EXTENSION,
        log,
        join: () =>
          install!.join({ [POOL.key]: POOL.value }, [
            inject('nodecareImage').archive,
            nfd.archive,
            images.sampleDevicePlugin,
          ]),
        started: async (n) => {
          createdMs = Date.parse((await getNode(JOINING)).metadata.creationTimestamp);
          const waiting = await until(`${JOINING} waiting for ${FEATURE_LABEL}`, async () => {
            const view = viewOf(await getNode(JOINING));
            return view.condition?.message?.includes('spec.labelWait') ? view : undefined;
          });
          log(`${sinceCreation(createdMs)} ${JOINING} waits for the label: ${waiting.condition?.message}`);
          expect(waiting.bootstrapTaint).toBe(true);
          expect(waiting.condition?.message).toContain(waitMessage(createdMs, WAIT_SECONDS.labeled));
          const nfdRan = await readyPodOn(NFD_NAMESPACE, 'app=nfd-worker', JOINING);
          log(`${sinceCreation(createdMs)} NFD's worker ${nfdRan.metadata.name} Ready on ${JOINING}`);

          await sleep(Math.max(0, createdMs + LABEL_AFTER_MS - Date.now()));
          // Nothing of the plugin on the node before its label: it cannot be Healthy there yet.
          expect(await pluginPodsOn(JOINING)).toEqual([]);
          expect(await leaseState(JOINING, EXTENSION)).toBeUndefined();
          const file = n.hostPath(`${FEATURES_DIR}/fake-gpu`);
          await mkdir(dirname(file), { recursive: true });
          writeFileSync(file, 'fake-gpu.present=true\n');
          log(`${sinceCreation(createdMs)} feature file ${FEATURES_DIR}/fake-gpu written on ${JOINING}`);
          const held = await until(`${FEATURE_LABEL} on ${JOINING} (set by NFD)`, async () => {
            const current = await getNode(JOINING);
            return current.metadata.labels?.[FEATURE_LABEL] === 'true' ? viewOf(current) : undefined;
          });
          labelSeenMs = Date.now();
          log(
            `${sinceCreation(createdMs)} NFD set ${FEATURE_LABEL}=true; ${JOINING} still held: ${describeView(held)}, lease ${EXTENSION}=${(await leaseState(JOINING, EXTENSION)) ?? 'none yet'}`,
          );
          expect(held.bootstrapTaint).toBe(true);

          const pod = await readyPodOn('kube-system', SAMPLE_SELECTOR, JOINING);
          const counts = await until(`${RESOURCE} registered on ${JOINING}`, async () => {
            const c = await resourceCounts(JOINING);
            return c === '2 of 2' ? c : undefined;
          });
          return `${sinceCreation(createdMs)} pod ${pod.metadata.name} Ready (scheduled once the label came), the kubelet counts ${counts} ${RESOURCE}`;
        },
      });
      expect(labelSeenMs - createdMs).toBeGreaterThanOrEqual(LABEL_AFTER_MS);
      expect(node.name).toBe(JOINING);
      log(`${sinceCreation(createdMs)} ${JOINING} released after its device plugin was Healthy`);
    });

    it(`a GPU-pool node that never gets the label is released ${WAIT_SECONDS.neverLabeled} s (labelWait.waitSeconds) after its creation, with a LabelWaitEnded event`, async () => {
      await removeNode(JOINING);
      await kubectl(['apply', '-f', '-'], systemExtension(WAIT_SECONDS.neverLabeled));
      log(
        `${JOINING} removed; SystemExtension ${EXTENSION}: labelWait.waitSeconds ${WAIT_SECONDS.neverLabeled}`,
      );

      const samples: { atMs: number; view: NodecareView }[] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const current = await getNode(JOINING).catch(() => undefined);
          if (current) samples.push({ atMs: Date.now(), view: viewOf(current) });
          await sleep(250);
        }
      })();
      const story = async (): Promise<{ createdMs: number; uid: string; releasedMs: number }> => {
        log(
          `${JOINING} joins again with ${POOL.key}=${POOL.value} and --register-with-taints=${BOOTSTRAP}=:NoSchedule`,
        );
        await install!.join({ [POOL.key]: POOL.value }, [inject('nodecareImage').archive, nfd.archive]);
        const created = await until(`the Node ${JOINING}`, () => getNode(JOINING).catch(() => undefined));
        const createdMs = Date.parse(created.metadata.creationTimestamp);
        const uid = (created.metadata as { uid?: string }).uid ?? '';
        const waiting = await until(`${JOINING} waiting for ${FEATURE_LABEL}`, async () => {
          const view = viewOf(await getNode(JOINING));
          return view.bootstrapTaint && view.condition?.message?.includes('spec.labelWait')
            ? view
            : undefined;
        });
        log(`${sinceCreation(createdMs)} ${JOINING} held: ${waiting.condition?.message}`);
        expect(waiting.condition?.message).toContain(waitMessage(createdMs, WAIT_SECONDS.neverLabeled));
        const nfdRan = await until(`NFD's labels on ${JOINING}`, async () => {
          const found = nfdLabels((await getNode(JOINING)).metadata.labels);
          return found.length ? found : undefined;
        });
        log(
          `${sinceCreation(createdMs)} NFD labeled ${JOINING} (${nfdRan.length} labels, ${FEATURE_LABEL} not among them); still held`,
        );
        const released = await until(
          `${JOINING} released at the wait's end`,
          async () => {
            const view = viewOf(await getNode(JOINING));
            return !view.bootstrapTaint && view.condition?.status === 'True' ? view : undefined;
          },
          { timeoutMs: (WAIT_SECONDS.neverLabeled + 60) * 1000, intervalMs: 250 },
        );
        const releasedMs = Date.now();
        log(`${sinceCreation(createdMs)} ${JOINING} released: ${describeView(released)}`);
        return { createdMs, uid, releasedMs };
      };
      const { createdMs, uid, releasedMs } = await story().finally(() => (sampling = false));
      await sampler;
      const releasedAfterS = (releasedMs - createdMs) / 1000;
      expect(releasedAfterS).toBeGreaterThanOrEqual(WAIT_SECONDS.neverLabeled - 0.5);
      expect(releasedAfterS).toBeLessThan(WAIT_SECONDS.neverLabeled + 20);
      // Held at every sample before the bound (the wait's end is the creation plus waitSeconds).
      const early = samples.filter(
        (s) => s.atMs < createdMs + (WAIT_SECONDS.neverLabeled - 1) * 1000 && !s.view.bootstrapTaint,
      );
      expect(early.map((s) => describeView(s.view))).toEqual([]);
      expect(samples[0]?.view.bootstrapTaint, `${JOINING} at first sight`).toBe(true);

      const ended = await until('the LabelWaitEnded event', async () => {
        const events = await getJson<{ items: NodeEvent[] }>([
          'get',
          'events.events.k8s.io',
          '-n',
          'default',
          '--field-selector',
          `regarding.name=${JOINING}`,
        ]);
        return events.items.find((e) => e.reason === 'LabelWaitEnded' && e.regarding?.uid === uid);
      });
      log(`event ${ended.type} ${ended.reason}: ${ended.note}`);
      expect(ended.note).toContain(
        `node label ${FEATURE_LABEL} not set within ${WAIT_SECONDS.neverLabeled}s of the node's creation`,
      );
      // The extension never applied there: no plugin pod, no Lease.
      expect(await pluginPodsOn(JOINING)).toEqual([]);
      expect(await leaseState(JOINING, EXTENSION)).toBeUndefined();
      log(`${JOINING}: no ${EXTENSION} pod, no Lease; ${describeView(viewOf(await getNode(JOINING)))}`);
    });
  },
);
