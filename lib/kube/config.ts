// Where and how to reach the API server: in-cluster (ServiceAccount token, rotated on disk) or a kubeconfig.
// Common kubeconfig auth (token, token file, client certificate, CA) is read here directly so the agent does not
// pay for loading @kubernetes/client-node (~70 MB RSS, docs/adr/0001); exec and auth-provider plugins are
// delegated to client-node, loaded only then.

import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { load } from 'js-yaml';

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
 * Loads `--kubeconfig`, else the first file named in `$KUBECONFIG`, else `~/.kube/config` if it exists (as
 * kubectl and client-go do), else the in-cluster config.
 */
export async function loadConnection(
  kubeconfigPath?: string,
  env: NodeJS.ProcessEnv = process.env,
  home: string = homedir(),
  /** A context of the kubeconfig to use instead of its current-context (kubectl's --context). */
  context?: string,
): Promise<Connection> {
  if (kubeconfigPath) return fromKubeconfig(kubeconfigPath, context);
  const fromEnv = env.KUBECONFIG?.split(delimiter).filter(Boolean) ?? [];
  // Like client-go: the first file of the list that exists (all missing: the first, to report it).
  const listed = fromEnv.find((p) => existsSync(p)) ?? fromEnv[0];
  if (listed) return fromKubeconfig(listed, context);
  const inHome = join(home, '.kube', 'config');
  if (existsSync(inHome)) return fromKubeconfig(inHome, context);
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

async function fromKubeconfig(path: string, chosenContext?: string): Promise<Connection> {
  let doc: KubeconfigFile;
  try {
    doc = load(await readFile(path, 'utf8')) as KubeconfigFile;
  } catch (err) {
    throw new KubeConfigError(`cannot read kubeconfig ${path}: ${(err as Error).message}`);
  }
  const base = dirname(path);
  const contextName = chosenContext || doc['current-context'];
  const context = doc.contexts?.find((c) => c.name === contextName)?.context;
  if (!context)
    throw new KubeConfigError(
      `kubeconfig ${path}: ${chosenContext ? 'context' : 'current-context'} "${contextName ?? ''}" not found`,
    );
  const cluster = doc.clusters?.find((c) => c.name === context.cluster)?.cluster;
  if (!cluster || typeof cluster.server !== 'string') {
    throw new KubeConfigError(
      `kubeconfig ${path}: cluster "${String(context.cluster)}" not found or has no server`,
    );
  }
  const user = doc.users?.find((u) => u.name === context.user)?.user ?? {};
  const source = `kubeconfig ${path} context ${contextName}`;
  const fileOrData = (file: unknown, data: unknown): Buffer | undefined => {
    if (typeof data === 'string') return Buffer.from(data, 'base64');
    if (typeof file === 'string') return readFileSync(isAbsolute(file) ? file : resolve(base, file));
    return undefined;
  };
  const tls: TlsOptions = {
    ca: fileOrData(cluster['certificate-authority'], cluster['certificate-authority-data']),
    cert: fileOrData(user['client-certificate'], user['client-certificate-data']),
    key: fileOrData(user['client-key'], user['client-key-data']),
    ...(cluster['insecure-skip-tls-verify'] === true ? { rejectUnauthorized: false } : {}),
    ...(typeof cluster['tls-server-name'] === 'string' ? { servername: cluster['tls-server-name'] } : {}),
  };
  if (user.exec || user['auth-provider'])
    return delegateToClientNode(path, contextName as string, cluster.server, tls, source);
  let authHeaders: () => Promise<Record<string, string>> = async () => ({});
  if (typeof user.token === 'string') {
    const header = { authorization: `Bearer ${user.token}` };
    authHeaders = async () => header;
  } else if (typeof user.tokenFile === 'string') {
    authHeaders = rotatingToken(isAbsolute(user.tokenFile) ? user.tokenFile : resolve(base, user.tokenFile));
  } else if (typeof user.username === 'string') {
    const header = {
      authorization: `Basic ${Buffer.from(`${user.username}:${String(user.password ?? '')}`).toString('base64')}`,
    };
    authHeaders = async () => header;
  }
  return { server: cluster.server.replace(/\/+$/, ''), tls, authHeaders, source };
}

/** exec / auth-provider credentials: let client-node run the plugin and cache its credential. */
async function delegateToClientNode(
  path: string,
  contextName: string,
  server: string,
  tls: TlsOptions,
  source: string,
): Promise<Connection> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  kc.setCurrentContext(contextName);
  return {
    server: server.replace(/\/+$/, ''),
    tls,
    async authHeaders() {
      const opts: { headers?: Record<string, string> } = {};
      await kc.applyToHTTPSOptions(opts);
      return { ...(opts.headers ?? {}) };
    },
    source: `${source} (auth plugin via client-node)`,
  };
}
