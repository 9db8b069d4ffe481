// Shared helpers for integration tests against the real control plane started by global-setup.ts.

import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig, type CoreV1Api, type CustomObjectsApi } from '@kubernetes/client-node';
import { closeSync, openSync, readSync } from 'node:fs';
import { expect, inject } from 'vitest';
import { EXTENSION_ANNOTATION_PREFIX } from '../../api/index.ts';
import { startAgent, type ProgramProcess } from './processes.ts';

export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfig'));
  return kc;
}

/** The minor version of the Kubernetes the suite runs on (npm run test:versions runs older ones too). */
export function kubernetesMinor(): number {
  return Number(/^v1\.(\d+)\./.exec(inject('kubernetesVersion'))?.[1]);
}

/**
 * '' when the running Kubernetes is at least 1.`minor`; else why `what` cannot run here, printed as a NOT RUN
 * line (a test gated on it says so in its name too, never passes quietly).
 */
export function needsKubernetes(minor: number, what: string): string {
  if (kubernetesMinor() >= minor) return '';
  const reason = `${what} needs Kubernetes 1.${minor}+, this is ${inject('kubernetesVersion')}`;
  process.stderr.write(`[integration] NOT RUN: ${reason}\n`);
  return reason;
}

/** A name unique to this run: tests never rely on deleting what earlier tests made. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Polls `check` until it returns a value other than undefined, or fails with the last observation. */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  {
    timeoutMs = 30_000,
    intervalMs = 200,
    what = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A clock the test moves itself (lib/testing.ts FakeClock): `consistently` advances it instead of waiting. */
export interface AdvancingClock {
  advance(ms: number): Promise<void>;
}

/**
 * Checks that `check` holds for the whole of the next `forMs`: it runs at once, every `intervalMs`, and at the
 * end, and the first run that throws (a failed expect) or returns false fails at once, saying when and what it
 * saw. The counterpart of `eventually`, for "this does not happen": a sleep and one look at the end would miss
 * a change that came and went, and would wait out the whole window even when the change came at once. With
 * `clock` (a unit test's FakeClock) the window is the clock's time: each step advances it by `intervalMs` and
 * no real time passes.
 */
export async function consistently(
  check: () => Promise<boolean | void> | boolean | void,
  forMs: number,
  {
    intervalMs = 200,
    what = 'condition',
    clock,
  }: { intervalMs?: number; what?: string; clock?: AdvancingClock } = {},
): Promise<void> {
  if (!Number.isFinite(forMs) || forMs < 0) throw new Error(`consistently: forMs must be >= 0, got ${forMs}`);
  if (!Number.isFinite(intervalMs) || intervalMs <= 0)
    throw new Error(`consistently: intervalMs must be > 0, got ${intervalMs}`);
  const started = performance.now();
  let fakeElapsed = 0;
  const elapsed = (): number => (clock ? fakeElapsed : performance.now() - started);
  for (;;) {
    let failure: unknown;
    try {
      if ((await check()) === false) failure = 'the check returned false';
    } catch (err) {
      failure = err;
    }
    if (failure !== undefined) {
      const at = Math.round(elapsed());
      const seen = failure instanceof Error ? failure.message : String(failure);
      throw new Error(`${what} stopped holding after ${at} ms of ${forMs}: ${seen}`, { cause: failure });
    }
    const left = forMs - elapsed();
    if (left <= 0) return;
    const step = Math.min(intervalMs, left);
    if (clock) {
      await clock.advance(step);
      fakeElapsed += step;
    } else {
      await new Promise((r) => setTimeout(r, step));
    }
  }
}

/** Probe settings for tests: probe every second, flip after two results, no startup grace. */
export const FAST_PROBING = {
  periodSeconds: 1,
  failureThreshold: 2,
  successThreshold: 1,
  startupGraceSeconds: 0,
  timeoutSeconds: 1,
} as const;

/** Creates a SystemExtension through `api` (any control plane's client). */
export async function createSystemExtension(
  api: CustomObjectsApi,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await api.createClusterCustomObject({
    group: 'nodecare.io',
    version: 'v1alpha1',
    plural: 'systemextensions',
    body: { apiVersion: 'nodecare.io/v1alpha1', kind: 'SystemExtension', metadata: { name }, spec },
  });
}

export interface HttpEndpoint {
  server: Server;
  port: number;
  /** Stops listening and drops open connections (the extension is down). */
  stop(): Promise<void>;
  /** Listens again on the same port (the extension is back). */
  start(): Promise<void>;
}

/**
 * A loopback HTTP endpoint answering 200 `ok`, standing in for an extension's health endpoint. It is added to
 * `servers` so the test file can close it after each test.
 */
export async function httpEndpoint(servers: Server[]): Promise<HttpEndpoint> {
  const server = createServer((_req, res) => res.end('ok'));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    stop: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
    start: () => new Promise<void>((r) => server.listen(port, '127.0.0.1', r)),
  };
}

/** The ELF header's e_machine of the executable at `path` (62 x86-64, 183 AArch64). */
export function elfMachine(path: string): number {
  const header = Buffer.alloc(20);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, header, 0, 20, 0);
  } finally {
    closeSync(fd);
  }
  expect(header.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
  return header.readUInt16LE(18);
}

/**
 * A simulated Ready node (its boot ID and Ready True posted as a kubelet would) annotated with one HTTP
 * extension `extension` probing `web` (FAST_PROBING), and its real agent with a short heartbeat and renewals.
 */
export async function readyNodeWithAgent(
  core: CoreV1Api,
  options: {
    kubeconfig: string;
    name: string;
    extension: string;
    web: HttpEndpoint;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
  },
): Promise<ProgramProcess> {
  const { kubeconfig, name, web } = options;
  const spec = JSON.stringify({ probe: { http: { url: `http://127.0.0.1:${web.port}/` } }, ...FAST_PROBING });
  await core.createNode({
    body: {
      metadata: {
        name,
        annotations: { [`${EXTENSION_ANNOTATION_PREFIX}${options.extension}`]: spec, ...options.annotations },
        labels: { 'kubernetes.io/hostname': name, ...options.labels },
      },
      status: {
        nodeInfo: { bootID: 'boot-1' } as never,
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
      },
    },
  });
  return startAgent({
    kubeconfig,
    nodeName: name,
    extraArgs: ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'],
  });
}
