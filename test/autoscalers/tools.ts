// The autoscaling tools of the autoscaler tests as local processes: KWOK (drives the fake nodes: Ready,
// heartbeats, pods Running) and Karpenter with its KWOK cloud provider. Binaries come from build.sh (built
// from the Go module proxy, cached by version); a build that fails throws, so the tests fail, never skip.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open, readFile, readdir } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { freePorts, tail } from '../controlplane/controlplane.ts';

const BUILD = join(import.meta.dirname, 'build.sh');

export type Tool = 'kwok' | 'karpenter';

/** Builds (or reuses) a tool; progress lines go to stderr. Returns the tool's cache directory. */
export function ensureTool(tool: Tool, log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)) {
  return new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [BUILD, tool], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      for (const line of d.toString().split('\n')) if (line.startsWith('[')) log(line);
    });
    child.on('error', (err) => reject(new Error(`build.sh ${tool}: ${err.message}`)));
    child.on('close', (code) => {
      const dir = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && dir && existsSync(dir)) return resolve(dir);
      reject(new Error(`building ${tool} failed (build.sh exited ${code}):\n${tail(stderr, 30)}`));
    });
  });
}

export interface ToolProcess {
  name: string;
  child: ChildProcess;
  logPath: string;
  /** The last lines of its log, for failure messages. */
  logTail(lines?: number): Promise<string>;
  /** SIGTERM, SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/** A tool started here (KWOK, Karpenter), with a health endpoint. */
export interface ServingTool extends ToolProcess {
  /** Resolves with a description of how it ended (exit code or signal). */
  exited: Promise<string>;
  /**
   * Resolves once its health endpoint answers 200; rejects, with the last lines of its log, when the process
   * exits first or `timeoutMs` passes.
   */
  ready(timeoutMs?: number): Promise<void>;
}

async function launch(
  name: string,
  bin: string,
  args: string[],
  env: Record<string, string>,
  logDir: string,
  healthUrl: string,
): Promise<ServingTool> {
  const logPath = join(logDir, `${name}.log`);
  const out = await open(logPath, 'a');
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', out.fd, out.fd] });
  // Listening before the next await: a process that fails at once may exit during it.
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not start: ${err.message}`));
    child.once('exit', (code, signal) => resolve(signal ? `killed by ${signal}` : `exited ${code}`));
  });
  await out.close();
  const logTail = async (lines = 30): Promise<string> =>
    tail(await readFile(logPath, 'utf8').catch(() => ''), lines);
  return {
    name,
    child,
    logPath,
    exited,
    logTail,
    async ready(timeoutMs = 60_000) {
      let ended: string | undefined;
      void exited.then((how) => (ended = how));
      const deadline = Date.now() + timeoutMs;
      while (ended === undefined && Date.now() < deadline) {
        const ok = await fetch(healthUrl, { signal: AbortSignal.timeout(2_000) }).then(
          (res) => res.ok,
          () => false,
        );
        if (ok) return;
        await new Promise((r) => setTimeout(r, 250));
      }
      const why = ended ?? `not healthy (${healthUrl}) within ${timeoutMs / 1000} s`;
      throw new Error(`${name} ${why}; the last lines of ${logPath}:\n${await logTail()}`);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The annotation Karpenter's KWOK provider puts on the nodes it creates; KWOK manages only those. */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node=fake';

/**
 * KWOK's flags: the default stages kwokctl uses (nodes turn Ready and keep a heartbeat Lease, bound pods turn
 * Running, deleted pods are finalised), managing only the nodes `manage` selects (by annotation or by label),
 * its health and metrics on `port`.
 */
export function kwokArgs(
  kubeconfig: string,
  stages: string[],
  port: number,
  manage: { annotation: string } | { label: string },
): string[] {
  return [
    `--kubeconfig=${kubeconfig}`,
    '--manage-all-nodes=false',
    `--manage-nodes-with-annotation-selector=${'annotation' in manage ? manage.annotation : ''}`,
    `--manage-nodes-with-label-selector=${'label' in manage ? manage.label : ''}`,
    '--manage-single-node=',
    '--cidr=10.244.0.0/16',
    '--node-ip=10.244.0.1',
    '--node-lease-duration-seconds=40',
    `--server-address=127.0.0.1:${port}`,
    ...stages.map((file) => `--config=${file}`),
  ];
}

/** KWOK's stage files in the tool's directory, in order. */
export async function kwokStages(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'stages'))).sort().map((f) => join(dir, 'stages', f));
}

/** KWOK managing only nodes annotated `kwok.x-k8s.io/node: fake` (the nodes Karpenter's KWOK provider makes). */
export async function startKwok(dir: string, kubeconfig: string, logDir: string): Promise<ServingTool> {
  const [port] = await freePorts(1);
  const args = kwokArgs(kubeconfig, await kwokStages(dir), port!, { annotation: KWOK_NODE_ANNOTATION });
  return launch('kwok', join(dir, 'kwok'), args, {}, logDir, `http://127.0.0.1:${port}/healthz`);
}

/**
 * Karpenter (KWOK cloud provider) outside a cluster: no leader election, metrics and health on free ports.
 * Its CRDs must be installed first (karpenterCrds). `instanceTypesFile`: the instance types it offers (a
 * JSON list, see karpenter.ts) instead of the provider's built-in ones.
 */
export async function startKarpenter(
  dir: string,
  kubeconfig: string,
  logDir: string,
  instanceTypesFile?: string,
): Promise<ServingTool> {
  const [metrics, health] = await freePorts(2);
  return launch(
    'karpenter',
    join(dir, 'karpenter'),
    [],
    {
      KUBECONFIG: kubeconfig,
      SYSTEM_NAMESPACE: 'kube-system',
      DISABLE_LEADER_ELECTION: 'true',
      METRICS_PORT: String(metrics),
      HEALTH_PROBE_PORT: String(health),
      LOG_LEVEL: 'debug',
      ...(instanceTypesFile ? { INSTANCE_TYPES_FILE_PATH: instanceTypesFile } : {}),
    },
    logDir,
    `http://127.0.0.1:${health}/healthz`,
  );
}

/** The CRD files shipped with the Karpenter build (NodePool, NodeClaim, KWOKNodeClass, ...). */
export async function karpenterCrds(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'crds'))).sort().map((f) => join(dir, 'crds', f));
}

export interface ExtensionEndpoint {
  server: Server;
  port: number;
  /** From now on answer 200. */
  healthy(): void;
  /** From now on answer 503 again (the extension restarts). */
  restarting(): void;
  close(): void;
}

/** A loopback endpoint that answers 503 while starting, then 200: a node's device plugin coming up. */
export async function extensionEndpoint(): Promise<ExtensionEndpoint> {
  let starting = true;
  const server = createHttpServer((_req, res) => {
    res.statusCode = starting ? 503 : 200;
    res.end(starting ? 'starting' : 'ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    healthy: () => (starting = false),
    restarting: () => (starting = true),
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
