// Reading kubeconfig files as kubectl does: merged (the first file to name an entry wins), a context, its
// cluster and user, kubectl's connection flags over them. Common auth (token, token file, basic, client
// certificate, CA) is read here; exec and auth-provider plugins are delegated to @kubernetes/client-node,
// loaded only then (docs/adr/0001).

import { readFile, readFileSync } from '../fs.ts';
import { delimiter, dirname, isAbsolute, resolve } from 'node:path';
import { parseYaml } from '../yaml.ts';
import {
  checkedProxy,
  checkedServer,
  KubeConfigError,
  rotatingToken,
  type Connection,
  type ConnectionOverrides,
  type TlsOptions,
} from './connection.ts';

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

export async function fromKubeconfig(paths: readonly string[], o: ConnectionOverrides): Promise<Connection> {
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
  const tls = kubeconfigTls(where, clusterName, clusterEntry, userEntry, o);
  // --token replaces the plugin's credential: the plugin is then not run (nor client-node loaded).
  if (userEntry && (user.exec || user['auth-provider']) && o.token === undefined)
    return { ...(await delegateToClientNode(userEntry.path, userName, server, tls, source)), ...proxy };
  const authHeaders = userAuth(user, userEntry);
  return { server, tls, authHeaders, source, ...proxy };
}

/** The cluster's and user's TLS: CA, certificate and key, from data or a file (relative to its kubeconfig). */
function kubeconfigTls(
  where: string,
  clusterName: string | undefined,
  clusterEntry: Found | undefined,
  userEntry: Found | undefined,
  o: ConnectionOverrides,
): TlsOptions {
  const cluster = clusterEntry?.value ?? {};
  const user = userEntry?.value ?? {};
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
  return {
    ca:
      clusterEntry &&
      fileOrData(cluster['certificate-authority'], cluster['certificate-authority-data'], clusterEntry.path),
    cert:
      userEntry && fileOrData(user['client-certificate'], user['client-certificate-data'], userEntry.path),
    key: userEntry && fileOrData(user['client-key'], user['client-key-data'], userEntry.path),
    ...(insecure ? { rejectUnauthorized: false } : {}),
    ...(typeof cluster['tls-server-name'] === 'string' ? { servername: cluster['tls-server-name'] } : {}),
  };
}

/** The headers that authenticate as the user: its token, its token file (re-read), or basic auth; else none. */
function userAuth(
  user: Record<string, unknown>,
  userEntry: Found | undefined,
): () => Promise<Record<string, string>> {
  if (typeof user.token === 'string') {
    const header = { authorization: `Bearer ${user.token}` };
    return async () => header;
  }
  if (typeof user.tokenFile === 'string' && userEntry)
    return rotatingToken(
      isAbsolute(user.tokenFile) ? user.tokenFile : resolve(dirname(userEntry.path), user.tokenFile),
    );
  if (typeof user.username === 'string') {
    const header = {
      authorization: `Basic ${Buffer.from(`${user.username}:${String(user.password ?? '')}`).toString('base64')}`,
    };
    return async () => header;
  }
  return async () => ({});
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
