// Test support for probe tests: a context with a real deadline, an injectable clock and an environment
// whose node and pods a test sets. The probed things themselves (servers, sockets, scripts, files,
// processes) are always real.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Server as GrpcServer, ServerCredentials } from '@grpc/grpc-js';
import { systemClock } from '../../lib/clock.ts';
import type { NodeFacts, PodFacts, ProbeContext, ProbeEnvironment, SliceFacts } from './types.ts';

export interface TestContextOptions {
  timeoutMs?: number;
  now?: () => number;
  node?: NodeFacts;
  pods?: ProbeEnvironment['pods'];
  resourceSlices?: ProbeEnvironment['resourceSlices'];
  signal?: AbortSignal;
}

/** A context whose signal aborts after `timeoutMs` (default 10 s, generous for a loaded machine). */
export function testContext(options: TestContextOptions = {}): ProbeContext {
  const timeoutMs = options.timeoutMs ?? 10_000;
  return {
    signal: options.signal ?? AbortSignal.timeout(timeoutMs),
    timeoutMs,
    now: options.now ?? (() => systemClock.now()),
    env: {
      node: () => options.node,
      pods: options.pods ?? (async (): Promise<PodFacts[]> => []),
      resourceSlices: options.resourceSlices ?? (async (): Promise<SliceFacts[]> => []),
    },
  };
}

/** A fresh directory under the system temp dir, short enough for unix socket paths. */
export function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'nodecare-probe-'));
}

/**
 * A fresh directory for executables the tests write or copy. Not the system temp dir, which may be mounted
 * noexec: a cache directory under the checkout's node_modules, where exec is allowed as surely as for
 * node_modules/.bin (and which git ignores).
 */
export async function execDir(): Promise<string> {
  const parent = join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'nodecare-tests');
  await mkdir(parent, { recursive: true });
  return mkdtemp(join(parent, 'exec-'));
}

/**
 * Copies `modules` (paths relative to the repository root) into `dir`, readable by every user, so a child
 * process of another user can import them wherever the checkout lives (a mode-700 directory is out of reach of
 * anyone but its owner). Reading needs no exec permission, so `dir` may be on a noexec file system.
 */
export async function shareModules(dir: string, modules: readonly string[]): Promise<void> {
  const root = join(import.meta.dirname, '..', '..');
  await chmod(dir, 0o755);
  await writeFile(join(dir, 'package.json'), '{ "type": "module" }\n');
  for (const module of modules) {
    await mkdir(dirname(join(dir, module)), { recursive: true, mode: 0o755 });
    await copyFile(join(root, module), join(dir, module));
    await chmod(join(dir, module), 0o644);
  }
}

/**
 * Spawns the running node binary as another user. The binary may live in the checkout, out of that user's
 * reach, so the child executes it through an open file descriptor (`/proc/self/fd/3`, which the kernel
 * resolves without walking the directories above the binary) instead of by its path; no copy is needed, and
 * the file system holding it allows exec (it is running). Linux, like the /proc the probes read.
 */
export function spawnNodeAs(uid: number, args: readonly string[], options: { cwd: string }): ChildProcess {
  const binary = openSync(process.execPath, 'r');
  try {
    return spawn('/proc/self/fd/3', args, {
      uid,
      gid: uid,
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe', binary],
    });
  } finally {
    closeSync(binary);
  }
}

/** Starts a real gRPC server on `address` (`unix:///path` or `127.0.0.1:0`); resolves with its bound port. */
export async function serveGrpc(
  address: string,
  register: (server: GrpcServer) => void,
): Promise<{ server: GrpcServer; port: number }> {
  const server = new GrpcServer();
  register(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    ),
  );
  return { server, port };
}

/** A unix socket that accepts connections and never says a word. */
export async function silentSocket(path: string): Promise<NetServer> {
  const server = createNetServer(() => {});
  server.listen(path);
  await once(server, 'listening');
  return server;
}

/** A socket file nobody listens on (its listener was killed without cleaning up). */
export async function staleSocket(path: string): Promise<void> {
  const script = `require('node:net').createServer().listen(process.argv[1], () => process.kill(process.pid, 'SIGKILL'))`;
  const child = spawn(process.execPath, ['-e', script, path], { stdio: 'ignore' });
  await once(child, 'exit');
}
