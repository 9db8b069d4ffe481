// A DRA driver publishing ResourceSlices through the kubelet plugin API, read by nodecare's resourceSlices
// probe: sigs.k8s.io/dra-example-driver (its kubelet plugin built from the module by upstream/build.sh),
// installed with `helm install` from the module's own chart (deployments/helm/dra-example-driver, read from the
// Go module cache) with the values VALUES lists (printed, and in docs/extensions.md); no template is changed.
// The plugin registers with the kubelet in /var/lib/kubelet/plugins_registry and publishes its 8 simulated
// GPUs of driver gpu.example.com in a ResourceSlice for its node. Broken: the plugin's node label goes (the
// chart's kubeletPlugin.nodeSelector), its pod stops and its slices go; mended: the label back.

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubectl, type TestNode } from './client.ts';
import { ROOT, getJson, until, runCommand } from './cluster.ts';
import {
  JOINING,
  NODECARE_TOLERATIONS,
  NodecareInstall,
  breaksAndRecovers,
  joinsHeldUntilHealthy,
  readyPodOn,
  storyLog,
} from './upstream/stories.ts';
import { UPSTREAM_IMAGES, ensureUpstream, type UpstreamBuild } from './upstream/upstream.ts';

const notRun = inject('realNodesNotRun');
const log = storyLog('dra');
const EXTENSION = 'dra-example-driver';
const DRIVER = 'gpu.example.com';
const NAMESPACE = 'dra-example-driver';
const SELECTOR = 'app.kubernetes.io/component=kubeletplugin';
/** The chart's kubeletPlugin.nodeSelector: where the test starts and stops the plugin. */
const PLUGIN_LABEL = 'nodecare.test/dra-plugin';

/** The chart values the test sets, and why; the chart's templates are used as they are. */
const image = UPSTREAM_IMAGES.dra;
const VALUES: [string, string, string][] = [
  [
    'image.repository',
    image.slice(0, image.lastIndexOf(':')),
    'the image built from sigs.k8s.io/dra-example-driver',
  ],
  ['image.tag', image.slice(image.lastIndexOf(':') + 1), 'its tag (the chart defaults to its appVersion)'],
  [
    `kubeletPlugin.nodeSelector.${PLUGIN_LABEL.replaceAll('.', '\\.')}`,
    'on',
    'the test stops and starts the plugin with this node label',
  ],
  ...NODECARE_TOLERATIONS.flatMap((t, i): [string, string, string][] => [
    [
      `kubeletPlugin.tolerations[${i}].key`,
      t.key,
      "nodecare's taints: the chart tolerates none, so the plugin could never start on a held node (issue 49, taint deadlock)",
    ],
    [`kubeletPlugin.tolerations[${i}].operator`, t.operator, ''],
    [`kubeletPlugin.tolerations[${i}].effect`, t.effect, ''],
  ]),
];

interface ResourceSlice {
  spec: { driver: string; nodeName?: string; devices?: { name: string }[] };
}

async function slicesOn(node: string): Promise<ResourceSlice[]> {
  const list = await getJson<{ items: ResourceSlice[] }>(['get', 'resourceslices']);
  return list.items.filter((s) => s.spec.driver === DRIVER && s.spec.nodeName === node);
}

const devices = (slices: ResourceSlice[]): number =>
  slices.reduce((n, s) => n + (s.spec.devices?.length ?? 0), 0);

describe.skipIf(notRun !== '')(
  `dra-example-driver (upstream) on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const kubeconfig = notRun ? '' : inject('kubeconfig');
    const install = notRun ? undefined : new NodecareInstall(inject('nodecareImage').ref, log);
    let build: UpstreamBuild;
    let helmBin = '';
    let node: TestNode;
    const helm = async (...args: string[]): Promise<string> => {
      const result = await runCommand(helmBin, [...args, `--kubeconfig=${kubeconfig}`]);
      if (result.code !== 0)
        throw new Error(`helm ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
      return result.stdout;
    };

    beforeAll(async () => {
      build = await ensureUpstream('dra', log);
      const built = await runCommand('bash', [join(ROOT, 'test', 'tools', 'build-helm.sh')]);
      if (built.code !== 0) throw new Error(`test/tools/build-helm.sh failed:\n${built.stderr}`);
      helmBin = built.stdout.trim().split('\n').pop() ?? '';
    }, 1_800_000);

    afterAll(async () => {
      await install?.teardown(async () => {
        await kubectl(['delete', 'systemextension', EXTENSION, '--ignore-not-found']);
        if (helmBin)
          await helm('uninstall', EXTENSION, '--namespace', NAMESPACE, '--wait', '--ignore-not-found');
        await kubectl(['delete', 'namespace', NAMESPACE, '--ignore-not-found', '--wait=false']);
      });
    });

    it("installed with helm from the module's own chart (values only, as recorded) beside nodecare as shipped", async () => {
      const chart = join(build.moduleDir, 'deployments', 'helm', 'dra-example-driver');
      log(`upstream chart: ${chart}`);
      for (const [key, value, why] of VALUES) log(`value: ${key}=${value}${why ? ` (${why})` : ''}`);
      await install!.install();
      await helm(
        'install',
        EXTENSION,
        chart,
        '--namespace',
        NAMESPACE,
        '--create-namespace',
        ...VALUES.flatMap(([key, value]) => ['--set-string', `${key}=${value}`]),
      );
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: EXTENSION },
          spec: {
            nodeSelector: { matchLabels: { 'nodecare.test/upstream': 'dra' } },
            probe: { resourceSlices: { driver: DRIVER, minDevices: 8 } },
            periodSeconds: 2,
            failureThreshold: 1,
            startupGraceSeconds: 10,
          },
        }),
      );
      log(
        `SystemExtension ${EXTENSION}: resourceSlices of ${DRIVER}, at least 8 devices, on nodes labelled nodecare.test/upstream=dra`,
      );
    });

    it('a node joins held by the bootstrap taint until the driver has published its devices, then is released', async () => {
      node = await joinsHeldUntilHealthy({
        extension: EXTENSION,
        log,
        join: () =>
          install!.join({ 'nodecare.test/upstream': 'dra', [PLUGIN_LABEL]: 'on' }, [
            inject('nodecareImage').archive,
            build.archive,
          ]),
        started: async (n) => {
          const pod = await readyPodOn(NAMESPACE, SELECTOR, n.name);
          const registered = await until(`the driver's registration socket on ${n.name}`, async () => {
            const found = await n.exec(['ls', '/var/lib/kubelet/plugins_registry']);
            return found.stdout.includes(DRIVER) ? found.stdout.trim().replaceAll('\n', ' ') : undefined;
          });
          const slices = await until(`ResourceSlices of ${DRIVER} for ${n.name}`, async () => {
            const s = await slicesOn(n.name);
            return devices(s) >= 8 ? s : undefined;
          });
          return `pod ${pod.metadata.name} Ready; plugins_registry: ${registered}; ${slices.length} ResourceSlice(s) with ${devices(slices)} devices`;
        },
      });
      expect(devices(await slicesOn(JOINING))).toBe(8);
    });

    it('the plugin stops: its ResourceSlices go, the runtime taint goes on; the plugin back, the taint comes off', async () => {
      await breaksAndRecovers({
        extension: EXTENSION,
        log,
        breakIt: async () => {
          await kubectl(['label', 'node', JOINING, `${PLUGIN_LABEL}-`]);
          await until(`the kubelet plugin's pod gone from ${JOINING}`, async () => {
            const pods = await getJson<{ items: { spec: { nodeName?: string } }[] }>([
              'get',
              'pods',
              '-n',
              NAMESPACE,
              '-l',
              SELECTOR,
            ]);
            return pods.items.some((p) => p.spec.nodeName === JOINING) ? undefined : true;
          });
          return `label ${PLUGIN_LABEL} removed from ${JOINING}: the DaemonSet's pod there is gone, its socket unregistered; its ResourceSlices still hold ${devices(await slicesOn(JOINING))} devices until the kubelet removes them`;
        },
        mend: async () => {
          log(`${JOINING}'s ResourceSlices of ${DRIVER}: ${devices(await slicesOn(JOINING))} devices`);
          await kubectl(['label', 'node', JOINING, `${PLUGIN_LABEL}=on`]);
          return `label ${PLUGIN_LABEL}=on back on ${JOINING}`;
        },
        timeoutMs: 150_000,
      });
      expect(devices(await slicesOn(JOINING))).toBe(8);
      log(
        `${JOINING} after recovery: ${devices(await slicesOn(JOINING))} devices of ${DRIVER} in ResourceSlices; plugin pod ${(await readyPodOn(NAMESPACE, SELECTOR, node.name)).metadata.name}`,
      );
    });
  },
);
