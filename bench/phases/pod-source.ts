// The agent's cost to the API server with podReady reading pods from the kubelet's Pods API, and without it
// (issue 23 item 6). Two real agents (dist/agent/main.js) on two more nodes, each requiring a podReady extension
// (a node annotation) besides the run's SystemExtensions. One finds a kubelet Pods API on its socket: a real gRPC
// server here, fed the same pods the API server holds for its node, as a kubelet would be. The other is given
// none (`--kubelet-pods-api-socket=''`) and watches its node's pods through the API server. Both nodes get the
// same pod churn; each agent's own count of its requests (nodecare_agent_api_requests_total) and of the watch
// events it received over the window gives the figures per hour. The window defaults to 600 s, the longest
// timeout a watch asks the API server for (lib/kube/reflector.ts), so every watch's restart is in it.

import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { PROTO_FILES, service } from '../../agent/probes/proto.ts';
import { serveGrpc } from '../../agent/probes/testing.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import { PatchType } from '../../lib/kube/client.ts';
import { createNode, load1, ready, say, sleep } from '../common.ts';
import { POD_CHANGE_EVERY_MS } from '../options.ts';
import { startBinary, type Program } from '../procs.ts';
import type { BenchCluster, BenchRun } from '../run.ts';

const NAMESPACE = 'bench-pods';
/** Workload pods each node keeps while the churn replaces them. */
const WORKLOAD_PODS = 4;

interface Pod {
  metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string> };
  spec: { nodeName?: string };
  status?: { phase?: string; conditions?: Array<{ type: string; status: string }> };
}

/** The fields the kubelet's Pods API message carries (api/proto/kubelet_pods_v1alpha1.proto), from an API pod. */
function kubeletPod(pod: Pod): object {
  const { name, namespace, uid, labels } = pod.metadata;
  return {
    metadata: { name, namespace, uid, labels: labels ?? {} },
    spec: { nodeName: pod.spec.nodeName ?? '' },
    status: {
      phase: pod.status?.phase ?? '',
      conditions: (pod.status?.conditions ?? []).map(({ type, status }) => ({ type, status })),
    },
  };
}
type Counts = Map<string, number>;

/** A kubelet's Pods API on a unix socket, serving what `pods` holds and streaming each change to its watchers. */
async function fakeKubelet(socket: string) {
  const pods = new Map<string, object>();
  const streams = new Set<ServerWritableStream<object, object>>();
  const { server } = await serveGrpc(`unix://${socket}`, (s) =>
    s.addService(service(PROTO_FILES.kubeletPods, 'v1alpha1.Pods'), {
      WatchPods: (call: ServerWritableStream<object, object>) => {
        for (const pod of pods.values()) call.write({ type: 'ADDED', pod });
        call.write({ type: 'INITIAL_SYNC_COMPLETE' });
        streams.add(call);
        call.on('cancelled', () => streams.delete(call));
      },
      ListPods: (_call: unknown, done: (err: null, value: object) => void) =>
        done(null, { pods: [...pods.values()] }),
    }),
  );
  return {
    event(type: 'ADDED' | 'MODIFIED' | 'DELETED', apiPod: Pod): void {
      const pod = kubeletPod(apiPod);
      if (type === 'DELETED') pods.delete(apiPod.metadata.uid);
      else pods.set(apiPod.metadata.uid, pod);
      for (const s of streams) s.write({ type, pod });
    },
    stop: async (): Promise<void> => {
      server.forceShutdown();
      await rm(socket, { force: true });
    },
  };
}

/** A node's pods, changed through the API server (and mirrored to its kubelet's Pods API when it has one). */
function podsOf(client: KubeClient, node: string, mirror?: Awaited<ReturnType<typeof fakeKubelet>>) {
  const path = `/api/v1/namespaces/${NAMESPACE}/pods`;
  const workload: string[] = [];
  let serial = 0;
  const readyStatus = {
    phase: 'Running',
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() }],
  };
  const create = async (name: string, app: string): Promise<void> => {
    const body = {
      metadata: { name, labels: { app } },
      spec: { nodeName: node, containers: [{ name: 'c', image: 'registry.invalid/pause:3.10' }] },
    };
    // Not `mirror?.event(…, await request)`: without a mirror that would skip the request itself.
    const pod = await client.request<Pod>('POST', path, { body, timeoutMs: 30_000 });
    mirror?.event('ADDED', pod);
  };
  const makeReady = async (name: string): Promise<void> => {
    const pod = await client.request<Pod>('PATCH', `${path}/${name}/status`, {
      body: { status: readyStatus },
      contentType: PatchType.merge,
      timeoutMs: 30_000,
    });
    mirror?.event('MODIFIED', pod);
  };
  const remove = async (name: string): Promise<void> => {
    const pod = await client.request<Pod>('DELETE', `${path}/${name}`, {
      query: { gracePeriodSeconds: 0 },
      timeoutMs: 30_000,
    });
    mirror?.event('DELETED', pod);
  };
  // The churn's steps in turn: create a workload pod, make it Ready, delete the oldest beyond WORKLOAD_PODS.
  const steps = [
    async () => {
      const name = `${node}-work-${++serial}`;
      await create(name, 'work');
      workload.push(name);
    },
    async () => makeReady(workload[workload.length - 1]!),
    async () => {
      if (workload.length > WORKLOAD_PODS) await remove(workload.shift()!);
      else await makeReady(workload[workload.length - 1]!);
    },
  ];
  let step = 0;
  return {
    /** The pod podReady requires, Ready. */
    async start(): Promise<void> {
      await create(`${node}-log-agent`, 'log-agent');
      await makeReady(`${node}-log-agent`);
    },
    async change(): Promise<void> {
      await steps[step++ % steps.length]!();
    },
  };
}

async function scrapeCounts(port: number): Promise<{ requests: Counts; events: Counts }> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text());
  const read = (metric: string): Counts => {
    const counts: Counts = new Map();
    for (const m of text.matchAll(new RegExp(`^${metric}\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
      const labels = Object.fromEntries(
        [...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]),
      );
      counts.set([labels.verb, labels.resource].filter(Boolean).join(' '), Number(m[2]));
    }
    return counts;
  };
  return {
    requests: read('nodecare_agent_api_requests_total'),
    events: read('nodecare_agent_api_watch_events_total'),
  };
}

const sum = (counts: Counts, match: (key: string) => boolean = () => true): number =>
  [...counts].filter(([k]) => match(k)).reduce((a, [, v]) => a + v, 0);
const diff = (after: Counts, before: Counts): Counts =>
  new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));

export async function measurePodSource(run: BenchRun, cluster: BenchCluster): Promise<void> {
  const { opts, rows, logDir, programs } = run;
  const { plane, client, observer } = cluster;
  const windowS = opts.podSourceSeconds;
  if (windowS === 0) return;
  say(
    `pods-api: two agents with a podReady extension, pods from the kubelet vs the API server (${windowS} s)`,
  );
  await client.request('POST', '/api/v1/namespaces', { body: { metadata: { name: NAMESPACE } } });
  // The API server's ServiceAccount admission wants the pods' account to exist (no controller-manager here).
  await client.request('POST', `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, {
    body: { metadata: { name: 'default' } },
  });
  const kubelet = await fakeKubelet(join(logDir, 'pods-api.sock'));
  const sources = [
    { source: 'kubelet', socket: join(logDir, 'pods-api.sock'), mirror: kubelet },
    { source: 'apiserver', socket: '', mirror: undefined },
  ] as const;
  try {
    const agents: Array<{
      source: string;
      program: Program;
      port: number;
      churn: ReturnType<typeof podsOf>;
    }> = [];
    for (const { source, socket, mirror } of sources) {
      const node = await createNode(client, `bench-pods-${source}`);
      const churn = podsOf(client, node.name, mirror);
      await churn.start();
      const registration = {
        probe: { podReady: { namespace: NAMESPACE, selector: { matchLabels: { app: 'log-agent' } } } },
      };
      await client.request('PATCH', `/api/v1/nodes/${node.name}`, {
        body: {
          metadata: { annotations: { 'extensions.nodecare.io/log-agent': JSON.stringify(registration) } },
        },
        contentType: PatchType.merge,
      });
      const program = startBinary(
        `agent-pods-${source}`,
        'agent',
        [
          `--kubeconfig=${plane.kubeconfigPath}`,
          `--node-name=${node.name}`,
          '--health-port=0',
          `--kubelet-pods-api-socket=${socket}`,
        ],
        logDir,
        { POD_NAME: `bench-agent-pods-${source}` },
      );
      programs.push(program);
      const started = await program.waitForLog('Started nodecare-agent', 60_000);
      const chosen = await program.waitForLog('podReady pod source chosen', 120_000);
      if (chosen.source !== source)
        throw new Error(
          `agent-pods-${source} read pods from ${String(chosen.source)} (see ${program.logPath})`,
        );
      if ((await observer.nodes.waitFor(node.name, ready, 180_000)) === undefined)
        throw new Error(`${node.name} did not turn Ready (see ${program.logPath})`);
      agents.push({ source, program, port: Number(started.port), churn });
    }
    const before = await Promise.all(agents.map((a) => scrapeCounts(a.port)));
    const t0 = performance.now();
    let changes = 0;
    while (performance.now() - t0 < windowS * 1000) {
      await Promise.all(agents.map((a) => a.churn.change()));
      changes++;
      await sleep(Math.max(0, t0 + changes * POD_CHANGE_EVERY_MS - performance.now()));
    }
    const seconds = (performance.now() - t0) / 1000;
    const after = await Promise.all(agents.map((a) => scrapeCounts(a.port)));
    const perHour = (n: number): number => Math.round((n * 3600) / seconds);
    const figures = agents.map((a, i) => {
      const requests = diff(after[i]!.requests, before[i]!.requests);
      const events = diff(after[i]!.events, before[i]!.events);
      const pods = (k: string): boolean => k.endsWith('pods');
      return {
        source: a.source,
        requestsPerHour: perHour(sum(requests)),
        podRequestsPerHour: perHour(sum(requests, pods)),
        eventsPerHour: perHour(sum(events)),
        podEventsPerHour: perHour(sum(events, pods)),
        startRequests: sum(before[i]!.requests),
        startPodRequests: sum(before[i]!.requests, pods),
        byKind: Object.fromEntries(requests),
      };
    });
    const [fromKubelet, fromApi] = figures as [(typeof figures)[0], (typeof figures)[0]];
    const line = (f: typeof fromKubelet): string =>
      `${f.requestsPerHour} requests/h (${f.podRequestsPerHour} for pods), ${f.eventsPerHour} watch events/h (${f.podEventsPerHour} pods)`;
    rows.push({
      id: 'pods-api',
      measure: `agent API cost per node per hour, podReady pods from the kubelet's Pods API (after) vs the API server (before); ${perHour(changes)} pod changes/h per node`,
      goal: 'after: no pod request or event',
      measured: `after: ${line(fromKubelet)}; before: ${line(fromApi)}; at start ${fromKubelet.startRequests} vs ${fromApi.startRequests} requests (${fromKubelet.startPodRequests} vs ${fromApi.startPodRequests} for pods); ${seconds.toFixed(0)} s window`,
      pass: fromKubelet.podRequestsPerHour === 0 && fromKubelet.podEventsPerHour === 0,
      load: load1(),
      values: {
        windowSeconds: seconds,
        podChangesPerHour: perHour(changes),
        ...Object.fromEntries(
          figures.flatMap((f) =>
            Object.entries(f).flatMap(([k, v]) =>
              k === 'source' ? [] : [[`${f.source}.${k}`, typeof v === 'object' ? JSON.stringify(v) : v]],
            ),
          ),
        ),
      },
    });
    await Promise.all(agents.map((a) => a.program.stop(5_000)));
  } finally {
    await kubelet.stop();
  }
}
