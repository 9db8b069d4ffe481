// Where and how to reach the API server: in-cluster (ServiceAccount token, rotated on disk) or a kubeconfig.
// Common kubeconfig auth (token, token file, client certificate, CA) is read here directly so the agent does not
// pay for loading @kubernetes/client-node (~70 MB RSS, docs/adr/0001); exec and auth-provider plugins are
// delegated to client-node, loaded only then.

import { existsSync, readFile, readFileSync } from '../fs.ts';
import { BlockList, isIP } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { parseYaml } from '../yaml.ts';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const TOKEN_REFRESH_MS = 60_000;

export interface TlsOptions {
  ca?: string | Buffer;
  cert?: string | Buffer;
  key?: string | Buffer;
  rejectUnauthorized?: boolean;
  servername?: string;
}

export interface Connection {
  server: string;
  tls: TlsOptions;
  /**
   * Request headers that authenticate (fresh for rotating tokens); a list is one header sent once per value
   * (Impersonate-Group).
   */
  authHeaders(): Promise<Record<string, string | string[]>>;
  /** An HTTP proxy to tunnel through (CONNECT): the kubeconfig cluster's proxy-url, else HTTPS_PROXY. */
  proxy?: string;
  /** Human description for logs: "in-cluster" or "kubeconfig <path> context <name>". */
  source: string;
}

export class KubeConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubeConfigError';
  }
}

interface NamedEntry<T> {
  name: string;
  [key: string]: unknown;
  cluster?: T;
  user?: T;
  context?: T;
}

interface KubeconfigFile {
  clusters?: NamedEntry<Record<string, unknown>>[];
  users?: NamedEntry<Record<string, unknown>>[];
  contexts?: NamedEntry<Record<string, unknown>>[];
  'current-context'?: string;
}

/** kubectl's connection flags, over what the kubeconfig says (`kubectl options`). */
export interface ConnectionOverrides {
  /** --context: a context other than the current one. */
  context?: string;
  /** --cluster: the kubeconfig cluster to use instead of the context's. */
  cluster?: string;
  /** --user: the kubeconfig user to use instead of the context's. */
  user?: string;
  /** --server: the API server's address instead of the cluster's. */
  server?: string;
  /** --token: a bearer token instead of the user's credentials. */
  token?: string;
  /** --insecure-skip-tls-verify: do not check the server's certificate (the kubeconfig's CA is then unused). */
  insecureSkipTlsVerify?: boolean;
  /** --as: the user to impersonate. */
  as?: string;
  /** --as-group: the groups to impersonate (each its own Impersonate-Group header); needs `as`. */
  asGroups?: readonly string[];
}

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

function checkedServer(value: string, where: string): string {
  const server = value.replace(/\/+$/, '');
  let protocol = '';
  try {
    protocol = new URL(server).protocol;
  } catch {
    // Reported below.
  }
  if (protocol !== 'https:' && protocol !== 'http:')
    throw new KubeConfigError(`${where} "${server}" is not an https:// URL`);
  return server;
}

/** A proxy URL as kubectl takes one: http:// or https:// (a bare host:port is http://). */
function checkedProxy(value: string, where: string): string {
  const proxy = value.includes('://') ? value : `http://${value}`;
  let protocol = '';
  try {
    protocol = new URL(proxy).protocol;
  } catch {
    // Reported below.
  }
  if (protocol === 'socks5:')
    throw new KubeConfigError(
      `${where} ${JSON.stringify(value)} is a SOCKS proxy, which kubectl-nodecare does not support (only http:// and https:// proxies)`,
    );
  if (protocol !== 'http:' && protocol !== 'https:')
    throw new KubeConfigError(`${where} ${JSON.stringify(value)} is not an http:// or https:// URL`);
  return proxy;
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

function rotatingToken(path: string): () => Promise<Record<string, string>> {
  let token = '';
  let readAt = -Infinity;
  return async () => {
    // The kubelet rotates projected tokens on disk; re-read at most once a minute (as client-go does).
    if (performance.now() - readAt > TOKEN_REFRESH_MS) {
      token = (await readFile(path, 'utf8')).trim();
      readAt = performance.now();
    }
    return { authorization: `Bearer ${token}` };
  };
}

/** A named entry of a kubeconfig and the file it came from (its relative paths are relative to that file). */
interface Found {
  value: Record<string, unknown>;
  path: string;
}

/**
 * Merges kubeconfig files as kubectl does: for clusters, users and contexts the first file to define a name
 * wins, and so does the first current-context.
 */
async function mergeKubeconfigs(paths: readonly string[]) {
  const merged = {
    clusters: new Map<string, Found>(),
    users: new Map<string, Found>(),
    contexts: new Map<string, Found>(),
    currentContext: undefined as string | undefined,
  };
  for (const path of paths) {
    let doc: KubeconfigFile;
    try {
      doc = (parseYaml(await readFile(path, 'utf8')) ?? {}) as KubeconfigFile;
    } catch (err) {
      throw new KubeConfigError(`cannot read kubeconfig ${path}: ${(err as Error).message}`);
    }
    const add = (into: Map<string, Found>, entries: NamedEntry<Record<string, unknown>>[] | undefined) => {
      for (const entry of entries ?? []) {
        const value = entry.cluster ?? entry.user ?? entry.context;
        if (typeof entry.name === 'string' && value && !into.has(entry.name))
          into.set(entry.name, { value, path });
      }
    };
    add(merged.clusters, doc.clusters);
    add(merged.users, doc.users);
    add(merged.contexts, doc.contexts);
    merged.currentContext ||= doc['current-context'] || undefined;
  }
  return merged;
}

async function fromKubeconfig(paths: readonly string[], o: ConnectionOverrides): Promise<Connection> {
  const merged = await mergeKubeconfigs(paths);
  const where = `kubeconfig ${paths.join(delimiter)}`;
  const chosenContext = o.context;
  const contextName = chosenContext || merged.currentContext;
  const found = contextName === undefined ? undefined : merged.contexts.get(contextName)?.value;
  // As kubectl: a kubeconfig without a current-context still serves --server (and --cluster, --user).
  if (!found && (chosenContext || !o.server))
    throw new KubeConfigError(
      `${where}: ${chosenContext ? 'context' : 'current-context'} "${contextName ?? ''}" not found`,
    );
  const context = found ?? {};
  const clusterName = o.cluster || (context.cluster === undefined ? undefined : String(context.cluster));
  const clusterEntry = clusterName === undefined ? undefined : merged.clusters.get(clusterName);
  if (o.cluster && !clusterEntry) throw new KubeConfigError(`${where}: --cluster "${o.cluster}" not found`);
  const cluster = clusterEntry?.value ?? {};
  let server: string;
  if (o.server) server = checkedServer(o.server, '--server');
  else {
    if (!clusterEntry || typeof cluster.server !== 'string')
      throw new KubeConfigError(`${where}: cluster "${clusterName ?? ''}" not found or has no server`);
    server = cluster.server.replace(/\/+$/, '');
    let protocol: string;
    try {
      protocol = new URL(server).protocol;
    } catch {
      protocol = '';
    }
    if (protocol !== 'https:' && protocol !== 'http:') {
      throw new KubeConfigError(
        `${where}: cluster "${clusterName}" has server "${server}", which is not an https:// URL`,
      );
    }
  }
  if (o.user && !merged.users.has(o.user))
    throw new KubeConfigError(`${where}: --user "${o.user}" not found`);
  const userName = o.user || String(context.user);
  const userEntry = merged.users.get(userName);
  const user = userEntry?.value ?? {};
  const source = found ? `${where} context ${contextName}` : where;
  const proxyUrl = cluster['proxy-url'];
  if (proxyUrl !== undefined && typeof proxyUrl !== 'string')
    throw new KubeConfigError(`${where}: cluster "${clusterName}" has a proxy-url that is not a string`);
  const proxy = proxyUrl
    ? { proxy: checkedProxy(proxyUrl, `${where}: cluster "${clusterName}" proxy-url`) }
    : {};
  const fileOrData = (file: unknown, data: unknown, from: string): Buffer | undefined => {
    if (typeof data === 'string') return Buffer.from(data, 'base64');
    if (typeof file === 'string') return readFileSync(isAbsolute(file) ? file : resolve(dirname(from), file));
    return undefined;
  };
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  const hasCa =
    cluster['certificate-authority'] !== undefined || cluster['certificate-authority-data'] !== undefined;
  // kubectl's validation refuses this cluster; its --insecure-skip-tls-verify drops the CA first instead.
  if (insecure && hasCa && !o.insecureSkipTlsVerify)
    throw new KubeConfigError(
      `${where}: cluster "${clusterName}" sets both insecure-skip-tls-verify and a certificate-authority; a cluster may not trust a CA and skip verification at once (remove one)`,
    );
  const tls: TlsOptions = {
    ca:
      clusterEntry &&
      fileOrData(cluster['certificate-authority'], cluster['certificate-authority-data'], clusterEntry.path),
    cert:
      userEntry && fileOrData(user['client-certificate'], user['client-certificate-data'], userEntry.path),
    key: userEntry && fileOrData(user['client-key'], user['client-key-data'], userEntry.path),
    ...(insecure ? { rejectUnauthorized: false } : {}),
    ...(typeof cluster['tls-server-name'] === 'string' ? { servername: cluster['tls-server-name'] } : {}),
  };
  // --token replaces the plugin's credential: the plugin is then not run (nor client-node loaded).
  if (userEntry && (user.exec || user['auth-provider']) && o.token === undefined)
    return { ...(await delegateToClientNode(userEntry.path, userName, server, tls, source)), ...proxy };
  let authHeaders: () => Promise<Record<string, string>> = async () => ({});
  if (typeof user.token === 'string') {
    const header = { authorization: `Bearer ${user.token}` };
    authHeaders = async () => header;
  } else if (typeof user.tokenFile === 'string' && userEntry) {
    authHeaders = rotatingToken(
      isAbsolute(user.tokenFile) ? user.tokenFile : resolve(dirname(userEntry.path), user.tokenFile),
    );
  } else if (typeof user.username === 'string') {
    const header = {
      authorization: `Basic ${Buffer.from(`${user.username}:${String(user.password ?? '')}`).toString('base64')}`,
    };
    authHeaders = async () => header;
  }
  return { server, tls, authHeaders, source, ...proxy };
}

/**
 * exec / auth-provider credentials: let client-node run the plugin and cache its credential. Only the user
 * entry is taken from client-node's reading of its file (relative command paths resolved as kubectl does);
 * the server and TLS stay ours.
 */
async function delegateToClientNode(
  userPath: string,
  userName: string,
  server: string,
  tls: TlsOptions,
  source: string,
): Promise<Connection> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const file = new KubeConfig();
  file.loadFromFile(userPath);
  const user = file.getUser(userName);
  if (!user) throw new KubeConfigError(`kubeconfig ${userPath}: user "${userName}" not found`);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'nodecare', server, skipTLSVerify: tls.rejectUnauthorized === false }],
    users: [user],
    contexts: [{ name: 'nodecare', cluster: 'nodecare', user: user.name }],
    currentContext: 'nodecare',
  });
  return {
    server,
    tls,
    async authHeaders() {
      const opts: { headers?: Record<string, string> } = {};
      await kc.applyToHTTPSOptions(opts);
      return { ...(opts.headers ?? {}) };
    },
    source: `${source} (auth plugin via client-node)`,
  };
}
