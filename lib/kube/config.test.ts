import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConnection, proxyFromEnv } from './config.ts';

let dir: string;

function kubeconfig(server: string): string {
  return JSON.stringify({
    clusters: [{ name: 'c', cluster: { server } }],
    users: [{ name: 'u', user: { token: 't' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodecare-kubeconfig-'));
  await mkdir(join(dir, 'home', '.kube'), { recursive: true });
  await mkdir(join(dir, 'empty-home'));
  await writeFile(join(dir, 'home', '.kube', 'config'), kubeconfig('https://home.example:6443'));
  await writeFile(join(dir, 'flag'), kubeconfig('https://flag.example:6443'));
  await writeFile(join(dir, 'env'), kubeconfig('https://env.example:6443'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('loadConnection', () => {
  it.each([
    { behaviour: 'the flag wins over everything', flag: 'flag', kubeconfigEnv: 'env', server: 'flag' },
    { behaviour: 'KUBECONFIG wins over ~/.kube/config', flag: '', kubeconfigEnv: 'env', server: 'env' },
    {
      behaviour: 'KUBECONFIG: a missing file of the list is skipped',
      flag: '',
      kubeconfigEnv: ['missing', 'env'],
      server: 'env',
    },
    { behaviour: 'neither → ~/.kube/config', flag: '', kubeconfigEnv: '', server: 'home' },
  ])('$behaviour', async ({ flag, kubeconfigEnv, server }) => {
    const list = [kubeconfigEnv].flat().filter(Boolean);
    const env = list.length ? { KUBECONFIG: list.map((f) => join(dir, f)).join(delimiter) } : {};
    const connection = await loadConnection(flag && join(dir, flag), env, join(dir, 'home'));
    expect(connection.server).toBe(`https://${server}.example:6443`);
  });

  it('nothing to load outside a cluster → an error naming every place it looked', async () => {
    await expect(loadConnection(undefined, {}, join(dir, 'empty-home'))).rejects.toThrow(
      `no kubeconfig: pass --kubeconfig, set KUBECONFIG, create ${join(dir, 'empty-home', '.kube', 'config')}, or run in a cluster`,
    );
  });
});

describe('loadConnection with a context (kubectl --context)', () => {
  it('uses the named context instead of the current one, and names a context that is not there', async () => {
    const path = join(dir, 'two-contexts');
    await writeFile(
      path,
      JSON.stringify({
        clusters: [
          { name: 'prod', cluster: { server: 'https://prod.example:6443' } },
          { name: 'dev', cluster: { server: 'https://dev.example:6443' } },
        ],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [
          { name: 'prod', context: { cluster: 'prod', user: 'u' } },
          { name: 'dev', context: { cluster: 'dev', user: 'u' } },
        ],
        'current-context': 'prod',
      }),
    );
    const env = { KUBECONFIG: path };
    expect((await loadConnection(undefined, env, join(dir, 'empty-home'))).server).toBe(
      'https://prod.example:6443',
    );
    const dev = await loadConnection(undefined, env, join(dir, 'empty-home'), { context: 'dev' });
    expect(dev.server).toBe('https://dev.example:6443');
    expect(dev.source).toBe(`kubeconfig ${path} context dev`);
    await expect(loadConnection(path, {}, join(dir, 'empty-home'), { context: 'staging' })).rejects.toThrow(
      `kubeconfig ${path}: context "staging" not found`,
    );
  });
});

describe('loadConnection with KUBECONFIG naming several files (merged as kubectl merges them)', () => {
  it('takes the current-context of the first file that sets one, and contexts, clusters and users from any file, the first definition of a name winning', async () => {
    const first = join(dir, 'merge-first');
    const second = join(dir, 'merge-second');
    await mkdir(join(dir, 'certs'), { recursive: true });
    await writeFile(join(dir, 'certs', 'token'), 'from-file\n');
    await writeFile(
      first,
      JSON.stringify({
        clusters: [{ name: 'shared', cluster: { server: 'https://first.example:6443' } }],
        users: [{ name: 'shared-user', user: { token: 'first' } }],
        contexts: [{ name: 'one', context: { cluster: 'shared', user: 'shared-user' } }],
        'current-context': 'one',
      }),
    );
    await writeFile(
      second,
      JSON.stringify({
        clusters: [
          { name: 'shared', cluster: { server: 'https://second.example:6443' } },
          { name: 'staging', cluster: { server: 'https://staging.example:6443' } },
        ],
        // A relative path is relative to the file that holds it.
        users: [{ name: 'staging-user', user: { tokenFile: 'certs/token' } }],
        contexts: [{ name: 'staging', context: { cluster: 'staging', user: 'staging-user' } }],
        'current-context': 'staging',
      }),
    );
    const env = { KUBECONFIG: [first, join(dir, 'missing'), second].join(delimiter) };
    const current = await loadConnection(undefined, env, join(dir, 'empty-home'));
    expect(current.server).toBe('https://first.example:6443');
    expect(await current.authHeaders()).toEqual({ authorization: 'Bearer first' });
    const staging = await loadConnection(undefined, env, join(dir, 'empty-home'), { context: 'staging' });
    expect(staging.server).toBe('https://staging.example:6443');
    expect(await staging.authHeaders()).toEqual({ authorization: 'Bearer from-file' });
    expect(staging.source).toBe(`kubeconfig ${first}${delimiter}${second} context staging`);
  });

  it('a server that is not an http(s) URL → a kubeconfig error naming it, not a network error later', async () => {
    const path = join(dir, 'no-scheme');
    await writeFile(path, kubeconfig('localhost:6443'));
    await expect(loadConnection(path, {}, join(dir, 'empty-home'))).rejects.toThrow(
      `kubeconfig ${path}: cluster "c" has server "localhost:6443", which is not an https:// URL`,
    );
  });

  it('an exec credential plugin of a context from the second file runs and authenticates', async () => {
    const plugin = join(dir, 'credential-plugin');
    await writeFile(
      plugin,
      '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-plugin"}}\'\n',
      { mode: 0o755 },
    );
    const second = join(dir, 'exec-second');
    await writeFile(
      second,
      JSON.stringify({
        clusters: [{ name: 'exec', cluster: { server: 'https://exec.example:6443' } }],
        users: [
          {
            name: 'exec-user',
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: plugin,
                interactiveMode: 'Never',
              },
            },
          },
        ],
        contexts: [{ name: 'exec', context: { cluster: 'exec', user: 'exec-user' } }],
      }),
    );
    const env = { KUBECONFIG: [join(dir, 'env'), second].join(delimiter) };
    const connection = await loadConnection(undefined, env, join(dir, 'empty-home'), { context: 'exec' });
    expect(connection.server).toBe('https://exec.example:6443');
    expect(await connection.authHeaders()).toEqual({ Authorization: 'Bearer from-plugin' });
  });
});

describe("loadConnection with kubectl's connection flags", () => {
  const CA = Buffer.from('ca').toString('base64');
  let path: string;
  const home = () => join(dir, 'empty-home');

  beforeAll(async () => {
    path = join(dir, 'flags');
    await writeFile(
      path,
      JSON.stringify({
        clusters: [
          {
            name: 'main',
            cluster: { server: 'https://main.example:6443', 'certificate-authority-data': CA },
          },
          { name: 'other', cluster: { server: 'https://other.example:6443' } },
          {
            name: 'proxied',
            cluster: { server: 'https://127.0.0.1:6443', 'proxy-url': 'http://proxy.example:3128' },
          },
          {
            name: 'socks',
            cluster: { server: 'https://s.example', 'proxy-url': 'socks5://proxy.example:1080' },
          },
          {
            name: 'both',
            cluster: {
              server: 'https://both.example',
              'insecure-skip-tls-verify': true,
              'certificate-authority-data': CA,
            },
          },
        ],
        users: [
          {
            name: 'cert-user',
            user: {
              'client-certificate-data': Buffer.from('cert').toString('base64'),
              'client-key-data': Buffer.from('key').toString('base64'),
            },
          },
          { name: 'token-user', user: { token: 'user-token' } },
        ],
        contexts: [{ name: 'main', context: { cluster: 'main', user: 'cert-user' } }],
        'current-context': 'main',
      }),
    );
  });

  it("--cluster and --user replace the context's; one that is not in the kubeconfig is named", async () => {
    const c = await loadConnection(path, {}, home(), { cluster: 'other', user: 'token-user' });
    expect(c.server).toBe('https://other.example:6443');
    expect(c.tls.ca).toBeUndefined();
    expect(c.tls.cert).toBeUndefined();
    expect(await c.authHeaders()).toEqual({ authorization: 'Bearer user-token' });
    await expect(loadConnection(path, {}, home(), { cluster: 'nope' })).rejects.toThrow(
      `kubeconfig ${path}: --cluster "nope" not found`,
    );
    await expect(loadConnection(path, {}, home(), { user: 'nope' })).rejects.toThrow(
      `kubeconfig ${path}: --user "nope" not found`,
    );
  });

  it("--server replaces the cluster's address and keeps its CA; the source says so; a bad one is named", async () => {
    const c = await loadConnection(path, {}, home(), { server: 'https://10.0.0.1:443/' });
    expect(c.server).toBe('https://10.0.0.1:443');
    expect(c.tls.ca?.toString()).toBe('ca');
    expect(c.source).toBe(`kubeconfig ${path} context main, --server https://10.0.0.1:443`);
    await expect(loadConnection(path, {}, home(), { server: '10.0.0.1:443' })).rejects.toThrow(
      '--server "10.0.0.1:443" is not an https:// URL',
    );
  });

  it('--server without any kubeconfig: that server, no credentials but --token, not the in-cluster config', async () => {
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1' };
    const bare = await loadConnection(undefined, env, home(), { server: 'https://api.example:6443' });
    expect(bare).toMatchObject({
      server: 'https://api.example:6443',
      tls: {},
      source: '--server https://api.example:6443',
    });
    expect(await bare.authHeaders()).toEqual({});
    const withToken = await loadConnection(undefined, {}, home(), {
      server: 'https://api.example:6443',
      token: 'abc',
    });
    expect(await withToken.authHeaders()).toEqual({ authorization: 'Bearer abc' });
    await expect(
      loadConnection(undefined, {}, home(), { server: 'https://a.example', context: 'x' }),
    ).rejects.toThrow('--context x: no kubeconfig to find it in');
    await expect(
      loadConnection(undefined, {}, home(), { server: 'https://a.example', user: 'u' }),
    ).rejects.toThrow('--user u: no kubeconfig to find it in');
  });

  it('--server serves a kubeconfig that has no current-context', async () => {
    const empty = join(dir, 'no-current-context');
    await writeFile(empty, JSON.stringify({ users: [{ name: 'u', user: { token: 'from-file' } }] }));
    const c = await loadConnection(empty, {}, home(), { server: 'https://a.example', user: 'u' });
    expect(c.server).toBe('https://a.example');
    expect(await c.authHeaders()).toEqual({ authorization: 'Bearer from-file' });
    await expect(loadConnection(empty, {}, home())).rejects.toThrow('current-context "" not found');
  });

  it("--token replaces the user's credentials, the client certificate included", async () => {
    const plain = await loadConnection(path, {}, home());
    expect(plain.tls.cert?.toString()).toBe('cert');
    const c = await loadConnection(path, {}, home(), { token: 'flag-token' });
    expect(c.tls.cert).toBeUndefined();
    expect(c.tls.key).toBeUndefined();
    expect(c.tls.ca?.toString()).toBe('ca');
    expect(await c.authHeaders()).toEqual({ authorization: 'Bearer flag-token' });
  });

  it('--as and --as-group add the impersonation headers over the credentials, a group per header value', async () => {
    const c = await loadConnection(path, {}, home(), {
      user: 'token-user',
      as: 'jane',
      asGroups: ['dev', 'ops'],
    });
    expect(await c.authHeaders()).toEqual({
      authorization: 'Bearer user-token',
      'impersonate-user': 'jane',
      'impersonate-group': ['dev', 'ops'],
    });
  });

  it('--as-group without --as → an error before anything is read', async () => {
    await expect(loadConnection('/nonexistent', {}, home(), { asGroups: ['dev'] })).rejects.toThrow(
      '--as-group needs --as: groups are impersonated together with a user',
    );
  });

  it("--insecure-skip-tls-verify turns verification off and drops the kubeconfig's CA (kubectl's rule)", async () => {
    const c = await loadConnection(path, {}, home(), { insecureSkipTlsVerify: true });
    expect(c.tls.rejectUnauthorized).toBe(false);
    expect(c.tls.ca).toBeUndefined();
  });

  it('a cluster with both insecure-skip-tls-verify and a CA → an error naming it, unless the flag says which', async () => {
    await expect(loadConnection(path, {}, home(), { cluster: 'both' })).rejects.toThrow(
      `kubeconfig ${path}: cluster "both" sets both insecure-skip-tls-verify and a certificate-authority`,
    );
    const c = await loadConnection(path, {}, home(), { cluster: 'both', insecureSkipTlsVerify: true });
    expect(c.tls).toMatchObject({ rejectUnauthorized: false });
    expect(c.tls.ca).toBeUndefined();
  });

  it("a cluster's proxy-url is the proxy, over HTTPS_PROXY and NO_PROXY, even for a loopback server", async () => {
    const env = { HTTPS_PROXY: 'http://env-proxy:8080', NO_PROXY: '*' };
    const c = await loadConnection(path, env, home(), { cluster: 'proxied' });
    expect(c.proxy).toBe('http://proxy.example:3128');
  });

  it('HTTPS_PROXY applies to a kubeconfig server (and --server) unless NO_PROXY names it', async () => {
    expect((await loadConnection(path, {}, home())).proxy).toBeUndefined();
    const env = { HTTPS_PROXY: 'env-proxy:8080', NO_PROXY: 'other.example' };
    expect((await loadConnection(path, env, home())).proxy).toBe('http://env-proxy:8080');
    expect((await loadConnection(path, env, home(), { cluster: 'other' })).proxy).toBeUndefined();
    expect(
      (await loadConnection(path, env, home(), { server: 'https://x.other.example' })).proxy,
    ).toBeUndefined();
    expect((await loadConnection(undefined, env, home(), { server: 'https://api.example' })).proxy).toBe(
      'http://env-proxy:8080',
    );
  });

  it.each([
    { behaviour: 'a SOCKS proxy-url (not supported)', cluster: 'socks', env: {}, error: 'is a SOCKS proxy' },
    {
      behaviour: 'an HTTPS_PROXY that is no http(s) URL',
      cluster: 'main',
      env: { HTTPS_PROXY: 'ftp://p.example' },
      error: 'HTTPS_PROXY "ftp://p.example" is not an http:// or https:// URL',
    },
  ])('$behaviour → an error naming it', async ({ cluster, env, error }) => {
    await expect(loadConnection(path, env, home(), { cluster })).rejects.toThrow(error);
  });
});

describe('proxyFromEnv (Go net/http and so kubectl)', () => {
  const PROXY = 'http://proxy:3128';
  it.each([
    { behaviour: 'no HTTPS_PROXY → none', server: 'https://api.example', env: {}, proxy: undefined },
    { behaviour: 'HTTPS_PROXY', server: 'https://api.example', env: { HTTPS_PROXY: PROXY }, proxy: PROXY },
    { behaviour: 'https_proxy', server: 'https://api.example', env: { https_proxy: PROXY }, proxy: PROXY },
    {
      behaviour: 'a bare host:port is http://',
      server: 'https://a.example',
      env: { HTTPS_PROXY: 'proxy:3128' },
      proxy: PROXY,
    },
    {
      behaviour: 'HTTP_PROXY is not for https',
      server: 'https://a.example',
      env: { HTTP_PROXY: PROXY },
      proxy: undefined,
    },
    {
      behaviour: 'HTTP_PROXY for an http:// server',
      server: 'http://a.example',
      env: { HTTP_PROXY: PROXY },
      proxy: PROXY,
    },
    {
      behaviour: 'localhost never',
      server: 'https://localhost:6443',
      env: { HTTPS_PROXY: PROXY },
      proxy: undefined,
    },
    {
      behaviour: '127.0.0.0/8 never',
      server: 'https://127.0.0.2:6443',
      env: { HTTPS_PROXY: PROXY },
      proxy: undefined,
    },
    { behaviour: '::1 never', server: 'https://[::1]:6443', env: { HTTPS_PROXY: PROXY }, proxy: undefined },
    {
      behaviour: 'NO_PROXY=*',
      server: 'https://a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '*' },
      proxy: undefined,
    },
    {
      behaviour: 'no_proxy',
      server: 'https://a.example',
      env: { HTTPS_PROXY: PROXY, no_proxy: 'a.example' },
      proxy: undefined,
    },
    {
      behaviour: 'a domain: itself',
      server: 'https://a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'x.test, A.EXAMPLE' },
      proxy: undefined,
    },
    {
      behaviour: 'a domain: its subdomains',
      server: 'https://api.a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'a.example' },
      proxy: undefined,
    },
    {
      behaviour: 'a domain: not a longer name',
      server: 'https://xa.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'a.example' },
      proxy: PROXY,
    },
    {
      behaviour: '.domain: subdomains only',
      server: 'https://a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '.a.example' },
      proxy: PROXY,
    },
    {
      behaviour: '.domain: a subdomain',
      server: 'https://api.a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '.a.example' },
      proxy: undefined,
    },
    {
      behaviour: '*.domain: subdomains only',
      server: 'https://a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '*.a.example' },
      proxy: PROXY,
    },
    {
      behaviour: '*.domain: a subdomain',
      server: 'https://b.a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '*.a.example' },
      proxy: undefined,
    },
    {
      behaviour: 'domain:port, that port',
      server: 'https://a.example:6443',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'a.example:6443' },
      proxy: undefined,
    },
    {
      behaviour: 'domain:port, another port',
      server: 'https://a.example:443',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'a.example:6443' },
      proxy: PROXY,
    },
    {
      behaviour: 'domain:port, the default port',
      server: 'https://a.example',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'a.example:443' },
      proxy: undefined,
    },
    {
      behaviour: 'an IP',
      server: 'https://10.1.2.3:6443',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '10.1.2.3' },
      proxy: undefined,
    },
    {
      behaviour: 'an IP:port, another port',
      server: 'https://10.1.2.3:6443',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '10.1.2.3:443' },
      proxy: PROXY,
    },
    {
      behaviour: 'a CIDR',
      server: 'https://10.1.2.3:6443',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '10.0.0.0/8' },
      proxy: undefined,
    },
    {
      behaviour: 'a CIDR it is outside of',
      server: 'https://11.1.2.3',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '10.0.0.0/8' },
      proxy: PROXY,
    },
    {
      behaviour: 'an IPv6 CIDR',
      server: 'https://[fd00::5]:6443',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'fd00::/8' },
      proxy: undefined,
    },
    {
      behaviour: 'an IPv6 address',
      server: 'https://[fd00::5]',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: 'fd00::5' },
      proxy: undefined,
    },
    {
      behaviour: '[IPv6]:port',
      server: 'https://[fd00::5]:6443',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '[fd00::5]:6443' },
      proxy: undefined,
    },
    {
      behaviour: 'a domain does not match an IP',
      server: 'https://10.1.2.3',
      env: { HTTPS_PROXY: PROXY, NO_PROXY: '3' },
      proxy: PROXY,
    },
  ])('$behaviour', ({ server, env, proxy }) => {
    expect(proxyFromEnv(server, env)).toBe(proxy);
  });
});
