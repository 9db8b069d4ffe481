// The eviction guards in `kubectl nodecare status` (issue 54 item 1), on the real control plane: the real
// controller with eviction on publishes them in ClusterHealth status.eviction (the CRD's schema keeps every field,
// so the write settles), and the real plugin shows them. A Degraded node annotated karpenter.sh/do-not-disrupt is
// held (the fresh read) and counted as a skip; the parallel cap and the budgets are the flags'.

import { spawn } from 'node:child_process';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  adminKubeConfig,
  consistently,
  eventually,
  httpEndpoint,
  readyNodeWithAgent,
  uniqueName,
} from './helpers.ts';
import { startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');
const processes: ProgramProcess[] = [];
const servers: Server[] = [];
const nodes: string[] = [];

beforeAll(async () => {
  await applyBaseManifests();
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  for (const name of nodes) await core.deleteNode({ name }).catch(() => undefined);
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

function plugin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'cli', 'main.ts'), ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: kubeconfig },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function clusterHealth(): Promise<{
  metadata: { resourceVersion: string };
  status?: { eviction?: Record<string, unknown> };
}> {
  return (await custom.getClusterCustomObject({
    group: 'nodecare.io',
    version: 'v1alpha1',
    plural: 'clusterhealths',
    name: 'cluster',
  })) as never;
}

describe('eviction guards published and shown', () => {
  it('ClusterHealth status.eviction carries the settings, the cap, a held node and its skip; kubectl nodecare status shows them', async () => {
    const webs = await Promise.all([0, 1, 2, 3].map(() => httpEndpoint(servers)));
    const names: string[] = [];
    for (const [i, web] of webs.entries()) {
      const name = uniqueName(i === 0 ? 'guarded' : 'evs-node');
      names.push(name);
      nodes.push(name);
      processes.push(
        await readyNodeWithAgent(core, {
          kubeconfig,
          name,
          extension: 'web',
          web,
          annotations: i === 0 ? { 'karpenter.sh/do-not-disrupt': 'true' } : {},
        }),
      );
    }
    const controller = startProgram('controller', [
      `--kubeconfig=${kubeconfig}`,
      '--health-port=0',
      '--health-address=127.0.0.1',
      `--identity=${uniqueName('controller')}`,
      '--missing-lease-grace-seconds=20',
      '--evict-after-seconds=1',
      '--eviction-max-parallel-nodes=2',
      '--eviction-group-budget-percent=50',
    ]);
    processes.push(controller);
    await controller.waitForLog('Started nodecare-controller');
    const [guarded] = names;
    await eventually(async () => ((await clusterHealth()).status?.eviction ? true : undefined), {
      what: 'status.eviction published',
      timeoutMs: 30_000,
    });
    expect((await clusterHealth()).status?.eviction).toMatchObject({
      evictAfterSeconds: 1,
      maxParallelNodes: 2,
      groupBudgetPercent: 50,
      groupLabel: 'karpenter.sh/nodepool',
      parallel: { evicting: 0, allowed: 2 },
    });

    await webs[0]!.stop();
    const eviction = await eventually(
      async () => {
        const e = (await clusterHealth()).status?.eviction as { held?: Array<{ node: string }> } | undefined;
        return e?.held?.some((h) => h.node === guarded) ? e : undefined;
      },
      { what: `${guarded} held in status.eviction`, timeoutMs: 45_000 },
    );
    expect(eviction).toMatchObject({
      held: [{ node: guarded, reason: 'DoNotDisrupt' }],
      skipped: [{ subject: 'node', reason: 'DoNotDisrupt', count: 1 }],
    });
    // The schema keeps what the evictor writes: nothing to rewrite, the object settles.
    const settled = (await clusterHealth()).metadata.resourceVersion;
    await consistently(async () => {
      expect((await clusterHealth()).metadata.resourceVersion).toBe(settled);
    }, 4_000);

    const text = await plugin(['status']);
    expect(text.stdout).toContain(
      'Eviction: after 1s Degraded; 0 nodes being evicted, parallel cap 2; group budget 50% by karpenter.sh/nodepool; storm cooldown 300s.',
    );
    expect(text.stdout).toContain(`  Held: ${guarded} (DoNotDisrupt).`);
    expect(text.stdout).toContain('  Skipped this term: 1 node DoNotDisrupt.');
    const json = await plugin(['status', '-o', 'json']);
    expect((JSON.parse(json.stdout) as { eviction: unknown }).eviction).toMatchObject({
      held: [{ node: guarded, reason: 'DoNotDisrupt' }],
    });
  }, 180_000);
});
