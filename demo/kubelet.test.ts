// The demo's GPU device plugin (endpoints.ts) and the kubelet's part it plays for it (kubelet.ts), on a real
// unix socket: the counts the kubelet's device manager writes to the Node, and what the agent's devicePlugin
// probe makes of the demo's registration with those counts.

import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { parseExtensionSpec } from '../api/extension.ts';
import { devicePluginProbe } from '../agent/probes/devicePlugin.ts';
import { tempDir, testContext } from '../agent/probes/testing.ts';
import { devicePluginEndpoint, GPU_RESOURCE, type DevicePluginEndpoint } from './endpoints.ts';
import { DeviceManager, type DeviceCounts } from './kubelet.ts';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const undo of cleanup.splice(0).reverse()) await undo();
});

async function plugin(devices = 2): Promise<DevicePluginEndpoint> {
  const dir = await tempDir();
  const endpoint = devicePluginEndpoint('gpu-plugin', dir, devices);
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  cleanup.push(() => endpoint.stop());
  return endpoint;
}

/** A device manager whose writes land in `node` (and in `written`, in order); `failWrites` fail first. */
function kubelet(socket: string, failWrites = 0) {
  const written: DeviceCounts[] = [];
  const said: string[] = [];
  let node: DeviceCounts | undefined;
  let failing = failWrites;
  const manager = new DeviceManager({
    socket,
    retryMs: 50,
    write: async (counts) => {
      if (failing-- > 0) throw new Error('injected write failure');
      node = counts;
      written.push(counts);
    },
    say: (line) => said.push(line),
  });
  cleanup.push(() => manager.stop());
  return { manager, written, said, node: () => node };
}

async function until(what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("the demo's kubelet (device manager) and GPU device plugin", () => {
  it('zeroes the resource at start, then writes every device to capacity and the Healthy ones to allocatable', async () => {
    const gpu = await plugin(2);
    await gpu.start();
    const k = kubelet(gpu.socket);
    await k.manager.start();
    expect(k.written[0]).toEqual({ capacity: 0, allocatable: 0 });
    await until('2 devices, none Healthy', () => k.node()?.capacity === 2);
    expect(k.node()).toEqual({ capacity: 2, allocatable: 0 });

    gpu.setDevicesHealthy(true);
    await until('both allocatable', () => k.node()?.allocatable === 2);
    expect(k.node()).toEqual({ capacity: 2, allocatable: 2 });
  });

  it('a stopped plugin: its devices stay in capacity, none allocatable; started again, counted again', async () => {
    const gpu = await plugin(1);
    await gpu.start();
    gpu.setDevicesHealthy(true);
    const k = kubelet(gpu.socket);
    await k.manager.start();
    await until('1 allocatable', () => k.node()?.allocatable === 1);

    await gpu.stop();
    await until('none allocatable', () => k.node()?.allocatable === 0);
    expect(k.node()).toEqual({ capacity: 1, allocatable: 0 });

    await gpu.start();
    await until('1 allocatable again', () => k.node()?.allocatable === 1);
  });

  it('a plugin not up yet: zeroed, then counted once it serves', async () => {
    const gpu = await plugin(1);
    const k = kubelet(gpu.socket);
    await k.manager.start();
    expect(k.node()).toEqual({ capacity: 0, allocatable: 0 });
    await gpu.start();
    await until('1 device', () => k.node()?.capacity === 1);
  });

  it('a failed status write is tried again', async () => {
    const gpu = await plugin(1);
    await gpu.start();
    const k = kubelet(gpu.socket, 2);
    await k.manager.start();
    await until('1 device', () => k.node()?.capacity === 1);
    expect(k.said.filter((line) => line.includes('injected write failure'))).toHaveLength(2);
  });

  it("the demo's registration is valid, and the agent's probe reads the counts the kubelet wrote", async () => {
    const gpu = await plugin(1);
    const parsed = parseExtensionSpec(gpu.spec);
    if (!parsed.result.ok) throw new Error(parsed.result.problems.join('; '));
    const probe = parsed.result.value.probe;
    if (probe.kind !== 'devicePlugin') throw new Error(`a ${probe.kind} probe`);
    expect(probe).toMatchObject({ resource: GPU_RESOURCE, minHealthy: 1, socket: gpu.socket });
    const node = (capacity: number, allocatable: number) => ({
      capacity: { [GPU_RESOURCE]: String(capacity) },
      allocatable: { [GPU_RESOURCE]: String(allocatable) },
      conditions: [],
    });

    // Not serving: GetDevicePluginOptions fails, whatever the node says.
    expect((await devicePluginProbe(probe, testContext({ node: node(1, 1) }))).outcome).toBe('Unhealthy');
    await gpu.start();
    const loading = await devicePluginProbe(probe, testContext({ node: node(1, 0) }));
    expect([loading.outcome, loading.reason]).toEqual(['Unhealthy', 'TooFewDevices']);
    const healthy = await devicePluginProbe(probe, testContext({ node: node(1, 1) }));
    expect([healthy.outcome, healthy.message]).toEqual([
      'Healthy',
      `1 of 1 ${GPU_RESOURCE} devices Healthy (kubelet)`,
    ]);
  });
});
