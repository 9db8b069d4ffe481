// The SystemExtension counts writer against FakeRollupApi: counts from the pairs registered by a
// SystemExtension, patched only on change, a 409 lists again, a 422 is handed on and not retried.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { Enforcement } from '../../api/index.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { ControllerMetrics } from '../metrics.ts';
import { NotLeaderError } from '../writes/index.ts';
import { SystemExtensionCountsWriter, rolloutStatus } from './extension-counts.ts';
import type { SourcedPair } from './pairs.ts';
import { RollupTally } from './tally.ts';
import { FakeRollupApi } from './testing.ts';

const pair = (node: string, state: SourcedPair['state'], source: SourcedPair['source'] = 'systemExtension') =>
  ({ node, extension: 'gpu', conditionType: 'GpuReady', state, reason: 'x', source }) as SourcedPair;

function setup(leading = () => true) {
  const api = new FakeRollupApi();
  api.systemExtensions.set('gpu', undefined);
  const invalid: string[] = [];
  const writer = new SystemExtensionCountsWriter({
    api,
    source: { systemExtensionNames: () => api.systemExtensions.keys() },
    metrics: new ControllerMetrics(new Registry()),
    fence: () => {
      if (!leading()) throw new NotLeaderError();
    },
    invalid: (name) => void invalid.push(name),
  });
  return { api, writer, invalid };
}

describe('SystemExtensionCountsWriter', () => {
  it('counts only the pairs the SystemExtension registered, and patches only when they change', async () => {
    const { api, writer } = setup();
    const pairs = [
      pair('a', ExtensionState.Healthy),
      pair('b', ExtensionState.Unhealthy),
      pair('c', ExtensionState.Unknown),
      pair('d', ExtensionState.Healthy, 'annotation'),
    ];
    await writer.write(RollupTally.of(pairs), 0);
    expect(api.systemExtensions.get('gpu')).toEqual({
      nodes: 3,
      healthy: 1,
      progressing: 0,
      unhealthy: 1,
      unknown: 1,
      failing: 2,
    });
    const patches = api.writes.length;
    await writer.write(RollupTally.of(pairs), 0);
    expect(api.writes).toHaveLength(patches);
  });

  it('a status written meanwhile (409) is listed again and written over', async () => {
    const { api, writer } = setup();
    await writer.write(RollupTally.of([pair('a', ExtensionState.Healthy)]), 0);
    api.putSystemExtensionStatus('gpu', {
      nodes: 9,
      healthy: 9,
      progressing: 0,
      unhealthy: 0,
      unknown: 0,
      failing: 0,
    });
    await writer.write(RollupTally.of([pair('a', ExtensionState.Unhealthy)]), 0);
    expect(api.calls.filter((c) => c === 'listSystemExtensions')).toHaveLength(2);
    expect(api.systemExtensions.get('gpu')?.unhealthy).toBe(1);
  });

  it('a patch refused as invalid is handed on once and not retried until the counts change', async () => {
    const { api, writer, invalid } = setup();
    api.failNext('patchSystemExtensionStatus', new KubeError(KubeErrorCode.Invalid, 422, 'invalid'));
    await writer.write(RollupTally.of([pair('a', ExtensionState.Healthy)]), 0);
    await writer.write(RollupTally.of([pair('a', ExtensionState.Healthy)]), 0);
    expect(invalid).toEqual(['gpu']);
    expect(api.calls.filter((c) => c === 'patchSystemExtensionStatus')).toHaveLength(1);
  });

  it('writes nothing once this replica no longer leads', async () => {
    const { api, writer } = setup(() => false);
    await expect(writer.write(RollupTally.of([pair('a', ExtensionState.Healthy)]), 0)).rejects.toBeInstanceOf(
      NotLeaderError,
    );
    expect(api.writes).toEqual([]);
  });
});

describe('rolloutStatus: the progress a SystemExtension shows (spec.rollout)', () => {
  const T = Date.parse('2026-11-25T09:00:00Z');
  const rollout = (existingNodes: 'Enforce' | 'Grace' | 'Observe') => ({
    policy: { existingNodes, gracePeriodSeconds: 600 },
    generation: 3,
    requirement: '0123456789abcdef',
    startedMs: T,
  });

  it.each([
    [
      'Grace',
      T + 60_000,
      'Grace',
      '37 of 120 selected nodes report healthy; enforcing at 2026-11-25T09:10:00Z',
    ],
    ['Grace', T + 600_000, 'Enforced', '37 of 120 selected nodes report healthy; enforced'],
    ['Enforce', T, 'Enforced', '37 of 120 selected nodes report healthy; enforced'],
    [
      'Observe',
      T + 3_600_000,
      'Observe',
      '37 of 120 selected nodes report healthy; observing: existing nodes are not enforced until spec.rollout.existingNodes is Enforce',
    ],
  ] as const)('%s at +%s ms → %s', (mode, now, phase, message) => {
    expect(rolloutStatus(rollout(mode), { nodes: 120, healthy: 37 }, now)).toMatchObject({
      observedGeneration: 3,
      requirement: '0123456789abcdef',
      startedAt: '2026-11-25T09:00:00Z',
      phase,
      message,
    });
  });
});

describe('SystemExtensionCountsWriter: conditions', () => {
  it('writes observedGeneration, Valid and InForce; moves lastTransitionTime only on a status change; no write when nothing changed', async () => {
    const api = new FakeRollupApi();
    api.systemExtensions.set('gpu', undefined);
    let spec = {
      generation: 1,
      problems: [] as string[],
      suspend: false,
      critical: true,
      enforcement: Enforcement.Enforce,
    };
    const writer = new SystemExtensionCountsWriter({
      api,
      source: { systemExtensionNames: () => api.systemExtensions.keys(), systemExtensionSpec: () => spec },
      metrics: new ControllerMetrics(new Registry()),
      fence: () => undefined,
      invalid: () => undefined,
    });
    const T0 = Date.parse('2026-12-01T10:00:00Z');
    await writer.write(RollupTally.of([]), T0);
    const status = () => api.systemExtensions.get('gpu')!;
    expect(status().observedGeneration).toBe(1);
    expect(
      status().conditions?.map((c) => `${c.type}=${c.status}/${c.reason}@${c.lastTransitionTime}`),
    ).toEqual(['Valid=True/SpecValid@2026-12-01T10:00:00Z', 'InForce=True/Enforced@2026-12-01T10:00:00Z']);
    const writes = api.writes.length;
    await writer.write(RollupTally.of([]), T0 + 30_000);
    expect(api.writes).toHaveLength(writes);

    spec = { ...spec, generation: 2, problems: ['probe: expected exactly one probe kind'] };
    await writer.write(RollupTally.of([]), T0 + 60_000);
    expect(status().observedGeneration).toBe(2);
    expect(
      status().conditions?.map((c) => `${c.type}=${c.status}/${c.reason}@${c.lastTransitionTime}`),
    ).toEqual([
      'Valid=False/InvalidSpec@2026-12-01T10:01:00Z',
      'InForce=False/InvalidSpec@2026-12-01T10:01:00Z',
    ]);
    expect(status().conditions?.[0]?.message).toContain('probe: expected exactly one probe kind');

    spec = { ...spec, generation: 3, problems: [], suspend: true };
    await writer.write(RollupTally.of([]), T0 + 120_000);
    expect(
      status().conditions?.map((c) => `${c.type}=${c.status}/${c.reason}@${c.lastTransitionTime}`),
    ).toEqual(['Valid=True/SpecValid@2026-12-01T10:02:00Z', 'InForce=False/Suspended@2026-12-01T10:01:00Z']);
  });
});
