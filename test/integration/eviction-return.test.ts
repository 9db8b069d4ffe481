// Validation before return (issue 54 item 4) on the real control plane with the real controller and agent: a node
// a remediator hands back is not opened until its extensions pass again. A remediator (here played by the test, as
// medik8s self-node-remediation does it) taints the Degraded node medik8s.io/remediation NoExecute and cordons it,
// then either reboots it (a new status.nodeInfo.bootID) or not, removes its taint and uncordons it.
// - Rebooted: the node is Bootstrapping on its new boot, held by the bootstrap taint until the agent reports every
//   critical extension Healthy on that boot (the bootstrapped-boot-id marker names the old boot).
// - Not rebooted: the runtime taint it carried as Degraded stays through the remediation (a maintained node loses
//   no taint) and after it, until the extension passes.

import type { Server } from 'node:http';
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
} from '../../api/index.ts';
import {
  adminKubeConfig,
  consistently,
  eventually,
  httpEndpoint,
  readyNodeWithAgent,
  uniqueName,
  type HttpEndpoint,
} from './helpers.ts';
import { startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const kubeconfig = inject('kubeconfig');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const REMEDIATION_TAINT = {
  key: 'medik8s.io/remediation',
  value: 'self-node-remediation',
  effect: 'NoExecute',
};

const processes: ProgramProcess[] = [];
const servers: Server[] = [];
const nodes: string[] = [];

beforeAll(async () => {
  await applyBaseManifests();
});

afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill()));
  await Promise.all(nodes.splice(0).map((name) => core.deleteNode({ name }).catch(() => undefined)));
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    s.close();
  }
});

const taintKeys = (node: V1Node): string[] => (node.spec?.taints ?? []).map((t) => t.key).sort();
const ready = (node: V1Node) => node.status?.conditions?.find((c) => c.type === 'ExtensionsReady');

async function waitForNode(name: string, what: string, check: (node: V1Node) => boolean): Promise<V1Node> {
  return eventually(
    async () => {
      const node = await core.readNode({ name });
      return check(node) ? node : undefined;
    },
    { what: `${name}: ${what}`, timeoutMs: 30_000, intervalMs: 100 },
  );
}

/** A node with one HTTP extension, its agent and a controller; returns once the node is Ready. */
async function healthyNode(prefix: string): Promise<{ name: string; web: HttpEndpoint }> {
  const name = uniqueName(prefix);
  const web = await httpEndpoint(servers);
  nodes.push(name);
  processes.push(await readyNodeWithAgent(core, { kubeconfig, name, extension: 'web', web }));
  const controller = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    `--identity=${uniqueName('controller')}`,
    '--missing-lease-grace-seconds=20',
  ]);
  processes.push(controller);
  await controller.waitForLog('Started nodecare-controller');
  await waitForNode(name, 'Ready', (n) => ready(n)?.status === 'True' && taintKeys(n).length === 0);
  return { name, web };
}

/** The remediator takes the Degraded node: its NoExecute taint and a cordon, as self-node-remediation does. */
async function remediatorTakes(name: string): Promise<void> {
  const node = await core.readNode({ name });
  await core.patchNode(
    {
      name,
      body: { spec: { unschedulable: true, taints: [...(node.spec?.taints ?? []), REMEDIATION_TAINT] } },
    },
    mergePatch,
  );
  await waitForNode(
    name,
    'in maintenance',
    (n) => n.metadata?.labels?.['nodecare.io/status'] === 'maintenance',
  );
}

/** The remediator hands the node back: its taint removed, uncordoned. */
async function remediatorReturns(name: string): Promise<void> {
  const node = await core.readNode({ name });
  const taints = (node.spec?.taints ?? []).filter(
    (t) => t.key !== REMEDIATION_TAINT.key && t.key !== 'node.kubernetes.io/unschedulable',
  );
  await core.patchNode({ name, body: { spec: { unschedulable: false, taints } } }, mergePatch);
}

describe('validation before return: a node a remediator hands back is held until its extensions pass', () => {
  it('rebooted by the remediator (new bootID): the bootstrap taint holds it until the extension passes on the new boot', async () => {
    const { name, web } = await healthyNode('return-reboot');
    await web.stop();
    await waitForNode(name, 'Degraded', (n) => taintKeys(n).includes(RUNTIME));
    await remediatorTakes(name);
    await core.patchNodeStatus({ name, body: { status: { nodeInfo: { bootID: 'boot-2' } } } }, mergePatch);
    await remediatorReturns(name);
    const held = await waitForNode(name, 'bootstrap taint on the new boot', (n) =>
      taintKeys(n).includes(BOOTSTRAP),
    );
    expect(held.metadata?.annotations?.['nodecare.io/bootstrapped-boot-id']).toBe('boot-1');
    // The extension still fails: the node stays held, whatever the remediator did.
    await consistently(async () => {
      const n = await core.readNode({ name });
      expect(taintKeys(n)).toContain(BOOTSTRAP);
      expect(ready(n)?.status).toBe('False');
    }, 4_000);
    await web.start();
    // The taint patch goes first and the condition after it (docs/adr/0008): wait for both.
    const open = await waitForNode(
      name,
      'Ready on boot-2',
      (n) => taintKeys(n).length === 0 && ready(n)?.status === 'True',
    );
    expect(open.metadata?.annotations?.['nodecare.io/bootstrapped-boot-id']).toBe('boot-2');
  });

  it('returned without a reboot: the runtime taint it had as Degraded stays until the extension passes', async () => {
    const { name, web } = await healthyNode('return-noreboot');
    await web.stop();
    await waitForNode(name, 'Degraded', (n) => taintKeys(n).includes(RUNTIME));
    await remediatorTakes(name);
    // A maintained node loses no taint: the runtime taint is still there while the remediator acts.
    expect(taintKeys(await core.readNode({ name }))).toContain(RUNTIME);
    await remediatorReturns(name);
    await consistently(async () => {
      const n = await core.readNode({ name });
      expect(n.spec?.unschedulable ?? false).toBe(false);
      expect(taintKeys(n)).toEqual([RUNTIME]);
      expect(ready(n)?.status).toBe('False');
    }, 4_000);
    await web.start();
    // As above: the taint patch, then the condition.
    const open = await waitForNode(
      name,
      'Ready again',
      (n) => taintKeys(n).length === 0 && ready(n)?.status === 'True',
    );
    expect(open.spec?.unschedulable ?? false).toBe(false);
  });
});
