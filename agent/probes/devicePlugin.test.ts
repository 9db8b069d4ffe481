import { rm } from 'node:fs/promises';
import type { Server as NetServer } from 'node:net';
import { join } from 'node:path';
import type { Server, ServerWritableStream } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { devicePluginProbe } from './devicePlugin.ts';
import { PROTO_FILES, service } from './proto.ts';
import { serveGrpc, silentSocket, tempDir, testContext } from './testing.ts';

/** Deadline for the cases that must time out; every other case gets testContext's generous default. */
const SHORT_TIMEOUT_MS = 1500;

const device = (ID: string, health: 'Healthy' | 'Unhealthy') => ({ ID, health });

/**
 * What each plugin (a real gRPC server) streams from ListAndWatch. Like real plugins, they keep the stream
 * open after the first response unless `end` is set; `undefined` devices means never sending anything.
 */
const PLUGINS: Record<string, { devices?: object[]; end?: boolean }> = {
  'two-healthy.sock': { devices: [device('gpu-0', 'Healthy'), device('gpu-1', 'Healthy')] },
  'one-of-three.sock': {
    devices: [device('gpu-0', 'Healthy'), device('gpu-1', 'Unhealthy'), device('gpu-2', 'Unhealthy')],
  },
  'empty.sock': { devices: [] },
  'ends-at-once.sock': { end: true },
  'mute.sock': {},
};

describe('devicePlugin probe', () => {
  let dir = '';
  const servers: Server[] = [];
  let silent: NetServer | undefined;
  const openStreams = new Set<object>();

  beforeAll(async () => {
    dir = await tempDir();
    for (const [name, plugin] of Object.entries(PLUGINS)) {
      const listAndWatch = (call: ServerWritableStream<object, object>): void => {
        if (plugin.devices) call.write({ devices: plugin.devices });
        if (plugin.end) return void call.end();
        openStreams.add(call);
        call.on('cancelled', () => openStreams.delete(call));
      };
      const { server } = await serveGrpc(`unix://${join(dir, name)}`, (s) =>
        s.addService(service(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin'), {
          ListAndWatch: listAndWatch,
        }),
      );
      servers.push(server);
    }
    silent = await silentSocket(join(dir, 'silent.sock'));
  });
  afterAll(async () => {
    servers.forEach((server) => server.forceShutdown());
    silent?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    {
      name: '2 Healthy devices, minHealthy 1 → Healthy',
      socket: 'two-healthy.sock',
      min: 1,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: '2 Healthy devices, minHealthy 2 → Healthy',
      socket: 'two-healthy.sock',
      min: 2,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: '1 Healthy of 3, minHealthy 2 → Unhealthy',
      socket: 'one-of-three.sock',
      min: 2,
      outcome: 'Unhealthy',
      reason: 'TooFewDevices',
    },
    {
      name: 'no devices → Unhealthy',
      socket: 'empty.sock',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'TooFewDevices',
    },
    {
      name: 'stream ends without a response → Unhealthy',
      socket: 'ends-at-once.sock',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'TooFewDevices',
    },
    {
      name: 'missing socket → Unhealthy',
      socket: 'missing.sock',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ConnectionFailed',
    },
    {
      name: 'plugin that never sends → ProbeTimeout',
      socket: 'mute.sock',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ProbeTimeout',
    },
    {
      name: 'socket that never speaks gRPC → ProbeTimeout',
      socket: 'silent.sock',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ProbeTimeout',
    },
  ])('$name', async ({ socket, min, outcome, reason }) => {
    const result = await devicePluginProbe(
      { kind: 'devicePlugin', socket: join(dir, socket), minHealthy: min },
      testContext({ timeoutMs: reason === 'ProbeTimeout' ? SHORT_TIMEOUT_MS : undefined }),
    );
    expect(result).toMatchObject({ outcome, reason });
  });

  it('counts from the first response and cancels the stream', async () => {
    const result = await devicePluginProbe(
      { kind: 'devicePlugin', socket: join(dir, 'one-of-three.sock'), minHealthy: 1 },
      testContext(),
    );
    expect(result.message).toBe('1 of 3 devices Healthy');
    await vi.waitFor(() => expect(openStreams.size).toBe(0), { timeout: 5000 });
  });
});
