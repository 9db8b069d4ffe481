import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tcpProbe } from './tcp.ts';
import { testContext } from './testing.ts';

/** Deadline for the cases that must time out; every other case gets testContext's generous default. */
const SHORT_TIMEOUT_MS = 1500;

async function listen(server: Server): Promise<number> {
  server.listen({ port: 0, host: '127.0.0.1' });
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/**
 * A listener whose accept queue is full: a child process listens with backlog 1 and then blocks its event
 * loop (without spinning), so it never accepts; once a few connections fill the queue, the kernel drops
 * further SYNs and a connect neither succeeds nor fails.
 */
async function blackHole(): Promise<{ port: number; child: ChildProcess; fillers: Socket[] }> {
  const script = `
    const server = require('node:net').createServer();
    server.listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => {
      process.stdout.write(server.address().port + '\\n', () =>
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 120000));
    });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [data] = (await once(child.stdout!, 'data')) as [Buffer];
  const port = Number(data.toString().trim());
  const fillers = Array.from({ length: 4 }, () => connect({ port, host: '127.0.0.1' }).on('error', () => {}));
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { port, child, fillers };
}

describe('tcp probe', () => {
  const server = createServer((socket) => socket.end());
  let openPort = 0;
  let refusedPort = 0;
  let hole: Awaited<ReturnType<typeof blackHole>> | undefined;

  beforeAll(async () => {
    openPort = await listen(server);
    const closed = createServer();
    refusedPort = await listen(closed);
    closed.close();
    hole = await blackHole();
  });
  afterAll(() => {
    server.close();
    hole?.fillers.forEach((socket) => socket.destroy());
    hole?.child.kill('SIGKILL');
  });

  it.each([
    { name: 'listening port → Healthy', port: () => openPort, outcome: 'Healthy', reason: 'ProbeSucceeded' },
    {
      name: 'refused connection → Unhealthy',
      port: () => refusedPort,
      outcome: 'Unhealthy',
      reason: 'ConnectionRefused',
    },
    {
      name: 'connection that never opens → ProbeTimeout',
      port: () => hole!.port,
      outcome: 'Unhealthy',
      reason: 'ProbeTimeout',
    },
  ])('$name', async ({ port, outcome, reason }) => {
    const result = await tcpProbe(
      { kind: 'tcp', host: '127.0.0.1', port: port() },
      testContext({ timeoutMs: reason === 'ProbeTimeout' ? SHORT_TIMEOUT_MS : undefined }),
    );
    expect(result).toMatchObject({ outcome, reason });
  });

  it('already expired deadline → ProbeTimeout without connecting', async () => {
    const result = await tcpProbe(
      { kind: 'tcp', host: '127.0.0.1', port: openPort },
      testContext({ signal: AbortSignal.abort() }),
    );
    expect(result).toMatchObject({ outcome: 'Unhealthy', reason: 'ProbeTimeout' });
  });
});
