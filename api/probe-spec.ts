// The probe kinds' spec types: one interface per kind, the ProbeSpec union the agent probes with, and the
// path confinement an annotation's probe carries. What each kind means and how it is parsed is the table in
// probe-kinds.ts.

import type { LabelSelector } from './selector.ts';

/** Inclusive status code range, e.g. [200, 399]. */
export type StatusRange = readonly [number, number];

export interface HttpProbe {
  kind: 'http';
  url: string;
  expectStatus: readonly StatusRange[];
  bodyRegex?: string;
  caFile?: string;
  insecureSkipVerify: boolean;
}
export interface TcpProbe {
  kind: 'tcp';
  host: string;
  port: number;
}
/**
 * Probes that reach a path carry the directories it must stay in once resolved, when their registration came
 * from a node annotation (set by resolveRegistrations, never read from input). The agent resolves the path when
 * it probes (symlinks can change after registration) and refuses one that leads elsewhere.
 */
export interface PathConfinement {
  confineTo?: readonly string[];
}

/** `address` is `host:port` or `unix:///absolute/path`. */
export interface GrpcProbe extends PathConfinement {
  kind: 'grpc';
  address: string;
  service: string;
}
export interface CsiProbe extends PathConfinement {
  kind: 'csi';
  socket: string;
}
/**
 * A device plugin's devices as the kubelet sees them: the node's `status.allocatable[resource]` counts the
 * plugin's Healthy devices, `status.capacity[resource]` all of them. The plugin itself is asked nothing but,
 * when `socket` is set, the unary `GetDevicePluginOptions` (liveness): never `ListAndWatch`, whose one stream
 * belongs to the kubelet (docs/extensions.md, "Probes never change what they watch").
 */
export interface DevicePluginProbe extends PathConfinement {
  kind: 'devicePlugin';
  /** The extended resource the plugin registers with the kubelet, such as `nvidia.com/gpu`. */
  resource: string;
  minHealthy: number;
  /** The plugin's socket; when set, a refused or silent `GetDevicePluginOptions` is Unhealthy at once. */
  socket?: string;
}

/** A DRA driver's devices on this node, as its published ResourceSlices (resource.k8s.io/v1) list them. */
export interface ResourceSlicesProbe {
  kind: 'resourceSlices';
  /** The driver (ResourceSlice spec.driver), a DNS subdomain such as gpu.example.com. */
  driver: string;
  /** Only this pool (spec.pool.name); every pool of the driver on this node when absent. */
  pool?: string;
  /** Healthy with at least this many devices. */
  minDevices: number;
  /** Only devices whose attribute `name` has this value (compared as text). */
  attribute?: { name: string; value: string };
}
export interface NodeResourceProbe {
  kind: 'nodeResource';
  resource: string;
  min: number;
}
export interface NodeConditionProbe {
  kind: 'nodeCondition';
  type: string;
  status: 'True' | 'False' | 'Unknown';
}
export interface PodReadyProbe {
  kind: 'podReady';
  namespace: string;
  selector: LabelSelector;
  min: number;
}
export interface ExecProbe {
  kind: 'exec';
  command: readonly string[];
}
export interface FileProbe extends PathConfinement {
  kind: 'file';
  path: string;
  maxAgeSeconds?: number;
  contentRegex?: string;
}
export interface ProcessProbe {
  kind: 'process';
  name: string;
  min: number;
}
export interface HostProbe {
  kind: 'host';
  diskFreePercent?: { mount: string; min: number };
  memoryAvailableMiB?: { min: number };
  gpu?: { vendor?: string; min: number };
  interfaceUp?: { name: string };
}

export type ProbeSpec =
  | HttpProbe
  | TcpProbe
  | GrpcProbe
  | CsiProbe
  | DevicePluginProbe
  | ResourceSlicesProbe
  | NodeResourceProbe
  | NodeConditionProbe
  | PodReadyProbe
  | ExecProbe
  | FileProbe
  | ProcessProbe
  | HostProbe;

export type ProbeOf<K extends ProbeKind> = Extract<ProbeSpec, { kind: K }>;

export type ProbeKind = ProbeSpec['kind'];
