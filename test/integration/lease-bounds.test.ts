// What one node's Leases can do to the controller, on the real API server (issue 50 items 1 and 2;
// docs/install.md, "Threat model"). The API server stores what an administrator writes around admission: a
// Lease whose acquireTime is year 10000 (RFC 3339 cannot write it; the protobuf reader refused it and failed
// the whole LIST page, so the lease cache never synced again) and Leases of 1.4 MB each. The controller's
// lease cache still syncs and serves every other node's Leases, and keeps of each a constant. The same writes
// from an agent's token are refused by the shipped admission policy, and the shipped ResourceQuota bounds how
// many Leases the namespace stores. A control plane of its own: the test patches the quota down.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_NAMESPACE, buildLease, type LeaseObject } from '../../api/index.ts';
import { ClusterCache, MAX_CACHED_LEASE_CHARS } from '../../controller/cache/index.ts';
import { systemClock } from '../../lib/clock.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { isKubeError, KubeErrorCode, type KubeError } from '../../lib/kube/errors.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import { startControlPlane, type ControlPlane } from '../controlplane/controlplane.ts';
import { mintAgentTokenOnNode } from '../controlplane/tokens.ts';
import { eventually, uniqueName } from './helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BASE = join(ROOT, 'manifests', 'base');
const SYSTEM = 'nodecare-system';
const POLICY = 'nodecare-agent-own-node-leases';
/** The time of issue 50 item 1, as an agent could write it: the API server stores it as year 10000. */
const YEAR_10000 = '9999-12-31T23:59:59.000000-23:59';

let plane: ControlPlane;
let core: CoreV1Api;
let admin: KubeClient;
let scratch = '';
const nodes = new Map<string, { name: string; uid: string; kubeconfig: string }>();

async function kubectl(args: string[]): Promise<string> {
  const out = await plane.kubectl(args);
  if (out.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${out.stderr}`);
  return out.stdout;
}

function leaseFor(node: { name: string; uid: string }, extension: string): LeaseObject {
  return buildLease({
    node,
    extension,
    holderIdentity: `agent-${node.name}`,
    leaseDurationSeconds: 40,
    renewTime: new Date(),
    bootId: 'boot-1',
    record: { state: 'Healthy', reason: 'ProbeSucceeded', message: 'ok', since: new Date().toISOString() },
  });
}

async function agentClient(key: string): Promise<KubeClient> {
  return new KubeClient(await loadConnection(nodes.get(key)!.kubeconfig));
}

async function refusal(request: Promise<unknown>): Promise<KubeError> {
  const outcome = await request.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!isKubeError(outcome)) throw new Error(`expected a refusal, got ${String(outcome)}`);
  return outcome;
}

/** A ClusterCache of the controller's over the admin's client, and what it reported skipped. */
function cacheOver(client: KubeClient): { cache: ClusterCache; skipped: string[]; errors: unknown[] } {
  const skipped: string[] = [];
  const errors: unknown[] = [];
  const cache = new ClusterCache(client, systemClock, {
    nodeChanged: () => undefined,
    allNodesChanged: () => undefined,
    error: (_, err) => void errors.push(err),
    skipped: (source, key) => void skipped.push(`${source}:${key}`),
  });
  return { cache, skipped, errors };
}

beforeAll(async () => {
  plane = await startControlPlane({ scheduler: false, auditPolicy: false });
  scratch = mkdtempSync(join(tmpdir(), 'nodecare-lease-bounds-'));
  await kubectl([
    'apply',
    '--server-side',
    ...['namespaces', 'serviceaccounts', 'rbac-agent', 'admission-agent-leases', 'lease-quota'].flatMap(
      (file) => ['-f', join(BASE, `${file}.yaml`)],
    ),
  ]);
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  core = kc.makeApiClient(CoreV1Api);
  admin = new KubeClient(await loadConnection(plane.kubeconfigPath));
  for (const key of ['a', 'b', 'c']) {
    const name = uniqueName(`bounds-${key}`);
    const node = await core.createNode({ body: { metadata: { name } } });
    const { token } = await mintAgentTokenOnNode(kc, {
      namespace: SYSTEM,
      nodeName: name,
      podName: `agent-${name}`,
    });
    const doc = JSON.parse(readFileSync(plane.kubeconfigPath, 'utf8')) as {
      users: Array<{ user: Record<string, unknown> }>;
    };
    for (const user of doc.users) user.user = { token };
    const kubeconfig = join(scratch, `${key}.kubeconfig`);
    writeFileSync(kubeconfig, JSON.stringify(doc), { mode: 0o600 });
    nodes.set(key, { name, uid: node.metadata!.uid!, kubeconfig });
  }
  // The quota admits creates once the quota controller has written its status; the policy is in force once
  // it refuses node a's agent a Lease of node b.
  const a = await agentClient('a');
  try {
    const own = leaseFor(nodes.get('a')!, 'ready-probe');
    const forged = leaseFor(nodes.get('b')!, 'ready-probe');
    await eventually(
      async () => {
        const refused = await a.request('POST', leasesPath(LEASE_NAMESPACE), { body: forged }).then(
          async () => {
            await admin.request('DELETE', leasesPath(LEASE_NAMESPACE, forged.metadata.name));
            return false;
          },
          (err: unknown) => isKubeError(err, KubeErrorCode.Forbidden) && err.message.includes(POLICY),
        );
        if (!refused) return undefined;
        return a.request('POST', leasesPath(LEASE_NAMESPACE), { body: own }).then(
          () => true,
          () => undefined,
        );
      },
      { timeoutMs: 60_000, what: 'the policy in force and the quota admitting creates' },
    );
    await a.request('DELETE', leasesPath(LEASE_NAMESPACE, own.metadata.name));
  } finally {
    await a.close();
  }
}, 180_000);

afterAll(async () => {
  await admin?.close();
  await plane?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('one Lease never stops the lease cache (issue 50 item 1)', () => {
  it("a Lease stored with a year-10000 acquireTime (by an admin, around admission): the controller's lease cache syncs, serves every other node's Leases, and counts it skipped", async () => {
    const [a, b, c] = (['a', 'b', 'c'] as const).map((k) => nodes.get(k)!);
    const poison = leaseFor(c!, 'gpu');
    poison.spec!.acquireTime = YEAR_10000;
    const stored = await admin.request<LeaseObject>('POST', leasesPath(LEASE_NAMESPACE), { body: poison });
    // The API server took it, and says year 10000 in its JSON.
    expect(String(stored.spec?.acquireTime)).toMatch(/^10000-/);
    for (const node of [a!, b!])
      await admin.request('POST', leasesPath(LEASE_NAMESPACE), { body: leaseFor(node, 'gpu') });

    // Twice: a start, and a relist (a restart or a leader change) with it still there.
    for (const round of [1, 2]) {
      const { cache, skipped } = cacheOver(admin);
      cache.start();
      try {
        await eventually(() => (cache.leases.synced ? true : undefined), {
          timeoutMs: 20_000,
          what: `the lease cache to sync (round ${round})`,
        });
        // Round 2 lists what round 1's change left.
        expect(cache.leasesOf(a!.name).extensions.get('gpu')?.lease.state).toBe(
          round === 1 ? 'Healthy' : 'Unhealthy',
        );
        expect(cache.leasesOf(b!.name).extensions.get('gpu')?.lease.state).toBe('Healthy');
        expect(cache.leasesOf(c!.name).extensions.has('gpu')).toBe(false);
        expect(skipped).toEqual([`leases:${LEASE_NAMESPACE}/${poison.metadata.name}`]);
        // Its watch (JSON) goes on: a change to another node's Lease arrives.
        const current = await admin.request<LeaseObject>(
          'GET',
          leasesPath(LEASE_NAMESPACE, `gpu.${a!.name}`),
        );
        current.metadata.annotations!['nodecare.io/state'] = round === 1 ? 'Unhealthy' : 'Healthy';
        await admin.request('PUT', leasesPath(LEASE_NAMESPACE, `gpu.${a!.name}`), { body: current });
        await eventually(
          () =>
            cache.leasesOf(a!.name).extensions.get('gpu')?.lease.state ===
            current.metadata.annotations!['nodecare.io/state']
              ? true
              : undefined,
          { what: "the watch to deliver node a's change" },
        );
        expect(cache.leases.synced).toBe(true);
      } finally {
        await cache.stop();
      }
    }
    await admin.request('DELETE', leasesPath(LEASE_NAMESPACE, poison.metadata.name));
    for (const node of [a!, b!])
      await admin.request('DELETE', leasesPath(LEASE_NAMESPACE, `gpu.${node.name}`));
  });

  it("admission refuses the same times from an agent's token, and takes a sane one", async () => {
    const client = await agentClient('a');
    const node = nodes.get('a')!;
    try {
      for (const field of ['acquireTime', 'renewTime'] as const) {
        const lease = leaseFor(node, `time-${field.toLowerCase()}`);
        lease.spec![field] = YEAR_10000;
        const err = await refusal(client.request('POST', leasesPath(LEASE_NAMESPACE), { body: lease }));
        expect(err.code, err.message).toBe(KubeErrorCode.Forbidden);
        expect(err.message).toContain(POLICY);
        expect(err.message).toContain('years 1970 to 2999');
      }
      const sane = leaseFor(node, 'time-sane');
      sane.spec!.acquireTime = '2026-12-02T06:00:00.000000Z';
      await client.request('POST', leasesPath(LEASE_NAMESPACE), { body: sane });
      await client.request('DELETE', leasesPath(LEASE_NAMESPACE, sane.metadata.name));
    } finally {
      await client.close();
    }
  });
});

describe('what one node can make the controller hold is bounded (issue 50 item 2)', () => {
  it('the policy type-checks without a warning', async () => {
    interface Policy {
      metadata: { generation: number };
      status?: { observedGeneration?: number; typeChecking?: { expressionWarnings?: unknown[] } };
    }
    const checked = await eventually(
      async () => {
        const now = JSON.parse(
          await kubectl(['get', 'validatingadmissionpolicy', POLICY, '-o', 'json']),
        ) as Policy;
        return now.status?.observedGeneration === now.metadata.generation ? now : undefined;
      },
      { what: 'the policy to be type-checked' },
    );
    expect(checked.status?.typeChecking?.expressionWarnings ?? []).toEqual([]);
  });

  it('admission refuses an agent a Lease over the sizes: an annotation over 512 characters, 17 annotations, 9 labels, a holderIdentity over 253', async () => {
    const client = await agentClient('a');
    const node = nodes.get('a')!;
    try {
      const cases: Array<[string, (l: LeaseObject) => void]> = [
        ['long-annotation', (l) => (l.metadata.annotations!['nodecare.io/message'] = 'x'.repeat(513))],
        [
          'many-annotations',
          (l) => {
            for (let i = 0; i < 11; i++) l.metadata.annotations![`example.com/a${i}`] = 'x';
          },
        ],
        [
          'many-labels',
          (l) => {
            for (let i = 0; i < 7; i++) l.metadata.labels![`example.com/l${i}`] = 'x';
          },
        ],
        ['long-holder', (l) => (l.spec!.holderIdentity = 'h'.repeat(254))],
      ];
      for (const [extension, edit] of cases) {
        const lease = leaseFor(node, extension);
        edit(lease);
        const err = await refusal(client.request('POST', leasesPath(LEASE_NAMESPACE), { body: lease })).catch(
          (e: Error) => {
            throw new Error(`${extension}: ${e.message}`);
          },
        );
        expect(err.code, `${extension}: ${err.message}`).toBe(KubeErrorCode.Forbidden);
        expect(err.message).toContain('over the sizes an agent may write');
      }
      // At the bounds: taken.
      const most = leaseFor(node, 'at-the-bounds');
      most.metadata.annotations!['nodecare.io/message'] = 'x'.repeat(512);
      most.spec!.holderIdentity = 'h'.repeat(253);
      await client.request('POST', leasesPath(LEASE_NAMESPACE), { body: most });
      await client.request('DELETE', leasesPath(LEASE_NAMESPACE, most.metadata.name));
    } finally {
      await client.close();
    }
  });

  it("admission refuses an agent the metadata it never writes: 2,000 valid finalizers, one finalizer, 2,000 owner references, managedFields of the client's making; the agent's own Lease and its update are taken", async () => {
    const client = await agentClient('a');
    const node = nodes.get('a')!;
    const created: string[] = [];
    const create = async (lease: LeaseObject): Promise<KubeError> => {
      const err = await refusal(
        client.request('POST', leasesPath(LEASE_NAMESPACE), { body: lease }).then((stored) => {
          created.push(lease.metadata.name!);
          return stored;
        }),
      ).catch((e: Error) => {
        throw new Error(`${lease.metadata.name}: ${e.message}`);
      });
      expect(err.code, `${lease.metadata.name}: ${err.message}`).toBe(KubeErrorCode.Forbidden);
      expect(err.message).toContain(POLICY);
      return err;
    };
    try {
      // Valid names (a DNS subdomain, a slash, a name part of at most 63): the API server itself takes them.
      const many = leaseFor(node, 'many-finalizers');
      (many.metadata as { finalizers?: string[] }).finalizers = Array.from(
        { length: 2000 },
        (_, i) => `example.com/f-${i}`,
      );
      expect((await create(many)).message).toContain('an agent may set no finalizers');
      const one = leaseFor(node, 'one-finalizer');
      (one.metadata as { finalizers?: string[] }).finalizers = ['example.com/f-0'];
      expect((await create(one)).message).toContain('an agent may set no finalizers');

      const owners = leaseFor(node, 'many-owners');
      owners.metadata.ownerReferences = [
        ...owners.metadata.ownerReferences!,
        ...Array.from({ length: 2000 }, (_, i) => ({
          apiVersion: 'v1',
          kind: 'Node',
          name: `other-${i}`,
          uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        })),
      ];
      // The API server's own managedFields entry names all 2,001 too; the one-owner rule comes first.
      expect((await create(owners)).message).toContain('as the one owner of its Leases');

      // managedFields the client supplies are kept by the API server (it takes them as the new managed
      // set), and the controller never reads them: here 3,000 made-up annotation paths, about 200 KB.
      const fields = leaseFor(node, 'own-managed-fields');
      (fields.metadata as { managedFields?: unknown[] }).managedFields = [
        {
          manager: 'someone',
          operation: 'Update',
          apiVersion: 'coordination.k8s.io/v1',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:annotations': Object.fromEntries(
                Array.from({ length: 3000 }, (_, i) => [`f:example.com/x${i}-${'y'.repeat(50)}`, {}]),
              ),
            },
          },
        },
      ];
      expect((await create(fields)).message).toContain('managedFields');

      // The Lease the agent writes, created and updated as the agent's LeaseWriter does: taken.
      const own = leaseFor(node, 'as-the-agent-writes');
      const stored = await client.request<LeaseObject>('POST', leasesPath(LEASE_NAMESPACE), { body: own });
      created.push(own.metadata.name!);
      const renewed = leaseFor(node, 'as-the-agent-writes');
      renewed.metadata.resourceVersion = stored.metadata.resourceVersion;
      renewed.metadata.annotations!['nodecare.io/state'] = 'Unhealthy';
      await client.request('PUT', leasesPath(LEASE_NAMESPACE, own.metadata.name!), { body: renewed });
    } finally {
      for (const name of created) {
        await admin
          .request('PATCH', leasesPath(LEASE_NAMESPACE, name), {
            body: { metadata: { finalizers: null } },
            contentType: 'application/merge-patch+json',
          })
          .catch(() => undefined);
        await admin.request('DELETE', leasesPath(LEASE_NAMESPACE, name)).catch(() => undefined);
      }
      await client.close();
    }
  });

  it('Leases of 1.4 MB each (an admin, around admission): the cache syncs reading pages of bounded bytes, and keeps a constant of each', async () => {
    const c = nodes.get('c')!;
    const big = Array.from({ length: 14 }, (_, i) => {
      const lease = leaseFor(c, `big-${String(i).padStart(2, '0')}`);
      lease.spec!.holderIdentity = 'h'.repeat(1_400_000);
      return lease;
    });
    for (const lease of big) await admin.request('POST', leasesPath(LEASE_NAMESPACE), { body: lease });
    const a = nodes.get('a')!;
    await admin.request('POST', leasesPath(LEASE_NAMESPACE), { body: leaseFor(a, 'gpu') });
    const { cache, skipped } = cacheOver(admin);
    cache.start();
    try {
      await eventually(() => (cache.leases.synced ? true : undefined), {
        timeoutMs: 60_000,
        what: 'the lease cache to sync',
      });
      expect(cache.leasesOf(a.name).extensions.get('gpu')?.lease.state).toBe('Healthy');
      // Over the 64 KiB the protobuf reader decodes of one Lease: skipped, named, never decoded.
      expect(skipped.sort()).toEqual(big.map((l) => `leases:${LEASE_NAMESPACE}/${l.metadata.name}`).sort());
      for (const held of cache.leases.store.values())
        expect(JSON.stringify(held).length).toBeLessThanOrEqual(MAX_CACHED_LEASE_CHARS);
    } finally {
      await cache.stop();
      for (const lease of big)
        await admin.request('DELETE', leasesPath(LEASE_NAMESPACE, lease.metadata.name));
      await admin.request('DELETE', leasesPath(LEASE_NAMESPACE, `gpu.${a.name}`));
    }
  }, 120_000);

  it("the API server bounds the count: the shipped ResourceQuota names Leases in nodecare-leases, and refuses an agent's create past it", async () => {
    const quota = JSON.parse(
      await kubectl(['get', 'resourcequota', 'nodecare-leases', '-n', LEASE_NAMESPACE, '-o', 'json']),
    ) as { spec: { hard: Record<string, string> } };
    expect(Object.keys(quota.spec.hard)).toEqual(['count/leases.coordination.k8s.io']);
    expect(['50000', '50k']).toContain(quota.spec.hard['count/leases.coordination.k8s.io']);
    // Down to what is stored now plus 2, so that the test need not create 50,000.
    const used = Number(
      await kubectl([
        'get',
        'leases',
        '-n',
        LEASE_NAMESPACE,
        '-o',
        'jsonpath={.items[*].metadata.name}',
      ]).then((names) => names.split(' ').filter(Boolean).length),
    );
    await kubectl([
      'patch',
      'resourcequota',
      'nodecare-leases',
      '-n',
      LEASE_NAMESPACE,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { hard: { 'count/leases.coordination.k8s.io': String(used + 2) } } }),
    ]);
    const client = await agentClient('b');
    const node = nodes.get('b')!;
    const names: string[] = [];
    try {
      await eventually(
        async () => {
          const lease = leaseFor(node, `count-${names.length}`);
          try {
            await client.request('POST', leasesPath(LEASE_NAMESPACE), { body: lease });
            names.push(lease.metadata.name!);
            return undefined;
          } catch (err) {
            return isKubeError(err, KubeErrorCode.Forbidden) && /exceeded quota/.test(err.message)
              ? err
              : undefined;
          }
        },
        { timeoutMs: 30_000, what: 'a create refused as over the quota' },
      );
      expect(names.length).toBeLessThanOrEqual(2);
      // A renewal is an update: the quota never refuses it.
      if (names[0]) {
        const held = await client.request<LeaseObject>('GET', leasesPath(LEASE_NAMESPACE, names[0]));
        await client.request('PUT', leasesPath(LEASE_NAMESPACE, names[0]), {
          body: { ...held, spec: { ...held.spec, renewTime: new Date().toISOString().replace('Z', '000Z') } },
        });
      }
    } finally {
      for (const name of names)
        await client.request('DELETE', leasesPath(LEASE_NAMESPACE, name)).catch(() => undefined);
      await client.close();
      await kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(BASE, 'lease-quota.yaml')]);
    }
  });
});
