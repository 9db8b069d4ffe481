// The agent's on-demand watches against a loopback API server: the ResourceSlice watch runs only while a
// resourceSlices probe needs it, serves its node's slices, and says so when the API server does not serve the
// type at all (before Kubernetes 1.34) instead of reading it as "no slices".

import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../lib/testing.ts';
import { FakeApiServer } from '../lib/kube/testing.ts';
import { AgentWatches } from './watches.ts';

const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function watches(serveSlices: boolean) {
  const api = await FakeApiServer.start();
  if (serveSlices)
    api.serve(SLICES, [
      {
        metadata: { name: 'node-a-gpu', resourceVersion: '5' },
        spec: {
          driver: 'gpu.example.com',
          pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
          devices: [{ name: 'gpu-0' }],
        },
      },
    ]);
  const errors: string[] = [];
  const w = new AgentWatches({
    client: api.client(),
    clock: new FakeClock(),
    nodeName: 'node-a',
    onChange: () => undefined,
    onError: (source) => void errors.push(source),
    onSkipped: () => undefined,
  });
  cleanups.push(async () => {
    await w.stop();
    await api.close();
  });
  return { api, w, errors };
}

async function until<T>(read: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await read();
    } catch (err) {
      if (i > 200) throw err;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

describe('AgentWatches ResourceSlices', () => {
  it('watches nothing until a probe asks, then its node’s slices (field selector spec.nodeName)', async () => {
    const { api, w } = await watches(true);
    expect(await w.resourceSlices()).toEqual([]);
    expect(api.requests.filter((r) => r.path.startsWith(SLICES))).toEqual([]);
    w.setWatches({ pods: false, resourceSlices: true });
    const slices = await until(() => w.resourceSlices());
    expect(slices).toMatchObject([
      { driver: 'gpu.example.com', pool: 'node-a', devices: [{ name: 'gpu-0' }] },
    ]);
    expect(api.requests.find((r) => r.path.startsWith(SLICES))?.query.get('fieldSelector')).toBe(
      'spec.nodeName=node-a',
    );
  });

  it('says the API server does not serve ResourceSlices, rather than answering "none"', async () => {
    const { w, errors } = await watches(false);
    w.setWatches({ pods: false, resourceSlices: true });
    await until(async () => {
      if (errors.length === 0) throw new Error('no error yet');
    });
    await expect(w.resourceSlices()).rejects.toThrow(/does not serve resource\.k8s\.io\/v1 ResourceSlices/);
  });
});
