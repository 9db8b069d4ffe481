// The controller-only benchmark's recording sink (bench/controller-only/sink.ts) speaks the API the way the
// controller relies on: paginated lists on one snapshot, watches that resume from a resourceVersion, writes
// refused on a stale one, patches applied as the API server applies them. Checked here with the controller's own
// client, so that the benchmark measures the controller and not a sink that answers differently.

import { afterEach, describe, expect, it } from 'vitest';
import { LEASE_NAMESPACE } from '../../api/index.ts';
import { linearFit } from '../../bench/controller-only/run.ts';
import { mergePatch, Sink, strategicStatusPatch } from '../../bench/controller-only/sink.ts';
import { parseOptions } from '../../bench/options.ts';
import { KubeClient, PatchType, type WatchEvent } from '../../lib/kube/client.ts';
import { KubeErrorCode } from '../../lib/kube/errors.ts';

const LEASES = `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`;
type Obj = { metadata: { name: string; resourceVersion: string; labels?: Record<string, string> } } & Record<
  string,
  unknown
>;

let sink: Sink | undefined;
let client: KubeClient | undefined;
afterEach(async () => {
  sink?.stop();
  await client?.close();
  sink = undefined;
  client = undefined;
});

async function start(nodes: number, extensions: number): Promise<{ sink: Sink; client: KubeClient }> {
  sink = new Sink({
    cmd: 'init',
    nodes,
    extensions,
    cohort: 1,
    heartbeatDurationSeconds: 40,
    extensionRenewSeconds: 120,
  });
  const port = await sink.listen();
  client = new KubeClient({
    server: `http://127.0.0.1:${port}`,
    tls: {},
    authHeaders: async () => ({}),
    source: 'test',
  });
  return { sink, client };
}

describe('mergePatch and strategicStatusPatch', () => {
  it('merges objects, deletes on null, replaces lists (RFC 7386)', () => {
    expect(
      mergePatch(
        { metadata: { labels: { a: '1', b: '2' } }, spec: { taints: [{ key: 'x' }, { key: 'y' }] } },
        { metadata: { labels: { b: null, c: '3' } }, spec: { taints: [{ key: 'z' }] } },
      ),
    ).toEqual({ metadata: { labels: { a: '1', c: '3' } }, spec: { taints: [{ key: 'z' }] } });
  });

  it('merges status.conditions by type and keeps the others', () => {
    const node = {
      status: { conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { bootID: 'b' } },
    };
    const once = strategicStatusPatch(node, {
      status: { conditions: [{ type: 'ExtensionsReady', status: 'False', reason: 'A' }] },
    });
    const twice = strategicStatusPatch(once, {
      status: { conditions: [{ type: 'ExtensionsReady', status: 'True', reason: 'B' }] },
    });
    expect(twice).toEqual({
      status: {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'ExtensionsReady', status: 'True', reason: 'B' },
        ],
        nodeInfo: { bootID: 'b' },
      },
    });
  });
});

describe('linearFit', () => {
  it('fits a line and says how well (R²); needs two distinct sizes', () => {
    const fit = linearFit([
      [10_000, 210],
      [20_000, 310],
      [50_000, 610],
    ]);
    expect(fit?.slope).toBeCloseTo(0.01, 9);
    expect(fit?.intercept).toBeCloseTo(110, 6);
    expect(fit?.r2).toBeCloseTo(1, 9);
    expect(linearFit([[10_000, 1]])).toBeUndefined();
    expect(
      linearFit([
        [10_000, 1],
        [10_000, 2],
      ]),
    ).toBeUndefined();
  });
});

describe('bench options with --controller-only', () => {
  it('takes a comma list of sizes and refuses a bad one with the reason', () => {
    expect(parseOptions(['--controller-only'])?.controllerOnlySizes).toEqual([10_000, 20_000, 50_000]);
    expect(parseOptions(['--controller-only', '--nodes', '50000'])?.controllerOnlySizes).toEqual([50_000]);
    expect(parseOptions(['--controller-only', '--smoke'])?.controllerOnlySizes).toEqual([200, 400]);
    expect(() => parseOptions(['--controller-only', '--nodes', '10000,abc'])).toThrow(
      /--nodes: "10000,abc" is not a comma list of integers in 100\.\.100000/,
    );
    expect(() => parseOptions(['--nodes', '50000'])).toThrow(
      /--nodes: "50000" is not an integer in 10\.\.10000/,
    );
  });
});

describe('the recording sink', () => {
  it('lists a collection in pages of one snapshot, even while renewals change it', async () => {
    const { sink, client } = await start(30, 2);
    sink.setRenewals(true);
    const names = new Set<string>();
    let token: string | undefined;
    const versions = new Set<string>();
    do {
      const page = await client.get<{
        metadata: { resourceVersion: string; continue?: string };
        items: Obj[];
      }>(LEASES, { query: { limit: 7, continue: token } });
      for (const item of page.items) names.add(item.metadata.name);
      versions.add(page.metadata.resourceVersion);
      token = page.metadata.continue;
      await new Promise((r) => setTimeout(r, 120)); // a renewal tick between pages
    } while (token);
    expect(names.size).toBe(30 * 3);
    expect(versions.size).toBe(1);
  });

  it('applies a node patch with its resourceVersion, refuses a stale one with 409, and streams the result', async () => {
    const { client } = await start(3, 1);
    const list = await client.get<{ metadata: { resourceVersion: string }; items: Obj[] }>('/api/v1/nodes');
    const node = list.items[0]!;
    const events: Array<WatchEvent<Obj>> = [];
    const abort = new AbortController();
    const watching = client.watch<Obj>(
      '/api/v1/nodes',
      { resourceVersion: list.metadata.resourceVersion },
      (e) => void events.push(e),
      abort.signal,
    );
    const patched = await client.request<Obj & { spec: { taints: unknown[] } }>(
      'PATCH',
      `/api/v1/nodes/${node.metadata.name}`,
      {
        body: {
          metadata: {
            resourceVersion: node.metadata.resourceVersion,
            labels: { 'nodecare.io/status': 'healthy' },
          },
          spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] },
        },
        contentType: PatchType.merge,
      },
    );
    expect(patched.metadata.labels?.['nodecare.io/status']).toBe('healthy');
    expect(patched.metadata.labels?.['kubernetes.io/os']).toBe('linux');
    expect(patched.spec.taints).toEqual([{ key: 'k', effect: 'NoSchedule' }]);
    expect(Number(patched.metadata.resourceVersion)).toBeGreaterThan(Number(node.metadata.resourceVersion));
    await expect(
      client.request('PATCH', `/api/v1/nodes/${node.metadata.name}/status`, {
        body: { metadata: { resourceVersion: node.metadata.resourceVersion }, status: { conditions: [] } },
        contentType: PatchType.strategic,
      }),
    ).rejects.toMatchObject({ code: KubeErrorCode.Conflict });
    // The watch from the list's version sees the write (and nothing for the refused one).
    for (let i = 0; i < 100 && events.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await watching;
    expect(events.map((e) => [e.type, e.object.metadata.resourceVersion])).toEqual([
      ['MODIFIED', patched.metadata.resourceVersion],
    ]);
  });

  it("keeps the metadata a Node's status patch carries and drops its spec, as the API server's Node status strategy", async () => {
    const { client } = await start(1, 1);
    const node = (await client.get<{ items: Obj[] }>('/api/v1/nodes')).items[0]!;
    const patched = await client.request<
      Obj & { spec?: { taints?: unknown[] }; status: { conditions: Array<{ type: string }> } }
    >('PATCH', `/api/v1/nodes/${node.metadata.name}/status`, {
      body: {
        metadata: {
          resourceVersion: node.metadata.resourceVersion,
          labels: { 'nodecare.io/status': 'held' },
        },
        spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] },
        status: { conditions: [{ type: 'ExtensionsReady', status: 'False' }] },
      },
      contentType: PatchType.strategic,
    });
    expect(patched.metadata.labels?.['nodecare.io/status']).toBe('held');
    expect(patched.metadata.labels?.['kubernetes.io/os']).toBe('linux');
    expect(patched.spec?.taints ?? []).toEqual([]);
    expect(patched.status.conditions.map((c) => c.type)).toContain('ExtensionsReady');
    const read = await client.get<Obj>(`/api/v1/nodes/${node.metadata.name}`);
    expect(read.metadata.labels?.['nodecare.io/status']).toBe('held');
  });

  it("answers a path it does not serve with 404 and counts it, and leases are the agents' to write", async () => {
    const { sink, client } = await start(2, 1);
    await expect(client.get('/apis/resource.k8s.io/v1')).rejects.toMatchObject({
      code: KubeErrorCode.NotFound,
    });
    const lease = (await client.get<{ items: Obj[] }>(LEASES)).items[0]!;
    await expect(
      client.request('PATCH', `${LEASES}/${lease.metadata.name}`, { body: {}, contentType: PatchType.merge }),
    ).rejects.toMatchObject({ status: 405 });
    expect(sink.snapshotStats().unserved).toEqual({ 'GET /apis/resource.k8s.io/v1': 1 });
  });

  it('ends a watch at its timeoutSeconds and keeps streaming renewals to the others', async () => {
    const { sink, client } = await start(20, 1);
    sink.setRenewals(true);
    const list = await client.get<{ metadata: { resourceVersion: string } }>(LEASES);
    const from = { resourceVersion: list.metadata.resourceVersion };
    const abort = new AbortController();
    let longEvents = 0;
    const long = client.watch(LEASES, from, () => void longEvents++, abort.signal);
    let shortEvents = 0;
    const started = Date.now();
    await client.watch(LEASES, { ...from, timeoutSeconds: 1 }, () => void shortEvents++, abort.signal);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(shortEvents).toBeGreaterThan(0);
    // Renewal ticks after the end write to the open watch only (a write after the end would throw here).
    const before = longEvents;
    await new Promise((r) => setTimeout(r, 500));
    expect(longEvents).toBeGreaterThan(before);
    abort.abort();
    await long;
  });
});
