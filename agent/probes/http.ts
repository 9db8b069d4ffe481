// http probe (docs/design.md section 3): GET, status in expectStatus, optional body regex on at most the first 64 KiB.
// Redirects are never followed (node:http does not follow them). Each probe opens its own connection without
// keep-alive (agent: false, as the kubelet's HTTP probes do), so TLS options apply to that probe only. The body
// never appears in a message: only "matched" / "did not match". node:http rather than undici keeps ~25 MiB
// off the agent (docs/adr/0006).

import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ProbeReason } from '../../api/reasons.ts';
import type { StatusRange } from '../../api/probe-spec.ts';
import { readHead } from './read-head.ts';
import { describeError, errorCode, fileError, healthy, timedOut, unhealthy } from './result.ts';
import type { Probe, ProbeResult } from './types.ts';
import { capInput } from '../../api/text.ts';

// Not an ES import of node:http: that evaluates its lazy WebSocket exports, ~12 MiB (lib/health.ts).
const { request: httpRequest } = process.getBuiltinModule('node:http');

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
  let response: IncomingMessage | undefined;
  try {
    response = await get(url, { ca, rejectUnauthorized: !spec.insecureSkipVerify }, ctx.signal);
    const code = response.statusCode ?? 0;
    const status = `HTTP ${code}`;
    const statusResult = judgeStatus(code, spec.expectStatus, status);
    if (spec.bodyRegex === undefined || statusResult.outcome !== 'Healthy') return statusResult;
    const body = await readBody(response, MAX_BODY_BYTES);
    return new RegExp(spec.bodyRegex).test(body)
      ? healthy(`${status}, body matched`)
      : unhealthy(ProbeReason.BodyMismatch, `${status}, body did not match`);
  } catch (err) {
    if (ctx.signal.aborted) return timedOut(ctx);
    return transportError(err, capInput(url.host));
  } finally {
    if (response) discard(response);
  }
};

/** One GET on a connection of its own; resolves with the response head. */
function get(
  url: URL,
  tls: { ca: Buffer | undefined; rejectUnauthorized: boolean },
  signal: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const options = {
      method: 'GET',
      agent: false as const,
      signal,
      headers: { 'user-agent': 'nodecare-agent', accept: '*/*' },
    };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { ...options, ca: tls.ca, rejectUnauthorized: tls.rejectUnauthorized }, resolve)
        : httpRequest(url, options, resolve);
    req.on('error', reject);
    req.end();
  });
}

function judgeStatus(code: number, expect: readonly StatusRange[], status: string): ProbeResult {
  if (expect.some(([low, high]) => code >= low && code <= high)) return healthy(status);
  const want = expect.map(([low, high]) => (low === high ? `${low}` : `${low}-${high}`)).join(',');
  return unhealthy(ProbeReason.BadStatus, `${status}, want ${want}`);
}

/** Drops the rest of a response and its connection (a body error after this is expected, not reported). */
function discard(body: IncomingMessage): void {
  body.on('error', () => {});
  body.destroy();
}

/** Reads at most `maxBytes` of the body, then stops (the caller drops the rest and the connection). */
async function readBody(body: IncomingMessage, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk.subarray(0, maxBytes - length));
    length += Math.min(chunk.length, maxBytes - length);
    if (length >= maxBytes) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}

function transportError(err: unknown, host: string): ProbeResult {
  const code = errorCode(err);
  if (code === 'ECONNREFUSED')
    return unhealthy(ProbeReason.ConnectionRefused, `connection refused (${host})`);
  return unhealthy(ProbeReason.ConnectionFailed, `request to ${host} failed: ${describeError(err)}`);
}
