// The extension spec (docs/design.md section 2): one source of truth for its type, defaults, parsing and validation,
// shared by the agent (which probes) and the controller (which decides). Parsing never throws: a bad
// registration becomes a list of problems, each naming the field path and the expected form.

import { FieldReader, type ParseResult } from './field-reader.ts';
import { PASCAL_CASE } from './naming.ts';
import { PROBE_KINDS, isProbeKind, kindEntry } from './probe-kinds.ts';
import type { ProbeSpec } from './probe-spec.ts';
import { capInput, quoteInput } from './text.ts';

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

function parseProbe(r: FieldReader): ProbeSpec | undefined {
  const kinds = Object.keys(r.raw);
  if (kinds.length !== 1) {
    return r.problem(
      '',
      `expected exactly one probe kind (one of ${PROBE_KINDS.join(', ')}), got ${kinds.length === 0 ? 'none' : capInput(kinds.join(', '))}`,
    );
  }
  const kind = kinds[0] as string;
  if (!isProbeKind(kind)) {
    return r.problem(kind, `unknown probe kind (expected one of ${PROBE_KINDS.join(', ')})`);
  }
  const body = r.object(kind, { required: true });
  const entry = kindEntry(kind);
  return body ? entry.parse(entry.defaults ? body.withDefaults(entry.defaults) : body) : undefined;
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
