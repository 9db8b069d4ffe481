// API priority and fairness as shipped (manifests/base/flowcontrol.yaml; docs/install.md, "Threat model"):
// the agent token of node A floods the API server while the agents of nodes B and C renew their heartbeat
// Leases at the agent's shortest cadence, with the agent's own Lease store and request deadline.
//
// The flood is what a hostile node can cheaply send: requests that hold a seat for as long as it likes
// (a request body sent a byte at a time: priority and fairness gives the seat before the handler reads the
// body, and admission judges the Lease only once it is all there), and tight loops of reads and denied
// creates. It runs on a control plane of its own whose API server has 30 seats in all (the flags below),
// so that a few dozen requests exhaust any level, the single level of earlier manifests included (on a
// default API server of 600 seats that one has 46 and may borrow more); the shipped objects are applied
// unchanged from manifests/base. The control plane is the test's own, so the flood cannot slow the other
// test files.
//
// Against a single level for all of nodecare (the manifests before issue 20 item 6) B's and C's renewals
// wait behind A's requests and time out; with the renewals in a level of their own, they all succeed.
// The second test measures the residual the threat model states: updates are what renewals are, so a
// flood of updates (denied by admission, but only after they hold a seat) shares the renewals' level.

import { setTimeout as sleep } from 'node:timers/promises';
import { Readable } from 'node:stream';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_NAMESPACE, agentLeaseName, buildLease, type LeaseObject } from '../../api/index.ts';
import { HEARTBEAT_RENEWALS_PER_DURATION } from '../../agent/heartbeat.ts';
import { KubeLeaseStore, namespacedLeases } from '../../lib/kube/leases.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { KubeErrorCode, isKubeError } from '../../lib/kube/errors.ts';
import { startControlPlane, type ControlPlane } from '../controlplane/controlplane.ts';
import { mintAgentTokenOnNode } from '../controlplane/tokens.ts';
import { eventually, uniqueName } from './helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BASE = join(ROOT, 'manifests', 'base');
const SYSTEM = 'nodecare-system';
/** 20 + 10 = 30 seats: every level's share is a few seats (the renewals' 2, the other agent requests' 1). */
const SERVER_FLAGS = ['--max-requests-inflight=20', '--max-mutating-requests-inflight=10'];
/**
 * How long A floods: longer than the API server's queue wait limit (a quarter of its 60 s request timeout), so
 * A's queued requests are seen to end in 429.
 */
const FLOOD_MS = 20_000;
/** The residual's flood: long enough for several renewals to time out. */
const UPDATE_FLOOD_MS = 10_000;
/** --heartbeat-duration-seconds=8, the shortest the agent accepts, renewed as often per duration as the agent does. */
const HEARTBEAT_SECONDS = 8;
const RENEW_EVERY_MS = (HEARTBEAT_SECONDS * 1000) / HEARTBEAT_RENEWALS_PER_DURATION;
/** The agent's --request-timeout-seconds default: a renewal slower than this is a failed renewal. */
const REQUEST_TIMEOUT_MS = 5_000;
/** Requests holding a seat by sending their body a byte a second. */
const SLOW_REQUESTS = 40;
/** Loops sending reads and denied creates back to back. */
const FAST_LOOPS = 40;

interface Identity {
  node: { name: string; uid: string };
  token: string;
  kubeconfig: string;
}

interface Renewal {
  ok: boolean;
  ms: number;
  error?: string;
}

interface FloodStats {
  /** Responses by HTTP status (0: no response before the flood ended). */
  statuses: Map<number, number>;
  /** Why requests got no response (the flood's end aborts those still waiting). */
  errors: Set<string>;
}

let plane: ControlPlane;
let core: CoreV1Api;
let ca = '';
let scratch = '';
const ids = new Map<'a' | 'b' | 'c', Identity>();
const dispatchers: Agent[] = [];

async function kubectl(args: string[]): Promise<string> {
  const out = await plane.kubectl(args);
  if (out.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${out.stderr}`);
  return out.stdout;
}

function dispatcher(connections: number): Agent {
  const agent = new Agent({ connect: { ca }, connections, allowH2: false });
  dispatchers.push(agent);
  return agent;
}

/** One request with `token`: its status, the priority level it was put in, and its duration. */
async function send(
  via: Agent,
  token: string,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  body: unknown,
  signal: AbortSignal,
): Promise<{ status: number; level: string | undefined }> {
  const res = await request(`${plane.server}${path}`, {
    method,
    dispatcher: via,
    signal,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : body instanceof Readable ? body : JSON.stringify(body),
  });
  await res.body.dump();
  const level = res.headers['x-kubernetes-pf-prioritylevel-uid'];
  return { status: res.statusCode, level: typeof level === 'string' ? level : undefined };
}

/** A body of `{` and then a space a second until `signal` aborts: the request holds its seat until then. */
function slowBody(signal: AbortSignal): Readable {
  return Readable.from(
    (async function* () {
      yield '{';
      while (!signal.aborted) {
        await sleep(1000, undefined, { signal }).catch(() => undefined);
        if (!signal.aborted) yield ' ';
      }
    })(),
  );
}

function leasePath(name?: string): string {
  return leasesPath(LEASE_NAMESPACE, name);
}

function heartbeat(id: Identity, resourceVersion?: string): LeaseObject {
  return buildLease({
    node: id.node,
    extension: undefined,
    holderIdentity: `agent-${id.node.name}`,
    leaseDurationSeconds: HEARTBEAT_SECONDS,
    renewTime: new Date(),
    bootId: 'boot-1',
    record: undefined,
    resourceVersion,
  });
}

/** `id`'s heartbeat Lease as it is now, read with its own token (before a flood: afterwards it is renewed from it). */
async function readHeartbeat(id: Identity): Promise<LeaseObject> {
  const client = new KubeClient(await loadConnection(id.kubeconfig), { userAgent: 'nodecare-apf-test' });
  try {
    return await namespacedLeases(new KubeLeaseStore(client), LEASE_NAMESPACE, REQUEST_TIMEOUT_MS).get(
      agentLeaseName(id.node.name),
    );
  } finally {
    await client.close();
  }
}

/**
 * Renews `id`'s heartbeat every RENEW_EVERY_MS until `until`, as agent/leases/writer.ts does: a PUT from the
 * last object written (`from` first), through the agent's own Lease store with the agent's deadline; a
 * conflict re-reads.
 */
async function renewUntil(id: Identity, until: number, from: LeaseObject): Promise<Renewal[]> {
  const client = new KubeClient(await loadConnection(id.kubeconfig), { userAgent: 'nodecare-apf-test' });
  const store = namespacedLeases(new KubeLeaseStore(client), LEASE_NAMESPACE, REQUEST_TIMEOUT_MS);
  const renewals: Renewal[] = [];
  let last = from;
  let conflicts = 0;
  try {
    do {
      const started = Date.now();
      try {
        last = await store.replace(heartbeat(id, last.metadata.resourceVersion));
        renewals.push({ ok: true, ms: Date.now() - started });
        conflicts = 0;
      } catch (err) {
        renewals.push({
          ok: false,
          ms: Date.now() - started,
          error: isKubeError(err) ? `${err.status} ${err.code}` : String(err),
        });
        if (isKubeError(err, KubeErrorCode.Conflict) && ++conflicts <= 5) {
          // Written meanwhile (a renewal that timed out here ran later): re-read and retry at once.
          last = await store.get(agentLeaseName(id.node.name)).catch(() => last);
          continue;
        }
      }
      if (Date.now() >= until) break;
      await sleep(Math.max(0, started + RENEW_EVERY_MS - Date.now()));
    } while (Date.now() < until);
  } finally {
    await client.close();
  }
  return renewals;
}

/** The reads and denied creates of node A's token: its own Lease, every Pod, and B's Lease forged. */
function fastRequests(
  via: Agent,
  signal: AbortSignal,
): Array<() => Promise<{ status: number; level: string | undefined }>> {
  const a = ids.get('a')!;
  // B's Lease as node A would forge it: admission denies it, after priority and fairness gave it a seat.
  const forged = heartbeat(ids.get('b')!);
  forged.metadata.name = `${forged.metadata.name}-forged`;
  return [
    () => send(via, a.token, 'GET', leasePath(agentLeaseName(a.node.name)), undefined, signal),
    () => send(via, a.token, 'GET', '/api/v1/pods?limit=500', undefined, signal),
    () => send(via, a.token, 'POST', leasePath(), forged, signal),
  ];
}

/**
 * What node A's token sends for `durationMs`: `slow` requests that hold their seats (made by `slowRequest`), and
 * FAST_LOOPS loops of reads and denied creates (when `fast`).
 */
async function flood(
  slowRequest: (signal: AbortSignal) => { method: 'POST' | 'PUT'; path: string; body: Readable },
  fast: boolean,
  durationMs: number,
): Promise<FloodStats> {
  const a = ids.get('a')!;
  const stats: FloodStats = { statuses: new Map(), errors: new Set() };
  const count = (status: number): void => {
    stats.statuses.set(status, (stats.statuses.get(status) ?? 0) + 1);
  };
  const via = dispatcher(SLOW_REQUESTS + FAST_LOOPS + 8);
  const stop = AbortSignal.timeout(durationMs);
  const record = async (attempt: Promise<{ status: number; level: string | undefined }>): Promise<void> => {
    try {
      count((await attempt).status);
    } catch (err) {
      count(0);
      stats.errors.add(String((err as Error).message ?? err).slice(0, 120));
      // A request refused on the spot (no I/O) must not turn the loop into a microtask spin.
      await sleep(1);
    }
  };
  const slow = Array.from({ length: SLOW_REQUESTS }, async () => {
    const { method, path, body } = slowRequest(stop);
    await record(send(via, a.token, method, path, body, stop));
  });
  const requests = fastRequests(via, stop);
  const loops = Array.from({ length: fast ? FAST_LOOPS : 0 }, async (_, i) => {
    for (let n = i; !stop.aborted; n++) await record(requests[n % requests.length]!());
  });
  await Promise.all([...slow, ...loops]);
  return stats;
}

/** Values of an API server metric (only series with label `where[0]="where[1]"`), summed by the label `by`. */
async function metric(name: string, by: string, where?: [string, string]): Promise<Map<string, number>> {
  const text = await eventually(
    async () => {
      const res = await request(`${plane.server}/metrics`, {
        dispatcher: dispatchers[0],
        headers: { authorization: `Bearer ${plane.adminToken}` },
      });
      const body = await res.body.text();
      return res.statusCode === 200 ? body : undefined;
    },
    { what: 'the API server metrics' },
  );
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (where && !line.includes(`${where[0]}="${where[1]}"`)) continue;
    const label = new RegExp(`[{,]${by}="([^"]*)"`).exec(line)?.[1] ?? '';
    sums.set(label, (sums.get(label) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return sums;
}

function delta(after: Map<string, number>, before: Map<string, number>, key: string): number {
  return (after.get(key) ?? 0) - (before.get(key) ?? 0);
}

/** The priority level's name for a UID the API server reported. */
async function levelNames(): Promise<Map<string, string>> {
  const list = JSON.parse(await kubectl(['get', 'prioritylevelconfigurations', '-o', 'json'])) as {
    items: Array<{ metadata: { name: string; uid: string } }>;
  };
  return new Map(list.items.map((pl) => [pl.metadata.uid, pl.metadata.name]));
}

function summary(renewals: Renewal[]): string {
  const failed = renewals.filter((r) => !r.ok);
  const slowest = Math.max(0, ...renewals.map((r) => r.ms));
  return `${renewals.length - failed.length} of ${renewals.length} renewals ok, slowest ${slowest} ms${
    failed.length ? `, failures: ${failed.map((f) => `${f.error} after ${f.ms} ms`).join('; ')}` : ''
  }`;
}

beforeAll(async () => {
  plane = await startControlPlane({
    scheduler: false,
    controllerManager: false,
    auditPolicy: false,
    apiserverFlags: SERVER_FLAGS,
  });
  scratch = mkdtempSync(join(tmpdir(), 'nodecare-apf-'));
  ca = readFileSync(join(plane.dir, 'pki', 'apiserver.crt'), 'utf8');
  dispatcher(4);
  // The shipped objects, unchanged: what the agents' requests are classified by and what they are allowed.
  await kubectl([
    'apply',
    '--server-side',
    ...['namespaces', 'serviceaccounts', 'rbac-agent', 'admission-agent-leases', 'flowcontrol'].flatMap(
      (file) => ['-f', join(BASE, `${file}.yaml`)],
    ),
  ]);
  const admin = new KubeConfig();
  admin.loadFromFile(plane.kubeconfigPath);
  core = admin.makeApiClient(CoreV1Api);
  for (const key of ['a', 'b', 'c'] as const) {
    const name = uniqueName(`apf-${key}`);
    const node = await core.createNode({ body: { metadata: { name } } });
    // The Pod the agent token is bound to (as the DaemonSet's would be), so the token carries the node name.
    const { token } = await mintAgentTokenOnNode(admin, {
      namespace: SYSTEM,
      nodeName: name,
      podName: `agent-${name}`,
    });
    const doc = JSON.parse(readFileSync(plane.kubeconfigPath, 'utf8')) as {
      users: Array<{ user: Record<string, unknown> }>;
    };
    for (const user of doc.users) user.user = { token };
    const kubeconfig = join(scratch, `${key}.kubeconfig`);
    writeFileSync(kubeconfig, JSON.stringify(doc), { mode: 0o600 });
    ids.set(key, { node: { name, uid: node.metadata!.uid! }, token, kubeconfig });
  }
  // Each agent creates its heartbeat Lease, once the admission policy is in force (it denies A's forgeries).
  const via = dispatcher(4);
  for (const id of ids.values()) {
    await eventually(
      async () => {
        const { status } = await send(
          via,
          id.token,
          'POST',
          leasePath(),
          heartbeat(id),
          AbortSignal.timeout(5000),
        );
        return status === 201 || status === 409 || undefined;
      },
      { what: `the heartbeat Lease of ${id.node.name} created` },
    );
  }
  const a = ids.get('a')!;
  await eventually(
    async () => {
      const forged = heartbeat(ids.get('b')!);
      forged.metadata.name = `${forged.metadata.name}-forged`;
      const { status } = await send(via, a.token, 'POST', leasePath(), forged, AbortSignal.timeout(5000));
      return status === 403 || undefined;
    },
    { what: 'the lease admission policy in force' },
  );
}, 180_000);

afterAll(async () => {
  await Promise.all(dispatchers.map((d) => d.destroy()));
  await plane?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('API priority and fairness as shipped, one agent token flooding', () => {
  it("does not starve the other agents' Lease renewals, and A's flood is throttled in a level of its own", async () => {
    const b = ids.get('b')!;
    const c = ids.get('c')!;
    // The level a renewal is put in, as the API server reports it.
    const renewal = await send(
      dispatcher(1),
      b.token,
      'PUT',
      leasePath(agentLeaseName(b.node.name)),
      heartbeat(b, (await readHeartbeat(b)).metadata.resourceVersion),
      AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    );
    expect(renewal.status).toBe(200);
    expect(renewal.level, 'a renewal is classified').toBeDefined();
    const names = await levelNames();
    const renewalLevel = names.get(renewal.level!) ?? renewal.level!;
    // Where the API server puts each kind of request of A's flood (the response names the level).
    const floodLevels = new Set<string>();
    for (const kind of fastRequests(dispatcher(1), AbortSignal.timeout(REQUEST_TIMEOUT_MS))) {
      const { status, level } = await kind();
      expect(status, 'a read or a denied create').toBeOneOf([200, 403, 404]);
      floodLevels.add(names.get(level ?? '') ?? `${level}`);
    }
    const [fromB, fromC] = await Promise.all([readHeartbeat(b), readHeartbeat(c)]);
    const rejectedBefore = await metric('apiserver_flowcontrol_rejected_requests_total', 'priority_level');
    const until = Date.now() + FLOOD_MS;
    const [stats, renewalsB, renewalsC, queued] = await Promise.all([
      flood((signal) => ({ method: 'POST', path: leasePath(), body: slowBody(signal) }), true, FLOOD_MS),
      renewUntil(b, until, fromB),
      renewUntil(c, until, fromC),
      // Halfway through: who waits in a queue.
      sleep(FLOOD_MS / 2).then(() =>
        metric('apiserver_flowcontrol_current_inqueue_requests', 'priority_level'),
      ),
    ]);
    const rejectedAfter = await metric('apiserver_flowcontrol_rejected_requests_total', 'priority_level');
    const rejected = (level: string): number => delta(rejectedAfter, rejectedBefore, level);
    const reasons = await Promise.all(
      [...floodLevels].map(async (level) => [
        level,
        ...(await metric('apiserver_flowcontrol_rejected_requests_total', 'reason', [
          'priority_level',
          level,
        ])),
      ]),
    );
    const seats = await metric('apiserver_flowcontrol_nominal_limit_seats', 'priority_level');
    const report =
      `seats ${JSON.stringify([...seats])}\nB: ${summary(renewalsB)}\nC: ${summary(renewalsC)}\n` +
      `A's flood (levels ${[...floodLevels].join(', ')}; renewals: ${renewalLevel}): responses ` +
      `${JSON.stringify([...stats.statuses])} ${JSON.stringify([...stats.errors])}; queued halfway ` +
      `${JSON.stringify([...queued])}; rejected ${JSON.stringify([...names.values()].map((n) => [n, rejected(n)]))}, by reason since start ${JSON.stringify(reasons)}`;
    console.info(report);

    // Every renewal of B and C succeeded within the agent's deadline, at the agent's cadence.
    const expected = Math.floor(FLOOD_MS / RENEW_EVERY_MS) - 1;
    for (const renewals of [renewalsB, renewalsC]) {
      expect(
        renewals.filter((r) => !r.ok),
        report,
      ).toEqual([]);
      expect(renewals.length, report).toBeGreaterThanOrEqual(expected);
    }
    // A's flood landed in another level than the renewals, and that level held it back: queued halfway
    // through, then rejected with 429 (its queue wait limit); the renewals' level neither queued nor
    // rejected anything.
    expect(floodLevels, report).not.toContain(renewalLevel);
    expect(stats.statuses.get(429) ?? 0, report).toBeGreaterThan(0);
    const floodQueued = [...floodLevels].reduce((sum, level) => sum + (queued.get(level) ?? 0), 0);
    expect(floodQueued, report).toBeGreaterThan(0);
    expect(queued.get(renewalLevel) ?? 0, report).toBe(0);
    expect(
      [...floodLevels].reduce((sum, level) => sum + rejected(level), 0),
      report,
    ).toBeGreaterThan(0);
    expect(rejected(renewalLevel), report).toBe(0);
  });

  it('the residual: a flood of updates shares the renewals level, and the renewals recover when it ends', async () => {
    const b = ids.get('b')!;
    const c = ids.get('c')!;
    const a = ids.get('a')!;
    // Node A "renews" node B's heartbeat Lease: admission denies it, after it was given a seat in the level of
    // renewals (one flow: every agent is the same user).
    const names = await levelNames();
    const forged = await send(
      dispatcher(1),
      a.token,
      'PUT',
      leasePath(agentLeaseName(b.node.name)),
      heartbeat(b, (await readHeartbeat(b)).metadata.resourceVersion),
      AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    );
    expect(forged.status).toBe(403);
    expect(names.get(forged.level ?? '')).toBe('nodecare-agent-renewals');
    // The same, slowly: each holds its seat until the flood ends.
    const [fromB, fromC] = await Promise.all([readHeartbeat(b), readHeartbeat(c)]);
    const until = Date.now() + UPDATE_FLOOD_MS;
    const [stats, renewalsB, renewalsC] = await Promise.all([
      flood(
        (signal) => ({ method: 'PUT', path: leasePath(agentLeaseName(b.node.name)), body: slowBody(signal) }),
        false,
        UPDATE_FLOOD_MS,
      ),
      renewUntil(b, until, fromB),
      renewUntil(c, until, fromC),
    ]);
    const report = `B: ${summary(renewalsB)}\nC: ${summary(renewalsC)}\nA's ${SLOW_REQUESTS} slow updates: ${JSON.stringify([...stats.statuses])} ${JSON.stringify([...stats.errors])}`;
    console.info(report);
    // What docs/install.md states: while they hold the level's seats, renewals fail (if this stops holding,
    // update the threat model)…
    expect([...renewalsB, ...renewalsC].filter((r) => !r.ok).length, report).toBeGreaterThan(0);
    // …and only while they do: within one renewal period after it, each renews again.
    const after = await Promise.all(
      [b, c].map(async (id) => renewUntil(id, Date.now() + RENEW_EVERY_MS, await readHeartbeat(id))),
    );
    for (const renewals of after)
      expect(
        renewals.some((r) => r.ok),
        summary(renewals),
      ).toBe(true);
  });
});
