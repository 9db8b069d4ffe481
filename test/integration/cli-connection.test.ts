// kubectl nodecare's kubectl connection flags (issue 51 item 5) against the real API server: --token with real
// ServiceAccount tokens (the server sees the token's identity, not the kubeconfig's), --as and --as-group
// (the server sees the impersonated user and groups), --server over the kubeconfig's address and with no
// kubeconfig at all (--insecure-skip-tls-verify against the real serving certificate), --request-timeout
// against a loopback server that accepts and never answers, and a real loopback HTTP CONNECT proxy that
// carries the connection when HTTPS_PROXY or the cluster's proxy-url names it, and is bypassed for NO_PROXY
// and for a loopback server (Go's rule, and so kubectl's).

import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { StatusView } from '../../cli/verbs/status.ts';
import { mintServiceAccountToken } from '../controlplane/tokens.ts';
import { adminKubeConfig, uniqueName } from './helpers.ts';
import { applyBaseManifests } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const NAMESPACE = 'default';
const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
const adminKubeconfig = inject('kubeconfig');
const server = inject('server');
const apiPort = Number(new URL(server).port);
const scratch = mkdtempSync(join(tmpdir(), 'nodecare-cli-connection-'));
const RUN = uniqueName('conn');
const LABEL = 'nodecare.io/cli-connection-test';
const SELECTOR = `${LABEL}=${RUN}`;
const NODE = `${RUN}-node`;
const SA = { viewer: `${RUN}-viewer`, none: `${RUN}-none` };
const tokens = { viewer: '', none: '' };
/** A name no resolver answers (RFC 6761): reached only through the proxy, which maps it to the API server. */
const PROXIED_HOST = 'nodecare-apiserver.invalid';
/** A name the API server's self-signed certificate carries (kube-apiserver adds it). */
const CERT_NAME = 'kubernetes.default.svc';

interface AdminKubeconfig {
  clusters: Array<{ name: string; cluster: Record<string, unknown> }>;
  [key: string]: unknown;
}
const adminDoc = JSON.parse(readFileSync(adminKubeconfig, 'utf8')) as AdminKubeconfig;

/** The admin kubeconfig with its cluster changed: a file of its own. */
function kubeconfigWith(name: string, cluster: Record<string, unknown>): string {
  const doc = structuredClone(adminDoc);
  for (const c of doc.clusters) c.cluster = { ...c.cluster, ...cluster };
  const path = join(scratch, `${name}.kubeconfig`);
  writeFileSync(path, JSON.stringify(doc), { mode: 0o600 });
  return path;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** The plugin as a user runs it: its own process, an environment of only what is given. */
function runPlugin(args: string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'cli', 'main.ts'), ...args], {
      env: { PATH: process.env.PATH, HOME: scratch, KUBECONFIG: adminKubeconfig, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

/** `status` of this file's node as JSON, asserting that it answered. */
async function statusAs(args: string[], env: Record<string, string | undefined> = {}): Promise<StatusView> {
  const run = await runPlugin(['status', '-l', SELECTOR, '-o', 'json', ...args], env);
  expect(run.stderr, run.stderr).toBe('');
  // 0 or 1 is an answer (healthy or not); 2 would be an error.
  expect([0, 1], run.stderr).toContain(run.code);
  const view = JSON.parse(run.stdout) as StatusView;
  expect(view.nodes.map((n) => n.name)).toEqual([NODE]);
  return view;
}

const servers: Server[] = [];
const sockets = new Set<Socket>();

/** A real HTTP CONNECT proxy on loopback: records each CONNECT target and tunnels every one to the API server. */
async function connectProxy(): Promise<{ url: string; targets: string[] }> {
  const targets: string[] = [];
  const proxy = createServer((_req, res) => {
    res.writeHead(405).end('CONNECT only');
  });
  proxy.on('connect', (req, client: Socket, head: Buffer) => {
    targets.push(req.url ?? '');
    sockets.add(client);
    const upstream = connect(apiPort, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  servers.push(proxy);
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, targets };
}

beforeAll(async () => {
  await applyBaseManifests();
  await core.createNode({ body: { metadata: { name: NODE, labels: { [LABEL]: RUN } } } });
  for (const sa of Object.values(SA))
    await core.createNamespacedServiceAccount({ namespace: NAMESPACE, body: { metadata: { name: sa } } });
  // What `kubectl nodecare status` reads, and nothing more, for the viewer; the other has no rights at all.
  await rbac.createClusterRole({
    body: {
      metadata: { name: SA.viewer },
      rules: [
        {
          apiGroups: ['', 'coordination.k8s.io', 'events.k8s.io', 'nodecare.io'],
          resources: ['nodes', 'leases', 'events', 'systemextensions', 'clusterhealths'],
          verbs: ['get', 'list'],
        },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: SA.viewer },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: SA.viewer },
      subjects: [{ kind: 'ServiceAccount', name: SA.viewer, namespace: NAMESPACE }],
    },
  });
  tokens.viewer = await mintServiceAccountToken(admin, { namespace: NAMESPACE, serviceAccount: SA.viewer });
  tokens.none = await mintServiceAccountToken(admin, { namespace: NAMESPACE, serviceAccount: SA.none });
}, 120_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const s of servers) s.close();
  await rbac.deleteClusterRoleBinding({ name: SA.viewer }).catch(() => undefined);
  await rbac.deleteClusterRole({ name: SA.viewer }).catch(() => undefined);
  for (const sa of Object.values(SA))
    await core.deleteNamespacedServiceAccount({ namespace: NAMESPACE, name: sa }).catch(() => undefined);
  await core.deleteNode({ name: NODE }).catch(() => undefined);
  rmSync(scratch, { recursive: true, force: true });
});

describe("kubectl nodecare with kubectl's connection flags, on the real API server", () => {
  it("--token: the server sees the token's identity, not the kubeconfig user's", async () => {
    // The admin kubeconfig's own user can do anything; the flag's token is all the server sees.
    await statusAs([`--token=${tokens.viewer}`]);
    const denied = await runPlugin(['status', '-l', SELECTOR, `--token=${tokens.none}`]);
    expect(denied.code, denied.stderr).toBe(2);
    expect(denied.stderr).toContain('kubectl nodecare status: not allowed (');
    expect(denied.stderr).toContain(`system:serviceaccount:${NAMESPACE}:${SA.none}`);
    expect(denied.stderr).toMatch(/cannot (get|list) resource "\w+"/);

    const refused = await runPlugin(['status', '-l', SELECTOR, '--token=not-a-token']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`the API server at ${server} refused the credentials`);
  });

  it('--as and --as-group: the server judges the impersonated user and groups', async () => {
    const user = `${RUN}-jane`;
    const denied = await runPlugin(['status', '-l', SELECTOR, `--as=${user}`]);
    expect(denied.code, denied.stderr).toBe(2);
    expect(denied.stderr).toContain('not allowed (');
    expect(denied.stderr).toMatch(new RegExp(`User "${user}" cannot (get|list) resource "\\w+"`));

    // The same user in a group that may do anything: each --as-group reaches the server.
    await statusAs([`--as=${user}`, '--as-group=example:nobody', '--as-group=system:masters']);
    await statusAs([`--as=system:serviceaccount:${NAMESPACE}:${SA.viewer}`]);

    const noUser = await runPlugin(['status', '--as-group=system:masters']);
    expect(noUser.code).toBe(2);
    expect(noUser.stderr).toContain('--as-group needs --as');
  });

  it("--server replaces the kubeconfig's address; with --token and --insecure-skip-tls-verify it needs no kubeconfig", async () => {
    const closed = createNetServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const wrong = kubeconfigWith('wrong-server', { server: `https://127.0.0.1:${closedPort}` });

    const down = await runPlugin(['status', '-l', SELECTOR], { KUBECONFIG: wrong });
    expect(down.code).toBe(2);
    expect(down.stderr).toContain(`cannot reach the API server at https://127.0.0.1:${closedPort}`);
    await statusAs([`--server=${server}`], { KUBECONFIG: wrong });
    await statusAs(['-s', server], { KUBECONFIG: wrong });

    // No kubeconfig anywhere: the flags are the whole connection.
    const none = { KUBECONFIG: undefined };
    await statusAs([`--server=${server}`, `--token=${tokens.viewer}`, '--insecure-skip-tls-verify'], none);
    // Without the flag, the server's self-signed certificate is checked, against nothing: refused.
    const unverified = await runPlugin(['status', `--server=${server}`, `--token=${tokens.viewer}`], none);
    expect(unverified.code).toBe(2);
    expect(unverified.stderr).toMatch(/certificate/i);
  });

  it('--request-timeout: a server that accepts and never answers fails the command within the bound, saying so', async () => {
    const silent = createNetServer((socket) => sockets.add(socket));
    servers.push(silent as unknown as Server);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    for (const [flag, seconds] of [
      ['--request-timeout=1s', 1],
      ['--request-timeout=2', 2],
    ] as const) {
      const run = await runPlugin([
        'status',
        `--server=https://127.0.0.1:${port}`,
        '--insecure-skip-tls-verify',
        flag,
      ]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(
        `the API server at https://127.0.0.1:${port} did not answer within ${seconds}s`,
      );
      expect(run.stderr).toContain('--request-timeout');
      expect(run.ms).toBeGreaterThanOrEqual(seconds * 1000);
      // The process starts in about a second on this machine; the bound, not the default 10 s, ends it.
      expect(run.ms).toBeLessThan(seconds * 1000 + 6000);
    }
    const bad = await runPlugin(['status', '--request-timeout=soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--request-timeout "soon": expected a number of seconds or a duration');
  });

  it('HTTPS_PROXY: the connection goes through a real CONNECT proxy, except for NO_PROXY and loopback servers', async () => {
    const sans = new X509Certificate(
      Buffer.from(adminDoc.clusters[0]?.cluster['certificate-authority-data'] as string, 'base64'),
    ).subjectAltName;
    expect(sans, 'the API server certificate names').toContain(`DNS:${CERT_NAME}`);
    const proxy = await connectProxy();
    const named = kubeconfigWith('tls-server-name', { 'tls-server-name': CERT_NAME });
    const remote = `https://${PROXIED_HOST}:${apiPort}`;

    // A name only the proxy can reach: the answer proves the connection went through it.
    await statusAs([`--server=${remote}`], { KUBECONFIG: named, HTTPS_PROXY: proxy.url });
    expect(proxy.targets).toContain(`${PROXIED_HOST}:${apiPort}`);

    // NO_PROXY names it: no CONNECT, a direct connection to a name nothing resolves.
    for (const noProxy of ['.invalid', PROXIED_HOST, `${PROXIED_HOST}:${apiPort}`]) {
      proxy.targets.length = 0;
      const direct = await runPlugin(['status', '-l', SELECTOR, `--server=${remote}`], {
        KUBECONFIG: named,
        HTTPS_PROXY: proxy.url,
        NO_PROXY: `example.com,${noProxy}`,
      });
      expect(direct.code, direct.stderr).toBe(2);
      expect(direct.stderr).toContain(`cannot reach the API server at ${remote}`);
      expect(proxy.targets).toEqual([]);
    }

    // A NO_PROXY entry for another port still goes through the proxy.
    proxy.targets.length = 0;
    await statusAs([`--server=${remote}`], {
      KUBECONFIG: named,
      HTTPS_PROXY: proxy.url,
      NO_PROXY: `${PROXIED_HOST}:1`,
    });
    expect(proxy.targets).toContain(`${PROXIED_HOST}:${apiPort}`);

    // The kubeconfig's server is 127.0.0.1: never through HTTPS_PROXY.
    proxy.targets.length = 0;
    await statusAs([], { HTTPS_PROXY: proxy.url });
    expect(proxy.targets).toEqual([]);
  });

  it("a cluster's proxy-url: through the proxy even for a loopback server", async () => {
    const proxy = await connectProxy();
    const viaProxy = kubeconfigWith('proxy-url', { 'proxy-url': proxy.url });
    await statusAs([], { KUBECONFIG: viaProxy, NO_PROXY: '*' });
    expect(proxy.targets).toContain(`127.0.0.1:${apiPort}`);
  });
});
