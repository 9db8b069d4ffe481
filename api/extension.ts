// The extension spec (docs/design.md section 2): one source of truth for its type, defaults, parsing and validation,
// shared by the agent (which probes) and the controller (which decides). Parsing never throws: a bad
// registration becomes a list of problems, each naming the field path and the expected form.

import { parseQuantity } from './quantity.ts';
import { validateSelector, type LabelSelector } from './selector.ts';
import { capInput, quoteInput } from './text.ts';

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
/**
 * Probes that reach a path carry the directories it must stay in once resolved, when their registration came
 * from a node annotation (set by resolveRegistrations, never read from input). The agent resolves the path when
 * it probes (symlinks can change after registration) and refuses one that leads elsewhere.
 */
interface PathConfinement {
  confineTo?: readonly string[];
}

/** `address` is `host:port` or `unix:///absolute/path`. */
export interface GrpcProbe extends PathConfinement {
  kind: 'grpc';
  address: string;
  service: string;
}
export interface CsiProbe extends PathConfinement {
  kind: 'csi';
  socket: string;
}
export interface DevicePluginProbe extends PathConfinement {
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
export interface FileProbe extends PathConfinement {
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
    return `name ${quoteInput(name)}: expected a DNS label (lowercase letters, digits and '-', at most 63 characters)`;
  }
  if (name === RESERVED_EXTENSION_NAME)
    return `name ${quoteInput(name)}: reserved for the agent's own heartbeat`;
  return undefined;
}

/** A value of any type as a message repeats it: JSON, capped. */
function echo(value: unknown): string {
  return capInput(JSON.stringify(value) ?? String(value));
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
    // Field names can be input (an unknown key): one that is not a plain name is quoted, capped and escaped
    // like any other echoed value, so it can neither pose as message text nor reach a terminal raw.
    const name = /^[A-Za-z0-9_-]{1,64}$/.test(field) ? field : quoteInput(field);
    return this.path ? `${this.path}.${name}` : name;
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
      return this.problem(field, `expected an integer from ${min} to ${max}, got ${echo(value)}`);
    }
    return value;
  }

  bool(field: string): boolean | undefined {
    const value = this.raw[field];
    if (value === undefined) return undefined;
    if (typeof value !== 'boolean') return this.problem(field, `expected true or false, got ${echo(value)}`);
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
      // V8's message repeats the whole pattern.
      return this.problem(field, `invalid regular expression (${capInput((err as Error).message)})`);
    }
    return source;
  }

  absolutePath(field: string, options: { required?: boolean } = {}): string | undefined {
    const value = this.string(field, options);
    if (value === undefined) return undefined;
    const path = value.startsWith('unix://') ? value.slice('unix://'.length) : value;
    if (!path.startsWith('/'))
      return this.problem(field, `expected an absolute path, got ${quoteInput(value)}`);
    if (path.split('/').includes('..'))
      return this.problem(field, `".." is not allowed in ${quoteInput(value)}`);
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
        `expected a non-negative number or quantity such as "2" or "8Gi", got ${echo(value)}`,
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
        `expected status codes or ranges such as "200-399" or "200,204", got ${echo(raw)}`,
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
        r.problem('url', `expected an http:// or https:// URL, got ${quoteInput(url)}`);
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
      return r.problem('address', `expected "host:port" or "unix:///path", got ${quoteInput(address)}`);
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
      return r.problem('status', `expected True, False or Unknown, got ${quoteInput(status)}`);
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
      return r.problem(
        'command',
        `command[0] must be an absolute path, got ${quoteInput(command[0] as string)}`,
      );
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
      `expected exactly one probe kind (one of ${PROBE_KINDS.join(', ')}), got ${kinds.length === 0 ? 'none' : capInput(kinds.join(', '))}`,
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
    r.problem('conditionType', `expected a PascalCase condition type, got ${quoteInput(conditionType)}`);
  const enforcement = r.string('enforcement') ?? EXTENSION_DEFAULTS.enforcement;
  if (enforcement !== Enforcement.Enforce && enforcement !== Enforcement.DryRun) {
    r.problem('enforcement', `expected Enforce or DryRun, got ${quoteInput(enforcement)}`);
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

/** The largest annotation value parsed at all (bytes of UTF-8); larger ones are rejected unread. */
export const MAX_ANNOTATION_VALUE_BYTES = 4096;
/** How many distinct annotation values keep their parse result (at most 4 MiB of keys). */
const ANNOTATION_CACHE_ENTRIES = 1024;
const annotationCache = new Map<string, SpecParse>();

/**
 * Parses a node annotation value: JSON (a spec) or a one-line shorthand URL (`http://…`, `https://…`,
 * `tcp://host:port`, `grpc://host:port`, `unix:///path`), which means that probe with all defaults.
 *
 * An annotation is attacker-controlled, and the controller resolves every node's registrations on every
 * reconcile: the size is capped before anything is parsed, and results are cached by value (an unchanged
 * annotation is never parsed twice while it stays among the most recently used). Results are frozen,
 * because the agent and the controller share them.
 */
export function parseAnnotationValue(value: string): SpecParse {
  const cached = annotationCache.get(value);
  if (cached) {
    // Map order is insertion order: re-inserting marks the entry most recently used.
    annotationCache.delete(value);
    annotationCache.set(value, cached);
    return cached;
  }
  const tooLong = annotationTooLong(value);
  if (tooLong !== undefined) return unparsedAnnotation(tooLong);
  const parsed = deepFreeze(parseAnnotationText(value));
  annotationCache.set(value, parsed);
  if (annotationCache.size > ANNOTATION_CACHE_ENTRIES) {
    annotationCache.delete(annotationCache.keys().next().value as string);
  }
  return parsed;
}

/**
 * The problem of an annotation value too long to be parsed at all, or undefined when it is parsed. A cache
 * of nodes keeps only this problem for such a value, never the value (api/registration.ts NodeView).
 */
export function annotationTooLong(value: string): string | undefined {
  // UTF-8 never takes fewer bytes than UTF-16 code units, so the length alone rejects most oversized values.
  const bytes = value.length > MAX_ANNOTATION_VALUE_BYTES ? undefined : Buffer.byteLength(value, 'utf8');
  if (bytes !== undefined && bytes <= MAX_ANNOTATION_VALUE_BYTES) return undefined;
  const size = bytes === undefined ? `${value.length} characters` : `${bytes} bytes`;
  return `value: too long to parse (${size}; an extension annotation is at most ${MAX_ANNOTATION_VALUE_BYTES} bytes)`;
}

/** What parseAnnotationValue answers for a value rejected unread with `problem` (annotationTooLong). */
export function unparsedAnnotation(problem: string): SpecParse {
  return { policy: DEFAULT_POLICY, result: { ok: false, problems: [problem] } };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

function parseAnnotationText(value: string): SpecParse {
  const text = value.trim();
  if (text.startsWith('{')) {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (err) {
      return {
        policy: DEFAULT_POLICY,
        // V8's message quotes part of the input.
        result: { ok: false, problems: [`value is not valid JSON (${capInput((err as Error).message)})`] },
      };
    }
    const parsed = parseExtensionSpec(raw);
    if (!parsed.result.ok && typeof raw === 'object' && raw !== null) {
      for (const field of SYSTEM_EXTENSION_FIELDS) {
        if (field in raw)
          parsed.result.problems.push(`${field}: only valid on a SystemExtension, not in a node annotation`);
      }
    }
    return withAnnotationRules(parsed);
  }
  const shorthand = shorthandProbe(text);
  if (!shorthand.ok) return { policy: DEFAULT_POLICY, result: shorthand };
  return withAnnotationRules(parseExtensionSpec({ probe: shorthand.value }));
}

/** Fields of a SystemExtension's spec that are not part of the extension spec (and never of an annotation). */
export const SYSTEM_EXTENSION_FIELDS = ['nodeSelector', 'allowAnnotationOverride'] as const;

/**
 * The rules for what an annotation may ask for, whatever node it is on (docs/design.md section 3): no `exec`, and
 * nothing whose answer on the Lease is an oracle on content the annotation's author could not read
 * otherwise — a file's content (`contentRegex`), a loopback service's body (`bodyRegex`), or a CA file
 * (`caFile`; a TLS failure or success tells whether a file is a CA that verifies the server). A SystemExtension
 * or the agent's config file (cluster-admin territory) may use all of them. Pure and text-only: the agent and
 * the controller agree on it without looking at the node.
 */
export function annotationFieldProblems(probe: ProbeSpec): string[] {
  const oracle = (field: string, what: string): string =>
    `${field}: not allowed from a node annotation (a match / no-match answer on the Lease would reveal ${what}); use a SystemExtension or the agent config file`;
  switch (probe.kind) {
    case 'exec':
      return [
        'probe.exec: exec probes are accepted only from SystemExtension objects or the agent config file, never from node annotations',
      ];
    case 'http':
      return [
        ...(probe.bodyRegex !== undefined
          ? [oracle('probe.http.bodyRegex', "the service's response body")]
          : []),
        ...(probe.caFile !== undefined ? [oracle('probe.http.caFile', "a file's content")] : []),
      ];
    case 'file':
      return probe.contentRegex !== undefined
        ? [oracle('probe.file.contentRegex', "the file's content")]
        : [];
    case 'tcp':
    case 'grpc':
    case 'csi':
    case 'devicePlugin':
    case 'nodeResource':
    case 'nodeCondition':
    case 'podReady':
    case 'process':
    case 'host':
      return [];
    default: {
      const unreachable: never = probe;
      return [`probe: unknown kind ${capInput(JSON.stringify(unreachable))}`];
    }
  }
}

function withAnnotationRules(parsed: SpecParse): SpecParse {
  if (!parsed.result.ok) return parsed;
  const problems = annotationFieldProblems(parsed.result.value.probe);
  return problems.length === 0 ? parsed : { policy: parsed.policy, result: { ok: false, problems } };
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
      return target
        ? probe({ tcp: target })
        : problem(`shorthand: expected tcp://host:port, got ${quoteInput(text)}`);
    }
    case 'grpc':
      return probe({ grpc: { address: text.slice('grpc://'.length) } });
    case 'unix':
      return probe({ grpc: { address: text } });
    default:
      return problem(
        `value: expected JSON (starting with "{") or a shorthand URL (http://, https://, tcp://host:port, grpc://host:port, unix:///path), got ${quoteInput(text)}`,
      );
  }
}

export { parseHostPort };
