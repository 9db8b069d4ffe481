// tcp probe (docs/design.md section 3): healthy when a connection opens; it is closed at once without sending anything.

import { connect } from 'node:net';
import { ProbeReason } from '../../api/reasons.ts';
import { describeError, errorCode, healthy, timedOut, unhealthy } from './result.ts';
import type { Probe, ProbeResult } from './types.ts';
import { capInput } from '../../api/text.ts';

export const tcpProbe: Probe<'tcp'> = (spec, ctx) =>
  new Promise<ProbeResult>((resolve) => {
    const host = capInput(spec.host);
    const target = spec.host.includes(':') ? `[${host}]:${spec.port}` : `${host}:${spec.port}`;
    if (ctx.signal.aborted) return resolve(timedOut(ctx));
    const socket = connect({ host: spec.host, port: spec.port });
    const finish = (result: ProbeResult): void => {
      ctx.signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(result);
    };
    const onAbort = (): void => finish(timedOut(ctx));
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => finish(healthy(`connected to ${target}`)));
    socket.on('error', (err) =>
      finish(
        errorCode(err) === 'ECONNREFUSED'
          ? unhealthy(ProbeReason.ConnectionRefused, `connection refused (${target})`)
          : unhealthy(ProbeReason.ConnectionFailed, `connecting to ${target} failed: ${describeError(err)}`),
      ),
    );
  });
