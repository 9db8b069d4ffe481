// http probe (docs/design.md section 3): GET, status in expectStatus, optional body regex on at most the first 64 KiB.
// Redirects are never followed (undici's request does not follow them). Each probe uses its own Agent and
// destroys it afterwards, so every probe opens a fresh connection (as the kubelet's HTTP probes do) and TLS
// options apply to that probe only. The body never appears in a message: only "matched" / "did not match".

import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { ProbeReason } from '../../api/reasons.ts';
import type { StatusRange } from '../../api/extension.ts';
import { readHead } from './read-head.ts';
import { describeError, errorCode, fileError, healthy, timedOut, unhealthy } from './result.ts';
import type { Probe, ProbeResult } from './types.ts';
import { capInput } from '../../api/text.ts';

export const MAX_BODY_BYTES = 64 * 1024;
const MAX_CA_FILE_BYTES = 1024 * 1024;

export const httpProbe: Probe<'http'> = async (spec, ctx) => {
  const url = new URL(spec.url);
  let ca: Buffer | undefined;
  if (spec.caFile !== undefined) {
    try {
      ca = await readHead(spec.caFile, MAX_CA_FILE_BYTES);
    } catch (err) {
      return fileError(`reading caFile ${capInput(spec.caFile)}`, err);
    }
  }
  const dispatcher = new Agent({
    connect: { ca, rejectUnauthorized: !spec.insecureSkipVerify },
  });
  try {
    const response = await request(url, {
      method: 'GET',
      dispatcher,
      signal: ctx.signal,
      headers: { 'user-agent': 'nodecare-agent', accept: '*/*' },
    });
    const status = `HTTP ${response.statusCode}`;
    const statusResult = judgeStatus(response.statusCode, spec.expectStatus, status);
    if (spec.bodyRegex === undefined || statusResult.outcome !== 'Healthy') {
      discard(response.body);
      return statusResult;
    }
    const body = await readBody(response.body, MAX_BODY_BYTES);
    return new RegExp(spec.bodyRegex).test(body)
      ? healthy(`${status}, body matched`)
      : unhealthy(ProbeReason.BodyMismatch, `${status}, body did not match`);
  } catch (err) {
    if (ctx.signal.aborted) return timedOut(ctx);
    return transportError(err, capInput(url.host));
  } finally {
    await dispatcher.destroy();
  }
};

function judgeStatus(code: number, expect: readonly StatusRange[], status: string): ProbeResult {
  if (expect.some(([low, high]) => code >= low && code <= high)) return healthy(status);
  const want = expect.map(([low, high]) => (low === high ? `${low}` : `${low}-${high}`)).join(',');
  return unhealthy(ProbeReason.BadStatus, `${status}, want ${want}`);
}

type Body = Readable & AsyncIterable<Buffer>;

/** Drops an unread body; undici reports that as an aborted request, which is expected here. */
function discard(body: Body): void {
  body.on('error', () => {});
  body.destroy();
}

/** Reads at most `maxBytes` of the body, then drops the rest (and with it the connection). */
async function readBody(body: Body, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk.subarray(0, maxBytes - length));
      length += Math.min(chunk.length, maxBytes - length);
      if (length >= maxBytes) break;
    }
  } finally {
    discard(body);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function transportError(err: unknown, host: string): ProbeResult {
  const code = errorCode(err);
  if (code === 'ECONNREFUSED')
    return unhealthy(ProbeReason.ConnectionRefused, `connection refused (${host})`);
  return unhealthy(ProbeReason.ConnectionFailed, `request to ${host} failed: ${describeError(err)}`);
}
