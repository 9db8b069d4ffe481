// The SystemExtension counts writer against FakeRollupApi: counts from the pairs registered by a
// SystemExtension, patched only on change, a 409 lists again, a 422 is handed on and not retried.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { ControllerMetrics } from '../metrics.ts';
import { NotLeaderError } from '../writes/index.ts';
import { SystemExtensionCountsWriter } from './extension-counts.ts';
import type { SourcedPair } from './pairs.ts';
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
    await writer.write(pairs);
    expect(api.systemExtensions.get('gpu')).toEqual({
      nodes: 3,
      healthy: 1,
      progressing: 0,
      unhealthy: 1,
      unknown: 1,
      failing: 2,
    });
    const patches = api.writes.length;
    await writer.write(pairs);
    expect(api.writes).toHaveLength(patches);
  });

  it('a status written meanwhile (409) is listed again and written over', async () => {
    const { api, writer } = setup();
    await writer.write([pair('a', ExtensionState.Healthy)]);
    api.putSystemExtensionStatus('gpu', {
      nodes: 9,
      healthy: 9,
      progressing: 0,
      unhealthy: 0,
      unknown: 0,
      failing: 0,
    });
    await writer.write([pair('a', ExtensionState.Unhealthy)]);
    expect(api.calls.filter((c) => c === 'listSystemExtensions')).toHaveLength(2);
    expect(api.systemExtensions.get('gpu')?.unhealthy).toBe(1);
  });

  it('a patch refused as invalid is handed on once and not retried until the counts change', async () => {
    const { api, writer, invalid } = setup();
    api.failNext('patchSystemExtensionStatus', new KubeError(KubeErrorCode.Invalid, 422, 'invalid'));
    await writer.write([pair('a', ExtensionState.Healthy)]);
    await writer.write([pair('a', ExtensionState.Healthy)]);
    expect(invalid).toEqual(['gpu']);
    expect(api.calls.filter((c) => c === 'patchSystemExtensionStatus')).toHaveLength(1);
  });

  it('writes nothing once this replica no longer leads', async () => {
    const { api, writer } = setup(() => false);
    await expect(writer.write([pair('a', ExtensionState.Healthy)])).rejects.toBeInstanceOf(NotLeaderError);
    expect(api.writes).toEqual([]);
  });
});
