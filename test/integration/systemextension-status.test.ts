// A SystemExtension's own status on the real control plane with a real controller (issue 51 item 4):
// observedGeneration and the Valid and InForce conditions, so that `kubectl wait --for=condition=Valid` works
// and a spec the controller and agent cannot parse (here an expectStatus range the CRD schema cannot refuse)
// says why on the object itself, not only in each node's Lease.

import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SystemExtensionCondition } from '../../controller/rollup/extension-conditions.ts';
import { adminKubeConfig, createSystemExtension, uniqueName } from './helpers.ts';
import { startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests, kubectl } from './setup.ts';

const admin = adminKubeConfig();
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const run = uniqueName('sxstatus');
const GOOD = `${run}-good`;
const BAD = `${run}-bad`;
const LABEL = 'nodecare.io/sx-status-test';
const processes: ProgramProcess[] = [];

interface SxObject {
  metadata: { generation: number };
  status?: { observedGeneration?: number; conditions?: SystemExtensionCondition[] };
}

async function read(name: string): Promise<SxObject> {
  return (await custom.getClusterCustomObject({
    group: 'nodecare.io',
    version: 'v1alpha1',
    plural: 'systemextensions',
    name,
  })) as SxObject;
}

const condition = (sx: SxObject, type: string) => sx.status?.conditions?.find((c) => c.type === type);

beforeAll(async () => {
  await applyBaseManifests();
  const proc = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    `--identity=${uniqueName('controller')}`,
    '--leader-election-lease-duration-seconds=6',
    '--leader-election-renew-deadline-seconds=4',
    '--leader-election-retry-period-seconds=1',
  ]);
  processes.push(proc);
  await proc.waitForLog('Started nodecare-controller');
  // No node carries the label: the objects select none, their status is theirs alone.
  const nodeSelector = { matchLabels: { [LABEL]: run } };
  await createSystemExtension(custom, GOOD, { nodeSelector, probe: { tcp: { port: 9 } } });
  await createSystemExtension(custom, BAD, {
    nodeSelector,
    probe: { http: { url: 'http://127.0.0.1:9/healthz', expectStatus: '399-200' } },
  });
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  for (const name of [GOOD, BAD])
    await custom
      .deleteClusterCustomObject({
        group: 'nodecare.io',
        version: 'v1alpha1',
        plural: 'systemextensions',
        name,
      })
      .catch(() => undefined);
});

describe('kubectl explain', () => {
  it.each([
    ['systemextension.spec.periodSeconds', 'How often the agent probes the extension, in seconds'],
    ['systemextension.spec.probe.tcp.port', 'The TCP port'],
    ['systemextension.status.conditions.reason', 'A CamelCase reason'],
    ['clusterhealth.status.extensions.unknown', 'Nodes where the extension is Unknown'],
  ])('%s prints its description', async (field, description) => {
    const text = (await kubectl('explain', field)).replace(/\s+/g, ' ');
    expect(text).toContain(description);
  });
});

describe('SystemExtension status', () => {
  it('kubectl wait --for=condition=Valid: a good spec is Valid and InForce; a malformed one says why', async () => {
    await kubectl('wait', '--for=condition=Valid', '--timeout=60s', `systemextension/${GOOD}`);
    await kubectl('wait', '--for=condition=Valid=false', '--timeout=60s', `systemextension/${BAD}`);
    await expect(
      kubectl('wait', '--for=condition=Valid', '--timeout=3s', `systemextension/${BAD}`),
    ).rejects.toThrow(/timed out/);

    const good = await read(GOOD);
    expect(good.status?.observedGeneration).toBe(good.metadata.generation);
    expect(condition(good, 'Valid')).toMatchObject({ status: 'True', reason: 'SpecValid' });
    expect(condition(good, 'InForce')).toMatchObject({ status: 'True', reason: 'Enforced' });
    for (const c of good.status?.conditions ?? [])
      expect(c.observedGeneration).toBe(good.metadata.generation);

    const bad = await read(BAD);
    expect(condition(bad, 'Valid')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(condition(bad, 'Valid')?.message).toContain('expectStatus');
    expect(condition(bad, 'InForce')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });

    const table = await kubectl('get', 'systemextension', GOOD, BAD);
    const [header = '', ...rows] = table.trim().split('\n');
    expect(header.split(/\s+/)).toEqual(expect.arrayContaining(['VALID', 'INFORCE']));
    expect(rows.find((r) => r.startsWith(`${BAD} `))).toMatch(/\sFalse\s+False\s/);
  });

  it('suspend turns InForce False (Suspended) at the new generation; Valid keeps its lastTransitionTime', async () => {
    await kubectl('wait', '--for=condition=InForce', '--timeout=60s', `systemextension/${GOOD}`);
    const before = await read(GOOD);
    await custom.patchClusterCustomObject(
      {
        group: 'nodecare.io',
        version: 'v1alpha1',
        plural: 'systemextensions',
        name: GOOD,
        body: { spec: { suspend: true } },
      },
      mergePatch,
    );
    await kubectl('wait', '--for=condition=InForce=false', '--timeout=60s', `systemextension/${GOOD}`);
    const after = await read(GOOD);
    expect(after.metadata.generation).toBe(before.metadata.generation + 1);
    expect(after.status?.observedGeneration).toBe(after.metadata.generation);
    expect(condition(after, 'InForce')).toMatchObject({ status: 'False', reason: 'Suspended' });
    expect(condition(after, 'Valid')?.lastTransitionTime).toBe(
      condition(before, 'Valid')?.lastTransitionTime,
    );
    expect(condition(after, 'Valid')?.observedGeneration).toBe(after.metadata.generation);
  });
});
