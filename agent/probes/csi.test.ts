import { rm } from 'node:fs/promises';
import type { Server as NetServer } from 'node:net';
import { join } from 'node:path';
import { status, type Server, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csiProbe } from './csi.ts';
import { PROTO_FILES, service } from './proto.ts';
import { serveGrpc, silentSocket, tempDir, testContext } from './testing.ts';

/** Deadline for the cases that must time out; every other case gets testContext's generous default. */
const SHORT_TIMEOUT_MS = 1500;

/** What each CSI driver (a real gRPC server on its own socket) answers to Identity/Probe. */
const ANSWERS: Record<string, { response?: object; error?: Partial<ServiceError> }> = {
  'ready.sock': { response: { ready: { value: true } } },
  'not-ready.sock': { response: { ready: { value: false } } },
  'absent.sock': { response: {} },
  'failed.sock': { error: { code: status.FAILED_PRECONDITION, details: 'driver secret detail' } },
};

describe('csi probe', () => {
  let dir = '';
  const servers: Server[] = [];
  let silent: NetServer | undefined;

  beforeAll(async () => {
    dir = await tempDir();
    for (const [name, answer] of Object.entries(ANSWERS)) {
      const { server } = await serveGrpc(`unix://${join(dir, name)}`, (s) =>
        s.addService(service(PROTO_FILES.csi, 'csi.v1.Identity'), {
          Probe: (_call: unknown, callback: (err: Partial<ServiceError> | null, value?: object) => void) =>
            answer.error ? callback(answer.error) : callback(null, answer.response),
        }),
      );
      servers.push(server);
    }
    silent = await silentSocket(join(dir, 'silent.sock'));
  });
  afterAll(async () => {
    servers.forEach((server) => server.forceShutdown());
    silent?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    { name: 'ready=true → Healthy', socket: 'ready.sock', outcome: 'Healthy', reason: 'ProbeSucceeded' },
    {
      name: 'ready absent → Healthy (CSI spec)',
      socket: 'absent.sock',
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    { name: 'ready=false → Unhealthy', socket: 'not-ready.sock', outcome: 'Unhealthy', reason: 'NotReady' },
    {
      name: 'Probe error status → Unhealthy',
      socket: 'failed.sock',
      outcome: 'Unhealthy',
      reason: 'BadStatus',
    },
    {
      name: 'missing socket → Unhealthy',
      socket: 'missing.sock',
      outcome: 'Unhealthy',
      reason: 'ConnectionFailed',
    },
    {
      name: 'driver that never answers → ProbeTimeout',
      socket: 'silent.sock',
      outcome: 'Unhealthy',
      reason: 'ProbeTimeout',
    },
  ])('$name', async ({ socket, outcome, reason }) => {
    const result = await csiProbe(
      { kind: 'csi', socket: join(dir, socket) },
      testContext({ timeoutMs: reason === 'ProbeTimeout' ? SHORT_TIMEOUT_MS : undefined }),
    );
    expect(result).toMatchObject({ outcome, reason });
    expect(result.message).not.toContain('secret');
  });
});
