// `kubectl nodecare explain <node>` reads that node and its Leases, not the whole cluster (issue 51 item 5;
// cli/node-read.ts), and answers exactly as the whole-cluster read does (what explain did before, and what
// `kubectl nodecare status` still does). On the real control plane: six nodes, two SystemExtensions and a node
// annotation, the Leases an agent writes (one Unhealthy, one owned by another Node), and ClusterHealth
// `cluster` with the roll-up counts. Every request explain makes goes through a recording client; the answers
// of the two reads are compared at the same instant, in JSON and in text. No agent or controller runs: the
// state holds still between the two reads.

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  buildLease,
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_NAMESPACE,
  type LeaseObject,
} from '../../api/index.ts';
import { NodeAnnotation } from '../../api/names.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import { analyze } from '../../cli/model.ts';
import { readNodeReport } from '../../cli/node-read.ts';
import { readSnapshot, type Client } from '../../cli/snapshot.ts';
import { policyOf, publishedPolicyOf } from '../../cli/verbs/common.ts';
import { explainView, renderExplainText } from '../../cli/verbs/explain.ts';
import { adminKubeConfig, createSystemExtension, uniqueName } from './helpers.ts';
import { applyBaseManifests } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);

const RUN = uniqueName('xn');
const NET = `${RUN}-net`; // critical SystemExtension on every node of the run
const LOGS = `${RUN}-logs`; // non-critical SystemExtension on every node of the run
const DNS = `${RUN}-dns`; // a node annotation on node 0 only
const NODES = Array.from({ length: 6 }, (_, i) => `${RUN}-n${i}`);
const VALUES = { 'lease-namespace': LEASE_NAMESPACE };
const HEALTH_PATH = '/apis/nodecare.io/v1alpha1/clusterhealths/cluster';

let kube: KubeClient;
const uids = new Map<string, string>();
/** ClusterHealth as it was before the test (restored after), undefined when there was none. */
let healthBefore: { status?: unknown } | undefined;

interface Recorded {
  method: string;
  path: string;
  query: Record<string, unknown>;
}

/** A real client to the real API server that records every request made through it. */
function recording(): { client: Client; requests: Recorded[] } {
  const requests: Recorded[] = [];
  const request = ((...args: Parameters<KubeClient['request']>) => {
    const [method, path, opts] = args;
    requests.push({ method, path, query: (opts?.query ?? {}) as Record<string, unknown> });
    return kube.request(...args);
  }) as KubeClient['request'];
  return { client: { request }, requests };
}

function lease(node: string, extension: string | undefined, state: string): LeaseObject {
  const now = new Date();
  return buildLease({
    node: { name: node, uid: uids.get(node)! },
    extension,
    holderIdentity: `agent-${node}`,
    leaseDurationSeconds: 3600,
    renewTime: now,
    bootId: 'boot-1',
    record: {
      state: state as 'Healthy',
      reason: state === 'Healthy' ? 'ProbeSucceeded' : 'ConnectionRefused',
      message: state === 'Healthy' ? 'ok' : 'connection refused',
      since: now.toISOString(),
    },
  });
}

async function putLease(body: LeaseObject): Promise<void> {
  const name = body.metadata.name!;
  const current = await kube
    .request<LeaseObject>('GET', leasesPath(LEASE_NAMESPACE, name))
    .catch(() => undefined);
  if (!current) await kube.request('POST', leasesPath(LEASE_NAMESPACE), { body });
  else
    await kube.request('PUT', leasesPath(LEASE_NAMESPACE, name), {
      body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion } },
    });
}

/** ClusterHealth `cluster` with these roll-up counts of the run's extensions (its other rows kept out). */
async function setHealth(failingNet: number): Promise<void> {
  const exists = await kube.request('GET', HEALTH_PATH).then(
    () => true,
    () => false,
  );
  if (!exists) {
    await kube.request('POST', '/apis/nodecare.io/v1alpha1/clusterhealths', {
      body: { apiVersion: 'nodecare.io/v1alpha1', kind: 'ClusterHealth', metadata: { name: 'cluster' } },
    });
  }
  const row = (name: string, unhealthy: number) => ({
    name,
    conditionType: 'EveryNodeReady',
    healthy: NODES.length - unhealthy,
    progressing: 0,
    unhealthy,
    unknown: 0,
  });
  const fresh = await kube.request<{ metadata: object; status?: Record<string, unknown> }>(
    'GET',
    HEALTH_PATH,
  );
  // The shared control plane keeps what earlier test files left: a controller's published policy (one run
  // with --node-selector makes explain read the whole cluster, rightly) and SystemExtensions that may select
  // these nodes too. This test's ClusterHealth says neither: no policy (the defaults), and no failing node for
  // any other SystemExtension.
  const { policy: _policy, ...kept } = fresh.status ?? {};
  const listed = await kube.request<{ items?: Array<{ metadata: { name: string } }> }>(
    'GET',
    '/apis/nodecare.io/v1alpha1/systemextensions',
  );
  const others = (listed.items ?? [])
    .map((sx) => sx.metadata.name)
    .filter((name) => name !== NET && name !== LOGS && name !== DNS);
  await kube.request('PUT', `${HEALTH_PATH}/status`, {
    body: {
      ...fresh,
      status: {
        ...kept,
        extensions: [
          row(DNS, 0),
          row(LOGS, 0),
          row(NET, failingNet),
          ...others.map((name) => row(name, 0)),
        ].sort((a, b) => (a.name < b.name ? -1 : 1)),
      },
    },
  });
}

/** explain's answer from the whole-cluster read (readSnapshot + analyze, as `status` reads). */
async function wholeAnswer(client: Client, node: string, now: number) {
  const { snapshot } = await readSnapshot(client, LEASE_NAMESPACE);
  const analysis = analyze(snapshot, policyOf(VALUES, publishedPolicyOf(snapshot).policy), now);
  const report = analysis.nodes.find((r) => r.name === node)!;
  return answer(explainView(report, analysis.tripped, [], 10, now), now);
}

function answer(view: ReturnType<typeof explainView>, now: number) {
  return { view, text: renderExplainText(view, now) };
}

/** explain's answer from the one-node read, and what that read asked the API server. */
async function nodeAnswer(node: string, now: number) {
  const { client, requests } = recording();
  const read = await readNodeReport(client, VALUES, node, now);
  return { ...answer(explainView(read.report, read.tripped, [], 10, now), now), read: read.read, requests };
}

/** What explain judged the whole-cluster read on, for a failure message: ClusterHealth's policy and rows, the SystemExtensions. */
async function readInputs(): Promise<string> {
  const health = await kube
    .request<{ status?: { policy?: unknown; extensions?: Array<{ name?: string }> } }>('GET', HEALTH_PATH)
    .catch(() => undefined);
  const listed = await kube
    .request<{ items?: Array<{ metadata: { name: string } }> }>(
      'GET',
      '/apis/nodecare.io/v1alpha1/systemextensions',
    )
    .catch(() => undefined);
  return JSON.stringify({
    policy: health?.status?.policy,
    rows: health?.status?.extensions?.map((r) => r.name),
    systemExtensions: listed?.items?.map((sx) => sx.metadata.name),
  });
}

const isNodeList = (r: Recorded): boolean => r.method === 'GET' && r.path === '/api/v1/nodes';
const isLeaseRequest = (r: Recorded): boolean => r.path.startsWith(leasesPath(LEASE_NAMESPACE));

beforeAll(async () => {
  await applyBaseManifests();
  kube = new KubeClient(await loadConnection(inject('kubeconfig')), { userAgent: 'explain-node-test' });
  healthBefore = await kube.request<{ status?: unknown }>('GET', HEALTH_PATH).catch(() => undefined);
  const selector = { matchLabels: { 'nodecare.io/explain-node-test': RUN } };
  const probe = { tcp: { host: '127.0.0.1', port: 1 } };
  await createSystemExtension(custom, NET, { nodeSelector: selector, probe });
  await createSystemExtension(custom, LOGS, { nodeSelector: selector, probe, critical: false });
  for (const [i, name] of NODES.entries()) {
    const created = await core.createNode({
      body: {
        metadata: {
          name,
          labels: { 'nodecare.io/explain-node-test': RUN },
          annotations: {
            // Bootstrapped on this boot: the node counts for the breaker.
            [NodeAnnotation.bootstrappedBootId]: 'boot-1',
            ...(i === 0 ? { [`${EXTENSION_ANNOTATION_PREFIX}${DNS}`]: JSON.stringify({ probe }) } : {}),
          },
        },
        status: {
          nodeInfo: { bootID: 'boot-1' } as never,
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
        },
      },
    });
    uids.set(name, created.metadata!.uid!);
  }
  for (const [i, name] of NODES.entries()) {
    await putLease(lease(name, undefined, 'Healthy'));
    await putLease(lease(name, NET, i === 0 ? 'Unhealthy' : 'Healthy'));
    // Node 1's logs Lease names no owner (the controller ignores it: OwnerMismatch).
    const logs = lease(name, LOGS, 'Healthy');
    if (i === 1) logs.metadata.ownerReferences = [];
    await putLease(logs);
  }
  await putLease(lease(NODES[0]!, DNS, 'Healthy'));
  await setHealth(1);
}, 120_000);

afterAll(async () => {
  const leases = await kube.request<{ items: LeaseObject[] }>('GET', leasesPath(LEASE_NAMESPACE));
  for (const l of leases.items.filter((l) => l.metadata.name?.includes(RUN)))
    await kube.request('DELETE', leasesPath(LEASE_NAMESPACE, l.metadata.name!)).catch(() => undefined);
  for (const name of NODES) await core.deleteNode({ name }).catch(() => undefined);
  for (const name of [NET, LOGS]) {
    await custom
      .deleteClusterCustomObject({
        group: 'nodecare.io',
        version: 'v1alpha1',
        plural: 'systemextensions',
        name,
      })
      .catch(() => undefined);
  }
  if (!healthBefore) await kube.request('DELETE', HEALTH_PATH).catch(() => undefined);
  else {
    const fresh = await kube.request<object>('GET', HEALTH_PATH);
    await kube.request('PUT', `${HEALTH_PATH}/status`, {
      body: { ...fresh, status: healthBefore.status ?? {} },
    });
  }
  await kube.close();
});

describe('kubectl nodecare explain <node> on the real control plane (issue 51 item 5)', () => {
  it('reads the node by name and its Leases by name, no list of nodes or Leases, and answers as the whole-cluster read does', async () => {
    for (const node of [NODES[0]!, NODES[1]!, NODES[4]!]) {
      const now = Date.now();
      const one = await nodeAnswer(node, now);
      const whole = await wholeAnswer(kube, node, now);
      expect(one.read, await readInputs()).toBe('node');
      expect(one.view).toEqual(whole.view);
      expect(one.text).toEqual(whole.text);
      // Only that node: the Node by name, never the list of nodes…
      expect(one.requests.filter(isNodeList)).toEqual([]);
      expect(one.requests.filter((r) => r.path.startsWith('/api/v1/nodes/'))).toEqual([
        { method: 'GET', path: `/api/v1/nodes/${node}`, query: {} },
      ]);
      // …and each of its Leases by its name: the heartbeat and one per SystemExtension or annotation.
      const leaseReads = one.requests.filter(isLeaseRequest);
      expect(leaseReads.every((r) => String(r.query.fieldSelector).startsWith('metadata.name='))).toBe(true);
      // (A SystemExtension of an earlier test file that still exists adds its name: a Lease of it would be
      // listed as no longer required.)
      const names = leaseReads.map((r) => String(r.query.fieldSelector).slice('metadata.name='.length));
      expect(names.every((n) => n.endsWith(`.${node}`))).toBe(true);
      expect(names).toEqual(
        expect.arrayContaining([
          `nodecare-agent.${node}`,
          `${NET}.${node}`,
          `${LOGS}.${node}`,
          ...(node === NODES[0] ? [`${DNS}.${node}`] : []),
        ]),
      );
      if (node !== NODES[0]) expect(names).not.toContain(`${DNS}.${node}`);
    }
  });

  it("shows what the node's Leases say: the Unhealthy one, the annotation's, and one that names no owner", async () => {
    const now = Date.now();
    const n0 = await nodeAnswer(NODES[0]!, now);
    expect(n0.view.extensions.map((e) => [e.name, e.state])).toEqual(
      expect.arrayContaining([
        [NET, 'Unhealthy'],
        [DNS, 'Healthy'],
      ]),
    );
    expect(n0.view.state).toBe('Degraded');
    const n1 = await nodeAnswer(NODES[1]!, now);
    expect(n1.view.ignoredLeases).toEqual([{ name: `${LOGS}.${NODES[1]}`, problem: 'OwnerMismatch' }]);
  });

  it('reads the whole cluster when the roll-up counts leave the breaker possible, and then shows it tripped', async () => {
    // Four of six nodes fail NET: the breaker trips (more than half, at least 3), and ClusterHealth says 4.
    for (const name of NODES.slice(1, 4)) await putLease(lease(name, NET, 'Unhealthy'));
    await setHealth(4);
    const now = Date.now();
    const one = await nodeAnswer(NODES[5]!, now);
    const whole = await wholeAnswer(kube, NODES[5]!, now);
    expect(one.read).toBe('cluster');
    expect(one.requests.filter(isNodeList).length).toBeGreaterThan(0);
    expect(one.view).toEqual(whole.view);
    expect(one.text).toEqual(whole.text);
    expect(one.view.extensions.find((e) => e.name === NET)?.breakerTripped).toBe(true);

    // The counts are what makes the one-node read safe: with a ClusterHealth that says 2 fail NET, explain
    // reads only the node and cannot see the breaker (the answer then differs from the whole read's).
    await setHealth(2);
    const undercounted = await nodeAnswer(NODES[5]!, now);
    expect(undercounted.read, await readInputs()).toBe('node');
    expect(undercounted.view.extensions.find((e) => e.name === NET)?.breakerTripped).toBe(false);
    expect(undercounted.view).not.toEqual(whole.view);
  });

  it('an unknown node: the same error as before, from one page of three node names', async () => {
    const { client, requests } = recording();
    await expect(readNodeReport(client, VALUES, `${RUN}-nope`, Date.now())).rejects.toThrow(
      new RegExp(
        `^node "${RUN}-nope" not found \\(kubectl nodecare status lists the nodes; e\\.g\\. [^,]+, [^,]+, [^,]+\\)$`,
      ),
    );
    expect(requests.filter(isNodeList).map((r) => r.query)).toEqual([{ limit: 3 }]);
  });
});
