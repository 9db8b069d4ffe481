// What the agent keeps of the objects it watches (agent/watches.ts), stripped on ingest to what its probes
// read: its Node's facts, a pod's readiness and labels, a ResourceSlice's devices, bounded.

import { EXTENSION_ANNOTATION_PREFIX } from '../api/index.ts';
import type { NodeFacts, PodFacts, SliceFacts } from './probes/index.ts';

export interface NodeSnapshot extends NodeFacts {
  name: string;
  uid: string;
  resourceVersion: string;
  labels: Record<string, string>;
  /** Only the `extensions.nodecare.io/` annotations. */
  annotations: Record<string, string>;
  /** InternalIP and ExternalIP addresses (targets annotation probes may reach). */
  addresses: string[];
  bootId: string;
}

export interface RawNode {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  status?: {
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    conditions?: Array<{ type: string; status: string; reason?: string }>;
    addresses?: Array<{ type: string; address: string }>;
    nodeInfo?: { bootID?: string };
  };
}

export function toNodeSnapshot(raw: RawNode): NodeSnapshot {
  const annotations: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw.metadata?.annotations ?? {})) {
    if (key.startsWith(EXTENSION_ANNOTATION_PREFIX)) annotations[key] = value;
  }
  return {
    name: raw.metadata?.name ?? '',
    uid: raw.metadata?.uid ?? '',
    resourceVersion: raw.metadata?.resourceVersion ?? '',
    labels: raw.metadata?.labels ?? {},
    annotations,
    addresses: (raw.status?.addresses ?? [])
      .filter((a) => a.type === 'InternalIP' || a.type === 'ExternalIP')
      .map((a) => a.address),
    capacity: raw.status?.capacity ?? {},
    allocatable: raw.status?.allocatable ?? {},
    conditions: (raw.status?.conditions ?? []).map(({ type, status, reason }) => ({ type, status, reason })),
    bootId: raw.status?.nodeInfo?.bootID ?? '',
  };
}

export interface RawPod {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
  };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

export interface PodEntry extends PodFacts {
  namespace: string;
  labels: Record<string, string>;
}

export function toPodEntry(raw: RawPod): PodEntry {
  return {
    name: raw.metadata?.name ?? '',
    namespace: raw.metadata?.namespace ?? '',
    labels: raw.metadata?.labels ?? {},
    ready:
      !raw.metadata?.deletionTimestamp &&
      (raw.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
  };
}

/** The most devices one slice may list (the API's own limit) and attributes kept per device. */
const MAX_SLICE_DEVICES = 128;
const MAX_DEVICE_ATTRIBUTES = 32;

export interface RawSlice {
  metadata?: { name?: string };
  spec?: {
    driver?: string;
    pool?: { name?: string; generation?: number; resourceSliceCount?: number };
    devices?: Array<{
      name?: string;
      attributes?: Record<string, { string?: string; int?: number; bool?: boolean; version?: string }>;
    }>;
  };
}

/** A ResourceSlice as the probe reads it: bounded, every attribute value as text. */
export function toSliceFacts(raw: RawSlice): SliceFacts {
  const spec = raw.spec ?? {};
  return {
    driver: spec.driver ?? '',
    pool: spec.pool?.name ?? '',
    generation: spec.pool?.generation ?? 0,
    sliceCount: spec.pool?.resourceSliceCount ?? 1,
    devices: (spec.devices ?? []).slice(0, MAX_SLICE_DEVICES).map((d) => ({
      name: d.name ?? '',
      attributes: Object.fromEntries(
        Object.entries(d.attributes ?? {})
          .slice(0, MAX_DEVICE_ATTRIBUTES)
          .map(([key, a]) => [key, String(a.string ?? a.int ?? a.bool ?? a.version ?? '')]),
      ),
    })),
  };
}
