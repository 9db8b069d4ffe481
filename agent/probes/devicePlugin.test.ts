import { rm } from 'node:fs/promises';
import type { Server as NetServer } from 'node:net';
import { join } from 'node:path';
import type { Server, ServerUnaryCall, ServerWritableStream, sendUnaryData } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devicePluginProbe } from './devicePlugin.ts';
import { PROTO_FILES, service } from './proto.ts';
import { serveGrpc, silentSocket, tempDir, testContext } from './testing.ts';
import type { NodeFacts } from './types.ts';

/** Deadline for the cases that must time out; every other case gets testContext's generous default. */
const SHORT_TIMEOUT_MS = 1500;
const GPU = 'nvidia.com/gpu';

const node = (capacity: Record<string, string>, allocatable: Record<string, string>): NodeFacts => ({
  capacity,
  allocatable,
  conditions: [],
});

describe('devicePlugin probe: the devices as the kubelet counts them', () => {
  it.each([
    {
      name: '2 of 2 Healthy, minHealthy 1 → Healthy',
      node: node({ [GPU]: '2' }, { [GPU]: '2' }),
      min: 1,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
      message: `2 of 2 ${GPU} devices Healthy (kubelet)`,
    },
    {
      name: '8 of 8 Healthy, minHealthy 8 → Healthy',
      node: node({ [GPU]: '8' }, { [GPU]: '8' }),
      min: 8,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
      message: `8 of 8 ${GPU} devices Healthy (kubelet)`,
    },
    {
      name: '1 of 3 Healthy (the kubelet heard 2 go bad), minHealthy 2 → Unhealthy',
      node: node({ [GPU]: '3' }, { [GPU]: '1' }),
      min: 2,
      outcome: 'Unhealthy',
      reason: 'TooFewDevices',
      message: `1 of 3 ${GPU} devices Healthy (kubelet), want at least 2`,
    },
    {
      name: 'plugin gone, devices kept in capacity for the grace period: 0 of 2 → Unhealthy',
      node: node({ [GPU]: '2' }, { [GPU]: '0' }),
      min: 1,
      outcome: 'Unhealthy',
      reason: 'TooFewDevices',
      message: `0 of 2 ${GPU} devices Healthy (kubelet), want at least 1`,
    },
    {
      name: 'only capacity listed → 0 Healthy → Unhealthy',
      node: node({ [GPU]: '2' }, {}),
      min: 1,
      outcome: 'Unhealthy',
      reason: 'TooFewDevices',
      message: `0 of 2 ${GPU} devices Healthy (kubelet), want at least 1`,
    },
    {
      name: 'never registered → Unhealthy',
      node: node({ cpu: '4' }, { cpu: '4' }),
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ResourceMissing',
      message: `the kubelet lists no ${GPU} devices (not registered)`,
    },
    {
      name: 'a count that is not a quantity → Unknown',
      node: node({ [GPU]: 'lots' }, { [GPU]: '1' }),
      min: 1,
      outcome: 'Unknown',
      reason: 'ProbeError',
      message: `${GPU} count "lots" is not a quantity`,
    },
    {
      name: 'node not observed yet → Unknown',
      node: undefined,
      min: 1,
      outcome: 'Unknown',
      reason: 'NodeNotObserved',
      message: 'node not observed yet',
    },
  ])('$name', async ({ node, min, outcome, reason, message }) => {
    const result = await devicePluginProbe(
      { kind: 'devicePlugin', resource: GPU, minHealthy: min },
      testContext({ node }),
    );
    expect(result).toEqual({ outcome, reason, message });
  });
});

describe('devicePlugin probe: the plugin socket is asked only the unary GetDevicePluginOptions', () => {
  let dir = '';
  let server: Server | undefined;
  let silent: NetServer | undefined;
  const calls = { options: 0, listAndWatch: 0 };
  const twoHealthy = node({ [GPU]: '2' }, { [GPU]: '2' });

  beforeAll(async () => {
    dir = await tempDir();
    ({ server } = await serveGrpc(`unix://${join(dir, 'plugin.sock')}`, (s) =>
      s.addService(service(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin'), {
        GetDevicePluginOptions: (_call: ServerUnaryCall<object, object>, callback: sendUnaryData<object>) => {
          calls.options++;
          callback(null, { pre_start_required: false });
        },
        // An upstream plugin's ListAndWatch: it never returns while the plugin lives.
        ListAndWatch: (call: ServerWritableStream<object, object>) => {
          calls.listAndWatch++;
          call.write({ devices: [{ ID: 'gpu-0', health: 'Healthy' }] });
        },
      }),
    ));
    silent = await silentSocket(join(dir, 'silent.sock'));
  });
  afterAll(async () => {
    server?.forceShutdown();
    silent?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a plugin that answers → judged by the kubelet counts; 200 probes open no stream', async () => {
    for (let i = 0; i < 200; i++) {
      const result = await devicePluginProbe(
        { kind: 'devicePlugin', resource: GPU, minHealthy: 1, socket: join(dir, 'plugin.sock') },
        testContext({ node: twoHealthy }),
      );
      expect(result.outcome).toBe('Healthy');
    }
    expect(calls).toEqual({ options: 200, listAndWatch: 0 });
  });

  it('a plugin that answers does not hide devices the kubelet counts unhealthy', async () => {
    const result = await devicePluginProbe(
      { kind: 'devicePlugin', resource: GPU, minHealthy: 1, socket: join(dir, 'plugin.sock') },
      testContext({ node: node({ [GPU]: '2' }, { [GPU]: '0' }) }),
    );
    expect(result).toMatchObject({ outcome: 'Unhealthy', reason: 'TooFewDevices' });
  });

  it.each([
    { name: 'no socket (plugin gone) → Unhealthy', socket: 'missing.sock', reason: 'ConnectionFailed' },
    { name: 'a socket that never speaks gRPC → ProbeTimeout', socket: 'silent.sock', reason: 'ProbeTimeout' },
  ])('$name, even while the kubelet still counts the devices', async ({ socket, reason }) => {
    const result = await devicePluginProbe(
      { kind: 'devicePlugin', resource: GPU, minHealthy: 1, socket: join(dir, socket) },
      testContext({ node: twoHealthy, timeoutMs: reason === 'ProbeTimeout' ? SHORT_TIMEOUT_MS : undefined }),
    );
    expect(result).toMatchObject({ outcome: 'Unhealthy', reason });
  });
});
