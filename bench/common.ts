// What the benchmark's phases share: its output, the simulated nodes and their extensions, the change-latency
// measurement, the rows it reports, and reading the controller's leader and its node-write metrics.

import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { COMPONENT_NAMESPACE, DEFAULT_BOOTSTRAP_TAINT_KEY } from '../api/index.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import type { Observer, SeenNode } from './observer.ts';
import { ROOT } from './procs.ts';
import { fmtMs, percentile, type MeasuredCode, type Row } from './report.ts';

/** MiB with one decimal: a miss by less than 1 MiB reads "0.1 MiB", not "0 MiB". */
export const fmtMiB1 = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MiB`;

/** ", misses by X" when `value` is over `goal` (formatted by `fmt`), else ''. */
export const over = (value: number | undefined, goal: number, fmt: (n: number) => string): string =>
  value !== undefined && value > goal ? `; misses by ${fmt(value - goal)}` : '';

export const say = (line: string): void => void process.stderr.write(`[bench] ${line}\n`);
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export const load1 = (): number => loadavg()[0] ?? 0;

/** The machine a run measures on, as its results record it: cores, CPU model, memory, Node.js. */
export function describeMachine(): string {
  const cpu = cpus();
  const gib = (totalmem() / 2 ** 30).toFixed(0);
  return `${cpu.length}× ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ${gib} GiB, Node ${process.version}`;
}

/** The code a run measures, read as it starts; undefined outside a git checkout (or where git cannot read it). */
export function measuredCode(): MeasuredCode | undefined {
  const git = (...args: string[]): string =>
    execFileSync('git', ['-C', ROOT, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  try {
    const changed = git('status', '--porcelain', '--untracked-files=no');
    return {
      commit: git('rev-parse', 'HEAD'),
      uncommittedFiles: changed === '' ? 0 : changed.split('\n').length,
    };
  } catch {
    return undefined;
  }
}

/** Builds dist/ (the shipped binaries) without type-checking: the type check is the test command's job. */
export async function build(): Promise<void> {
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--noCheck'], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`build failed (tsc exited ${code})`)),
    );
  });
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

export const EXTENSION_NAMES = ['kube-proxy', 'cni-agent', 'logging-agent', 'csi-node', 'device-plugin'];

/** Probes the measured agent runs against real local targets (one of each of five light probe kinds). */
export function extensionSpecs(
  count: number,
  httpPort: number,
  heartbeatFile: string,
): Array<[string, unknown]> {
  const probes: unknown[] = [
    { http: { url: `http://127.0.0.1:${httpPort}/healthz` } },
    { tcp: { host: '127.0.0.1', port: httpPort } },
    { file: { path: heartbeatFile } },
    { process: { name: 'etcd' } },
    { nodeCondition: { type: 'Ready', status: 'True' } },
  ];
  return Array.from({ length: count }, (_, i) => [
    EXTENSION_NAMES[i] ?? `extension-${i}`,
    probes[i % probes.length],
  ]);
}

export function nodeBody(name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
    status: {
      allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
      capacity: { cpu: '4', memory: '16Gi', pods: '110' },
      nodeInfo: {
        architecture: 'amd64',
        bootID: randomUUID(),
        containerRuntimeVersion: 'containerd://2.1.0',
        kernelVersion: '6.12.0',
        kubeProxyVersion: '',
        kubeletVersion: 'v1.37.2',
        machineID: randomUUID().replaceAll('-', ''),
        operatingSystem: 'linux',
        osImage: 'nodecare bench (simulated node)',
        systemUUID: randomUUID(),
      },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
    },
  };
}

/** The 24 images every registered node reports cached (status.images), the same for each node. */
const CACHED_IMAGES = Array.from({ length: 24 }, (_, i) => ({
  names: [
    `registry.bench.invalid/team-${i % 7}/workload-${i}@sha256:${createHash('sha256').update(`${i}`).digest('hex')}`,
    `registry.bench.invalid/team-${i % 7}/workload-${i}:v1.${i}.0`,
  ],
  sizeBytes: 20_000_000 + i * 1_234_567,
}));

/**
 * A Node as a kubelet registers it in the whole-cluster benchmark (issue 53 item 5, the fresh fleet): the
 * bootstrap taint from `--register-with-taints` (docs/install.md), a cloud node's labels, annotations and
 * addresses, the five kubelet conditions and 24 cached images. About 9 KB of JSON as the API server returns
 * it, the size of the Nodes in the outside run the issue measured (8.9 KB); nodeBody's 1 KB Node
 * parsed five times faster and hid what a real fleet costs a start. The controller-only sink keeps nodeBody,
 * so its runs stay comparable with the ones before.
 */
export function registeredNodeBody(name: string, index: number): Record<string, unknown> {
  const body = nodeBody(name) as { metadata: Record<string, unknown>; status: Record<string, unknown> };
  const zone = `bench-zone-${String.fromCharCode(97 + (index % 3))}`;
  const address = `10.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`;
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const condition = (type: string, status: string, reason: string, message: string) => ({
    ...{ type, status, reason, message },
    lastHeartbeatTime: at,
    lastTransitionTime: at,
  });
  return {
    ...body,
    metadata: {
      name,
      labels: {
        ...(body.metadata.labels as Record<string, string>),
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'node.kubernetes.io/instance-type': 'm6i.xlarge',
        'topology.kubernetes.io/region': 'bench-region-1',
        'topology.kubernetes.io/zone': zone,
        'nodecare.io/bench-pool': `pool-${index % 4}`,
      },
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
        'csi.volume.kubernetes.io/nodeid': JSON.stringify({ 'ebs.csi.bench.invalid': `i-${index}` }),
      },
    },
    spec: {
      providerID: `bench:///${zone}/i-${String(index).padStart(17, '0')}`,
      podCIDR: `10.244.${index % 256}.0/24`,
      podCIDRs: [`10.244.${index % 256}.0/24`],
      taints: [
        { key: DEFAULT_BOOTSTRAP_TAINT_KEY, value: 'nodecare.io-extensions-not-ready', effect: 'NoSchedule' },
      ],
    },
    status: {
      ...body.status,
      addresses: [
        { type: 'InternalIP', address },
        {
          type: 'InternalDNS',
          address: `ip-${address.replaceAll('.', '-')}.bench-region-1.compute.internal`,
        },
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      conditions: [
        condition(
          'MemoryPressure',
          'False',
          'KubeletHasSufficientMemory',
          'kubelet has sufficient memory available',
        ),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      images: CACHED_IMAGES,
    },
  };
}

export interface CreatedNode {
  name: string;
  uid: string;
  bootId: string;
}

/** Creates node `name`: nodeBody unless `body` says otherwise (the fleet's: registeredNodeBody). */
export async function createNode(
  client: KubeClient,
  name: string,
  body: Record<string, unknown> = nodeBody(name),
): Promise<CreatedNode> {
  const created = await client.request<{
    metadata: { name: string; uid: string };
    status?: { nodeInfo?: { bootID?: string } };
  }>('POST', '/api/v1/nodes', { body, timeoutMs: 30_000 });
  return { name, uid: created.metadata.uid, bootId: created.status?.nodeInfo?.bootID ?? '' };
}

export const ready = (n: SeenNode): boolean =>
  n.label === 'healthy' && !n.bootstrapTaint && !n.runtimeTaint && n.condition === 'True';
export const bootstrapping = (n: SeenNode): boolean => n.bootstrapTaint && n.label === 'progressing';
/** A ready node one of whose extensions failed: runtime taint, `False`, `unhealthy`. */
export const failedNode = (n: SeenNode): boolean =>
  n.runtimeTaint && n.condition === 'False' && n.label === 'unhealthy' && !n.bootstrapTaint;

/** Latency of `samples` changes fired at `rate` per second: lease written (observed) → node state observed. */
export async function measureChanges(
  observer: Observer,
  changes: Array<{
    node: string;
    lease: string;
    leaseTest: (state: string) => boolean;
    nodeTest: (n: SeenNode) => boolean;
    fire(): void;
  }>,
  ratePerSecond: number,
  timeoutMs: number,
): Promise<{ latencies: number[]; missed: number }> {
  const latencies: number[] = [];
  let missed = 0;
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (const [i, change] of changes.entries()) {
    const wait = t0 + (i * 1000) / ratePerSecond - performance.now();
    if (wait > 0) await sleep(wait);
    const leaseSeen = observer.leases.waitFor(change.lease, (l) => change.leaseTest(l.state), timeoutMs);
    const nodeSeen = observer.nodes.waitFor(change.node, change.nodeTest, timeoutMs);
    change.fire();
    pending.push(
      Promise.all([leaseSeen, nodeSeen]).then(([l, n]) => {
        if (l === undefined || n === undefined) missed++;
        else latencies.push(Math.max(0, n - l));
      }),
    );
  }
  await Promise.all(pending);
  return { latencies, missed };
}

export function distributionRow(
  id: string,
  measure: string,
  result: { latencies: number[]; missed: number },
  goalMs: number,
): Row {
  const p50 = percentile(result.latencies, 50);
  const p99 = percentile(result.latencies, 99);
  const max = percentile(result.latencies, 100);
  const n = result.latencies.length;
  return {
    id,
    measure,
    goal: `p99 ≤ ${fmtMs(goalMs)}`,
    measured: `p50 ${fmtMs(p50)}, p99 ${fmtMs(p99)}, max ${fmtMs(max)} (n=${n}${result.missed ? `, ${result.missed} missed` : ''})${over(p99, goalMs, fmtMs)}`,
    pass: p99 !== undefined && result.missed === 0 && p99 <= goalMs,
    load: load1(),
    values: { p50Ms: p50 ?? null, p99Ms: p99 ?? null, maxMs: max ?? null, samples: n, missed: result.missed },
  };
}

/** The controller's leader election Lease holder. */
export async function leaderOf(client: KubeClient): Promise<string> {
  const lease = await client.get<{ spec?: { holderIdentity?: string } }>(
    leasesPath(COMPONENT_NAMESPACE, 'nodecare-controller'),
  );
  return lease.spec?.holderIdentity ?? '';
}

/**
 * The controller's node writes refused with 409 Conflict, from its own metrics, over its start, P1 and P2.
 * Nothing else writes the bench's nodes, so each one is the controller patching a node again on a copy older
 * than its own last write: API-server work the queue pays for (goal ~0; issue 24).
 */
export async function nodeWriteConflictsRow(port: number): Promise<Row> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  const byResult = new Map<string, number>();
  for (const m of text.matchAll(/^nodecare_controller_node_writes_total\{([^}]*)\} (\S+)$/gm)) {
    const result = /result="([^"]*)"/.exec(m[1] ?? '')?.[1] ?? '';
    byResult.set(result, (byResult.get(result) ?? 0) + Number(m[2]));
  }
  const total = [...byResult.values()].reduce((a, b) => a + b, 0);
  const conflicts = byResult.get('conflict') ?? 0;
  return {
    id: 'conflicts',
    measure: 'node writes refused with 409 Conflict (controller start, P1, P2)',
    goal: '≤ 1% of node writes',
    measured: `${conflicts} of ${total} node writes (${[...byResult].map(([r, n]) => `${n} ${r}`).join(', ')})`,
    pass: conflicts <= total / 100,
    load: load1(),
    values: { conflicts, nodeWrites: total, ...Object.fromEntries(byResult) },
  };
}
