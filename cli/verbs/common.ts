// What the read-only verbs (status, explain, extensions) share: options, kubectl-style short flags, the
// connection, and errors that say what is wrong (exit code 2: the question could not be answered).

import { LEASE_NAMESPACE, readPublishedPolicy, type PublishedPolicy } from '../../api/index.ts';
import { KubeClient } from '../../lib/kube/client.ts';
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
import {
  connect,
  connectError,
  connectionSettings,
  explainError,
  type ConnectionSettings,
} from './connection.ts';

// The connection flags and errors, in connection.ts, are the verbs' too: they take them from here.
export {
  CliError,
  connect,
  connectError,
  CONNECTION_OPTIONS,
  connectionSettings,
  explainError,
  parseRequestTimeout,
  type ConnectionSettings,
} from './connection.ts';

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
