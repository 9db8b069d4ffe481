// The extension spec (SPEC section 2): one source of truth for its type, defaults, parsing and validation,
// shared by the agent (which probes) and the controller (which decides). Parsing never throws: a bad
// registration becomes a list of problems, each naming the field path and the expected form.

import { parseQuantity } from './quantity.ts';
import { validateSelector, type LabelSelector } from './selector.ts';

export const PROBE_KINDS = [
  'http',
  'tcp',
  'grpc',
  'csi',
  'devicePlugin',
  'nodeResource',
  'nodeCondition',
  'podReady',
  'exec',
  'file',
  'process',
  'host',
] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];

/** Inclusive status code range, e.g. [200, 399]. */
export type StatusRange = readonly [number, number];

export interface HttpProbe {
  kind: 'http';
  url: string;
  expectStatus: readonly StatusRange[];
  bodyRegex?: string;
  caFile?: string;
  insecureSkipVerify: boolean;
}
export interface TcpProbe {
  kind: 'tcp';
  host: string;
  port: number;
}
/** `address` is `host:port` or `unix:///absolute/path`. */
export interface GrpcProbe {
  kind: 'grpc';
  address: string;
  service: string;
}
export interface CsiProbe {
  kind: 'csi';
  socket: string;
}
export interface DevicePluginProbe {
  kind: 'devicePlugin';
  socket: string;
  minHealthy: number;
}
export interface NodeResourceProbe {
  kind: 'nodeResource';
  resource: string;
  min: number;
}
export interface NodeConditionProbe {
  kind: 'nodeCondition';
  type: string;
  status: 'True' | 'False' | 'Unknown';
}
export interface PodReadyProbe {
  kind: 'podReady';
  namespace: string;
  selector: LabelSelector;
  min: number;
}
export interface ExecProbe {
  kind: 'exec';
  command: readonly string[];
}
export interface FileProbe {
  kind: 'file';
  path: string;
  maxAgeSeconds?: number;
  contentRegex?: string;
}
export interface ProcessProbe {
  kind: 'process';
  name: string;
  min: number;
}
export interface HostProbe {
  kind: 'host';
  diskFreePercent?: { mount: string; min: number };
  memoryAvailableMiB?: { min: number };
  gpu?: { vendor?: string; min: number };
  interfaceUp?: { name: string };
}

export type ProbeSpec =
  | HttpProbe
  | TcpProbe
  | GrpcProbe
  | CsiProbe
  | DevicePluginProbe
  | NodeResourceProbe
  | NodeConditionProbe
  | PodReadyProbe
  | ExecProbe
  | FileProbe
  | ProcessProbe
  | HostProbe;

export type ProbeOf<K extends ProbeKind> = Extract<ProbeSpec, { kind: K }>;

export const BUILTIN_CONDITION_TYPES = [
  'EveryNodeReady',
  'SystemComponentsHealthy',
  'ObservabilityComponentsHealthy',
  'ControlPlaneHealthy',
] as const;

export const Enforcement = { Enforce: 'Enforce', DryRun: 'DryRun' } as const;
export type Enforcement = (typeof Enforcement)[keyof typeof Enforcement];

export interface ExtensionSpec {
  probe: ProbeSpec;
  periodSeconds: number;
  timeoutSeconds: number;
  failureThreshold: number;
  successThreshold: number;
  startupGraceSeconds: number;
  critical: boolean;
  conditionType: string;
  enforcement: Enforcement;
}

/** What the controller needs of an extension even when its probe does not parse. */
export type ExtensionPolicy = Pick<
  ExtensionSpec,
  'critical' | 'conditionType' | 'enforcement' | 'startupGraceSeconds'
>;

export const EXTENSION_DEFAULTS = {
  periodSeconds: 10,
  timeoutSeconds: 3,
  failureThreshold: 3,
  successThreshold: 1,
  startupGraceSeconds: 300,
  critical: true,
  conditionType: 'EveryNodeReady',
  enforcement: Enforcement.Enforce,
} as const satisfies Omit<ExtensionSpec, 'probe'>;

export const DEFAULT_POLICY: ExtensionPolicy = {
  critical: EXTENSION_DEFAULTS.critical,
  conditionType: EXTENSION_DEFAULTS.conditionType,
  enforcement: EXTENSION_DEFAULTS.enforcement,
  startupGraceSeconds: EXTENSION_DEFAULTS.startupGraceSeconds,
};

/** Extension names are DNS labels; this one is reserved for the agent's own heartbeat Lease. */
export const RESERVED_EXTENSION_NAME = 'nodecare-agent';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PASCAL_CASE = /^[A-Z][A-Za-z0-9]{0,62}$/;
const MAX_REGEX_LENGTH = 512;

export function validateExtensionName(name: string): string | undefined {
  if (name.length === 0 || name.length > 63 || !DNS_LABEL.test(name)) {
    return `name "${name}": expected a DNS label (lowercase letters, digits and '-', at most 63 characters)`;
  }
  if (name === RESERVED_EXTENSION_NAME) return `name "${name}": reserved for the agent's own heartbeat`;
  return undefined;
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; problems: string[] };

/**
 * Collects problems while reading fields of an untyped object. Each getter records a problem with the
 * field's path and returns undefined instead of throwing, so one pass reports every problem at once.
 */
class FieldReader {
  readonly problems: string[];
  readonly path: string;
  readonly raw: Record<string, unknown>;
  constructor(raw: Record<string, unknown>, path: string, problems: string[]) {
    this.raw = raw;
    this.path = path;
    this.problems = problems;
  }

  /** The path of `field`; '' names the object this reader reads. */
  at(field: string): string {
    if (field === '') return this.path;
    return this.path ? `${this.path}.${field}` : field;
  }

  problem(field: string, expected: string): undefined {
    this.problems.push(`${this.at(field)}: ${expected}`);
    return undefined;
  }

  rejectUnknown(known: readonly string[]): void {
    for (const key of Object.keys(this.raw)) {
      if (!known.includes(key)) this.problem(key, `unknown field (expected one of ${known.join(', ')})`);
    }
  }

  string(field: string, options: { required?: boolean; nonEmpty?: boolean } = {}): string | undefined {
    const value = this.raw[field];
    if (value === undefined) return options.required ? this.problem(field, 'required') : undefined;
    if (typeof value !== 'string') return this.problem(field, 'expected a string');
    if (options.nonEmpty !== false && value === '') return this.problem(field, 'expected a non-empty string');
    return value;
  }

  int(field: string, min: number, max: number): number | undefined {
    const value = this.raw[field];
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      return this.problem(field, `expected an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
    }
    return value;
  }

  bool(field: string): boolean | undefined {
    const value = this.raw[field];
    if (value === undefined) return undefined;
    if (typeof value !== 'boolean')
      return this.problem(field, `expected true or false, got ${JSON.stringify(value)}`);
    return value;
  }

  regex(field: string): string | undefined {
    const source = this.string(field);
    if (source === undefined) return undefined;
    if (source.length > MAX_REGEX_LENGTH)
      return this.problem(field, `regular expression longer than ${MAX_REGEX_LENGTH}`);
    try {
      new RegExp(source);
    } catch (err) {
      return this.problem(field, `invalid regular expression (${(err as Error).message})`);
    }
    return source;
  }

  absolutePath(field: string, options: { required?: boolean } = {}): string | undefined {
    const value = this.string(field, options);
    if (value === undefined) return undefined;
    const path = value.startsWith('unix://') ? value.slice('unix://'.length) : value;
    if (!path.startsWith('/')) return this.problem(field, `expected an absolute path, got "${value}"`);
    if (path.split('/').includes('..')) return this.problem(field, `".." is not allowed in "${value}"`);
    return path;
  }

  object(field: string, options: { required?: boolean } = {}): FieldReader | undefined {
    const value = this.raw[field];
    if (value === undefined) return options.required ? this.problem(field, 'required') : undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return this.problem(field, 'expected an object');
    return new FieldReader(value as Record<string, unknown>, this.at(field), this.problems);
  }

  quantity(field: string, fallback: number): number | undefined {
    const value = this.raw[field];
    if (value === undefined) return fallback;
    const parsed = typeof value === 'number' || typeof value === 'string' ? parseQuantity(value) : undefined;
    if (parsed === undefined || parsed < 0) {
      return this.problem(
        field,
        `expected a non-negative number or quantity such as "2" or "8Gi", got ${JSON.stringify(value)}`,
      );
    }
    return parsed;
  }
}

function parseStatusRanges(reader: FieldReader): StatusRange[] | undefined {
  const raw = reader.raw.expectStatus;
  if (raw === undefined) return [[200, 399]];
  const items = typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw : [raw];
  if (items.length === 0) {
    return reader.problem('expectStatus', 'expected at least one status code or range, got []');
  }
  const ranges: StatusRange[] = [];
  for (const item of items) {
    const text = String(item).trim();
    const match = /^(\d{3})(?:-(\d{3}))?$/.exec(text);
    const low = match ? Number(match[1]) : NaN;
    const high = match ? Number(match[2] ?? match[1]) : NaN;
    if (!match || low < 100 || high > 599 || low > high) {
      return reader.problem(
        'expectStatus',
        `expected status codes or ranges such as "200-399" or "200,204", got ${JSON.stringify(raw)}`,
      );
    }
    ranges.push([low, high]);
  }
  return ranges;
}

function parseHostPort(address: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:/\s[\]]+):(\d{1,5})$/.exec(address);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  const host = (match[1] as string).replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

type ProbeParser = (r: FieldReader) => ProbeSpec | undefined;

/** One parser per probe kind; `satisfies` makes a new kind fail to compile until it is handled here. */
const PROBE_PARSERS = {
  http: (r) => {
    r.rejectUnknown(['url', 'expectStatus', 'bodyRegex', 'caFile', 'insecureSkipVerify']);
    const url = r.string('url', { required: true });
    if (url !== undefined) {
      let parsed: URL | undefined;
      try {
        parsed = new URL(url);
      } catch {
        parsed = undefined;
      }
      if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
        r.problem('url', `expected an http:// or https:// URL, got "${url}"`);
      } else if (parsed.username || parsed.password) {
        r.problem('url', 'credentials in the URL are not allowed');
      }
    }
    const expectStatus = parseStatusRanges(r);
    const bodyRegex = r.regex('bodyRegex');
    const caFile = r.absolutePath('caFile');
    const insecureSkipVerify = r.bool('insecureSkipVerify') ?? false;
    if (url === undefined || expectStatus === undefined) return undefined;
    return { kind: 'http', url, expectStatus, bodyRegex, caFile, insecureSkipVerify };
  },
  tcp: (r) => {
    r.rejectUnknown(['host', 'port']);
    const host = r.string('host') ?? '127.0.0.1';
    const port =
      r.int('port', 1, 65535) ?? (r.raw.port === undefined ? r.problem('port', 'required') : undefined);
    return port === undefined ? undefined : { kind: 'tcp', host, port };
  },
  grpc: (r) => {
    r.rejectUnknown(['address', 'service']);
    const address = r.string('address', { required: true });
    const service = r.string('service', { nonEmpty: false }) ?? '';
    if (address === undefined) return undefined;
    if (address.startsWith('unix://')) {
      const path = r.absolutePath('address');
      return path === undefined ? undefined : { kind: 'grpc', address: `unix://${path}`, service };
    }
    if (!parseHostPort(address))
      return r.problem('address', `expected "host:port" or "unix:///path", got "${address}"`);
    return { kind: 'grpc', address, service };
  },
  csi: (r) => {
    r.rejectUnknown(['socket']);
    const socket = r.absolutePath('socket', { required: true });
    return socket === undefined ? undefined : { kind: 'csi', socket };
  },
  devicePlugin: (r) => {
    r.rejectUnknown(['socket', 'minHealthy']);
    const socket = r.absolutePath('socket', { required: true });
    const minHealthy = r.int('minHealthy', 1, 100_000) ?? 1;
    return socket === undefined ? undefined : { kind: 'devicePlugin', socket, minHealthy };
  },
  nodeResource: (r) => {
    r.rejectUnknown(['resource', 'min']);
    const resource = r.string('resource', { required: true });
    const min = r.quantity('min', 1);
    return resource === undefined || min === undefined ? undefined : { kind: 'nodeResource', resource, min };
  },
  nodeCondition: (r) => {
    r.rejectUnknown(['type', 'status']);
    const type = r.string('type', { required: true });
    const status = r.string('status') ?? 'True';
    if (status !== 'True' && status !== 'False' && status !== 'Unknown') {
      return r.problem('status', `expected True, False or Unknown, got "${status}"`);
    }
    return type === undefined ? undefined : { kind: 'nodeCondition', type, status };
  },
  podReady: (r) => {
    r.rejectUnknown(['namespace', 'selector', 'min']);
    const namespace = r.string('namespace', { required: true });
    const selector = r.raw.selector ?? undefined;
    if (selector === undefined)
      r.problem('selector', 'required (a label selector with matchLabels/matchExpressions)');
    const selectorProblems = validateSelector(selector, r.at('selector'));
    r.problems.push(...selectorProblems);
    const min = r.int('min', 1, 10_000) ?? 1;
    if (namespace === undefined || selector === undefined || selectorProblems.length > 0) return undefined;
    const typed = selector as LabelSelector;
    if (Object.keys(typed.matchLabels ?? {}).length === 0 && (typed.matchExpressions ?? []).length === 0) {
      return r.problem('selector', 'must not be empty (it would match every pod on the node)');
    }
    return { kind: 'podReady', namespace, selector: typed, min };
  },
  exec: (r) => {
    r.rejectUnknown(['command']);
    const command = r.raw.command;
    if (!Array.isArray(command) || command.length === 0 || command.some((a) => typeof a !== 'string')) {
      return r.problem('command', 'expected a non-empty list of strings (argv; no shell is used)');
    }
    if (!(command[0] as string).startsWith('/')) {
      return r.problem('command', `command[0] must be an absolute path, got "${command[0] as string}"`);
    }
    return { kind: 'exec', command: command as string[] };
  },
  file: (r) => {
    r.rejectUnknown(['path', 'maxAgeSeconds', 'contentRegex']);
    const path = r.absolutePath('path', { required: true });
    const maxAgeSeconds = r.int('maxAgeSeconds', 1, 31_536_000);
    const contentRegex = r.regex('contentRegex');
    return path === undefined ? undefined : { kind: 'file', path, maxAgeSeconds, contentRegex };
  },
  process: (r) => {
    r.rejectUnknown(['name', 'min']);
    const name = r.string('name', { required: true });
    const min = r.int('min', 1, 100_000) ?? 1;
    return name === undefined ? undefined : { kind: 'process', name, min };
  },
  host: (r) => {
    r.rejectUnknown(['diskFreePercent', 'memoryAvailableMiB', 'gpu', 'interfaceUp']);
    const probe: HostProbe = { kind: 'host' };
    const disk = r.object('diskFreePercent');
    if (disk) {
      disk.rejectUnknown(['mount', 'min']);
      const mount = disk.absolutePath('mount', { required: true });
      const min =
        disk.int('min', 0, 100) ??
        (disk.raw.min === undefined ? disk.problem('min', 'required (percent from 0 to 100)') : undefined);
      if (mount !== undefined && min !== undefined) probe.diskFreePercent = { mount, min };
    }
    const memory = r.object('memoryAvailableMiB');
    if (memory) {
      memory.rejectUnknown(['min']);
      const min =
        memory.int('min', 0, 1 << 30) ??
        (memory.raw.min === undefined ? memory.problem('min', 'required (MiB)') : undefined);
      if (min !== undefined) probe.memoryAvailableMiB = { min };
    }
    const gpu = r.object('gpu');
    if (gpu) {
      gpu.rejectUnknown(['vendor', 'min']);
      probe.gpu = { vendor: gpu.string('vendor'), min: gpu.int('min', 1, 1024) ?? 1 };
    }
    const iface = r.object('interfaceUp');
    if (iface) {
      iface.rejectUnknown(['name']);
      const name = iface.string('name', { required: true });
      if (name !== undefined) probe.interfaceUp = { name };
    }
    const checks = ['diskFreePercent', 'memoryAvailableMiB', 'gpu', 'interfaceUp'];
    if (!checks.some((check) => r.raw[check] !== undefined)) {
      return r.problem('', 'expected at least one of diskFreePercent, memoryAvailableMiB, gpu, interfaceUp');
    }
    return probe;
  },
} satisfies Record<ProbeKind, ProbeParser>;

function parseProbe(r: FieldReader): ProbeSpec | undefined {
  const kinds = Object.keys(r.raw);
  if (kinds.length !== 1) {
    return r.problem(
      '',
      `expected exactly one probe kind (one of ${PROBE_KINDS.join(', ')}), got ${kinds.length === 0 ? 'none' : kinds.join(', ')}`,
    );
  }
  const kind = kinds[0] as string;
  if (!(PROBE_KINDS as readonly string[]).includes(kind)) {
    return r.problem(kind, `unknown probe kind (expected one of ${PROBE_KINDS.join(', ')})`);
  }
  const body = r.object(kind, { required: true });
  return body ? PROBE_PARSERS[kind as ProbeKind](body) : undefined;
}

const SPEC_FIELDS = [
  'probe',
  'periodSeconds',
  'timeoutSeconds',
  'failureThreshold',
  'successThreshold',
  'startupGraceSeconds',
  'critical',
  'conditionType',
  'enforcement',
] as const;

function readPolicy(r: FieldReader): ExtensionPolicy {
  const conditionType = r.string('conditionType') ?? EXTENSION_DEFAULTS.conditionType;
  if (!PASCAL_CASE.test(conditionType))
    r.problem('conditionType', `expected a PascalCase condition type, got "${conditionType}"`);
  const enforcement = r.string('enforcement') ?? EXTENSION_DEFAULTS.enforcement;
  if (enforcement !== Enforcement.Enforce && enforcement !== Enforcement.DryRun) {
    r.problem('enforcement', `expected Enforce or DryRun, got "${enforcement}"`);
  }
  return {
    critical: r.bool('critical') ?? EXTENSION_DEFAULTS.critical,
    conditionType: PASCAL_CASE.test(conditionType) ? conditionType : EXTENSION_DEFAULTS.conditionType,
    enforcement: enforcement === Enforcement.DryRun ? Enforcement.DryRun : Enforcement.Enforce,
    startupGraceSeconds: r.int('startupGraceSeconds', 0, 86_400) ?? EXTENSION_DEFAULTS.startupGraceSeconds,
  };
}

export interface SpecParse {
  /** The policy fields, read best-effort even when the spec is invalid (so the controller can honour them). */
  policy: ExtensionPolicy;
  result: ParseResult<ExtensionSpec>;
}

/**
 * Parses an extension spec (the JSON shape of `SystemExtension.spec` without `nodeSelector`, or of an
 * annotation value). `extraFields` are tolerated without being read (a SystemExtension's `nodeSelector`).
 */
export function parseExtensionSpec(raw: unknown, extraFields: readonly string[] = []): SpecParse {
  const problems: string[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return {
      policy: DEFAULT_POLICY,
      result: { ok: false, problems: ['expected a JSON object with a "probe" field'] },
    };
  }
  const r = new FieldReader(raw as Record<string, unknown>, '', problems);
  r.rejectUnknown([...SPEC_FIELDS, ...extraFields]);
  const policy = readPolicy(r);
  const probeReader = r.object('probe', { required: true });
  const probe = probeReader ? parseProbe(probeReader) : undefined;
  const periodSeconds = r.int('periodSeconds', 1, 3600) ?? EXTENSION_DEFAULTS.periodSeconds;
  const timeoutSeconds = r.int('timeoutSeconds', 1, 300) ?? EXTENSION_DEFAULTS.timeoutSeconds;
  const failureThreshold = r.int('failureThreshold', 1, 1000) ?? EXTENSION_DEFAULTS.failureThreshold;
  const successThreshold = r.int('successThreshold', 1, 1000) ?? EXTENSION_DEFAULTS.successThreshold;
  if (probe?.kind === 'exec' && timeoutSeconds > periodSeconds) {
    r.problem('timeoutSeconds', `must not exceed periodSeconds (${periodSeconds}) for exec probes`);
  }
  if (problems.length > 0 || !probe) return { policy, result: { ok: false, problems } };
  return {
    policy,
    result: {
      ok: true,
      value: { probe, periodSeconds, timeoutSeconds, failureThreshold, successThreshold, ...policy },
    },
  };
}

/**
 * Parses a node annotation value: JSON (a spec) or a one-line shorthand URL (`http://…`, `https://…`,
 * `tcp://host:port`, `grpc://host:port`, `unix:///path`), which means that probe with all defaults.
 */
export function parseAnnotationValue(value: string): SpecParse {
  const text = value.trim();
  if (text.startsWith('{')) {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      return {
        policy: DEFAULT_POLICY,
        result: { ok: false, problems: [`value is not valid JSON (${(err as Error).message})`] },
      };
    }
    const parsed = parseExtensionSpec(raw);
    if (!parsed.result.ok && typeof raw === 'object' && raw !== null && 'nodeSelector' in raw) {
      parsed.result.problems.push('nodeSelector: only valid on a SystemExtension, not in a node annotation');
    }
    return parsed;
  }
  const shorthand = shorthandProbe(text);
  if (!shorthand.ok) return { policy: DEFAULT_POLICY, result: shorthand };
  return parseExtensionSpec({ probe: shorthand.value });
}

function shorthandProbe(text: string): ParseResult<Record<string, unknown>> {
  const probe = (value: Record<string, unknown>): ParseResult<Record<string, unknown>> => ({
    ok: true,
    value,
  });
  const problem = (message: string): ParseResult<Record<string, unknown>> => ({
    ok: false,
    problems: [message],
  });
  const scheme = /^([a-z]+):\/\//.exec(text)?.[1];
  switch (scheme) {
    case 'http':
    case 'https':
      return probe({ http: { url: text } });
    case 'tcp': {
      const target = parseHostPort(text.slice('tcp://'.length));
      return target ? probe({ tcp: target }) : problem(`shorthand: expected tcp://host:port, got "${text}"`);
    }
    case 'grpc':
      return probe({ grpc: { address: text.slice('grpc://'.length) } });
    case 'unix':
      return probe({ grpc: { address: text } });
    default:
      return problem(
        `value: expected JSON (starting with "{") or a shorthand URL (http://, https://, tcp://host:port, grpc://host:port, unix:///path), got "${text.slice(0, 80)}"`,
      );
  }
}

export { parseHostPort };
