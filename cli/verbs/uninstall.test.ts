// uninstall() against a narrow fake of the one client method it uses, for the paths the real control plane
// cannot be made to take on demand: workload pods that do not go away, a conflict on a node patch, and
// something written again behind it. The whole command against a real API server is
// test/integration/install.test.ts.

import { describe, expect, it } from 'vitest';
import { DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP, NODE_CONDITION_TYPE } from '../../api/index.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { DEFAULT_TAINT_KEYS, type CleanupNode } from '../cleanup.ts';
import {
  uninstall,
  uninstallConfig,
  uninstallVerb,
  type UninstallConfig,
  type UninstallDeps,
} from './uninstall.ts';

const config: UninstallConfig = {
  namespace: 'nodecare-system',
  leaseNamespace: 'nodecare-leases',
  taintKeys: [...DEFAULT_TAINT_KEYS],
  leaderElectionName: 'nodecare-controller',
  keepWorkloads: false,
  waitTimeoutMs: 3_000,
  dryRun: false,
  confirmed: true,
};

interface Call {
  method: string;
  path: string;
  body?: unknown;
  query?: Record<string, unknown>;
}

/** A fake API: nodes and leases in memory, scripted pods, and an optional conflict on the first node patch. */
function fakeApi(options: { pods?: () => string[]; conflictOnce?: boolean; leaseReappears?: boolean } = {}) {
  const calls: Call[] = [];
  let node: CleanupNode = {
    metadata: {
      name: 'n1',
      resourceVersion: '1',
      labels: { 'nodecare.io/status': 'healthy' },
      annotations: { 'nodecare.io/bootstrapped-boot-id': 'b' },
    },
    spec: { taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] },
    status: { conditions: [{ type: 'Ready' }, { type: NODE_CONDITION_TYPE }] },
  };
  let leases = ['ext.n1', 'nodecare-agent.n1'];
  let conflict = options.conflictOnce ?? false;
  const notFound = (): KubeError => new KubeError(KubeErrorCode.NotFound, 404, 'not found');
  const request = async <T>(
    method: string,
    path: string,
    opts: { body?: unknown; query?: Record<string, unknown> } = {},
  ): Promise<T> => {
    calls.push({ method, path, body: opts.body, query: opts.query });
    const reply = (value: unknown): T => value as T;
    if (path.endsWith('/pods'))
      return reply({ items: (options.pods?.() ?? []).map((name) => ({ metadata: { name } })) });
    if (path === '/api/v1/nodes') return reply({ items: [structuredClone(node)] });
    if (path === '/api/v1/nodes/n1' && method === 'GET') return reply(structuredClone(node));
    if (path === '/api/v1/nodes/n1' && method === 'PATCH') {
      if (conflict) {
        conflict = false;
        node = { ...node, metadata: { ...node.metadata, resourceVersion: '2' } };
        throw new KubeError(KubeErrorCode.Conflict, 409, 'conflict');
      }
      node = { ...node, metadata: { name: 'n1', resourceVersion: '3' }, spec: { taints: [] } };
      return reply(node);
    }
    if (path === '/api/v1/nodes/n1/status') {
      node = { ...node, status: { conditions: [{ type: 'Ready' }] } };
      return reply(node);
    }
    if (path.endsWith('/nodecare-leases/leases') && method === 'GET') {
      // A Lease in the namespace that is not nodecare's (no role label): only a list without the selector
      // returns it.
      const selected = opts.query?.labelSelector === 'nodecare.io/role in (agent,extension)';
      return reply({
        items: [...leases, ...(selected ? [] : ['not-nodecare'])].map((name) => ({ metadata: { name } })),
      });
    }
    if (path.includes('/nodecare-leases/leases/') && method === 'DELETE') {
      const name = path.split('/').pop()!;
      leases = leases.filter((l) => l !== name);
      if (options.leaseReappears && name === 'nodecare-agent.n1') leases = ['nodecare-agent.n1'];
      return reply({});
    }
    if (method === 'DELETE') throw notFound();
    throw notFound();
  };
  return { calls, request, node: () => node };
}

function deps(api: ReturnType<typeof fakeApi>): UninstallDeps & { lines: string[] } {
  const lines: string[] = [];
  let now = 0;
  return {
    client: { request: api.request as UninstallDeps['client']['request'] },
    out: (line) => lines.push(line),
    sleep: async (ms) => {
      now += ms;
    },
    now: () => now,
    lines,
  };
}

describe('uninstall', () => {
  it('conflict on the node patch → re-read and patched again from the fresh object', async () => {
    const api = fakeApi({ conflictOnce: true });
    const d = deps(api);
    expect(await uninstall(config, d)).toBe(0);
    const patches = api.calls.filter((c) => c.method === 'PATCH' && c.path === '/api/v1/nodes/n1');
    expect(
      patches.map((p) => (p.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion),
    ).toEqual(['1', '2']);
    expect(api.node().spec?.taints).toEqual([]);
    expect(d.lines.join('\n')).toContain('cleaned 1 node(s)');
  });

  it('workload pods that do not go → fails naming them, before touching any node', async () => {
    const api = fakeApi({ pods: () => ['nodecare-agent-x'] });
    await expect(uninstall(config, deps(api))).rejects.toThrow(
      /1 nodecare pod\(s\) still running after 3 s: nodecare-agent-x/,
    );
    expect(api.calls.some((c) => c.method === 'PATCH')).toBe(false);
  });

  it('pods that go after a while → waits, then cleans', async () => {
    let polls = 0;
    const api = fakeApi({ pods: () => (++polls < 3 ? ['nodecare-controller-y'] : []) });
    const d = deps(api);
    expect(await uninstall(config, d)).toBe(0);
    expect(d.lines).toContain('waiting for 1 nodecare pod(s) to terminate');
  });

  it('a Lease written again behind it (an agent still running) → exit 1 naming it', async () => {
    const api = fakeApi({ leaseReappears: true });
    const d = deps(api);
    expect(await uninstall(config, d)).toBe(1);
    expect(d.lines.join('\n')).toContain('Lease nodecare-leases/nodecare-agent.n1');
  });

  it("deletes only the Leases with nodecare's role label, never another Lease in that namespace", async () => {
    const api = fakeApi();
    expect(await uninstall(config, deps(api))).toBe(0);
    const deleted = api.calls.filter(
      (c) => c.method === 'DELETE' && c.path.includes('/nodecare-leases/leases/'),
    );
    expect(deleted.map((c) => c.path.split('/').pop())).toEqual(['ext.n1', 'nodecare-agent.n1']);
  });

  it('refuses a --taint-key Kubernetes owns before any I/O (issue 50 item 10): it would remove node.kubernetes.io/not-ready from every node', async () => {
    const errors: string[] = [];
    const code = await uninstallVerb.run(
      {
        kubeconfig: '/nonexistent/kubeconfig',
        namespace: 'nodecare-system',
        'lease-namespace': 'nodecare-leases',
        'taint-key': ['example.com/mine', 'node.kubernetes.io/not-ready'],
        'leader-election-name': 'nodecare-controller',
        'keep-workloads': false,
        'wait-timeout-seconds': 120,
        yes: true,
        'dry-run': false,
      },
      { out: () => undefined, err: (line) => void errors.push(line), env: {} },
    );
    expect(code).toBe(2);
    expect(errors).toEqual([
      expect.stringMatching(/--taint-key "node.kubernetes.io\/not-ready" has a prefix Kubernetes owns/),
    ]);
  });

  it('without --yes it is a dry run: it says so and how to do it', () => {
    const values = {
      namespace: 'nodecare-system',
      'lease-namespace': 'nodecare-leases',
      'taint-key': [],
      'leader-election-name': 'nodecare-controller',
      'keep-workloads': false,
      'wait-timeout-seconds': 120,
    };
    expect(uninstallConfig({ ...values, yes: false, 'dry-run': false }).dryRun).toBe(true);
    expect(uninstallConfig({ ...values, yes: true, 'dry-run': false }).dryRun).toBe(false);
    expect(uninstallConfig({ ...values, yes: true, 'dry-run': true }).dryRun).toBe(true);
  });

  it('a dry run without --yes writes nothing and ends saying how to do it', async () => {
    const api = fakeApi();
    const d = deps(api);
    expect(await uninstall({ ...config, dryRun: true, confirmed: false }, d)).toBe(0);
    expect(api.calls.filter((c) => c.method !== 'GET')).toEqual([]);
    expect(d.lines.at(-2)).toMatch(/nothing was changed \(run again with --yes to do it\)$/);
  });

  it.each([
    ['a dry run', { dryRun: true, confirmed: false }],
    ['--yes', { dryRun: false, confirmed: true }],
  ])('%s ends naming what keeps tainting new nodes outside nodecare', async (_name, mode) => {
    const d = deps(fakeApi());
    expect(await uninstall({ ...config, ...mode }, d)).toBe(0);
    expect(d.lines.at(-1)).toMatch(/--register-with-taints.*startupTaints/);
  });

  it('--dry-run writes nothing', async () => {
    const api = fakeApi();
    const d = deps(api);
    expect(await uninstall({ ...config, dryRun: true }, d)).toBe(0);
    expect(api.calls.filter((c) => c.method !== 'GET')).toEqual([]);
    expect(d.lines.join('\n')).toContain('would clean node n1');
  });
});
