// The probe table and the one entry point the agent calls. `satisfies` makes a new ProbeKind fail to
// compile until its probe is registered here (docs/conventions.md 8). runProbe is where the two promises every probe
// makes are enforced for all of them: no exception escapes, and the result arrives by the deadline.

import type { KubeletPods } from './kubelet-pods.ts';
import { setFlagsFromString } from 'node:v8';
import type { ProbeKind, ProbeSpec } from '../../api/probe-spec.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { timeoutSignal } from '../../lib/clock.ts';
import { describeError, timedOut, unknown } from './result.ts';
import type { Probe, ProbeContext, ProbeResult } from './types.ts';

// Body and content regexes come from registrations, and V8's regex engine backtracks: a pattern such as
// ^(a+)+$ against 64 KiB would run for longer than the universe, synchronously, so no deadline could stop it
// and the whole agent (heartbeat included) would freeze. With this flag V8 re-runs a regex that backtracks
// excessively on its linear-time engine (same result). Patterns that engine cannot run (backreferences,
// lookarounds) get no such rescue; docs/adr/0003-probe-implementation-choices.md.
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

/**
 * Probe modules load on first use: a node pays for gRPC (grpc-js, protobufjs) or systeminformation only when
 * one of its extensions uses a probe kind that needs them (agent memory goal, docs/design.md P6).
 */
export const PROBES = {
  http: () => import('./http.ts').then((m) => m.httpProbe),
  tcp: () => import('./tcp.ts').then((m) => m.tcpProbe),
  grpc: () => import('./grpc.ts').then((m) => m.grpcProbe),
  csi: () => import('./csi.ts').then((m) => m.csiProbe),
  devicePlugin: () => import('./devicePlugin.ts').then((m) => m.devicePluginProbe),
  resourceSlices: () => import('./resourceSlices.ts').then((m) => m.resourceSlicesProbe),
  nodeResource: () => import('./nodeResource.ts').then((m) => m.nodeResourceProbe),
  nodeCondition: () => import('./nodeCondition.ts').then((m) => m.nodeConditionProbe),
  podReady: () => import('./podReady.ts').then((m) => m.podReadyProbe),
  exec: () => import('./exec.ts').then((m) => m.execProbe),
  file: () => import('./file.ts').then((m) => m.fileProbe),
  process: () => import('./process.ts').then((m) => m.processProbe),
  host: () => import('./host.ts').then((m) => m.hostProbe),
} satisfies { [K in ProbeKind]: () => Promise<Probe<K>> };

/** The kubelet's Pods API client (kubelet-pods.ts), loaded on first use like the probes. */
export const loadKubeletPods = (): Promise<typeof KubeletPods> =>
  import('./kubelet-pods.ts').then((m) => m.KubeletPods);
export type { KubeletPod, KubeletPods, KubeletPodsOptions } from './kubelet-pods.ts';

/**
 * Runs the probe for `spec`. Never rejects. The probe sees a signal that aborts at ctx.signal or after
 * ctx.timeoutMs, whichever comes first. A probe that honours it answers at once (exec's own answer to a
 * timeout is Unknown, so it is given one turn of the event loop to say so); a probe that does not is cut
 * off with ProbeTimeout, and whatever it returns later is dropped.
 */
export async function runProbe(spec: ProbeSpec, ctx: ProbeContext): Promise<ProbeResult> {
  if (ctx.signal.aborted) return timedOut(ctx);
  const signal = AbortSignal.any([ctx.signal, timeoutSignal(ctx.timeoutMs)]);
  const load = PROBES[spec.kind] as () => Promise<Probe>; // The table pairs each kind with its probe; TS cannot correlate them.
  const attempt = (async () => (await load())(spec, { ...ctx, signal }))().catch((err: unknown) =>
    unknown(ProbeReason.ProbeError, `probe failed: ${describeError(err)}`),
  );
  let onAbort = (): void => {};
  const deadline = new Promise<ProbeResult>((resolve) => {
    onAbort = () => setImmediate(() => resolve(timedOut(ctx)));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([attempt, deadline]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

// The probes' types and results, for the agent around them (the probe modules themselves load lazily above).
export { describeError, unknown } from './result.ts';
export type {
  NodeFacts,
  PodFacts,
  ProbeContext,
  ProbeEnvironment,
  ProbeOutcome,
  ProbeResult,
  SliceFacts,
} from './types.ts';
