// What `kubectl nodecare status|explain` holds of the Leases it reads (issue 50 item 2): every Lease of the
// fleet at once, so a constant of each, from pages bounded in bytes, whatever an agent token wrote.

import { describe, expect, it } from 'vitest';
import { buildLease, compactLease, type LeaseObject } from '../api/lease.ts';
import { LEASE_NAMESPACE } from '../api/names.ts';
import { MAX_CACHED_LEASE_CHARS, toCachedLease } from '../controller/ingest.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import { FakeApiServer } from '../lib/kube/testing.ts';
import { LEASE_PAGE_MAX_BYTES, readSnapshot } from './snapshot.ts';

const node = { name: 'node-a', uid: 'uid-a' };
const lease = (extension: string, holderIdentity = 'agent'): LeaseObject =>
  buildLease({
    node,
    extension,
    holderIdentity,
    leaseDurationSeconds: 40,
    renewTime: new Date(Date.UTC(2026, 11, 2)),
    bootId: 'boot-1',
    record: { state: 'Unhealthy', reason: 'ProbeFailed', message: 'refused', since: '2026-12-02T00:00:00Z' },
  });

describe('readSnapshot holds a constant of each Lease (issue 50 item 2: `kubectl nodecare status` hit the wall the controller did)', () => {
  it('reads 12 Leases of 1.5 MB each in pages under LEASE_PAGE_MAX_BYTES, and keeps at most MAX_CACHED_LEASE_CHARS of each', async () => {
    const big = Array.from({ length: 12 }, (_, i) =>
      lease(`big-${String(i).padStart(2, '0')}`, 'h'.repeat(1_500_000)),
    );
    const api = await FakeApiServer.start();
    api.serve('/api/v1/nodes', [{ metadata: { name: node.name, uid: node.uid } }]);
    api.serve(leasesPath(LEASE_NAMESPACE), [lease('gpu'), ...big]);
    const client = api.client();
    try {
      const { snapshot } = await readSnapshot(client);
      expect(snapshot.leases).toHaveLength(13);
      for (const held of snapshot.leases)
        expect(JSON.stringify(held).length).toBeLessThanOrEqual(MAX_CACHED_LEASE_CHARS);
      // Read as the controller reads them (the fake API server stamps a resourceVersion on each).
      const decoded = (l: LeaseObject) => ({ ...toCachedLease(l), resourceVersion: '' });
      expect(snapshot.leases.map(decoded)).toEqual([lease('gpu'), ...big].map(decoded));
      // The first page (all 13, about 18 MB) was over the bound and asked for again with fewer.
      const limits = api.listRequests(leasesPath(LEASE_NAMESPACE)).map((r) => Number(r.query.get('limit')));
      expect(limits[0]).toBe(500);
      expect(Math.min(...limits)).toBeLessThan(13);
      expect(13 * 1_500_000).toBeGreaterThan(LEASE_PAGE_MAX_BYTES);
    } finally {
      await client.close();
      await api.close();
    }
  });

  it('compactLease decodes to what the Lease decodes to, and keeps a node name too long to be one as such', () => {
    const long = lease('gpu');
    long.metadata.annotations!['nodecare.io/node'] = 'n'.repeat(300);
    for (const obj of [lease('gpu'), lease('gpu', 'x'.repeat(10_000)), long])
      expect(toCachedLease(compactLease(obj))).toEqual(toCachedLease(obj));
  });
});
