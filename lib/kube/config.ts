// Where and how to reach the API server: in-cluster (ServiceAccount token, rotated on disk) or a kubeconfig.
// Common kubeconfig auth (token, token file, client certificate, CA) is read here directly so the agent does not
// pay for loading @kubernetes/client-node (~70 MB RSS, docs/adr/0001); exec and auth-provider plugins are
// delegated to client-node, loaded only then.

import { existsSync, readFileSync } from '../fs.ts';
import { BlockList, isIP } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import {
  checkedProxy,
  checkedServer,
  KubeConfigError,
  rotatingToken,
  type Connection,
  type ConnectionOverrides,
} from './connection.ts';
import { fromKubeconfig } from './kubeconfig.ts';

export { KubeConfigError, type Connection, type ConnectionOverrides, type TlsOptions } from './connection.ts';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * Loads `--kubeconfig`, else the files named in `$KUBECONFIG` merged as kubectl merges them, else
 * `~/.kube/config` if it exists, else (given --server) the flags alone, else the in-cluster config.
 * `overrides` are kubectl's connection flags. A kubeconfig or --server connection goes through the cluster's
 * proxy-url, else through HTTPS_PROXY unless NO_PROXY names the server (proxyFromEnv); in-cluster never.
 */
export async function loadConnection(
  kubeconfigPath?: string,
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
  overrides: ConnectionOverrides = {},
): Promise<Connection> {
  if (overrides.asGroups?.length && !overrides.as)
    throw new KubeConfigError('--as-group needs --as: groups are impersonated together with a user');
  const base = await baseConnection(kubeconfigPath, env, home, overrides);
  const c = applyOverrides(base, overrides);
  if (c.source === 'in-cluster' || c.proxy !== undefined) return c;
  const proxy = proxyFromEnv(c.server, env);
  return proxy === undefined ? c : { ...c, proxy };
}

/** The connection --server alone makes: no kubeconfig, no credentials but --token's. */
const FLAGS_ONLY = 'flags';

async function baseConnection(
  kubeconfigPath: string | undefined,
  env: NodeJS.ProcessEnv,
  home: string,
  o: ConnectionOverrides,
): Promise<Connection> {
  if (kubeconfigPath) return fromKubeconfig([kubeconfigPath], o);
  const fromEnv = env.KUBECONFIG?.split(delimiter).filter(Boolean) ?? [];
  // Like kubectl: the files of the list that exist, merged (none exists: the first, to report it).
  const listed = fromEnv.filter((p) => existsSync(p));
  if (fromEnv.length > 0) return fromKubeconfig(listed.length > 0 ? listed : fromEnv.slice(0, 1), o);
  const inHome = join(home, '.kube', 'config');
  if (existsSync(inHome)) return fromKubeconfig([inHome], o);
  for (const [flag, value] of [
    ['--context', o.context],
    ['--cluster', o.cluster],
    ['--user', o.user],
  ] as const)
    if (value) throw new KubeConfigError(`${flag} ${value}: no kubeconfig to find it in`);
  // As kubectl: --server (with --token, or a server that asks for none) needs no kubeconfig, and is not
  // the in-cluster config either.
  if (o.server) return flagsOnly(o.server);
  if (env.KUBERNETES_SERVICE_HOST) return inCluster(env);
  throw new KubeConfigError(
    `no kubeconfig: pass --kubeconfig, set KUBECONFIG, create ${inHome}, or run in a cluster (KUBERNETES_SERVICE_HOST is not set)`,
  );
}

function flagsOnly(server: string): Connection {
  return {
    server: checkedServer(server, '--server'),
    tls: {},
    authHeaders: async () => ({}),
    source: FLAGS_ONLY,
  };
}

/** --server, --token, --insecure-skip-tls-verify, --as and --as-group over the loaded connection. */
function applyOverrides(base: Connection, o: ConnectionOverrides): Connection {
  let c = base;
  if (o.server) {
    const server = checkedServer(o.server, '--server');
    c = {
      ...c,
      server,
      source: c.source === FLAGS_ONLY ? `--server ${server}` : `${c.source}, --server ${server}`,
    };
  }
  if (o.insecureSkipTlsVerify) {
    // kubectl's rule (client-go clientcmd): the flag without a CA of its own drops the kubeconfig's CA.
    const { ca: _unused, ...tls } = c.tls;
    c = { ...c, tls: { ...tls, rejectUnauthorized: false } };
  }
  if (o.token !== undefined) {
    const header = { authorization: `Bearer ${o.token}` };
    // The token replaces the user's credentials, the client certificate included: kubectl would still
    // present the certificate, and the API server would take its identity over the token's.
    const { cert: _cert, key: _key, ...tls } = c.tls;
    c = { ...c, tls, authHeaders: async () => header };
  }
  const impersonation: Record<string, string | string[]> = {};
  if (o.as) impersonation['impersonate-user'] = o.as;
  if (o.as && o.asGroups && o.asGroups.length > 0) impersonation['impersonate-group'] = [...o.asGroups];
  if (o.as) {
    const inner = c.authHeaders;
    c = { ...c, authHeaders: async () => ({ ...(await inner()), ...impersonation }) };
  }
  return c;
}

/**
 * The proxy for `server` from the environment, as Go's net/http (and so kubectl) reads it: HTTPS_PROXY (else
 * https_proxy; HTTP_PROXY / http_proxy for an http:// server), unless the server is localhost or a loopback
 * address, or NO_PROXY (else no_proxy) names it. NO_PROXY entries, comma-separated: `*` (everything), a
 * domain (`example.com`: it and its subdomains; `.example.com` or `*.example.com`: subdomains only), an IP
 * address, a CIDR range (`10.0.0.0/8`), each optionally with `:port`. Undefined: no proxy.
 */
export function proxyFromEnv(server: string, env: NodeJS.ProcessEnv): string | undefined {
  const url = new URL(server);
  const https = url.protocol === 'https:';
  const proxy = https ? env.HTTPS_PROXY || env.https_proxy : env.HTTP_PROXY || env.http_proxy;
  if (!proxy) return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (https ? '443' : '80');
  const family = isIP(host);
  if (host === 'localhost' || (family !== 0 && isLoopback(host, family))) return undefined;
  for (const raw of (env.NO_PROXY || env.no_proxy || '').split(',')) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return undefined;
    if (entry.includes('/')) {
      if (family !== 0 && inCidr(host, family, entry)) return undefined;
      continue;
    }
    const { entryHost, entryPort } = splitHostPort(entry);
    if (entryHost === '' || (entryPort !== undefined && entryPort !== port)) continue;
    const entryFamily = isIP(entryHost);
    if (entryFamily !== 0) {
      if (family !== 0 && sameAddress(host, entryHost)) return undefined;
      continue;
    }
    if (family !== 0) continue;
    const suffix = entryHost.startsWith('*.') ? entryHost.slice(1) : entryHost;
    if (suffix.startsWith('.') ? host.endsWith(suffix) : host === suffix || host.endsWith(`.${suffix}`))
      return undefined;
  }
  return checkedProxy(proxy, https ? 'HTTPS_PROXY' : 'HTTP_PROXY');
}

/** `host:port`, `[v6]:port`, a bare v6 address, or a host without a port. */
function splitHostPort(entry: string): { entryHost: string; entryPort?: string } {
  const bracketed = /^\[([^\]]*)\](?::(\d+))?$/.exec(entry);
  if (bracketed)
    return { entryHost: bracketed[1] ?? '', ...(bracketed[2] ? { entryPort: bracketed[2] } : {}) };
  if (isIP(entry) === 6) return { entryHost: entry };
  const withPort = /^(.*):(\d+)$/.exec(entry);
  if (withPort) return { entryHost: withPort[1] ?? '', entryPort: withPort[2] as string };
  return { entryHost: entry };
}

function isLoopback(address: string, family: number): boolean {
  const loopback = new BlockList();
  loopback.addSubnet('127.0.0.0', 8, 'ipv4');
  loopback.addAddress('::1', 'ipv6');
  return loopback.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

function inCidr(address: string, family: number, cidr: string): boolean {
  const [network = '', bits = ''] = cidr.split('/');
  const networkFamily = isIP(network);
  const prefix = Number(bits);
  if (networkFamily === 0 || !/^\d+$/.test(bits) || prefix > (networkFamily === 6 ? 128 : 32)) return false;
  const list = new BlockList();
  list.addSubnet(network, prefix, networkFamily === 6 ? 'ipv6' : 'ipv4');
  return list.check(address, family === 6 ? 'ipv6' : 'ipv4');
}

function sameAddress(a: string, b: string): boolean {
  const list = new BlockList();
  list.addAddress(b, isIP(b) === 6 ? 'ipv6' : 'ipv4');
  return list.check(a, isIP(a) === 6 ? 'ipv6' : 'ipv4');
}

function inCluster(env: NodeJS.ProcessEnv): Connection {
  const host = env.KUBERNETES_SERVICE_HOST as string;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    server,
    tls: { ca: readFileSync(`${SA_DIR}/ca.crt`) },
    authHeaders: rotatingToken(`${SA_DIR}/token`),
    source: 'in-cluster',
  };
}
