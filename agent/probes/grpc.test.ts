import { once } from 'node:events';
import { chmod, mkdir, rm, symlink } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { status, type sendUnaryData, type Server, type ServerUnaryCall } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GrpcProbe } from '../../api/probe-spec.ts';
import { grpcProbe } from './grpc.ts';
import { PROTO_FILES, service } from './proto.ts';
import {
  serveGrpc,
  shareModules,
  silentSocket,
  spawnNodeAs,
  staleSocket,
  tempDir,
  testContext,
} from './testing.ts';
import type { ProbeResult } from './types.ts';

/** Deadline for the cases that must time out; every other case gets testContext's generous default. */
const SHORT_TIMEOUT_MS = 1500;

/** Serving status per service name, as a real health server keeps it; absent names are NOT_FOUND. */
const STATUSES: Record<string, string> = {
  '': 'SERVING',
  'example.Up': 'SERVING',
  'example.Down': 'NOT_SERVING',
  'example.Unsure': 'UNKNOWN',
  'example.Gone': 'SERVICE_UNKNOWN',
};

function check(call: ServerUnaryCall<{ service: string }, object>, callback: sendUnaryData<object>): void {
  const servingStatus = STATUSES[call.request.service];
  if (servingStatus) callback(null, { status: servingStatus });
  else callback({ code: status.NOT_FOUND, details: 'unknown service' });
}

function addHealth(server: Server): void {
  server.addService(service(PROTO_FILES.health, 'grpc.health.v1.Health'), { Check: check });
}

const spec = (address: string, serviceName = ''): GrpcProbe => ({
  kind: 'grpc',
  address,
  service: serviceName,
});

describe('grpc probe', () => {
  let dir = '';
  let tcpPort = 0;
  let refusedPort = 0;
  const servers: Server[] = [];
  let silent: NetServer | undefined;
  const socket = (name: string): string => `unix://${join(dir, name)}`;

  beforeAll(async () => {
    dir = await tempDir();
    servers.push((await serveGrpc(socket('health.sock'), addHealth)).server);
    const overTcp = await serveGrpc('127.0.0.1:0', addHealth);
    servers.push(overTcp.server);
    tcpPort = overTcp.port;
    servers.push((await serveGrpc(socket('no-health.sock'), () => {})).server);
    await mkdir(join(dir, 'allowed'));
    servers.push((await serveGrpc(socket('allowed/real.sock'), addHealth)).server);
    silent = await silentSocket(join(dir, 'silent.sock'));
    await staleSocket(join(dir, 'stale.sock'));
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    refusedPort = (closed.address() as AddressInfo).port;
    closed.close();
  });
  afterAll(async () => {
    servers.forEach((server) => server.forceShutdown());
    silent?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    {
      name: 'SERVING over a unix socket → Healthy',
      target: 'health.sock',
      svc: '',
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'named service SERVING → Healthy',
      target: 'health.sock',
      svc: 'example.Up',
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'SERVING over host:port → Healthy',
      target: 'tcp',
      svc: '',
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'NOT_SERVING → Unhealthy',
      target: 'health.sock',
      svc: 'example.Down',
      outcome: 'Unhealthy',
      reason: 'NotServing',
    },
    {
      name: 'UNKNOWN → Unhealthy',
      target: 'health.sock',
      svc: 'example.Unsure',
      outcome: 'Unhealthy',
      reason: 'NotServing',
    },
    {
      name: 'SERVICE_UNKNOWN → Unhealthy',
      target: 'health.sock',
      svc: 'example.Gone',
      outcome: 'Unhealthy',
      reason: 'NotServing',
    },
    {
      name: 'service the server does not know (NOT_FOUND) → Unhealthy',
      target: 'health.sock',
      svc: 'example.Nope',
      outcome: 'Unhealthy',
      reason: 'NotServing',
    },
    {
      name: 'server without the health service → Unhealthy',
      target: 'no-health.sock',
      svc: '',
      outcome: 'Unhealthy',
      reason: 'NotServing',
    },
    {
      name: 'missing socket → Unhealthy',
      target: 'missing.sock',
      svc: '',
      outcome: 'Unhealthy',
      reason: 'ConnectionFailed',
    },
    {
      name: 'socket nobody listens on → Unhealthy',
      target: 'stale.sock',
      svc: '',
      outcome: 'Unhealthy',
      reason: 'ConnectionRefused',
    },
    {
      name: 'refused TCP port → Unhealthy',
      target: 'refused',
      svc: '',
      outcome: 'Unhealthy',
      reason: 'ConnectionRefused',
    },
    {
      name: 'server that never answers → ProbeTimeout',
      target: 'silent.sock',
      svc: '',
      outcome: 'Unhealthy',
      reason: 'ProbeTimeout',
    },
  ])('$name', async ({ target, svc, outcome, reason }) => {
    const address =
      target === 'tcp'
        ? `127.0.0.1:${tcpPort}`
        : target === 'refused'
          ? `127.0.0.1:${refusedPort}`
          : socket(target);
    const result = await grpcProbe(
      spec(address, svc),
      testContext({ timeoutMs: reason === 'ProbeTimeout' ? SHORT_TIMEOUT_MS : undefined }),
    );
    expect(result).toMatchObject({ outcome, reason });
  });

  it('server error details never reach the message', async () => {
    const result = await grpcProbe(spec(socket('health.sock'), 'example.Nope'), testContext());
    expect(result.message).toBe('gRPC NOT_FOUND');
  });

  // Regression, issue 7 item 1: unix socket targets from node annotations get the same resolution as paths.
  it.each([
    {
      name: 'a socket link leading outside the allowed directory → refused',
      link: 'out.sock',
      target: 'health.sock',
      outcome: 'Unknown',
      reason: 'InvalidRegistration',
    },
    {
      name: 'a socket link that stays inside → Healthy',
      link: 'in.sock',
      target: 'allowed/real.sock',
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
  ])('confined: $name', async ({ link, target, outcome, reason }) => {
    const allowed = join(dir, 'allowed');
    await symlink(join(dir, target), join(allowed, link));
    const result = await grpcProbe(
      { ...spec(`unix://${join(allowed, link)}`), confineTo: [allowed] },
      testContext(),
    );
    expect(result).toMatchObject({ outcome, reason });
  });

  // Issue 7 item 14: as root the check runs as nobody in a child process, which must not need the checkout (it
  // may live in a mode-700 directory): the child runs a world-readable copy of the socket check, the very code
  // grpcProbe calls before it dials (the confined cases above show grpcProbe returning its answer). As any
  // other user the whole probe runs in-process.
  it('socket we may not open → Unknown/PermissionDenied', async () => {
    await chmod(dir, 0o755);
    await chmod(join(dir, 'health.sock'), 0o000);
    try {
      const address = socket('health.sock');
      const result =
        process.getuid?.() === 0
          ? await socketCheckAsNobody(address.slice('unix://'.length))
          : await grpcProbe(spec(address), testContext());
      expect(result).toMatchObject({ outcome: 'Unknown', reason: 'PermissionDenied' });
    } finally {
      await chmod(join(dir, 'health.sock'), 0o755);
    }
  });
});

/** The files the socket check imports at run time (type-only imports are erased). */
const SOCKET_CHECK_MODULES = [
  'agent/probes/socket.ts',
  'agent/probes/confine.ts',
  'agent/probes/result.ts',
  'api/reasons.ts',
  'api/text.ts',
  'lib/fs.ts',
];

/** Runs openableSocket as uid/gid 65534 from a copy any user can read; its answer, or the child's stderr. */
async function socketCheckAsNobody(path: string): Promise<ProbeResult | string> {
  const shared = await tempDir();
  try {
    await shareModules(shared, SOCKET_CHECK_MODULES);
    const module = pathToFileURL(join(shared, 'agent/probes/socket.ts')).href;
    const script = `
      const { openableSocket } = await import(${JSON.stringify(module)});
      const checked = await openableSocket(process.argv[1], undefined);
      process.stdout.write(JSON.stringify(checked.ok ? { outcome: 'Accessible' } : checked.result));`;
    const child = spawnNodeAs(65534, ['--input-type=module', '-e', script, path], { cwd: shared });
    let output = '';
    let errors = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    await once(child, 'close');
    return output ? (JSON.parse(output) as ProbeResult) : `no answer; stderr: ${errors}`;
  } finally {
    await rm(shared, { recursive: true, force: true });
  }
}
