// nodecare-agent configuration: flags, environment and an optional config file, validated together before
// any I/O (docs/conventions.md 10). Every problem is reported at once.

import { readFileSync } from '../lib/fs.ts';
import { hostname } from 'node:os';
import {
  MAX_RENEW_SECONDS,
  parseExtensionSpec,
  validateExtensionName,
  type ExtensionSpec,
} from '../api/index.ts';
import { COMMON_OPTIONS } from '../lib/common-options.ts';
import type { LogFormat } from '../lib/log.ts';
import { OptionsError, collectOptions, renderHelp, type OptionTable } from '../lib/options.ts';
import { parseYaml } from '../lib/yaml.ts';

export const AGENT_OPTIONS = {
  kubeconfig: COMMON_OPTIONS.kubeconfig,
  'node-name': {
    type: 'string',
    description: 'The node this agent serves.',
    env: 'NODE_NAME',
    required: true,
  },
  identity: {
    type: 'string',
    description: 'Holder identity written to the leases (the agent pod name).',
    env: 'POD_NAME',
    default: '',
  },
  config: {
    type: 'string',
    description: 'Optional config file (YAML or JSON): extensions (exec allowed) and settings.',
  },
  'health-port': {
    type: 'integer',
    description: 'Port of /healthz, /readyz and /metrics; 0 picks a free port.',
    default: 8095,
    min: 0,
    max: 65535,
  },
  'health-address': COMMON_OPTIONS['health-address'],
  'log-level': COMMON_OPTIONS['log-level'],
  'log-format': COMMON_OPTIONS['log-format'],
  'allowed-path': {
    type: 'list',
    description:
      'Directories under which probes registered by node annotations may reach sockets and files (judged after resolving symlinks).',
    // Exactly the directories the shipped DaemonSet mounts: the kubelet's plugin registration and device
    // plugin sockets, and /run/nodecare for heartbeat files and sockets put there for nodecare. Not /run or
    // /var/lib/kubelet/plugins as a whole (the container runtime's socket, CSI staging mounts with other pods'
    // volume data). docs/agent.md, "Security rules".
    default: ['/var/lib/kubelet/plugins_registry', '/var/lib/kubelet/device-plugins', '/run/nodecare'],
  },
  'kubelet-pods-api-socket': {
    type: 'string',
    description:
      "The kubelet's Pods API socket (Kubernetes 1.37+): where it exists, podReady probes read this node's pods from it instead of watching them through the API server; '' never uses it.",
    default: '/var/lib/kubelet/pods-api/pods-api.sock',
  },
  'heartbeat-duration-seconds': {
    type: 'integer',
    description: 'Duration of the agent heartbeat lease; it is renewed every third of it.',
    default: 60,
    min: 8,
    max: MAX_RENEW_SECONDS,
  },
  'extension-renew-seconds': {
    type: 'integer',
    description:
      'Renewal interval of unchanged extension leases (a change of state is written at once, of the message alone within 120 s); their duration is 3x this.',
    default: 600,
    min: 5,
    max: MAX_RENEW_SECONDS,
  },
  'request-timeout-seconds': {
    type: 'integer',
    description: 'Deadline of each API request.',
    default: 5,
    min: 1,
    max: 60,
  },
  'runtime-metrics': {
    type: 'boolean',
    description:
      'Also serve the Node.js runtime metrics (process_*, nodejs_*) on /metrics (most of its series when on; off by default).',
    default: false,
  },
} satisfies OptionTable;

export const AGENT_SUMMARY =
  'nodecare-agent probes the system extensions its node requires and keeps one Lease per extension with the result.';

export interface AgentConfig {
  kubeconfig: string | undefined;
  nodeName: string;
  identity: string;
  healthPort: number;
  healthAddress: string;
  logLevel: string;
  logFormat: LogFormat;
  allowedPaths: string[];
  /** The kubelet's Pods API socket ('' never). */
  kubeletPodsSocket: string;
  heartbeatDurationSeconds: number;
  extensionRenewSeconds: number;
  requestTimeoutMs: number;
  /** Serve the process_* and nodejs_* runtime metrics too (--runtime-metrics). */
  runtimeMetrics: boolean;
  /** Extensions from the config file: trusted (exec allowed), overridden by annotations and SystemExtensions. */
  fileExtensions: ReadonlyMap<string, ExtensionSpec>;
}

export type AgentConfigResult = { help: string } | { config: AgentConfig };

interface ConfigFile {
  extensions?: Record<string, unknown>;
  allowedPaths?: unknown;
}

function readConfigFile(
  path: string,
  problems: string[],
): { extensions: Map<string, ExtensionSpec>; allowedPaths?: string[] } {
  const extensions = new Map<string, ExtensionSpec>();
  let doc: ConfigFile;
  try {
    doc = (parseYaml(readFileSync(path, 'utf8')) ?? {}) as ConfigFile;
  } catch (err) {
    problems.push(`--config ${path}: ${(err as Error).message.split('\n')[0]}`);
    return { extensions };
  }
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    problems.push(`--config ${path}: expected a mapping with "extensions" and optional "allowedPaths"`);
    return { extensions };
  }
  for (const key of Object.keys(doc)) {
    if (key !== 'extensions' && key !== 'allowedPaths')
      problems.push(`--config ${path}: ${key}: unknown field`);
  }
  for (const [name, raw] of Object.entries(doc.extensions ?? {})) {
    const nameProblem = validateExtensionName(name);
    if (nameProblem) problems.push(`--config ${path}: extensions.${nameProblem}`);
    const { result } = parseExtensionSpec(raw);
    if (!result.ok) problems.push(...result.problems.map((p) => `--config ${path}: extensions.${name}.${p}`));
    else if (!nameProblem) extensions.set(name, result.value);
  }
  let allowedPaths: string[] | undefined;
  if (doc.allowedPaths !== undefined) {
    if (
      !Array.isArray(doc.allowedPaths) ||
      doc.allowedPaths.some((p) => typeof p !== 'string' || !p.startsWith('/'))
    ) {
      problems.push(`--config ${path}: allowedPaths: expected a list of absolute paths`);
    } else allowedPaths = doc.allowedPaths as string[];
  }
  return { extensions, allowedPaths };
}

/** Parses and validates everything; throws OptionsError with every problem. No network I/O. */
export function loadAgentConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): AgentConfigResult {
  // Bad flags do not stop the config file from being checked: every problem is reported in one go.
  const { help, values, problems } = collectOptions(AGENT_OPTIONS, argv, env);
  if (help) return { help: renderHelp('nodecare-agent', AGENT_SUMMARY, AGENT_OPTIONS) };
  const file =
    typeof values.config === 'string'
      ? readConfigFile(values.config, problems)
      : { extensions: new Map<string, ExtensionSpec>() };
  const allowedPaths = (values['allowed-path'] as string[]).concat(file.allowedPaths ?? []);
  for (const p of allowedPaths)
    if (!p.startsWith('/')) problems.push(`--allowed-path: "${p}" is not an absolute path`);
  const kubeletPodsSocket = values['kubelet-pods-api-socket'] as string;
  if (kubeletPodsSocket !== '' && !kubeletPodsSocket.startsWith('/'))
    problems.push(
      `--kubelet-pods-api-socket: "${kubeletPodsSocket}" is not an absolute path (or '' for never)`,
    );
  const nodeName = values['node-name'] as string;
  if (
    nodeName !== undefined &&
    (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(nodeName) || nodeName.length > 253)
  ) {
    problems.push(`--node-name: "${nodeName}" is not a valid node name (DNS subdomain)`);
  }
  if (problems.length > 0) throw new OptionsError(problems);
  return {
    config: Object.freeze({
      kubeconfig: values.kubeconfig as string | undefined,
      nodeName,
      identity: (values.identity as string) || `${hostname()}/${nodeName}`,
      healthPort: values['health-port'] as number,
      healthAddress: values['health-address'] as string,
      logLevel: values['log-level'] as string,
      logFormat: values['log-format'] as LogFormat,
      allowedPaths,
      kubeletPodsSocket,
      heartbeatDurationSeconds: values['heartbeat-duration-seconds'] as number,
      extensionRenewSeconds: values['extension-renew-seconds'] as number,
      requestTimeoutMs: (values['request-timeout-seconds'] as number) * 1000,
      runtimeMetrics: values['runtime-metrics'] as boolean,
      fileExtensions: file.extensions,
    }),
  };
}
