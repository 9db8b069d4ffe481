// The real nodes as test files see them: global-setup.ts owns the processes; these handles ask it over its
// unix socket. hostPath() needs no round trip (the node directories are on this filesystem).

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { Agent, request } from 'undici';
import type { RealNodeInfo } from './global-setup.ts';
import { hostPathOf, type ExecResult, type NodeSpec } from './realnodes.ts';

export interface TestNode {
  name: string;
  ip: string;
  podCIDR: string;
  dir: string;
  /** Where a path as the node sees it (/run/..., /var/lib/..., /var/log/...) is on the real filesystem. */
  hostPath(path: string): string;
  /** Runs a command in the node's mount, network and UTS namespaces. */
  exec(command: string[], input?: string): Promise<ExecResult>;
  ctr(args: string[]): Promise<ExecResult>;
  importImage(archive: string): Promise<void>;
  pids(): Promise<{ holder: number; kubelet?: number; containerd?: number }>;
  stopKubelet(): Promise<void>;
  startKubelet(): Promise<void>;
  killForGood(): Promise<void>;
  stopContainerd(): Promise<void>;
  startContainerd(): Promise<void>;
  /** A reboot: every process of the node dies, /run is emptied, containerd and the kubelet start again. */
  restart(): Promise<void>;
}

let agent: Agent | undefined;

async function call<T>(path: string, body: unknown = {}): Promise<T> {
  agent ??= new Agent({ connect: { socketPath: inject('realNodesSocket') } });
  const res = await request(`http://realnodes${path}`, {
    method: 'POST',
    dispatcher: agent,
    body: JSON.stringify(body),
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  });
  const answer = (await res.body.json()) as { result?: T; error?: string };
  if (answer.error !== undefined) throw new Error(`real node ${path}: ${answer.error}`);
  return answer.result as T;
}

/** The suite's nodes (node-1..node-3; node-3 registered with nodecare.test/registered=true:NoSchedule). */
export function realNodes(): TestNode[] {
  return inject('realNodes').map(handleFor);
}

/** A further node joins the cluster now (up to 4 in all); resolves once its kubelet runs, not yet Ready. */
export async function addNode(spec: NodeSpec): Promise<TestNode> {
  return handleFor(await call<RealNodeInfo>('/_/addNode', spec));
}

/** A node added with addNode() leaves: its machine torn down, its Node object deleted. */
export async function removeNode(name: string): Promise<void> {
  await call('/_/removeNode', { name });
}

function handleFor(info: RealNodeInfo): TestNode {
  return {
    ...info,
    hostPath: (path: string) => hostPathOf(info.dir, path),
    exec: (command, input) => call(`/${info.name}/exec`, { command, input }),
    ctr: (args) => call(`/${info.name}/ctr`, { args }),
    importImage: (archive) => call(`/${info.name}/importImage`, { archive }),
    pids: () => call(`/${info.name}/pids`),
    stopKubelet: () => call(`/${info.name}/stopKubelet`),
    startKubelet: () => call(`/${info.name}/startKubelet`),
    killForGood: () => call(`/${info.name}/killForGood`),
    stopContainerd: () => call(`/${info.name}/stopContainerd`),
    startContainerd: () => call(`/${info.name}/startContainerd`),
    restart: () => call(`/${info.name}/restart`),
  };
}

/** Waits until the named nodes (default: all) are Ready and without the not-ready/unreachable taints. */
export function waitNodesReady(names?: string[], timeoutMs?: number): Promise<void> {
  return call('/_/waitReady', { names, timeoutMs });
}

const run = promisify(execFile);

/** kubectl (the control plane's bundled one) as the cluster admin; stdin from `input`. Throws on failure. */
export async function kubectl(args: string[], input?: string): Promise<string> {
  const bin = join(inject('binDir'), 'kube-testenv');
  try {
    const child = run(bin, ['kubectl', `--kubeconfig=${inject('kubeconfig')}`, ...args], {
      maxBuffer: 16 << 20,
    });
    if (input !== undefined) child.child.stdin?.end(input);
    return (await child).stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')} failed: ${e.stderr || e.message}`, { cause: err });
  }
}
