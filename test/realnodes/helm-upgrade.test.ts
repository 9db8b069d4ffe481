// helm upgrade from the previous chart version on real kubelets (issue 51 item 2): the chart as it was before
// it followed Helm's rules (commit PREVIOUS_CHART_COMMIT, the one test/integration/install-chart.test.ts also
// upgrades from) installed into nodecare-system with only the image set; a node held by a failing critical
// extension; then, as docs/install.md says, the new CRDs applied and `helm upgrade` to this chart. The held
// node stays held through the whole upgrade (sampled every 250 ms, while the controller's and the agents'
// pods are replaced), the others stay healthy, every object the previous version made is the same object
// afterwards, and the upgraded controller releases the node once the extension is gone.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubectl, realNodes } from './client.ts';
import {
  ROOT,
  describeView,
  expectNothingOfNodecareLeft,
  getJson,
  getPods,
  healthyView,
  podReady,
  runCli,
  runCommand,
  untilView,
  watchView,
  type K8sObject,
  type Node,
} from './cluster.ts';

const notRun = inject('realNodesNotRun');
const CHART = join(ROOT, 'charts', 'nodecare');
/** The chart before the standard labels and .Release.Namespace (as in install-chart.test.ts). */
const PREVIOUS_CHART_COMMIT = 'ddcd5a02a15f35accb4c531d7c817fafbbe79155';
const SYSTEM = 'nodecare-system';
const HELD = 'node-2';
const EXTENSION = 'upgrade-held';

describe.skipIf(notRun !== '')(
  `helm upgrade from the previous chart on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const nodes = notRun ? [] : realNodes();
    const image = notRun ? undefined : inject('nodecareImage');
    const kubeconfig = notRun ? '' : inject('kubeconfig');
    const work = mkdtempSync(join(tmpdir(), 'nodecare-helm-upgrade-'));
    let helmBin = '';
    let uninstalled = false;

    const helm = async (...args: string[]): Promise<string> => {
      const result = await runCommand(helmBin, [...args, `--kubeconfig=${kubeconfig}`]);
      if (result.code !== 0)
        throw new Error(`helm ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
      return result.stdout;
    };
    const imageValues = (): string[] => {
      const at = image!.ref.lastIndexOf(':');
      return [
        '--set',
        `image.repository=${image!.ref.slice(0, at)}`,
        '--set',
        `image.tag=${image!.ref.slice(at + 1)}`,
      ];
    };
    /** Every object of the release's manifest, by kind/namespace/name, with its UID. */
    const uids = async (manifest: string): Promise<Map<string, string>> =>
      new Map(
        (
          await getJson<{ items: Array<K8sObject & { metadata: { uid: string } }> }>([
            'get',
            '-f',
            manifest,
            '-o',
            'json',
          ])
        ).items.map((o) => [`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o.metadata.uid]),
      );
    const podUids = async (): Promise<string[]> =>
      (await getPods(SYSTEM, 'app.kubernetes.io/name in (nodecare-agent,nodecare-controller)'))
        .map((p) => p.metadata.uid)
        .sort();

    beforeAll(async () => {
      const built = await runCommand('bash', [join(ROOT, 'test', 'tools', 'build-helm.sh')]);
      if (built.code !== 0) throw new Error(`test/tools/build-helm.sh failed:\n${built.stderr}`);
      helmBin = built.stdout.trim().split('\n').pop() ?? '';
      const archive = await runCommand('bash', [
        '-c',
        'set -o pipefail; git -C "$1" archive "$2" charts manifests | tar -x -C "$3"',
        'bash',
        ROOT,
        PREVIOUS_CHART_COMMIT,
        work,
      ]);
      if (archive.code !== 0)
        throw new Error(
          `git archive ${PREVIOUS_CHART_COMMIT} failed (a shallow clone lacks the previous chart): ${archive.stderr}`,
        );
    }, 900_000);

    afterAll(async () => {
      rmSync(work, { recursive: true, force: true });
      if (uninstalled || !helmBin) return;
      await kubectl(['delete', 'systemextension', EXTENSION, '--ignore-not-found']).catch(() => '');
      await runCli(['uninstall', '--yes', `--namespace=${SYSTEM}`, `--kubeconfig=${kubeconfig}`]);
      await runCommand(helmBin, ['uninstall', 'nodecare', '-n', SYSTEM, `--kubeconfig=${kubeconfig}`]);
      await kubectl(['delete', '-f', `${join(CHART, 'crds')}/`, '--ignore-not-found']).catch(() => '');
      await kubectl(['delete', 'namespace', SYSTEM, '--ignore-not-found']).catch(() => '');
    });

    it('the previous chart, installed with only the image set, holds a node whose critical extension fails', async () => {
      const installed = await helm(
        'install',
        'nodecare',
        join(work, 'charts', 'nodecare'),
        '--namespace',
        SYSTEM,
        // As the previous version's docs/install.md said: it rendered the namespace it installs into itself.
        '--create-namespace',
        '--take-ownership',
        ...imageValues(),
        '--wait',
        '--timeout=240s',
      );
      expect(installed).toContain('STATUS: deployed');
      const names = (await getJson<{ items: Node[] }>(['get', 'nodes'])).items.map((n) => n.metadata.name);
      for (const node of names) await untilView(node, 'healthy under the previous chart', healthyView);
      // A critical extension only node-2 needs, and fails: a TCP probe of a port nothing listens on.
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: EXTENSION },
          spec: {
            critical: true,
            nodeSelector: { matchLabels: { 'nodecare.test/node': 'two' } },
            // Failing at once: no startup grace (300 s by default), two failures 2 s apart.
            startupGraceSeconds: 0,
            periodSeconds: 2,
            timeoutSeconds: 1,
            failureThreshold: 2,
            probe: { tcp: { port: 9 } },
          },
        }),
      );
      const held = await untilView(HELD, 'runtime-tainted by the failing extension', (v) => v.runtimeTaint);
      expect(held.condition?.status, describeView(held)).toBe('False');
    });

    it('helm upgrade to this chart (its CRDs first): the node held throughout, the others healthy, every object the same one', async () => {
      const manifest = join(work, 'previous-manifest.yaml');
      writeFileSync(manifest, await helm('get', 'manifest', 'nodecare', '--namespace', SYSTEM));
      const before = await uids(manifest);
      expect(before.has(`Namespace//${SYSTEM}`)).toBe(true);
      const podsBefore = await podUids();
      const others = nodes.map((n) => n.name).filter((n) => n !== HELD);
      let upgraded = '';
      const othersSeen = new Map<string, string[]>();
      const heldSeen = await watchView(
        HELD,
        async () => {
          const crds = join(work, 'crds.yaml');
          writeFileSync(crds, await helm('show', 'crds', CHART));
          await kubectl(['apply', '--server-side', '--force-conflicts', '-f', crds]);
          upgraded = await helm(
            'upgrade',
            'nodecare',
            CHART,
            '--namespace',
            SYSTEM,
            ...imageValues(),
            '--wait',
            '--timeout=240s',
          );
          // The rollout done, the new controller has judged every node at least once.
          const controllers = await getPods(SYSTEM, 'app.kubernetes.io/name=nodecare-controller');
          expect(controllers.filter(podReady).length).toBeGreaterThan(0);
          for (const node of others)
            othersSeen.set(node, [
              describeView(await untilView(node, 'healthy after the upgrade', healthyView)),
            ]);
        },
        5_000,
      );
      expect(upgraded).toContain('STATUS: deployed');
      // Held at every sample: from before the CRDs were applied to 5 s after the upgraded pods were Ready.
      const released = heldSeen.filter((v) => !v.runtimeTaint);
      expect(released.map(describeView), `${HELD} released during the upgrade`).toEqual([]);
      expect(heldSeen.length).toBeGreaterThan(8);
      for (const node of others) expect(othersSeen.get(node), node).toHaveLength(1);
      // The pods are new ones (the upgrade rolled both workloads), the objects are the same ones.
      const podsAfter = await podUids();
      expect(podsAfter.filter((uid) => podsBefore.includes(uid))).toEqual([]);
      expect(await uids(manifest)).toEqual(before);
      const status = JSON.parse(await helm('status', 'nodecare', '--namespace', SYSTEM, '-o', 'json')) as {
        version: number;
        info: { status: string };
      };
      expect(status).toMatchObject({ version: 2, info: { status: 'deployed' } });
    });

    it('the upgraded controller releases the node once its extension is gone; uninstall leaves nothing', async () => {
      await kubectl(['delete', 'systemextension', EXTENSION, '--wait=true']);
      await untilView(HELD, 'released by the upgraded controller', healthyView);
      const cli = await runCli(['uninstall', '--yes', `--namespace=${SYSTEM}`, `--kubeconfig=${kubeconfig}`]);
      expect(cli.code, cli.stderr + cli.stdout).toBe(0);
      await helm('uninstall', 'nodecare', '--namespace', SYSTEM, '--wait', '--timeout=120s');
      await kubectl(['delete', '-f', `${join(CHART, 'crds')}/`, '--wait=true']);
      // nodecare-system outlives helm uninstall: the previous chart made it with helm.sh/resource-policy: keep.
      await kubectl(['delete', 'namespace', SYSTEM, '--ignore-not-found', '--wait=true', '--timeout=120s']);
      uninstalled = true;
      await expectNothingOfNodecareLeft(nodes);
    });
  },
);
