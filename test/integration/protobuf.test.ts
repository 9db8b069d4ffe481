// Leases listed in Kubernetes' protobuf encoding read as their JSON does, from the real API server
// (lib/kube/protobuf.ts, docs/adr/0018): the controller lists the fleet's Leases this way at every start.

import {
  CoordinationV1Api,
  CoreV1Api,
  setHeaderOptions,
  V1MicroTime,
  type V1Lease,
} from '@kubernetes/client-node';
import { describe, expect, inject, it } from 'vitest';
import type { LeaseObject } from '../../api/lease.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { KubeErrorCode } from '../../lib/kube/errors.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import { decodeLeaseList, protobufListContinue } from '../../lib/kube/protobuf.ts';
import type { ListBody } from '../../lib/kube/list.ts';
import { adminKubeConfig, uniqueName } from './helpers.ts';

const admin = adminKubeConfig();
const coordination = admin.makeApiClient(CoordinationV1Api);
const core = admin.makeApiClient(CoreV1Api);

/** A Lease's JSON as the API server sends it, less what protobuf.ts does not read. */
function readFields(lease: LeaseObject): LeaseObject {
  const { name, namespace, uid, resourceVersion, labels, annotations, ownerReferences, deletionTimestamp } =
    lease.metadata;
  return JSON.parse(
    JSON.stringify({
      metadata: {
        name,
        namespace,
        uid,
        resourceVersion,
        labels,
        annotations,
        ownerReferences,
        deletionTimestamp,
      },
      spec: lease.spec,
    }),
  ) as LeaseObject;
}

describe('Leases listed as protobuf', () => {
  it('read page by page into what their JSON parses to, every field nodecare uses', async () => {
    const namespace = uniqueName('protobuf');
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // The owner a Lease names must exist, or the garbage collector deletes the Lease.
    const nodeName = uniqueName('protobuf-node');
    const node = await core.createNode({ body: { metadata: { name: nodeName } } });
    const bodies: V1Lease[] = [
      {
        metadata: {
          name: 'full',
          labels: { 'nodecare.io/role': 'extension', 'nodecare.io/extension': 'gpu' },
          annotations: { 'nodecare.io/node': 'node-a', 'nodecare.io/message': 'GPU 0: π ✓ "quoted"\\n' },
          ownerReferences: [
            {
              apiVersion: 'v1',
              kind: 'Node',
              name: nodeName,
              uid: node.metadata?.uid ?? '',
              controller: false,
              blockOwnerDeletion: false,
            },
          ],
        },
        spec: {
          holderIdentity: 'agent-node-a',
          leaseDurationSeconds: 40,
          acquireTime: new V1MicroTime('2026-11-29T13:25:59.000Z'),
          renewTime: new V1MicroTime('2026-11-29T13:26:00.832Z'),
          leaseTransitions: 3,
        },
      },
      { metadata: { name: 'bare' }, spec: {} },
      { metadata: { name: 'held', finalizers: ['nodecare.io/test'] }, spec: { holderIdentity: 'x' } },
      ...['a', 'b', 'c'].map((n) => ({ metadata: { name: n }, spec: { leaseDurationSeconds: 1 } })),
    ];
    for (const body of bodies) await coordination.createNamespacedLease({ namespace, body });
    // A Lease being deleted, held by its finalizer: it carries a deletionTimestamp.
    await coordination.deleteNamespacedLease({ namespace, name: 'held' });

    const client = new KubeClient(await loadConnection(inject('kubeconfig')));
    const path = leasesPath(namespace);
    const json = await client.get<ListBody<LeaseObject>>(path, { withoutManagedFields: true });
    const pages: Array<ListBody<LeaseObject>> = [];
    const peeked: Array<string | undefined> = [];
    let token: string | undefined;
    do {
      const page = await client.get<ListBody<LeaseObject>>(path, {
        query: { limit: 2, continue: token },
        protobuf: decodeLeaseList,
        // Bytes, not text: the API server answered in protobuf.
        peek: (body) => peeked.push(typeof body === 'string' ? 'text' : protobufListContinue(body)),
      });
      pages.push(page);
      token = page.metadata?.continue || undefined;
    } while (token !== undefined);

    expect(pages).toHaveLength(3);
    expect(peeked).toEqual(pages.map((p) => p.metadata?.continue || undefined));
    const read = pages.flatMap((p) => p.items ?? []);
    expect(read.map((l) => l.metadata.name).sort()).toEqual(['a', 'b', 'bare', 'c', 'full', 'held']);
    expect(read).toEqual((json.items ?? []).map(readFields));
    // The JSON said what the protobuf said, in the JSON's own words (the times' text above all).
    const full = read.find((l) => l.metadata.name === 'full');
    expect(full?.spec?.renewTime).toBe('2026-11-29T13:26:00.832000Z');
    expect(full?.metadata.annotations?.['nodecare.io/message']).toBe('GPU 0: π ✓ "quoted"\\n');
    expect(read.find((l) => l.metadata.name === 'held')?.metadata.deletionTimestamp).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
    );

    await coordination.patchNamespacedLease(
      { namespace, name: 'held', body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      setHeaderOptions('Content-Type', 'application/json-patch+json'),
    );
    await core.deleteNamespace({ name: namespace });
    await core.deleteNode({ name: nodeName });
    await client.close();
  });

  it("reads the API server's errors from their protobuf Status", async () => {
    const client = new KubeClient(await loadConnection(inject('kubeconfig')));
    const path = leasesPath('default');
    await expect(client.get(`${path}/no-such-lease`, { protobuf: decodeLeaseList })).rejects.toMatchObject({
      code: KubeErrorCode.NotFound,
      message: expect.stringContaining('leases.coordination.k8s.io "no-such-lease" not found'),
    });
    await expect(
      client.get(path, { query: { limit: 1, continue: 'not-a-token' }, protobuf: decodeLeaseList }),
    ).rejects.toMatchObject({
      code: KubeErrorCode.Invalid,
      message: expect.stringContaining('continue'),
    });
    await client.close();
  });
});
