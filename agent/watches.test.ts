// The agent's on-demand watches against a loopback API server: the ResourceSlice watch runs only while a
// resourceSlices probe needs it, serves its node's slices, and says so when the API server does not serve the
// type at all (before Kubernetes 1.34) instead of reading it as "no slices"; the pods of podReady come from the
// kubelet's Pods API (a real gRPC server on a unix socket) where it is served, else from the API server.

import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../lib/testing.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { FakeApiServer } from '../lib/kube/testing.ts';
import { PROTO_FILES, service } from './probes/proto.ts';
import { serveGrpc, tempDir } from './probes/testing.ts';
import { AgentWatches, POD_DENIED_RETRY_MS, podsDeniedMessage, podSourceAtStart } from './watches.ts';

const SLICES = '/apis/resource.k8s.io/v1/resourceslices';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function watches(serveSlices: boolean) {
  const api = await FakeApiServer.start();
  if (serveSlices)
    api.serve(SLICES, [
      {
        metadata: { name: 'node-a-gpu', resourceVersion: '5' },
        spec: {
          driver: 'gpu.example.com',
          pool: { name: 'node-a', generation: 1, resourceSliceCount: 1 },
          devices: [{ name: 'gpu-0' }],
        },
      },
    ]);
  const errors: string[] = [];
  const w = new AgentWatches({
    client: api.client(),
    clock: new FakeClock(),
    nodeName: 'node-a',
    onChange: () => undefined,
    onError: (source) => void errors.push(source),
    onSkipped: () => undefined,
  });
  cleanups.push(async () => {
    await w.stop();
    await api.close();
  });
  return { api, w, errors };
}

async function until<T>(read: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await read();
    } catch (err) {
      if (i > 200) throw err;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

describe('AgentWatches ResourceSlices', () => {
  it('watches nothing until a probe asks, then its node’s slices (field selector spec.nodeName)', async () => {
    const { api, w } = await watches(true);
    expect(await w.resourceSlices()).toEqual([]);
    expect(api.requests.filter((r) => r.path.startsWith(SLICES))).toEqual([]);
    w.setWatches({ pods: false, resourceSlices: true });
    const slices = await until(() => w.resourceSlices());
    expect(slices).toMatchObject([
      { driver: 'gpu.example.com', pool: 'node-a', devices: [{ name: 'gpu-0' }] },
    ]);
    expect(api.requests.find((r) => r.path.startsWith(SLICES))?.query.get('fieldSelector')).toBe(
      'spec.nodeName=node-a',
    );
  });

  it('says the API server does not serve ResourceSlices, rather than answering "none"', async () => {
    const { w, errors } = await watches(false);
    w.setWatches({ pods: false, resourceSlices: true });
    await until(async () => {
      if (errors.length === 0) throw new Error('no error yet');
    });
    await expect(w.resourceSlices()).rejects.toThrow(/does not serve resource\.k8s\.io\/v1 ResourceSlices/);
  });
});

describe("AgentWatches pods: the kubelet's Pods API where its socket exists, else the API server (issue 23 item 6)", () => {
  const pod = (name: string, ready: boolean, uid = name) => ({
    metadata: { name, namespace: 'kube-system', uid, labels: { app: 'log-agent' } },
    spec: { nodeName: 'node-a' },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  });
  const selector = { matchLabels: { app: 'log-agent' } };

  /** A kubelet's Pods API on a unix socket: the initial list, then whatever the test pushes. */
  async function fakeKubelet(serveApi: boolean, initial: object[]) {
    const dir = await tempDir();
    const socket = join(dir, 'pods-api.sock');
    const streams: Array<ServerWritableStream<object, object>> = [];
    const { server } = await serveGrpc(`unix://${socket}`, (s) => {
      if (!serveApi) return; // a kubelet whose PodsAPI gate is off: every call UNIMPLEMENTED
      s.addService(service(PROTO_FILES.kubeletPods, 'v1alpha1.Pods'), {
        WatchPods: (call: ServerWritableStream<object, object>) => {
          for (const p of initial) call.write({ type: 'ADDED', pod: p });
          call.write({ type: 'INITIAL_SYNC_COMPLETE' });
          streams.push(call);
        },
        ListPods: (_call: unknown, done: (err: null, value: object) => void) => done(null, { pods: initial }),
      });
    });
    cleanups.push(async () => {
      server.forceShutdown();
      await rm(dir, { recursive: true, force: true });
    });
    return { socket, push: (event: object) => streams.forEach((s) => s.write(event)) };
  }

  async function podWatches(socket: string) {
    const api = await FakeApiServer.start();
    api.serve('/api/v1/pods', [
      { ...pod('from-api', true), metadata: { ...pod('from-api', true).metadata, resourceVersion: '3' } },
    ]);
    const sources: string[] = [];
    const w = new AgentWatches({
      client: api.client(),
      clock: new FakeClock(),
      nodeName: 'node-a',
      kubeletPodsSocket: socket,
      onPodSource: (source) => void sources.push(source),
      onChange: () => undefined,
      onError: () => undefined,
      onSkipped: () => undefined,
    });
    cleanups.push(async () => {
      await w.stop();
      await api.close();
    });
    return { api, w, sources };
  }

  it('reads them from the kubelet, follows its events, and asks the API server for no pod', async () => {
    const kubelet = await fakeKubelet(true, [pod('log-agent-a', true), pod('other', false)]);
    const { api, w, sources } = await podWatches(kubelet.socket);
    w.setWatches({ pods: true, resourceSlices: false });
    expect(await until(() => w.podsMatching('kube-system', selector))).toEqual([
      { name: 'log-agent-a', ready: true },
      { name: 'other', ready: false },
    ]);
    kubelet.push({ type: 'MODIFIED', pod: pod('log-agent-a', false) });
    await until(async () => {
      const pods = await w.podsMatching('kube-system', selector);
      if (pods[0]?.ready !== false) throw new Error('not yet');
    });
    kubelet.push({ type: 'DELETED', pod: pod('other', false) });
    await until(async () => {
      if ((await w.podsMatching('kube-system', selector)).length !== 1) throw new Error('not yet');
    });
    expect(sources).toEqual(['kubelet']);
    expect(api.requests.filter((r) => r.path.startsWith('/api/v1/pods'))).toEqual([]);
  });

  it('falls back to the API server (its own node only) when the kubelet does not serve the Pods API', async () => {
    const kubelet = await fakeKubelet(false, []);
    const { api, w, sources } = await podWatches(kubelet.socket);
    w.setWatches({ pods: true, resourceSlices: false });
    expect(await until(() => w.podsMatching('kube-system', selector))).toEqual([
      { name: 'from-api', ready: true },
    ]);
    expect(sources).toEqual(['kubelet', 'apiserver']);
    expect(api.requests.find((r) => r.path.startsWith('/api/v1/pods'))?.query.get('fieldSelector')).toBe(
      'spec.nodeName=node-a',
    );
  });

  it('uses the API server where the socket does not exist', async () => {
    const { w, sources } = await podWatches('/nonexistent/pods-api.sock');
    w.setWatches({ pods: true, resourceSlices: false });
    expect(await until(() => w.podsMatching('kube-system', selector))).toEqual([
      { name: 'from-api', ready: true },
    ]);
    expect(sources).toEqual(['apiserver']);
  });
});

describe('AgentWatches pods without either source: no Pods API and no right to list pods (issue 50 item 6)', () => {
  const selector = { matchLabels: { app: 'log-agent' } };

  /** An API server that refuses this agent the pod list (403, as RBAC does) until `allow()`. */
  async function refusingApiServer() {
    let allowed = false;
    const lists: string[] = [];
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/api/v1/pods') {
        res.writeHead(404).end();
        return;
      }
      if (url.searchParams.get('watch') !== 'true') lists.push(url.searchParams.get('fieldSelector') ?? '');
      if (!allowed) {
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            code: 403,
            reason: 'Forbidden',
            message:
              'pods is forbidden: User "system:serviceaccount:nodecare-system:nodecare-agent" cannot list resource "pods" in API group "" at the cluster scope',
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      if (url.searchParams.get('watch') === 'true') {
        res.flushHeaders();
        return; // held open
      }
      res.end(JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '1' }, items: [] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new KubeClient({ server: url, tls: {}, authHeaders: async () => ({}), source: 'test' });
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });
    return { client, lists, allow: () => (allowed = true) };
  }

  it('says at once, in the probe and once to its reporter, that it has no pod source; asks again 5 minutes later, and recovers once allowed', async () => {
    const api = await refusingApiServer();
    const clock = new FakeClock();
    const denials: boolean[] = [];
    const errors: string[] = [];
    const w = new AgentWatches({
      client: api.client,
      clock,
      nodeName: 'node-a',
      kubeletPodsSocket: '/nonexistent/pods-api.sock',
      onPodsDenied: (denied) => void denials.push(denied),
      onChange: () => undefined,
      onError: (source) => void errors.push(source),
      onSkipped: () => undefined,
    });
    cleanups.push(() => w.stop());
    w.setWatches({ pods: true, resourceSlices: false });
    const refusal = await until(async () => {
      try {
        await w.podsMatching('kube-system', selector);
      } catch (err) {
        if (denials.length > 0) return (err as Error).message;
      }
      throw new Error('not refused yet');
    });
    expect(refusal).toBe(
      "no pod source: add the component agent-kubelet-pods-api (the kubelet's Pods API is not at /nonexistent/pods-api.sock) or agent-pods-from-api-server (this agent may not list pods); docs/agent.md, podReady",
    );
    // A Lease message keeps 256 characters, with the probe's "probe failed: " before it.
    expect(
      `probe failed: ${podsDeniedMessage('/var/lib/kubelet/pods-api/pods-api.sock')}`.length,
    ).toBeLessThanOrEqual(256);
    expect(denials).toEqual([true]);
    expect(errors).toEqual([]); // not a watch failure retried with backoff: said once
    expect(api.lists).toEqual(['spec.nodeName=node-a']);
    // Not asked again at the reflector's backoff (30 s at most), only after POD_DENIED_RETRY_MS.
    await clock.advance(POD_DENIED_RETRY_MS - 1_000);
    expect(api.lists).toHaveLength(1);
    api.allow();
    await clock.advance(1_000);
    await until(async () => {
      if (denials.length < 2) throw new Error('not allowed yet');
    });
    expect(denials).toEqual([true, false]);
    expect(await w.podsMatching('kube-system', selector)).toEqual([]);
  });

  it.each([
    { socket: '/run/pods-api.sock', exists: true, source: 'kubelet' },
    { socket: '/run/pods-api.sock', exists: false, source: 'apiserver' },
    { socket: '', exists: false, source: 'apiserver' },
  ])('at start: socket $socket there $exists → $source (issue 50 item 11)', ({ socket, exists, source }) => {
    const start = podSourceAtStart(socket, () => exists);
    expect(start.source).toBe(source);
    if (source === 'apiserver' && socket !== '') expect(start.why).toContain('agent-pods-from-api-server');
  });
});
