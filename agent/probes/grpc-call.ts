// The gRPC plumbing shared by the grpc, csi and devicePlugin probes: unary calls only (a probe opens no
// stream, which a server keeps per client), one client per probe (its own subchannel pool, so closing it
// closes the connection), cancellation on the deadline, capped message size, and one classification of
// failures into results. A unix socket from a node annotation is resolved and
// confined to the allowed directories before each call (confine.ts); the call then dials the resolved path.

import { Client, credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { ProbeReason } from '../../api/reasons.ts';
import { capInput } from '../../api/text.ts';
import { describeError, timedOut, unhealthy, unknown } from './result.ts';
import { openableSocket } from './socket.ts';
import type { ProbeContext, ProbeResult } from './types.ts';

const MAX_MESSAGE_BYTES = 1024 * 1024;
const CLIENT_OPTIONS = {
  'grpc.use_local_subchannel_pool': 1,
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.enable_retries': 0,
};

export type CallOutcome = { ok: true; value: unknown } | { ok: false; result: ProbeResult };

/**
 * Where a call goes: a gRPC target (`host:port` or `unix:///path`), and for a unix socket registered by a node
 * annotation the directories it must resolve into.
 */
export interface CallTarget {
  address: string;
  confineTo?: readonly string[] | undefined;
}

/** Calls a unary method. */
export function callUnary(
  target: CallTarget,
  method: MethodDefinition<object, object>,
  request: object,
  ctx: ProbeContext,
): Promise<CallOutcome> {
  return withClient(target, ctx, (client, done) => {
    return new Promise((resolve, reject) => {
      const call = client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        new Metadata(),
        {},
        (err, value) => (err ? reject(err) : resolve(value)),
      );
      ctx.signal.addEventListener('abort', () => call.cancel(), { once: true, signal: done });
    });
  });
}

async function withClient(
  target: CallTarget,
  ctx: ProbeContext,
  call: (client: Client, done: AbortSignal) => Promise<unknown>,
): Promise<CallOutcome> {
  if (ctx.signal.aborted) return { ok: false, result: timedOut(ctx) };
  let dial = target.address;
  const address = capInput(target.address);
  if (dial.startsWith('unix://')) {
    const socket = await openableSocket(dial.slice('unix://'.length), target.confineTo);
    if (!socket.ok) return socket;
    dial = `unix://${socket.path}`;
  }
  const client = new Client(dial, credentials.createInsecure(), CLIENT_OPTIONS);
  const done = new AbortController();
  try {
    return { ok: true, value: await call(client, done.signal) };
  } catch (err) {
    return { ok: false, result: classify(err, address, ctx) };
  } finally {
    done.abort();
    client.close();
  }
}

function classify(err: unknown, address: string, ctx: ProbeContext): ProbeResult {
  if (ctx.signal.aborted) return timedOut(ctx);
  const { code, details } = err as Partial<ServiceError>;
  if (code === undefined) return unknown(ProbeReason.ProbeError, describeError(err));
  switch (code) {
    case status.UNAVAILABLE: {
      // The transport's own words (not the server's), e.g. "connect ECONNREFUSED 127.0.0.1:50051".
      const errno = /\bE[A-Z]{3,}\b/.exec((details ?? '').slice(0, 1024))?.[0];
      if (errno === 'EACCES' || errno === 'EPERM') {
        return unknown(ProbeReason.PermissionDenied, `${address}: ${errno}`);
      }
      if (errno === 'ECONNREFUSED')
        return unhealthy(ProbeReason.ConnectionRefused, `connection refused (${address})`);
      return unhealthy(ProbeReason.ConnectionFailed, `${address} unavailable${errno ? ` (${errno})` : ''}`);
    }
    case status.DEADLINE_EXCEEDED:
      return timedOut(ctx);
    case status.UNIMPLEMENTED:
    case status.NOT_FOUND:
      return unhealthy(ProbeReason.NotServing, `gRPC ${status[code]}`);
    default:
      // Server-supplied details are not echoed: only the status code leaves the node.
      return unhealthy(ProbeReason.BadStatus, `gRPC ${status[code] ?? code}`);
  }
}
