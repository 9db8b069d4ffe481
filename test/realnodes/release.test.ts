// nodecare installed from the release alone, on real kubelets (issue 51 item 1): `npm run release`
// (release/release.sh --allow-dirty: the checkout may hold uncommitted work) builds the artifacts into a
// temporary directory; install.yaml, the chart's .tgz, the image's .oci.tar and SHA256SUMS are copied into a
// directory of their own, `sha256sum -c` checks them there, and from then on only that directory, kubectl, helm
// and the nodes' containerd are used: no charts/ or manifests/ of the checkout. The image is imported into every
// node's containerd (the nodes reach no registry), then:
//   1. `kubectl apply --server-side -f install.yaml`: the agent Ready on every node with its heartbeat Lease, the
//      controller Available, the nodes healthy; all three programs in the running image print the release's
//      version and revision; `kubectl nodecare uninstall` and `kubectl delete -f install.yaml` leave nothing;
//   2. `helm install nodecare <tgz> --namespace ops-release --create-namespace`, nothing set: the same, then
//      `helm uninstall`, the chart's CRDs (`helm show crds <tgz>`) and the namespace deleted leave nothing.
// `kubectl nodecare` is the checkout's (runCli), as in the suite's other files: the release has no plugin file.

import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LEASE_NAMESPACE, agentLeaseName } from '../../api/index.ts';
import { readImage, readImageIndex } from '../image/image.ts';
import { kubectl, realNodes } from './client.ts';
import {
  ROOT,
  expectNothingOfNodecareLeft,
  getPods,
  healthyView,
  podReady,
  runCli,
  runCommand,
  untilView,
  type Pod,
} from './cluster.ts';

const notRun = inject('realNodesNotRun');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
// The release as built by default (no NODECARE_RELEASE_IMAGE): install.yaml and the chart run `nodecare:<version>`,
// which the kubelet resolves, as any runtime does, to docker.io/library/nodecare:<version>, the name the
// archive's index gives the image. Importing that archive as it is, under that name, is what an operator does
// on a node without a registry; and the name is not the suite's own image's (nodecare.local/nodecare), so the
// pods can only run the release's, and the other files' image is left as it was.
const IMAGE = `docker.io/library/nodecare:${VERSION}`;
const ARTIFACTS = ['install.yaml', `nodecare-${VERSION}.tgz`, `nodecare-${VERSION}.oci.tar`] as const;
const SYSTEM = 'nodecare-system';
/** Helm's release namespace: made by `--create-namespace`, not by the chart. */
const HELM_NAMESPACE = 'ops-release';
const AGENT = 'app.kubernetes.io/name=nodecare-agent';
const CONTROLLER = 'app.kubernetes.io/name=nodecare-controller';

function report(line: string): void {
  process.stderr.write(`[release] ${line}\n`);
}

const seconds = (since: number): string => `${((Date.now() - since) / 1000).toFixed(1)}s`;

/** `bash release/release.sh --allow-dirty <out>`, its progress lines passed on as they come; resolves with stdout. */
function buildRelease(out: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(ROOT, 'release', 'release.sh'), '--allow-dirty', out], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (/^\[(release|image)\]/.test(line)) process.stderr.write(`${line}\n`);
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(stdout)
        : reject(
            new Error(
              `release/release.sh exited ${code}:\n${stderr.trimEnd().split('\n').slice(-40).join('\n')}`,
            ),
          ),
    );
  });
}

describe.skipIf(notRun !== '')(
  `nodecare from the release's files on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const nodes = notRun ? [] : realNodes();
    const kubeconfig = notRun ? '' : inject('kubeconfig');
    let helmBin = '';
    /** The artifacts alone, outside the checkout. */
    let dir = '';
    let revision = '';
    let installed: 'install.yaml' | 'helm' | undefined;

    const helm = async (...args: string[]): Promise<string> => {
      const result = await runCommand(helmBin, [...args, `--kubeconfig=${kubeconfig}`]);
      if (result.code !== 0)
        throw new Error(`helm ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
      return result.stdout;
    };
    const chart = (): string => join(dir, `nodecare-${VERSION}.tgz`);

    beforeAll(async () => {
      const built = await runCommand('bash', [join(ROOT, 'test', 'tools', 'build-helm.sh')]);
      if (built.code !== 0) throw new Error(`test/tools/build-helm.sh failed:\n${built.stderr}`);
      helmBin = built.stdout.trim().split('\n').pop() ?? '';

      const started = Date.now();
      const scratch = mkdtempSync(join(tmpdir(), 'nodecare-release-build-'));
      try {
        report(`building the release (release/release.sh --allow-dirty ${scratch}/v${VERSION})`);
        await buildRelease(join(scratch, `v${VERSION}`));
        report(`release built in ${seconds(started)}`);
        dir = mkdtempSync(join(tmpdir(), 'nodecare-from-release-'));
        for (const name of [...ARTIFACTS, 'SHA256SUMS'])
          copyFileSync(join(scratch, `v${VERSION}`, name), join(dir, name));
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    }, 1_800_000);

    afterAll(async () => {
      // A failed test must not leave an install behind for the suite's next file.
      if (installed === 'install.yaml') {
        await runCli(['uninstall', '--yes', `--kubeconfig=${kubeconfig}`]).catch(() => undefined);
        await kubectl([
          'delete',
          '-f',
          join(dir, 'install.yaml'),
          '--ignore-not-found',
          '--wait=false',
        ]).catch(() => '');
      } else if (installed === 'helm') {
        await runCli([
          'uninstall',
          '--yes',
          `--namespace=${HELM_NAMESPACE}`,
          `--kubeconfig=${kubeconfig}`,
        ]).catch(() => undefined);
        await runCommand(helmBin, [
          'uninstall',
          'nodecare',
          '-n',
          HELM_NAMESPACE,
          `--kubeconfig=${kubeconfig}`,
        ]);
        const crds = await runCommand(helmBin, ['show', 'crds', chart()]);
        await kubectl(['delete', '-f', '-', '--ignore-not-found'], crds.stdout).catch(() => '');
        await kubectl(['delete', 'namespace', HELM_NAMESPACE, '--ignore-not-found']).catch(() => '');
      }
      for (const node of nodes) await node.ctr(['images', 'rm', IMAGE]).catch(() => undefined);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    /**
     * The install in `namespace` runs as a release's should: an agent Ready on every node, running the release's
     * image, each node's heartbeat Lease held, both controller replicas Ready, every node healthy.
     */
    async function expectRunning(namespace: string, configDigest: string): Promise<Pod[]> {
      const agents = await getPods(namespace, AGENT);
      expect(
        agents
          .filter(podReady)
          .map((p) => p.spec.nodeName)
          .sort(),
      ).toEqual(nodes.map((n) => n.name).sort());
      const controllers = (await getPods(namespace, CONTROLLER)).filter(podReady);
      expect(controllers).toHaveLength(2);
      for (const pod of [...agents, ...controllers]) {
        const status = pod.status.containerStatuses![0]! as { image?: string; imageID?: string };
        expect(status.image, pod.metadata.name).toBe(IMAGE);
        expect(status.imageID, pod.metadata.name).toContain(configDigest);
      }
      for (const node of nodes) {
        const holder = await kubectl([
          'get',
          'lease',
          '-n',
          LEASE_NAMESPACE,
          agentLeaseName(node.name),
          '-o',
          'jsonpath={.spec.holderIdentity}',
        ]);
        expect(holder, node.name).not.toBe('');
        await untilView(node.name, 'healthy', healthyView);
      }
      return [...agents, ...controllers];
    }

    let amd64Config = '';

    it('the artifacts alone: SHA256SUMS checks them, and every node imports the linux/amd64 image under the name install.yaml and the chart run', async () => {
      const checked = await new Promise<{ code: number | null; out: string }>((resolve, reject) => {
        // --ignore-missing: SHA256SUMS lists the release's other files too (crds.yaml, the SBOM, CHANGELOG.md).
        const child = spawn('sha256sum', ['-c', '--ignore-missing', 'SHA256SUMS'], { cwd: dir });
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (out += d.toString()));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, out }));
      });
      expect(checked.code, checked.out).toBe(0);
      expect(checked.out.trim().split('\n').sort()).toEqual(ARTIFACTS.map((name) => `${name}: OK`).sort());

      const archive = join(dir, `nodecare-${VERSION}.oci.tar`);
      const index = await readImageIndex(archive);
      expect(index.ref).toBe(IMAGE);
      const image = await readImage(archive, 'linux/amd64');
      amd64Config = image.configDigest;
      revision = image.config.Labels?.['org.opencontainers.image.revision'] ?? '';
      expect(revision).toMatch(/^[0-9a-f]{40}$/);
      const started = Date.now();
      for (const node of nodes) {
        const imported = await node.ctr(['images', 'import', '--platform', 'linux/amd64', archive]);
        expect(imported.code, imported.stderr).toBe(0);
        expect(imported.stdout + imported.stderr, node.name).toMatch(/unpacking /);
        const listed = await node.ctr(['images', 'ls', '-q']);
        expect(listed.stdout.split('\n'), node.name).toContain(IMAGE);
      }
      report(
        `${IMAGE} (linux/amd64, revision ${revision}) imported into ${nodes.length} nodes in ${seconds(started)}`,
      );
    });

    it('kubectl apply --server-side -f install.yaml: the agent Ready on every node with its heartbeat, the controller Available; all three programs print the release', async () => {
      const started = Date.now();
      installed = 'install.yaml';
      await kubectl(['apply', '--server-side', '-f', join(dir, 'install.yaml')]);
      await kubectl(['rollout', 'status', '-n', SYSTEM, 'daemonset/nodecare-agent', '--timeout=180s']);
      await kubectl([
        'wait',
        '-n',
        SYSTEM,
        '--for=condition=Available',
        'deployment/nodecare-controller',
        '--timeout=180s',
      ]);
      const pods = await expectRunning(SYSTEM, amd64Config);
      const agent = pods.find((p) => p.metadata.labels?.['app.kubernetes.io/name'] === 'nodecare-agent')!;
      const controller = pods.find(
        (p) => p.metadata.labels?.['app.kubernetes.io/name'] === 'nodecare-controller',
      )!;
      for (const [pod, program] of [
        [agent, 'nodecare-agent'],
        [controller, 'nodecare-controller'],
        [controller, 'kubectl-nodecare'],
      ] as const) {
        const printed = await kubectl(['exec', '-n', SYSTEM, pod.metadata.name, '--', program, '--version']);
        expect(printed.trim()).toBe(`${program} ${VERSION} (revision ${revision})`);
      }
      report(
        `install.yaml: ${pods.length} pods Ready on ${nodes.length} nodes, nodes healthy, in ${seconds(started)}`,
      );
    });

    it('kubectl nodecare uninstall, then kubectl delete -f install.yaml: nothing of nodecare left; the kubelets still run', async () => {
      const cli = await runCli(['uninstall', '--yes', `--kubeconfig=${kubeconfig}`]);
      expect(cli.code, cli.stderr + cli.stdout).toBe(0);
      await kubectl([
        'delete',
        '-f',
        join(dir, 'install.yaml'),
        '--ignore-not-found',
        '--wait=true',
        '--timeout=120s',
      ]);
      installed = undefined;
      await expectNothingOfNodecareLeft(nodes);
    });

    it(`helm install <tgz> --namespace ${HELM_NAMESPACE} --create-namespace, nothing set: the agent Ready on every node with its heartbeat, the controller Available`, async () => {
      const started = Date.now();
      installed = 'helm';
      await helm(
        'install',
        'nodecare',
        chart(),
        '--namespace',
        HELM_NAMESPACE,
        '--create-namespace',
        '--wait',
        '--timeout=240s',
      );
      const pods = await expectRunning(HELM_NAMESPACE, amd64Config);
      report(
        `helm install: ${pods.length} pods Ready on ${nodes.length} nodes, nodes healthy, in ${seconds(started)}`,
      );
    });

    it('kubectl nodecare uninstall, helm uninstall, the CRDs and the namespace deleted: nothing of nodecare left', async () => {
      const cli = await runCli([
        'uninstall',
        '--yes',
        `--namespace=${HELM_NAMESPACE}`,
        `--kubeconfig=${kubeconfig}`,
      ]);
      expect(cli.code, cli.stderr + cli.stdout).toBe(0);
      await helm('uninstall', 'nodecare', '--namespace', HELM_NAMESPACE, '--wait', '--timeout=120s');
      const crds = await helm('show', 'crds', chart());
      expect(crds).toContain('kind: CustomResourceDefinition');
      await kubectl(['delete', '-f', '-', '--wait=true'], crds);
      await kubectl(['delete', 'namespace', HELM_NAMESPACE, '--wait=true', '--timeout=120s']);
      installed = undefined;
      expect((await helm('list', '--all-namespaces', '-q')).trim()).toBe('');
      await expectNothingOfNodecareLeft(nodes);
    });
  },
);
