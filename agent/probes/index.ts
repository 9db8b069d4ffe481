// The probe table and the one entry point the agent calls. `satisfies` makes a new ProbeKind fail to
// compile until its probe is registered here (STYLE.md 8). runProbe is where the two promises every probe
// makes are enforced for all of them: no exception escapes, and the result arrives by the deadline.

import { setFlagsFromString } from 'node:v8';
import type { ProbeKind, ProbeSpec } from '../../api/extension.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { csiProbe } from './csi.ts';
import { devicePluginProbe } from './devicePlugin.ts';
import { execProbe } from './exec.ts';
import { fileProbe } from './file.ts';
import { grpcProbe } from './grpc.ts';
import { hostProbe } from './host.ts';
import { httpProbe } from './http.ts';
import { nodeConditionProbe } from './nodeCondition.ts';
import { nodeResourceProbe } from './nodeResource.ts';
import { podReadyProbe } from './podReady.ts';
import { processProbe } from './process.ts';
import { describeError, timedOut, unknown } from './result.ts';
import { tcpProbe } from './tcp.ts';
import type { Probe, ProbeContext, ProbeResult } from './types.ts';

// Body and content regexes come from registrations, and V8's regex engine backtracks: a pattern such as
// ^(a+)+$ against 64 KiB would run for longer than the universe, synchronously, so no deadline could stop it
// and the whole agent (heartbeat included) would freeze. With this flag V8 re-runs a regex that backtracks
// excessively on its linear-time engine (same result). Patterns that engine cannot run (backreferences,
// lookarounds) get no such rescue; docs/adr/0003-probe-implementation-choices.md.
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

export const PROBES = {
  http: httpProbe,
  tcp: tcpProbe,
  grpc: grpcProbe,
  csi: csiProbe,
  devicePlugin: devicePluginProbe,
  nodeResource: nodeResourceProbe,
  nodeCondition: nodeConditionProbe,
  podReady: podReadyProbe,
  exec: execProbe,
  file: fileProbe,
  process: processProbe,
  host: hostProbe,
} satisfies { [K in ProbeKind]: Probe<K> };

/**
 * Runs the probe for `spec`. Never rejects. The probe sees a signal that aborts at ctx.signal or after
 * ctx.timeoutMs, whichever comes first. A probe that honours it answers at once (exec's own answer to a
 * timeout is Unknown, so it is given one turn of the event loop to say so); a probe that does not is cut
 * off with ProbeTimeout, and whatever it returns later is dropped.
 */
export async function runProbe(spec: ProbeSpec, ctx: ProbeContext): Promise<ProbeResult> {
  if (ctx.signal.aborted) return timedOut(ctx);
  const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(ctx.timeoutMs)]);
  const probe = PROBES[spec.kind] as Probe; // The table pairs each kind with its probe; TS cannot correlate them.
  const attempt = (async () => probe(spec, { ...ctx, signal }))().catch((err: unknown) =>
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
