// grpc probe (docs/design.md section 3): grpc.health.v1.Health/Check answers SERVING, over host:port or unix:///path.

import { ProbeReason } from '../../api/reasons.ts';
import { callUnary } from './grpc-call.ts';
import { method, PROTO_FILES } from './proto.ts';
import { healthy, unhealthy } from './result.ts';
import type { Probe } from './types.ts';
import { quoteInput } from '../../api/text.ts';

export const grpcProbe: Probe<'grpc'> = async (spec, ctx) => {
  const check = method(PROTO_FILES.health, 'grpc.health.v1.Health', 'Check');
  const answer = await callUnary(spec, check, { service: spec.service }, ctx);
  if (!answer.ok) return answer.result;
  const servingStatus = String((answer.value as { status?: unknown }).status);
  const subject = spec.service ? `service ${quoteInput(spec.service)}` : 'server';
  return servingStatus === 'SERVING'
    ? healthy(`${subject} SERVING`)
    : unhealthy(ProbeReason.NotServing, `${subject} ${servingStatus}`);
};
