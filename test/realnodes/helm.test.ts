// nodecare installed with Helm on real kubelets, as docs/install.md says, with only the image set, into a
// namespace of the user's that plain `helm install --create-namespace` makes (issue 51 item 2): the agent
// Ready on every node writing its heartbeat with the kubelet's token, the controller Available and judging the
// nodes; then `kubectl nodecare uninstall`, `helm uninstall` and the CRDs deleted leave nothing of nodecare's,
// with the kubelets still running.

import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LEASE_NAMESPACE, agentLeaseName } from '../../api/index.ts';
import { kubectl, realNodes } from './client.ts';
import {
  ROOT,
  expectNothingOfNodecareLeft,
  getJson,
  getPods,
  healthyView,
  podReady,
  runCli,
  untilView,
  type Node,
  runCommand,
} from './cluster.ts';

const notRun = inject('realNodesNotRun');
const CHART = join(ROOT, 'charts', 'nodecare');
/** The release namespace: not nodecare-system, and made by helm (--create-namespace), not by the chart. */
const SYSTEM = 'ops-node-health';

describe.skipIf(notRun !== '')(`helm install on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`, () => {
  const nodes = notRun ? [] : realNodes();
  const image = notRun ? undefined : inject('nodecareImage');
  const kubeconfig = notRun ? '' : inject('kubeconfig');
  let helmBin = '';
  let uninstalled = false;

  const helm = async (...args: string[]): Promise<string> => {
    const result = await runCommand(helmBin, [...args, `--kubeconfig=${kubeconfig}`]);
    if (result.code !== 0) throw new Error(`helm ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return result.stdout;
  };

  beforeAll(async () => {
    const built = await runCommand('bash', [join(ROOT, 'test', 'tools', 'build-helm.sh')]);
    if (built.code !== 0) throw new Error(`test/tools/build-helm.sh failed:\n${built.stderr}`);
    helmBin = built.stdout.trim().split('\n').pop() ?? '';
  }, 900_000);

  afterAll(async () => {
    if (uninstalled || !helmBin) return;
    await runCli(['uninstall', '--yes', `--namespace=${SYSTEM}`, `--kubeconfig=${kubeconfig}`]);
    await runCommand(helmBin, ['uninstall', 'nodecare', '-n', SYSTEM, `--kubeconfig=${kubeconfig}`]);
    await kubectl(['delete', '-f', `${join(CHART, 'crds')}/`, '--ignore-not-found']).catch(() => '');
    await kubectl(['delete', 'namespace', SYSTEM, '--ignore-not-found']).catch(() => '');
  });

  it('helm install with only the image set: the agent Ready on every node with its heartbeat, the controller Available', async () => {
    const at = image!.ref.lastIndexOf(':');
    await helm(
      'install',
      'nodecare',
      CHART,
      '--namespace',
      SYSTEM,
      '--create-namespace',
      '--set',
      `image.repository=${image!.ref.slice(0, at)}`,
      '--set',
      `image.tag=${image!.ref.slice(at + 1)}`,
      '--wait',
      '--timeout=240s',
    );
    const agents = await getPods(SYSTEM, 'app.kubernetes.io/name=nodecare-agent');
    const nodeNames = (await getJson<{ items: Node[] }>(['get', 'nodes'])).items.map((n) => n.metadata.name);
    expect(
      agents
        .filter(podReady)
        .map((p) => p.spec.nodeName)
        .sort(),
    ).toEqual(nodeNames.sort());
    expect(
      (await getPods(SYSTEM, 'app.kubernetes.io/name=nodecare-controller')).filter(podReady),
    ).toHaveLength(2);
    for (const node of nodeNames) {
      const holder = await kubectl([
        'get',
        'lease',
        '-n',
        LEASE_NAMESPACE,
        agentLeaseName(node),
        '-o',
        'jsonpath={.spec.holderIdentity}',
      ]);
      expect(holder, node).not.toBe('');
      await untilView(node, 'healthy', healthyView);
    }
  });

  it('helm test: kubectl nodecare status in a pod with only the ClusterRoles for people passes, and cleans up after itself', async () => {
    // helm test exits non-zero (helm() throws) when the Pod fails.
    const out = await helm('test', 'nodecare', '--namespace', SYSTEM, '--timeout=180s');
    expect(out).toContain('nodecare-test');
    expect(out).toContain('Succeeded');
    // Passed: its Pod, ServiceAccount and bindings are gone (hook-delete-policy hook-succeeded).
    for (const [namespace, kinds] of [
      [SYSTEM, 'pod,serviceaccount'],
      [LEASE_NAMESPACE, 'rolebinding'],
    ] as const) {
      const left = await kubectl([
        'get',
        kinds,
        '-n',
        namespace,
        '--field-selector=metadata.name=nodecare-test',
        '-o',
        'name',
      ]);
      expect(left.trim(), namespace).toBe('');
    }
    expect(
      await kubectl(['get', 'clusterrolebinding', 'nodecare-test', '--ignore-not-found', '-o', 'name']),
    ).toBe('');
  });

  it('kubectl nodecare uninstall, helm uninstall and the CRDs deleted leave nothing of nodecare; the kubelets still run', async () => {
    const cli = await runCli(['uninstall', '--yes', `--namespace=${SYSTEM}`, `--kubeconfig=${kubeconfig}`]);
    expect(cli.code, cli.stderr + cli.stdout).toBe(0);
    await helm('uninstall', 'nodecare', '--namespace', SYSTEM, '--wait', '--timeout=120s');
    await kubectl(['delete', '-f', `${join(CHART, 'crds')}/`, '--wait=true']);
    // The release namespace is helm's (--create-namespace), which helm uninstall keeps; the chart's objects in it
    // are gone.
    expect(
      await kubectl(['get', 'all,serviceaccounts,roles,rolebindings,leases', '-n', SYSTEM, '-o', 'name']),
    ).not.toContain('nodecare');
    await kubectl(['delete', 'namespace', SYSTEM, '--wait=true', '--timeout=120s']);
    uninstalled = true;
    await expectNothingOfNodecareLeft(nodes);
  });
});
