// What the read-only verbs (status, explain, extensions) share: options, kubectl-style short flags, the
// connection, and errors that say what is wrong (exit code 2: the question could not be answered).

import { LEASE_NAMESPACE, readPublishedPolicy, type PublishedPolicy } from '../../api/index.ts';
import { COMMON_OPTIONS } from '../../lib/common-options.ts';
import { DEFAULT_REQUEST_TIMEOUT_MS, KubeClient } from '../../lib/kube/client.ts';
import {
  KubeConfigError,
  loadConnection,
  type Connection,
  type ConnectionOverrides,
} from '../../lib/kube/config.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { OptionTable, OptionValues } from '../../lib/options.ts';
import type { CliIo } from '../verb.ts';
import { OUTPUT_FORMATS, type OutputFormat } from '../format.ts';
import {
  analyze,
  CLI_POLICY_DEFAULTS,
  type Analysis,
  type CliPolicy,
  type ClusterSnapshot,
} from '../model.ts';
import { readSnapshot, type SnapshotNotes } from '../snapshot.ts';

/** Exit codes of the read-only verbs. */
export const Exit = { healthy: 0, notHealthy: 1, error: 2 } as const;

/**
 * The controller's flags the answers depend on; give the same values if the controller runs with others. Same
 * type, default and bounds as the controller's own (test/unit/cli-policy-options.test.ts holds them together).
 */
export const POLICY_OPTIONS = {
  'bootstrap-taint-key': {
    type: 'string',
    description:
      "The controller's --bootstrap-taint-key (default: what the controller publishes in ClusterHealth status.policy, else the controller's default).",
  },
  'runtime-taint-key': {
    type: 'string',
    description:
      "The controller's --runtime-taint-key (default: as published in ClusterHealth status.policy, else the controller's default).",
  },
  'bootstrap-timeout-seconds': {
    type: 'integer',
    description: "The controller's --bootstrap-timeout-seconds (default: as published, else 900).",
    min: 1,
    max: 86_400,
  },
  'missing-lease-grace-seconds': {
    type: 'integer',
    description:
      "The controller's --missing-lease-grace-seconds (default: as published, else the controller's default).",
    min: 0,
    max: 86_400,
  },
  'max-unhealthy-fraction': {
    type: 'number',
    description:
      "The controller's --max-unhealthy-fraction, the correlated-failure breaker (default: as published, else the controller's default).",
    min: 0,
    max: 1,
  },
  'annotation-condition-type': {
    type: 'list',
    description:
      "The controller's --annotation-condition-type, custom condition types node annotations may feed; repeatable (default: as published, else none).",
  },
  suspend: {
    type: 'boolean',
    description:
      "The controller's --suspend, every node's taint changes held (default: as published, else false).",
  },
  'lease-namespace': {
    type: 'string',
    description: 'Namespace of the extension and agent Leases.',
    default: LEASE_NAMESPACE,
  },
} as const satisfies OptionTable;

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

export const OUTPUT_OPTION = {
  output: {
    type: 'string',
    description: 'Output format (-o): text, wide (more columns), json or yaml.',
    default: 'text',
    choices: OUTPUT_FORMATS,
  },
} as const satisfies OptionTable;

export const SELECTOR_OPTION = {
  selector: {
    type: 'string',
    description: 'Label selector (-l) of the nodes to show, e.g. -l node-role=gpu,zone in (a,b).',
  },
} as const satisfies OptionTable;

/**
 * The controller's settings the plugin judges nodes with: each the flag given, else what the leading controller
 * publishes in ClusterHealth status.policy (api/policy.ts), else the controller's default.
 */
export function policyOf(values: OptionValues, published: Partial<PublishedPolicy> = {}): CliPolicy {
  const given = <T>(flag: string): T | undefined => values[flag] as T | undefined;
  const types = given<string[]>('annotation-condition-type');
  return {
    bootstrapTaintKey:
      given<string>('bootstrap-taint-key') ??
      published.bootstrapTaintKey ??
      CLI_POLICY_DEFAULTS.bootstrapTaintKey,
    runtimeTaintKey:
      given<string>('runtime-taint-key') ?? published.runtimeTaintKey ?? CLI_POLICY_DEFAULTS.runtimeTaintKey,
    bootstrapTimeoutSeconds:
      given<number>('bootstrap-timeout-seconds') ??
      published.bootstrapTimeoutSeconds ??
      CLI_POLICY_DEFAULTS.bootstrapTimeoutSeconds,
    missingLeaseGraceSeconds:
      given<number>('missing-lease-grace-seconds') ??
      published.missingLeaseGraceSeconds ??
      CLI_POLICY_DEFAULTS.missingLeaseGraceSeconds,
    maxUnhealthyFraction:
      given<number>('max-unhealthy-fraction') ??
      published.maxUnhealthyFraction ??
      CLI_POLICY_DEFAULTS.maxUnhealthyFraction,
    annotationConditionTypes:
      types && types.length > 0
        ? types
        : (published.annotationConditionTypes ?? CLI_POLICY_DEFAULTS.annotationConditionTypes),
    suspend: given<boolean>('suspend') ?? published.suspend ?? CLI_POLICY_DEFAULTS.suspend,
  };
}

/**
 * What the plugin can use of the policy the leader published, with a note for each field it cannot and one
 * when there is none (a controller older than status.policy): the defaults and the flags given are used then.
 */
export function publishedPolicyOf(snapshot: ClusterSnapshot): {
  policy: Partial<PublishedPolicy>;
  notes: string[];
} {
  const health = snapshot.clusterHealth;
  if (!health) return { policy: {}, notes: [] }; // The snapshot's own note says ClusterHealth is missing.
  const raw = health.status?.policy;
  const { policy, problems } = readPublishedPolicy(raw);
  const notes = problems.map((p) => `ClusterHealth cluster ${p}: the flag given or the default is used`);
  if (raw === undefined)
    notes.push(
      "ClusterHealth cluster has no status.policy (a controller older than this plugin): nodes are judged with the controller's default settings and the flags given",
    );
  return { policy, notes };
}

export function outputOf(values: OptionValues): OutputFormat {
  return values.output as OutputFormat;
}

const SHORT_FLAGS: Record<string, string> = { '-o': '--output', '-l': '--selector', '-s': '--server' };

/**
 * kubectl's spellings: `-o json`, `-ojson`, `-o=json`, `-l app=x`, `-lapp=x` (or the verb's `shortFlags`,
 * e.g. `-n nodecare-system`); with `positional` set, the
 * first bare word becomes `--<positional>=<word>` (explain <node>), and the word after a `--flag` of `options`
 * that takes a value is that value, not the positional (`explain --context prod node-a`). Everything else is
 * left for the option parser to judge (a second bare word is reported as unexpected).
 */
export function kubectlArgs(
  argv: readonly string[],
  positional?: string,
  shortFlags: Readonly<Record<string, string>> = SHORT_FLAGS,
  options: OptionTable = {},
): string[] {
  const out: string[] = [];
  let positionalTaken = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const short = shortFlags[arg.slice(0, 2)];
    if (short && !arg.startsWith('--')) {
      const rest = arg.slice(2);
      if (rest === '') {
        const value = argv[i + 1];
        if (value === undefined) out.push(short);
        else {
          out.push(`${short}=${value}`);
          i++;
        }
      } else out.push(`${short}=${rest.startsWith('=') ? rest.slice(1) : rest}`);
      continue;
    }
    if (arg === '--') {
      out.push(...argv.slice(i + 1));
      break;
    }
    const spec = arg.startsWith('--') && !arg.includes('=') ? options[arg.slice(2)] : undefined;
    if (spec && spec.type !== 'boolean' && i + 1 < argv.length) {
      out.push(arg, argv[i + 1] as string);
      i++;
      continue;
    }
    if (positional && !positionalTaken && !arg.startsWith('-')) {
      out.push(`--${positional}=${arg}`);
      positionalTaken = true;
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** Thrown for answers the verb cannot give (unknown node, ...): printed as is, exit 2. */
export class CliError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * Connects, runs `body`, and turns every failure into one clear line and exit code 2: no kubeconfig, an API
 * server that cannot be reached, credentials refused, a bad selector.
 */
export async function withClient(
  verb: string,
  values: OptionValues,
  io: CliIo,
  body: (client: KubeClient) => Promise<number>,
): Promise<number> {
  const prefix = `kubectl nodecare ${verb}`;
  let client: KubeClient;
  let settings: ConnectionSettings;
  try {
    settings = connectionSettings(values);
    client = new KubeClient(await connect(settings, io), {
      userAgent: `kubectl-nodecare/${verb}`,
      connections: 4,
      requestTimeoutMs: settings.requestTimeoutMs,
    });
  } catch (err) {
    io.err(`${prefix}: ${connectError(err)}`);
    return Exit.error;
  }
  try {
    return await body(client);
  } catch (err) {
    io.err(`${prefix}: ${explainError(err, client.server, settings.requestTimeoutMs)}`);
    return Exit.error;
  } finally {
    await client.close();
  }
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

/** Reads the cluster once and judges every node as the controller would at `now` (what each verb starts with). */
export async function readAnalysis(
  client: KubeClient,
  values: OptionValues,
  now: number = Date.now(),
): Promise<{ snapshot: ClusterSnapshot; notes: SnapshotNotes; analysis: Analysis }> {
  const { snapshot, notes } = await readSnapshot(client, values['lease-namespace'] as string);
  const published = publishedPolicyOf(snapshot);
  notes.missing.push(...published.notes);
  return { snapshot, notes, analysis: analyze(snapshot, policyOf(values, published.policy), now) };
}
