// One result shape for every probe kind (docs/conventions.md 8). A probe never throws: transport failures are
// Unhealthy, "could not determine" is Unknown, and every probe honours the abort signal as its deadline.

import type { ProbeKind, ProbeOf } from '../../api/probe-spec.ts';
import type { ProbeReason } from '../../api/reasons.ts';
import type { LabelSelector } from '../../api/selector.ts';

export type ProbeOutcome = 'Healthy' | 'Unhealthy' | 'Unknown';

export interface ProbeResult {
  outcome: ProbeOutcome;
  reason: ProbeReason;
  /** Short and human; never carries response bodies or file contents. */
  message: string;
}

/** The fields of the agent's own Node that the nodeResource, devicePlugin and nodeCondition probes read. */
export interface NodeFacts {
  /** What the kubelet counts of each resource: a device plugin's devices, Healthy or not. */
  capacity: Readonly<Record<string, string>>;
  /** What may be given to pods: a device plugin's Healthy devices only. */
  allocatable: Readonly<Record<string, string>>;
  conditions: ReadonlyArray<{ type: string; status: string; reason?: string }>;
}

/** A pod on this node as the podReady probe sees it. */
export interface PodFacts {
  name: string;
  ready: boolean;
}

/** A ResourceSlice (resource.k8s.io/v1) published for this node, as the resourceSlices probe reads it. */
export interface SliceFacts {
  driver: string;
  pool: string;
  generation: number;
  /** How many slices the pool's generation has (spec.pool.resourceSliceCount). */
  sliceCount: number;
  /** Each device with its attributes as text (strings, integers, booleans and versions alike). */
  devices: Array<{ name: string; attributes: Readonly<Record<string, string>> }>;
}

/** Narrow ports to what the agent already watches; probes never call the API server themselves. */
export interface ProbeEnvironment {
  /** The agent's Node as last observed, or undefined before the first observation. */
  node(): NodeFacts | undefined;
  /** Pods on this node in `namespace` matching the selector, from the agent's pod cache. */
  pods(namespace: string, selector: LabelSelector): Promise<PodFacts[]>;
  /** The ResourceSlices published for this node, from the agent's slice cache (rejects until it is synced). */
  resourceSlices(): Promise<SliceFacts[]>;
}

export interface ProbeContext {
  /** Aborts at the probe's deadline (timeoutSeconds) or when the agent stops. */
  signal: AbortSignal;
  timeoutMs: number;
  /** Milliseconds since the epoch, from the agent's Clock (file ages are measured against it). */
  now(): number;
  env: ProbeEnvironment;
}

export type Probe<K extends ProbeKind = ProbeKind> = (
  spec: ProbeOf<K>,
  ctx: ProbeContext,
) => Promise<ProbeResult>;
