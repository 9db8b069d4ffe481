import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpProbe } from '../../api/probe-spec.ts';
import { httpProbe, MAX_BODY_BYTES } from './http.ts';
import { selfSignedCert } from '../../lib/testing.ts';
import { tempDir, testContext } from './testing.ts';

const SECRET = 'secret-body-text-7f3a';
let redirectTargetHits = 0;

function route(req: IncomingMessage, res: ServerResponse): void {
  switch (req.url) {
    case '/ok':
      res.end(`status: green ${SECRET}`);
      return;
    case '/fail':
      res.statusCode = 500;
      res.end(SECRET);
      return;
    case '/redirect':
      res.writeHead(302, { location: '/target' }).end();
      return;
    case '/target':
      redirectTargetHits++;
      res.end('target');
      return;
    case '/late-needle':
      res.write('a'.repeat(MAX_BODY_BYTES));
      res.end('NEEDLE');
      return;
    case '/endless': {
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
      return;
    }
    case '/hang':
      return;
    default:
      res.statusCode = 404;
      res.end();
  }
}

async function listen(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  server.close();
  await once(server, 'close');
}

const spec = (url: string, fields: Partial<HttpProbe> = {}): HttpProbe => ({
  kind: 'http',
  url,
  expectStatus: [[200, 399]],
  insecureSkipVerify: false,
  ...fields,
});

describe('http probe', () => {
  const server = createServer(route);
  let base = '';
  let refusedPort = 0;

  beforeAll(async () => {
    base = `http://127.0.0.1:${await listen(server)}`;
    const closed = createServer();
    refusedPort = await listen(closed);
    await stop(closed);
  });
  afterAll(() => stop(server));

  it.each([
    { name: '200 → Healthy', path: '/ok', fields: {}, outcome: 'Healthy', reason: 'ProbeSucceeded' },
    { name: '500 → Unhealthy', path: '/fail', fields: {}, outcome: 'Unhealthy', reason: 'BadStatus' },
    {
      name: '500 listed in expectStatus → Healthy',
      path: '/fail',
      fields: { expectStatus: [[500, 500]] as const },
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'redirect is not followed, 302 within 200-399 → Healthy',
      path: '/redirect',
      fields: {},
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'redirect outside expectStatus → Unhealthy',
      path: '/redirect',
      fields: { expectStatus: [[200, 200]] as const },
      outcome: 'Unhealthy',
      reason: 'BadStatus',
    },
    {
      name: 'body regex matches → Healthy',
      path: '/ok',
      fields: { bodyRegex: '^status: green' },
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'body regex does not match → Unhealthy',
      path: '/ok',
      fields: { bodyRegex: '^status: red' },
      outcome: 'Unhealthy',
      reason: 'BodyMismatch',
    },
    {
      name: 'match beyond the 64 KiB read cap → Unhealthy',
      path: '/late-needle',
      fields: { bodyRegex: 'NEEDLE' },
      outcome: 'Unhealthy',
      reason: 'BodyMismatch',
    },
    {
      name: 'endless body with a regex → answers after the cap',
      path: '/endless',
      fields: { bodyRegex: '^x+$' },
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'bad status with a body regex → Unhealthy by status',
      path: '/fail',
      fields: { bodyRegex: SECRET },
      outcome: 'Unhealthy',
      reason: 'BadStatus',
    },
  ])('$name', async ({ path, fields, outcome, reason }) => {
    const result = await httpProbe(spec(`${base}${path}`, fields), testContext());
    expect(result).toMatchObject({ outcome, reason });
    expect(result.message).not.toContain(SECRET);
  });

  it('reports only "matched" / "did not match", never the body', async () => {
    const matched = await httpProbe(spec(`${base}/ok`, { bodyRegex: 'secret' }), testContext());
    const missed = await httpProbe(spec(`${base}/ok`, { bodyRegex: 'absent' }), testContext());
    expect(matched.message).toBe('HTTP 200, body matched');
    expect(missed.message).toBe('HTTP 200, body did not match');
  });

  it('never follows a redirect', async () => {
    redirectTargetHits = 0;
    const result = await httpProbe(spec(`${base}/redirect`), testContext());
    expect(result.message).toBe('HTTP 302');
    expect(redirectTargetHits).toBe(0);
  });

  it('refused connection → Unhealthy', async () => {
    const result = await httpProbe(spec(`http://127.0.0.1:${refusedPort}/`), testContext());
    expect(result).toMatchObject({ outcome: 'Unhealthy', reason: 'ConnectionRefused' });
  });

  it('server that never answers → ProbeTimeout', async () => {
    const result = await httpProbe(spec(`${base}/hang`), testContext({ timeoutMs: 500 }));
    expect(result).toMatchObject({ outcome: 'Unhealthy', reason: 'ProbeTimeout' });
  });
});

describe('https probe', () => {
  let dir = '';
  let base = '';
  let server: Server | undefined;

  beforeAll(async () => {
    dir = await tempDir();
    const { key, cert } = await selfSignedCert(dir);
    server = createHttpsServer({ key, cert }, route);
    base = `https://127.0.0.1:${await listen(server)}`;
  });
  afterAll(async () => {
    if (server) await stop(server);
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    {
      name: 'self-signed certificate without caFile → Unhealthy',
      caFile: undefined,
      insecureSkipVerify: false,
      outcome: 'Unhealthy',
      reason: 'ConnectionFailed',
    },
    {
      name: 'certificate trusted through caFile → Healthy',
      caFile: 'cert.pem',
      insecureSkipVerify: false,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'insecureSkipVerify → Healthy',
      caFile: undefined,
      insecureSkipVerify: true,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'missing caFile → Unknown',
      caFile: 'missing.pem',
      insecureSkipVerify: false,
      outcome: 'Unknown',
      reason: 'ProbeError',
    },
  ])('$name', async ({ caFile, insecureSkipVerify, outcome, reason }) => {
    const fields = { caFile: caFile && join(dir, caFile), insecureSkipVerify };
    const result = await httpProbe(spec(`${base}/ok`, fields), testContext());
    expect(result).toMatchObject({ outcome, reason });
    expect(result.message).not.toContain(SECRET);
  });
});
