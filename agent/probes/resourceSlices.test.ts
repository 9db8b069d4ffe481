// The resourceSlices probe on ResourceSlices as the agent's cache holds them: only a pool's newest, complete generation
// counts, devices add up across slices and pools, and pool and attribute narrow what counts.

import { describe, expect, it } from 'vitest';
import type { ResourceSlicesProbe } from '../../api/probe-spec.ts';
import { toSliceFacts } from '../watched.ts';
import { judgeSlices, resourceSlicesProbe } from './resourceSlices.ts';
import { testContext } from './testing.ts';
import type { SliceFacts } from './types.ts';

const DRIVER = 'gpu.example.com';
const spec = (overrides: Partial<ResourceSlicesProbe> = {}): ResourceSlicesProbe => ({
  kind: 'resourceSlices',
  driver: DRIVER,
  minDevices: 2,
  ...overrides,
});
const slice = (
  devices: number,
  overrides: Partial<SliceFacts> = {},
  attributes: Record<string, string> = { model: 'a100' },
): SliceFacts => ({
  driver: DRIVER,
  pool: 'node-a',
  generation: 1,
  sliceCount: 1,
  devices: Array.from({ length: devices }, (_, i) => ({ name: `gpu-${i}`, attributes })),
  ...overrides,
});

describe('resourceSlices probe', () => {
  it.each([
    { name: 'two devices published, min 2 → Healthy', slices: [slice(2)], outcome: 'Healthy' },
    {
      name: 'the driver republished with one device → Unhealthy (TooFewDevices)',
      slices: [slice(2), slice(1, { generation: 2 })],
      outcome: 'Unhealthy',
      reason: 'TooFewDevices',
    },
    {
      name: 'the driver withdrew its slices → Unhealthy (ResourceMissing)',
      slices: [],
      outcome: 'Unhealthy',
      reason: 'ResourceMissing',
    },
    {
      name: "another driver's slices do not count",
      slices: [slice(4, { driver: 'nic.example.com' })],
      outcome: 'Unhealthy',
      reason: 'ResourceMissing',
    },
    {
      name: 'a pool of two slices with one in so far → Unknown (a republish under way)',
      slices: [slice(2, { sliceCount: 2, generation: 3 })],
      outcome: 'Unknown',
      reason: 'ProbeError',
    },
    {
      name: 'devices of two complete slices of one pool add up',
      slices: [slice(1, { sliceCount: 2 }), slice(1, { sliceCount: 2 })],
      outcome: 'Healthy',
    },
    {
      name: 'devices of two pools add up',
      slices: [slice(1), slice(1, { pool: 'node-a-2' })],
      outcome: 'Healthy',
    },
  ])('$name', ({ slices, outcome, reason }) => {
    expect(judgeSlices(spec(), slices)).toMatchObject({ outcome, ...(reason ? { reason } : {}) });
  });

  it('with a pool, only that pool counts', () => {
    const slices = [slice(1), slice(3, { pool: 'other' })];
    expect(judgeSlices(spec({ pool: 'node-a' }), slices)).toMatchObject({ outcome: 'Unhealthy' });
    expect(judgeSlices(spec({ pool: 'other' }), slices)).toMatchObject({ outcome: 'Healthy' });
  });

  it('with an attribute, only matching devices count, by the name as written or qualified by the driver', () => {
    const slices = [
      slice(2, {}, { [`${DRIVER}/model`]: 'a100' }),
      slice(2, { pool: 'b' }, { model: 'h100' }),
    ];
    const a100 = judgeSlices(spec({ attribute: { name: 'model', value: 'a100' } }), slices);
    expect(a100).toMatchObject({
      outcome: 'Healthy',
      message: `2 device(s) with model=a100 published by ${DRIVER}`,
    });
    const qualified = judgeSlices(spec({ attribute: { name: `${DRIVER}/model`, value: 'h100' } }), slices);
    expect(qualified).toMatchObject({ outcome: 'Healthy' });
    const none = judgeSlices(spec({ attribute: { name: 'model', value: 'v100' } }), slices);
    expect(none).toMatchObject({ outcome: 'Unhealthy', reason: 'TooFewDevices' });
  });

  it('reads the slice cache through the environment; an unsynced cache is the runner’s Unknown', async () => {
    const ok = await resourceSlicesProbe(spec(), testContext({ resourceSlices: async () => [slice(3)] }));
    expect(ok).toMatchObject({ outcome: 'Healthy', message: `3 device(s) published by ${DRIVER}` });
    await expect(
      resourceSlicesProbe(
        spec(),
        testContext({ resourceSlices: async () => Promise.reject(new Error('not synced')) }),
      ),
    ).rejects.toThrow('not synced');
  });

  it('a ResourceSlice is read bounded, every attribute as text', () => {
    const facts = toSliceFacts({
      spec: {
        driver: DRIVER,
        pool: { name: 'node-a', generation: 4, resourceSliceCount: 2 },
        devices: [
          ...Array.from({ length: 200 }, (_, i) => ({
            name: `gpu-${i}`,
            attributes: {
              model: { string: 'a100' },
              memory: { int: 80 },
              mig: { bool: false },
              driverVersion: { version: '1.2.3' },
            },
          })),
        ],
      },
    });
    expect(facts).toMatchObject({ driver: DRIVER, pool: 'node-a', generation: 4, sliceCount: 2 });
    expect(facts.devices).toHaveLength(128);
    expect(facts.devices[0]?.attributes).toEqual({
      model: 'a100',
      memory: '80',
      mig: 'false',
      driverVersion: '1.2.3',
    });
  });
});
