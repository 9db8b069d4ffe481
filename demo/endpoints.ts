// Real local extension endpoints for the demo's GPU node, each started and stopped in this process:
// kube-proxy's HTTP health endpoint on a loopback port, a GPU device plugin on a unix socket (the kubelet's
// device plugin API: GetDevicePluginOptions, and ListAndWatch for the kubelet's part the demo plays,
// kubelet.ts) whose GPUs turn healthy some seconds after it starts, and a logging agent that touches a
// heartbeat file every second. The agent probes them exactly as it would on a real node.

import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  Server as GrpcServer,
  ServerUnaryCall,
  ServerWritableStream,
  sendUnaryData,
} from '@grpc/grpc-js';
import { PROTO_FILES, service } from '../agent/probes/proto.ts';
import { serveGrpc } from '../agent/probes/testing.ts';

/**
 * How long a starting extension may fail without counting as failed (Progressing, no ✗, no Warning event):
 * longer than the demo's extensions take to come up on a new node, short enough for the failure later.
 */
export const STARTUP_GRACE_SECONDS = 15;
/** A GPU device plugin takes longer (drivers load first): its grace is longer. */
export const GPU_STARTUP_GRACE_SECONDS = 90;

/** Fast probing, so the demo moves in seconds: probe every second, two failures in a row count. */
const TIMING = {
  periodSeconds: 1,
  timeoutSeconds: 1,
  failureThreshold: 2,
  startupGraceSeconds: STARTUP_GRACE_SECONDS,
};

export interface Endpoint {
  /** The extension name (the node annotation `extensions.nodecare.io/<name>`). */
  name: string;
  /** What the agent probes, in words. */
  description: string;
  /** The extension spec (a SystemExtension's spec without its nodeSelector). */
  spec: Record<string, unknown>;
  running: boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** kube-proxy's /healthz on a loopback port; stopped, the port refuses connections. */
export async function httpEndpoint(name: string): Promise<Endpoint> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/healthz`;
  let server: HttpServer | undefined;
  const endpoint: Endpoint = {
    name,
    description: `serving ${url}`,
    spec: { probe: { http: { url } }, ...TIMING },
    running: false,
    async start() {
      if (server) return;
      const created = createHttpServer((_req, res) => res.end('ok'));
      await new Promise<void>((resolve, reject) => {
        created.once('error', reject);
        created.listen(port, '127.0.0.1', () => resolve());
      });
      server = created;
      endpoint.running = true;
    },
    async stop() {
      const current = server;
      if (!current) return;
      server = undefined;
      endpoint.running = false;
      await new Promise<void>((resolve) => {
        current.close(() => resolve());
        current.closeAllConnections();
      });
    },
  };
  return endpoint;
}

/** The extended resource the demo's device plugin registers, and the workload asks for. */
export const GPU_RESOURCE = 'nvidia.com/gpu';
/** As many GPUs as the GPU instance type offers (`nvidia.com/gpu: 1`, test/autoscalers/karpenter.ts). */
export const GPU_DEVICES = 1;

/** A device as ListAndWatch lists it. */
export interface PluginDevice {
  ID: string;
  health: 'Healthy' | 'Unhealthy';
}

export interface DevicePluginEndpoint extends Endpoint {
  /** The plugin's unix socket. */
  socket: string;
  /** The extended resource its devices are counted under. */
  resource: string;
  /**
   * Sets the GPUs' health (Unhealthy at first, as while the driver loads) and sends the new list on every open
   * ListAndWatch stream, as a plugin does.
   */
  setDevicesHealthy(healthy: boolean): void;
}

/**
 * A device plugin for `devices` GPUs on a unix socket in `dir`, registered as the `devicePlugin` probe wants
 * it: the agent counts the GPUs from the node's status, as the kubelet writes it (here the demo's kubelet,
 * kubelet.ts, which holds the ListAndWatch stream), and calls GetDevicePluginOptions on the socket. The GPUs
 * are Unhealthy until `setDevicesHealthy(true)`.
 */
export function devicePluginEndpoint(name: string, dir: string, devices = GPU_DEVICES): DevicePluginEndpoint {
  const socket = join(dir, `${name}.sock`);
  let server: GrpcServer | undefined;
  let healthy = false;
  const streams = new Set<ServerWritableStream<object, object>>();
  const list = (): { devices: PluginDevice[] } => ({
    devices: Array.from({ length: devices }, (_, i) => ({
      ID: `gpu-${i}`,
      health: healthy ? 'Healthy' : 'Unhealthy',
    })),
  });
  const endpoint: DevicePluginEndpoint = {
    name,
    socket,
    resource: GPU_RESOURCE,
    description: `device plugin for ${devices} ${GPU_RESOURCE} on ${socket}`,
    spec: {
      probe: { devicePlugin: { resource: GPU_RESOURCE, minHealthy: 1, socket } },
      ...TIMING,
      startupGraceSeconds: GPU_STARTUP_GRACE_SECONDS,
    },
    running: false,
    setDevicesHealthy(value) {
      healthy = value;
      for (const call of streams) call.write(list());
    },
    async start() {
      if (server) return;
      await rm(socket, { force: true });
      // Unary and stateless: the agent's liveness check.
      const options = (_call: ServerUnaryCall<object, object>, done: sendUnaryData<object>): void =>
        done(null, { pre_start_required: false, get_preferred_allocation_available: false });
      // Like a real plugin: send the devices, then again on every change, until the caller goes.
      const listAndWatch = (call: ServerWritableStream<object, object>): void => {
        streams.add(call);
        call.on('cancelled', () => streams.delete(call));
        call.write(list());
      };
      server = (
        await serveGrpc(`unix://${socket}`, (s) =>
          s.addService(service(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin'), {
            GetDevicePluginOptions: options,
            ListAndWatch: listAndWatch,
          }),
        )
      ).server;
      endpoint.running = true;
    },
    async stop() {
      const current = server;
      if (!current) return;
      server = undefined;
      endpoint.running = false;
      streams.clear();
      current.forceShutdown();
      await rm(socket, { force: true });
    },
  };
  return endpoint;
}

/** A logging agent that writes a heartbeat file every second; the probe wants it at most 3 s old. */
export function heartbeatFileEndpoint(name: string, dir: string): Endpoint {
  const path = join(dir, `${name}.heartbeat`);
  let timer: NodeJS.Timeout | undefined;
  const touch = (): Promise<void> => writeFile(path, `${new Date().toISOString()}\n`);
  const endpoint: Endpoint = {
    name,
    description: `touches ${path} every second`,
    spec: { probe: { file: { path, maxAgeSeconds: 3 } }, ...TIMING },
    running: false,
    async start() {
      if (timer) return;
      await touch();
      timer = setInterval(() => void touch().catch(() => undefined), 1000);
      endpoint.running = true;
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      endpoint.running = false;
    },
  };
  return endpoint;
}
