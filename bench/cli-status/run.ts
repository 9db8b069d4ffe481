// `node bench/cli-status/run.ts [--nodes 1000,5000] [--extensions 5] [--runs 3] [--out bench/results]`: what
// `kubectl nodecare status` and `kubectl nodecare explain <node>` cost at fleet scale (issue 51 item 5).
//
// It starts the control plane tuned as the benchmark's (bench/phases/setup.ts), creates E SystemExtensions and,
// size by size, N Nodes with the Leases an agent writes (its heartbeat and one per extension, Healthy, as
// api/lease.ts builds them) and ClusterHealth `cluster` with the roll-up counts a controller would write. No
// agent or controller runs: the plugin reads a still cluster. Each verb runs --runs times as its own process
// (the built dist/cli/main.js): wall time from spawn to exit, and peak RSS and CPU from the process itself
// (rusage.mjs). In this process the same reads go through a client that counts requests and response bytes.
// Writes JSON to bench/results/ and prints a table (docs/benchmark.md, "kubectl nodecare at scale").

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildLease, GROUP_VERSION, LEASE_NAMESPACE, SYSTEM_EXTENSION } from '../../api/index.ts';
import { readNodeReport } from '../../cli/node-read.ts';
import { readSnapshot, type Client } from '../../cli/snapshot.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import type { ControlPlane } from '../../test/controlplane/controlplane.ts';
import {
  build,
  createNode,
  describeMachine,
  EXTENSION_NAMES,
  load1,
  measuredCode,
  pool,
  say,
} from '../common.ts';
import type { CreatedNode } from '../common.ts';
import { startScalePlane } from '../phases/setup.ts';
import { ROOT } from '../procs.ts';

const HEALTH = `/apis/${GROUP_VERSION}/clusterhealths/cluster`;

interface ProcessRun {
  wallMs: number;
  maxRssKiB: number;
  cpuMs: number;
  stdoutBytes: number;
  code: number | null;
}

interface VerbResult {
  args: string[];
  runs: ProcessRun[];
  /** The reads the verb makes, counted in this process: requests and response bytes. */
  requests: number;
  responseBytes: number;
  /** explain: `node` (that node and its Leases) or `cluster`. */
  read?: string;
}

interface SizeResult {
  nodes: number;
  extensions: number;
  leases: number;
  load1: { before: number; after: number };
  status: VerbResult;
  explain: VerbResult;
}

/** A client that counts the requests made through it and the bytes of their answers. */
function counting(kube: KubeClient): { client: Client; count: { requests: number; bytes: number } } {
  const count = { requests: 0, bytes: 0 };
  const request = ((...args: Parameters<KubeClient['request']>) => {
    const [method, path, opts] = args;
    count.requests++;
    const peek = (body: string | Buffer): void => {
      count.bytes += typeof body === 'string' ? Buffer.byteLength(body) : body.length;
      opts?.peek?.(body);
    };
    return kube.request(method, path, { ...opts, peek });
  }) as KubeClient['request'];
  return { client: { request }, count };
}

/** One run of kubectl-nodecare as its own process, with its wall time and its own resource usage. */
async function runPlugin(plane: ControlPlane, args: string[], scratch: string): Promise<ProcessRun> {
  const rusage = join(scratch, 'rusage.json');
  await rm(rusage, { force: true });
  const main = join(ROOT, 'dist', 'cli', 'main.js');
  const hook = join(import.meta.dirname, 'rusage.mjs');
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ['--import', hook, main, ...args, `--kubeconfig=${plane.kubeconfigPath}`],
    {
      env: { PATH: process.env.PATH, HOME: scratch, NODECARE_BENCH_RUSAGE: rusage },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let stdoutBytes = 0;
  child.stdout.on('data', (d: Buffer) => (stdoutBytes += d.length));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  const wallMs = performance.now() - started;
  const usage = JSON.parse(await readFile(rusage, 'utf8')) as NodeJS.ResourceUsage;
  return {
    wallMs: Math.round(wallMs),
    maxRssKiB: usage.maxRSS,
    cpuMs: Math.round((usage.userCPUTime + usage.systemCPUTime) / 1000),
    stdoutBytes,
    code,
  };
}

/** Nodes `from`..`to`-1 with their heartbeat and extension Leases, all Healthy. */
async function addNodes(
  kube: KubeClient,
  from: number,
  to: number,
  extensions: readonly string[],
): Promise<void> {
  const names = Array.from(
    { length: to - from },
    (_, i) => `bench-node-${String(from + i).padStart(5, '0')}`,
  );
  const created: CreatedNode[] = [];
  await pool(names, 32, async (name) => void created.push(await createNode(kube, name)));
  const now = new Date();
  const leases = created.flatMap((node) =>
    [undefined, ...extensions].map((extension) =>
      buildLease({
        node: { name: node.name, uid: node.uid },
        extension,
        holderIdentity: `agent-${node.name}`,
        leaseDurationSeconds: 24 * 3600, // valid for the whole run: the common case, every node Healthy
        renewTime: now,
        bootId: node.bootId,
        record: { state: 'Healthy', reason: 'ProbeSucceeded', message: 'ok', since: now.toISOString() },
      }),
    ),
  );
  await pool(leases, 32, async (body) => {
    await kube.request('POST', leasesPath(LEASE_NAMESPACE), { body, timeoutMs: 30_000 });
  });
}

/** ClusterHealth `cluster` with the counts of `nodes` Healthy nodes per extension (what the roll-up writes). */
async function writeHealth(kube: KubeClient, nodes: number, extensions: readonly string[]): Promise<void> {
  const exists = await kube.request('GET', HEALTH).then(
    () => true,
    () => false,
  );
  if (!exists) {
    await kube.request('POST', `/apis/${GROUP_VERSION}/clusterhealths`, {
      body: { apiVersion: GROUP_VERSION, kind: 'ClusterHealth', metadata: { name: 'cluster' } },
    });
  }
  const current = await kube.request<object>('GET', HEALTH);
  const row = (name: string) => ({
    name,
    conditionType: 'EveryNodeReady',
    healthy: nodes,
    progressing: 0,
    unhealthy: 0,
    unknown: 0,
  });
  await kube.request('PUT', `${HEALTH}/status`, {
    body: {
      ...current,
      status: { observedAt: new Date().toISOString(), extensions: [...extensions].sort().map(row) },
    },
  });
}

async function measureVerb(
  plane: ControlPlane,
  args: string[],
  runs: number,
  scratch: string,
  reads: () => Promise<{ count: { requests: number; bytes: number }; read?: string }>,
): Promise<VerbResult> {
  const results: ProcessRun[] = [];
  for (let i = 0; i < runs; i++) {
    const run = await runPlugin(plane, args, scratch);
    say(
      `  ${args.join(' ')}: ${run.wallMs} ms, peak RSS ${(run.maxRssKiB / 1024).toFixed(0)} MiB, exit ${run.code}`,
    );
    results.push(run);
  }
  const { count, read } = await reads();
  return {
    args,
    runs: results,
    requests: count.requests,
    responseBytes: count.bytes,
    ...(read ? { read } : {}),
  };
}

async function measureSize(
  plane: ControlPlane,
  kube: KubeClient,
  nodes: number,
  extensions: readonly string[],
  runs: number,
  scratch: string,
): Promise<SizeResult> {
  const before = load1();
  const node = 'bench-node-00000';
  const status = await measureVerb(plane, ['status'], runs, scratch, async () => {
    const { client, count } = counting(kube);
    await readSnapshot(client, LEASE_NAMESPACE);
    return { count };
  });
  const explain = await measureVerb(plane, ['explain', node], runs, scratch, async () => {
    const { client, count } = counting(kube);
    const { read } = await readNodeReport(client, { 'lease-namespace': LEASE_NAMESPACE }, node, Date.now());
    return { count, read };
  });
  const leases = nodes * (extensions.length + 1);
  return { nodes, extensions: extensions.length, leases, load1: { before, after: load1() }, status, explain };
}

async function startPlane(): Promise<{ plane: ControlPlane; kube: KubeClient }> {
  const { plane, client } = await startScalePlane();
  return { plane, kube: client };
}

function render(sizes: readonly SizeResult[]): string {
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const cell = (v: VerbResult): string =>
    `${median(v.runs.map((r) => r.wallMs))} ms, ${(median(v.runs.map((r) => r.maxRssKiB)) / 1024).toFixed(0)} MiB, ` +
    `${v.requests} req, ${(v.responseBytes / 1048576).toFixed(2)} MiB read${v.read ? ` (${v.read})` : ''}`;
  return [
    'nodes × ext | status (median wall, peak RSS, requests, bytes) | explain <node>',
    ...sizes.map((s) => `${s.nodes} × ${s.extensions} | ${cell(s.status)} | ${cell(s.explain)}`),
  ].join('\n');
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      nodes: { type: 'string', default: '1000,5000' },
      extensions: { type: 'string', default: '5' },
      runs: { type: 'string', default: '3' },
      out: { type: 'string', default: join(ROOT, 'bench', 'results') },
    },
  });
  const sizes = values.nodes.split(',').map(Number);
  const E = Number(values.extensions);
  const runs = Number(values.runs);
  if (
    sizes.some((n) => !Number.isInteger(n) || n < 1) ||
    !(E >= 1 && E <= EXTENSION_NAMES.length) ||
    !(runs >= 1)
  )
    throw new Error(
      `--nodes takes whole numbers, --extensions 1 to ${EXTENSION_NAMES.length}, --runs 1 or more`,
    );
  const startedAt = new Date().toISOString();
  say('building dist/ (the plugin measured)');
  await build();
  const scratch = await mkdtemp(join(tmpdir(), 'nodecare-bench-cli-'));
  const { plane, kube } = await startPlane();
  const extensions = EXTENSION_NAMES.slice(0, E);
  const results: SizeResult[] = [];
  try {
    for (const name of extensions) {
      await kube.request('POST', `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`, {
        body: {
          apiVersion: GROUP_VERSION,
          kind: SYSTEM_EXTENSION.kind,
          metadata: { name },
          spec: { probe: { tcp: { host: '127.0.0.1', port: 1 } } },
        },
      });
    }
    let have = 0;
    for (const n of [...sizes].sort((a, b) => a - b)) {
      say(`creating nodes ${have}..${n - 1} and their ${(n - have) * (E + 1)} Leases`);
      await addNodes(kube, have, n, extensions);
      have = n;
      await writeHealth(kube, n, extensions);
      say(`measuring at ${n} × ${E}`);
      results.push(await measureSize(plane, kube, n, extensions, runs, scratch));
    }
  } finally {
    await kube.close();
    await plane.stop();
    await rm(scratch, { recursive: true, force: true });
  }
  const out = {
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: describeMachine(),
    code: measuredCode(),
    sizes: results,
  };
  process.stdout.write(`${render(results)}\n`);
  await mkdir(values.out, { recursive: true });
  const stamp = startedAt.replace(/[:]/g, '').replace(/\..*$/, 'Z');
  const path = join(values.out, `${stamp}-cli-status-${sizes.join('-')}x${E}.json`);
  await writeFile(path, `${JSON.stringify(out, null, 2)}\n`);
  process.stdout.write(`\nresults: ${path}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `bench cli-status: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
