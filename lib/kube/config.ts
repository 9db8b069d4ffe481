// Where and how to reach the API server: in-cluster (ServiceAccount token, rotated on disk) or a kubeconfig.
// Common kubeconfig auth (token, token file, client certificate, CA) is read here directly so the agent does not
// pay for loading @kubernetes/client-node (~70 MB RSS, docs/adr/0001); exec and auth-provider plugins are
// delegated to client-node, loaded only then.

import { existsSync, readFile, readFileSync } from '../fs.ts';
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
  /** Request headers that authenticate (fresh for rotating tokens). */
  authHeaders(): Promise<Record<string, string>>;
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

/**
 * Loads `--kubeconfig`, else the files named in `$KUBECONFIG` merged as kubectl merges them, else
 * `~/.kube/config` if it exists, else the in-cluster config.
 */
export async function loadConnection(
  kubeconfigPath?: string,
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
  /** A context of the kubeconfig to use instead of its current-context (kubectl's --context). */
  context?: string,
): Promise<Connection> {
  if (kubeconfigPath) return fromKubeconfig([kubeconfigPath], context);
  const fromEnv = env.KUBECONFIG?.split(delimiter).filter(Boolean) ?? [];
  // Like kubectl: the files of the list that exist, merged (none exists: the first, to report it).
  const listed = fromEnv.filter((p) => existsSync(p));
  if (fromEnv.length > 0) return fromKubeconfig(listed.length > 0 ? listed : fromEnv.slice(0, 1), context);
  const inHome = join(home, '.kube', 'config');
  if (existsSync(inHome)) return fromKubeconfig([inHome], context);
  if (context) throw new KubeConfigError(`--context ${context}: no kubeconfig to find it in`);
  if (env.KUBERNETES_SERVICE_HOST) return inCluster(env);
  throw new KubeConfigError(
    `no kubeconfig: pass --kubeconfig, set KUBECONFIG, create ${inHome}, or run in a cluster (KUBERNETES_SERVICE_HOST is not set)`,
  );
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

async function fromKubeconfig(paths: readonly string[], chosenContext?: string): Promise<Connection> {
  const merged = await mergeKubeconfigs(paths);
  const where = `kubeconfig ${paths.join(delimiter)}`;
  const contextName = chosenContext || merged.currentContext;
  const context = contextName === undefined ? undefined : merged.contexts.get(contextName)?.value;
  if (!context)
    throw new KubeConfigError(
      `${where}: ${chosenContext ? 'context' : 'current-context'} "${contextName ?? ''}" not found`,
    );
  const clusterEntry = merged.clusters.get(String(context.cluster));
  const cluster = clusterEntry?.value;
  if (!clusterEntry || !cluster || typeof cluster.server !== 'string') {
    throw new KubeConfigError(`${where}: cluster "${String(context.cluster)}" not found or has no server`);
  }
  const server = cluster.server.replace(/\/+$/, '');
  let protocol: string;
  try {
    protocol = new URL(server).protocol;
  } catch {
    protocol = '';
  }
  if (protocol !== 'https:' && protocol !== 'http:') {
    throw new KubeConfigError(
      `${where}: cluster "${String(context.cluster)}" has server "${server}", which is not an https:// URL`,
    );
  }
  const userEntry = merged.users.get(String(context.user));
  const user = userEntry?.value ?? {};
  const source = `${where} context ${contextName}`;
  const fileOrData = (file: unknown, data: unknown, from: string): Buffer | undefined => {
    if (typeof data === 'string') return Buffer.from(data, 'base64');
    if (typeof file === 'string') return readFileSync(isAbsolute(file) ? file : resolve(dirname(from), file));
    return undefined;
  };
  const tls: TlsOptions = {
    ca: fileOrData(
      cluster['certificate-authority'],
      cluster['certificate-authority-data'],
      clusterEntry.path,
    ),
    cert:
      userEntry && fileOrData(user['client-certificate'], user['client-certificate-data'], userEntry.path),
    key: userEntry && fileOrData(user['client-key'], user['client-key-data'], userEntry.path),
    ...(cluster['insecure-skip-tls-verify'] === true ? { rejectUnauthorized: false } : {}),
    ...(typeof cluster['tls-server-name'] === 'string' ? { servername: cluster['tls-server-name'] } : {}),
  };
  if (userEntry && (user.exec || user['auth-provider']))
    return delegateToClientNode(userEntry.path, String(context.user), server, tls, source);
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
  return { server, tls, authHeaders, source };
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
