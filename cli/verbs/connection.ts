// kubectl's connection flags for kubectl-nodecare's verbs (`kubectl options`: --kubeconfig, --context,
// --server, --token, --as, --request-timeout, ...), the connection they name, and the one line that says why a
// verb could not connect or could not get its answer.

import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../lib/kube/client.ts';
import { COMMON_OPTIONS } from '../../lib/common-options.ts';
import {
  KubeConfigError,
  loadConnection,
  type Connection,
  type ConnectionOverrides,
} from '../../lib/kube/config.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { OptionTable, OptionValues } from '../../lib/options.ts';
import type { CliIo } from '../verb.ts';

/** Thrown for answers the verb cannot give (unknown node, ...): printed as is, exit 2. */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/** kubectl's connection flags (`kubectl options`), with kubectl's meaning. */
export const CONNECTION_OPTIONS = {
  kubeconfig: COMMON_OPTIONS.kubeconfig,
  context: {
    type: 'string',
    description: 'The name of the kubeconfig context to use (else its current-context).',
  },
  cluster: {
    type: 'string',
    description: "The name of the kubeconfig cluster to use (else the context's).",
  },
  user: {
    type: 'string',
    description: "The name of the kubeconfig user to use (else the context's).",
  },
  server: {
    type: 'string',
    description:
      "The address and port of the Kubernetes API server (-s), instead of the cluster's; needs no kubeconfig.",
  },
  token: {
    type: 'string',
    description:
      "Bearer token for authentication to the API server, instead of the user's credentials (client certificate included).",
  },
  'insecure-skip-tls-verify': {
    type: 'boolean',
    description:
      "Do not check the server's certificate for validity (the kubeconfig's certificate authority is then unused). This will make your HTTPS connections insecure.",
    default: false,
  },
  as: {
    type: 'string',
    description:
      'Username to impersonate for the operation: a regular user or a service account (system:serviceaccount:<namespace>:<name>).',
  },
  'as-group': {
    type: 'list',
    description: 'Group to impersonate for the operation (needs --as).',
    default: [],
  },
  'request-timeout': {
    type: 'string',
    description:
      'How long to wait for a single server request before giving up: a number of seconds, or a duration with its unit (500ms, 30s, 2m, 1h); 0 waits without limit.',
    default: `${DEFAULT_REQUEST_TIMEOUT_MS / 1000}s`,
  },
} as const satisfies OptionTable;

const DURATION_UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * kubectl's --request-timeout: a whole number of seconds, or a Go duration (`1m30s`, `500ms`, `1.5h`); 0
 * means none. Milliseconds, rounded up; a CliError for anything else.
 */
export function parseRequestTimeout(value: string): number {
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let ms = 0;
  let at = 0;
  while (at < text.length) {
    part.lastIndex = at;
    const match = part.exec(text);
    if (!match) break;
    ms += Number(match[1]) * (DURATION_UNIT_MS[match[2] as string] as number);
    at = part.lastIndex;
  }
  if (text === '' || at !== text.length)
    throw new CliError(
      `--request-timeout "${value}": expected a number of seconds or a duration with its unit (e.g. 1s, 2m, 3h; 0 for none)`,
    );
  return Math.ceil(ms);
}

/** What the connection flags ask for, read and checked before any I/O. */
export interface ConnectionSettings {
  kubeconfig: string | undefined;
  overrides: ConnectionOverrides;
  /** 0: no deadline. */
  requestTimeoutMs: number;
}

export function connectionSettings(values: OptionValues): ConnectionSettings {
  const text = (name: string): string | undefined => (values[name] as string | undefined) || undefined;
  const overrides: ConnectionOverrides = {};
  // As kubectl: an empty value is no value (the flag's default), --token= included.
  for (const key of ['context', 'cluster', 'user', 'server', 'token', 'as'] as const) {
    const value = text(key);
    if (value !== undefined) overrides[key] = value;
  }
  if (values['insecure-skip-tls-verify'] === true) overrides.insecureSkipTlsVerify = true;
  const groups = (values['as-group'] as string[] | undefined) ?? [];
  if (groups.length > 0) overrides.asGroups = groups;
  return {
    kubeconfig: text('kubeconfig'),
    overrides,
    requestTimeoutMs: parseRequestTimeout(
      (values['request-timeout'] as string | undefined) ?? CONNECTION_OPTIONS['request-timeout'].default,
    ),
  };
}

/** The connection the flags name (loadConnection with kubectl's overrides); KubeConfigError if none. */
export function connect(settings: ConnectionSettings, io: CliIo): Promise<Connection> {
  return loadConnection(settings.kubeconfig, io.env as NodeJS.ProcessEnv, undefined, settings.overrides);
}

/** Why there is no connection: the flags, the kubeconfig, or reading it. */
export function connectError(err: unknown): string {
  if (err instanceof CliError || err instanceof KubeConfigError) return err.message;
  return `kubeconfig: ${(err as Error).message}`;
}

/** `requestTimeoutMs`: the --request-timeout in force, named when a request ran out of it. */
export function explainError(err: unknown, server: string, requestTimeoutMs?: number): string {
  if (err instanceof CliError) return err.message;
  if (isKubeError(err)) {
    switch (err.code) {
      case KubeErrorCode.Timeout:
        if (requestTimeoutMs !== undefined && requestTimeoutMs > 0)
          return `the API server at ${server} did not answer within ${requestTimeoutMs / 1000}s (${err.message}); check the server and your network, or give a longer --request-timeout`;
        return `cannot reach the API server at ${server} (${err.message}); check the kubeconfig's server and your network`;
      case KubeErrorCode.Network:
        return `cannot reach the API server at ${server} (${err.message}); check the kubeconfig's server and your network`;
      case KubeErrorCode.Unauthorized:
        return `the API server at ${server} refused the credentials (${err.message}); check the kubeconfig's user`;
      case KubeErrorCode.Forbidden:
        return `not allowed (${err.message}); the plugin needs get/list on nodes, leases in the lease namespace, events, systemextensions and clusterhealths (a ClusterRoleBinding to kubectl's view ClusterRole grants them: docs/install.md, "Access for people")`;
      case KubeErrorCode.Invalid:
        return `the API server rejected the request (${err.message})`;
      case KubeErrorCode.Client:
        // Not the network's fault nor the server's: say so, with what failed (regression: undici's TypeError
        // on an unsupported Node.js read "cannot reach the API server ... check your network").
        return `the request failed in kubectl-nodecare itself, not on the network (${err.message}); please report it`;
      default:
        return err.message;
    }
  }
  return (err as Error).message;
}
