// What a connection to the API server is (a server, TLS, headers that authenticate, a proxy), the checks on
// the URLs that make one, and a token file re-read as the kubelet rotates it. config.ts builds connections
// (loadConnection); kubeconfig.ts reads them from kubeconfig files.

import { readFile } from '../fs.ts';

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

export function checkedServer(value: string, where: string): string {
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
export function checkedProxy(value: string, where: string): string {
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

/** A bearer token read from `path`, re-read at most once a minute. */
export function rotatingToken(path: string): () => Promise<Record<string, string>> {
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
