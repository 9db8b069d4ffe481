// csi probe (docs/design.md section 3): csi.v1.Identity/Probe over the driver's unix socket says ready. An absent `ready`
// field means ready, as the CSI spec says; an explicit false is NotReady.

import { ProbeReason } from '../../api/reasons.ts';
import { callUnary } from './grpc-call.ts';
import { method, PROTO_FILES } from './proto.ts';
import { healthy, unhealthy } from './result.ts';
import type { Probe } from './types.ts';

interface ProbeResponse {
  /** google.protobuf.BoolValue; null when absent (the loader decodes with defaults). */
  ready?: { value?: boolean } | null;
}

export const csiProbe: Probe<'csi'> = async (spec, ctx) => {
  const probe = method(PROTO_FILES.csi, 'csi.v1.Identity', 'Probe');
  const answer = await callUnary(
    { address: `unix://${spec.socket}`, confineTo: spec.confineTo },
    probe,
    {},
    ctx,
  );
  if (!answer.ok) return answer.result;
  const { ready } = answer.value as ProbeResponse;
  if (ready == null) return healthy('CSI driver ready (ready field absent)');
  return ready.value === true
    ? healthy('CSI driver ready')
    : unhealthy(ProbeReason.NotReady, 'CSI driver reports ready=false');
};
