// Which extensions a node requires (docs/design.md section 2), and the security rules for registrations that come
// from node annotations (docs/design.md section 3). Pure functions of plain data, shared by agent and controller.

import { createHash } from 'node:crypto';
import { EXTENSION_ANNOTATION_PREFIX } from './names.ts';
import { SYSTEM_EXTENSION_FIELDS, parseAnnotationValue, unparsedAnnotation } from './annotation.ts';
import {
  BUILTIN_CONDITION_TYPES,
  EXTENSION_DEFAULTS,
  parseExtensionSpec,
  type ExtensionPolicy,
  type ExtensionSpec,
  type SpecParse,
} from './extension.ts';
import { parseLabelWait, type LabelWaitPolicy } from './label-wait.ts';
import { validateExtensionName } from './naming.ts';
import { annotationSafetyProblems, type AnnotationSafety } from './annotation-safety.ts';
import { parseRollout, recordedRollout, type RecordedRollout, type RolloutPolicy } from './rollout.ts';
import { probeKind } from './probe-kinds.ts';
import type { ProbeSpec } from './probe-spec.ts';
import { matchesSelector, validateSelector, type LabelSelector } from './selector.ts';
import { capInput, quoteInput } from './text.ts';

export type RegistrationSource = 'annotation' | 'systemExtension' | 'config';

interface RegistrationBase {
  name: string;
  source: RegistrationSource;
  /** Honoured by the controller even when the registration is invalid. */
  policy: ExtensionPolicy;
}
export type Registration =
  | (RegistrationBase & { valid: true; spec: ExtensionSpec })
  | (RegistrationBase & { valid: false; problems: string[] });

/** The fields of a Node that registration reads. */
export interface NodeView {
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  /**
   * Extension annotations left out of `annotations` because their value is too long to parse, by key, with
   * that problem (api/annotation.ts annotationTooLong): what a cache keeps instead of up to 256 KiB of value.
   */
  unparsedAnnotations?: Readonly<Record<string, string>>;
}

/** A SystemExtension object as read from the API (spec and status untrusted until parsed). */
export interface SystemExtensionObject {
  metadata: { name?: string; uid?: string; generation?: number; creationTimestamp?: string | Date };
  spec?: unknown;
  status?: unknown;
}

export interface ParsedSystemExtension {
  name: string;
  /** undefined when the nodeSelector is invalid: the object then applies to no node. */
  selector: LabelSelector | undefined;
  selectorProblems: string[];
  parse: SpecParse;
  /** `spec.allowAnnotationOverride`: whether a node annotation of the same name may replace it on that node. */
  allowAnnotationOverride: boolean;
  /** `spec.rollout` (ROLLOUT_DEFAULTS when absent or invalid). */
  rollout: RolloutPolicy;
  /** metadata.uid ('' when absent), metadata.generation (1 when absent) and creationTimestamp (ms; NaN when absent). */
  uid: string;
  generation: number;
  createdMs: number;
  /**
   * What a rollout window belongs to: the nodes the object selects (its nodeSelector) and the requirement on
   * them (the probe and every policy field, defaults filled in), as a short hash (requirementOf). Anything
   * else in the spec (`suspend`, `rollout`, `labelWait`, `allowAnnotationOverride`, a default written out)
   * leaves it as it is, and so opens no window.
   */
  requirement: string;
  /** status.rollout's window, when it is well-formed. */
  recordedRollout: RecordedRollout | undefined;
  /**
   * `spec.suspend`: every taint change nodecare would make on the nodes this object selects is held (reported,
   * not written) until it is false again (docs/controller.md, "Suspend").
   */
  suspend: boolean;
  /**
   * `spec.labelWait`: a new node that lacks the label keys the nodeSelector needs waits for them up to
   * waitSeconds before it may be released (api/label-wait.ts). Undefined when absent or invalid.
   */
  labelWait?: LabelWaitPolicy | undefined;
}

export function parseSystemExtension(obj: SystemExtensionObject): ParsedSystemExtension {
  const name = obj.metadata.name ?? '';
  const spec = (typeof obj.spec === 'object' && obj.spec !== null ? obj.spec : {}) as Record<string, unknown>;
  const selectorProblems = validateSelector(spec.nodeSelector, 'nodeSelector');
  const nameProblem = validateExtensionName(name);
  if (nameProblem) selectorProblems.push(nameProblem);
  const parse = parseExtensionSpec(obj.spec, SYSTEM_EXTENSION_FIELDS);
  const flag = (field: 'allowAnnotationOverride' | 'suspend'): unknown => {
    const value = spec[field] ?? false;
    if (typeof value !== 'boolean') {
      const problem = `${field}: expected true or false, got ${capInput(JSON.stringify(value) ?? '')}`;
      parse.result = { ok: false, problems: [...(parse.result.ok ? [] : parse.result.problems), problem] };
    }
    return value;
  };
  const override = flag('allowAnnotationOverride');
  const suspend = flag('suspend');
  const rollout = parseRollout(spec.rollout, (problem) => {
    parse.result = { ok: false, problems: [...(parse.result.ok ? [] : parse.result.problems), problem] };
  });
  const selector = selectorProblems.length === 0 ? ((spec.nodeSelector ?? {}) as LabelSelector) : undefined;
  const labelWait = parseLabelWait(spec.labelWait, selector, (problem) => {
    parse.result = { ok: false, problems: [...(parse.result.ok ? [] : parse.result.problems), problem] };
  });
  const created = obj.metadata.creationTimestamp;
  return {
    name,
    selector,
    selectorProblems,
    parse,
    // An invalid value never opens the door: only `true` allows an override.
    allowAnnotationOverride: override === true,
    suspend: suspend === true,
    rollout,
    uid: typeof obj.metadata.uid === 'string' ? capInput(obj.metadata.uid, 64) : '',
    generation: typeof obj.metadata.generation === 'number' ? obj.metadata.generation : 1,
    createdMs: created instanceof Date ? created.getTime() : Date.parse(created ?? ''),
    requirement: requirementOf(spec.nodeSelector, parse),
    recordedRollout: recordedRollout(obj.status),
    ...(labelWait ? { labelWait } : {}),
  };
}

/** JSON with every object's keys sorted: the same value gives the same text, whatever order it was written in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null)
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** ParsedSystemExtension.requirement: a hash of the nodeSelector and the parsed probe and policy. */
function requirementOf(nodeSelector: unknown, parse: SpecParse): string {
  const requirement = parse.result.ok
    ? parse.result.value
    : { policy: parse.policy, problems: parse.result.problems };
  return createHash('sha256')
    .update(canonicalJson({ nodeSelector: nodeSelector ?? {}, requirement }))
    .digest('hex')
    .slice(0, 16);
}

function toRegistration(
  name: string,
  source: RegistrationSource,
  parse: SpecParse,
  extraProblems: string[],
): Registration {
  const { policy, result } = parse;
  const problems = [...(result.ok ? [] : result.problems), ...extraProblems];
  if (result.ok && problems.length === 0) return { name, source, policy, valid: true, spec: result.value };
  return { name, source, policy, valid: false, problems };
}

export interface ResolvedRegistrations {
  /**
   * Keyed by extension name; an annotation replaces a SystemExtension of the same name only when that
   * SystemExtension sets `spec.allowAnnotationOverride`.
   */
  byName: Map<string, Registration>;
  /** Annotations whose key does not carry a valid extension name (no Lease can exist for them). */
  badAnnotationKeys: string[];
  /**
   * Annotations ignored because a SystemExtension of the same name is in force on the node and does not set
   * `spec.allowAnnotationOverride` (docs/design.md section 2): the SystemExtension stays in `byName`.
   */
  conflicts: RegistrationConflict[];
  /** The SystemExtensions selecting this node that set `spec.suspend` (sorted): its taints are held. */
  suspendedBy: string[];
}

/** What the agent appends to the message of an extension's Lease while an annotation conflicts with it. */
export const CONFLICT_LEASE_NOTE =
  'a node annotation of the same name is ignored: this SystemExtension does not set allowAnnotationOverride';

export interface RegistrationConflict {
  /** The extension name both define. */
  name: string;
  /** Human sentence for events and the lease message (input it repeats is capped). */
  message: string;
}

/**
 * The extensions a node requires: every SystemExtension whose nodeSelector matches, and the node's
 * `extensions.nodecare.io/<name>` annotations; an annotation replaces a SystemExtension of the same name only
 * where the SystemExtension allows it, and is otherwise reported in `conflicts`. The rules on what an
 * annotation may ask for (no exec, no content oracles) apply always; `safety` adds the rules on where it may
 * point (hosts and directories), which depend on the agent's configuration: the controller, which does not
 * probe, passes undefined and learns about unsafe targets from the Lease.
 */
export function resolveRegistrations(
  node: NodeView,
  systemExtensions: Iterable<ParsedSystemExtension>,
  safety?: AnnotationSafety,
): ResolvedRegistrations {
  const byName = new Map<string, Registration>();
  const badAnnotationKeys: string[] = [];
  const conflicts: RegistrationConflict[] = [];
  const locked = new Set<string>();
  const suspendedBy: string[] = [];
  for (const sx of systemExtensions) {
    if (!sx.selector || !matchesSelector(sx.selector, node.labels)) continue;
    if (sx.suspend) suspendedBy.push(sx.name);
    byName.set(sx.name, toRegistration(sx.name, 'systemExtension', sx.parse, []));
    if (!sx.allowAnnotationOverride) locked.add(sx.name);
  }
  const annotations: Array<[key: string, parse: () => SpecParse]> = [
    ...Object.entries(node.annotations).map(([key, value]): [string, () => SpecParse] => [
      key,
      () => parseAnnotationValue(value),
    ]),
    ...Object.entries(node.unparsedAnnotations ?? {}).map(([key, problem]): [string, () => SpecParse] => [
      key,
      () => unparsedAnnotation(problem),
    ]),
  ];
  for (const [key, parseValue] of annotations) {
    if (!key.startsWith(EXTENSION_ANNOTATION_PREFIX)) continue;
    const name = key.slice(EXTENSION_ANNOTATION_PREFIX.length);
    if (validateExtensionName(name)) {
      badAnnotationKeys.push(key);
      continue;
    }
    if (locked.has(name)) {
      conflicts.push({
        name,
        message: `annotation ${quoteInput(key)} ignored: SystemExtension ${quoteInput(name)} is in force on this node and does not set spec.allowAnnotationOverride`,
      });
      continue;
    }
    const parse = parseValue();
    const unsafe =
      safety && parse.result.ok ? annotationSafetyProblems(parse.result.value.probe, safety) : [];
    const registration = toRegistration(name, 'annotation', parse, unsafe);
    byName.set(name, safety && registration.valid ? confined(registration, safety) : registration);
  }
  return { byName, badAnnotationKeys, conflicts, suspendedBy: suspendedBy.sort() };
}

/** What the agent appends to the message of a config-file extension's Lease while an annotation names it too. */
export const CONFIG_OVER_ANNOTATION_NOTE =
  "a node annotation of the same name is ignored: the agent's config file defines this extension";

/** What the agent appends to the message of a SystemExtension's Lease while its config file names it too. */
export const SYSTEM_EXTENSION_OVER_CONFIG_NOTE =
  "the agent's config-file extension of the same name is replaced by this SystemExtension";

export interface AgentRegistrations {
  /** Every extension the agent probes, by name. */
  wanted: Map<string, Registration>;
  /** Per extension name, the note its Lease message carries while two registrations of it conflict. */
  notes: Map<string, string>;
  /** One line per conflict, for the agent's log. */
  conflicts: RegistrationConflict[];
}

/**
 * What the agent probes (docs/agent.md, "Which extensions"): the node's resolved registrations and the
 * extensions of its own config file, whose author is an administrator (whoever builds the DaemonSet).
 * Precedence between the two: a SystemExtension in force on the node replaces a config-file entry of the same
 * name (the controller requires the SystemExtension, so its Lease must carry that probe); a config-file entry
 * replaces a node annotation of the same name (the node's own word must not swap an administrator's check for
 * another); either way the conflict is reported, never silent: a note on the Lease message and a log line.
 */
export function withConfigFile(
  resolved: ResolvedRegistrations,
  fileExtensions: ReadonlyMap<string, Registration>,
): AgentRegistrations {
  const wanted = new Map(resolved.byName);
  const notes = new Map<string, string>();
  const conflicts: RegistrationConflict[] = [];
  for (const conflict of resolved.conflicts) notes.set(conflict.name, CONFLICT_LEASE_NOTE);
  for (const [name, registration] of fileExtensions) {
    const other = wanted.get(name);
    if (other?.source === 'systemExtension') {
      notes.set(name, SYSTEM_EXTENSION_OVER_CONFIG_NOTE);
      conflicts.push({
        name,
        message: `config-file extension ${quoteInput(name)} ignored: SystemExtension ${quoteInput(name)} is in force on this node`,
      });
      continue;
    }
    if (other?.source === 'annotation') {
      notes.set(name, CONFIG_OVER_ANNOTATION_NOTE);
      conflicts.push({
        name,
        message: `annotation ${quoteInput(`${EXTENSION_ANNOTATION_PREFIX}${name}`)} ignored: the agent's config file defines extension ${quoteInput(name)}`,
      });
    }
    wanted.set(name, registration);
  }
  return { wanted, notes, conflicts };
}

/**
 * The condition type rule for annotations (docs/rollup.md, "Which condition types"): a node annotation may feed
 * only the four Gardener types and those an administrator allows (the controller's --annotation-condition-type);
 * whoever patches one Node must not be able to add conditions to the cluster's roll-up. An annotation naming
 * another type is an invalid registration (its node alone is affected: InvalidRegistration, reported with
 * ERR_CONFIGURATION_PROBLEM under EveryNodeReady). SystemExtensions and the agent's config file, written by
 * administrators, may name any PascalCase type.
 */
export function restrictConditionType(registration: Registration, allowed: readonly string[]): Registration {
  const type = registration.policy.conditionType;
  if (
    registration.source !== 'annotation' ||
    (BUILTIN_CONDITION_TYPES as readonly string[]).includes(type) ||
    allowed.includes(type)
  )
    return registration;
  const allowedList = [...BUILTIN_CONDITION_TYPES, ...allowed].join(', ');
  const problem = `conditionType: ${quoteInput(type)} is not allowed for a node annotation (allowed: ${allowedList}; a SystemExtension may name any type)`;
  return {
    name: registration.name,
    source: registration.source,
    policy: { ...registration.policy, conditionType: EXTENSION_DEFAULTS.conditionType },
    valid: false,
    problems: [...(registration.valid ? [] : registration.problems), problem],
  };
}

/** Marks the probe's path with the directories the agent must find it in when it probes. */
function confined(registration: Registration & { valid: true }, safety: AnnotationSafety): Registration {
  const { probe } = registration.spec;
  const reachesPath = (probeKind(probe).targets?.(probe) ?? []).some((t) => 'path' in t);
  if (!reachesPath) return registration;
  return {
    ...registration,
    // Only kinds that reach a path are confined, and each of their specs has `confineTo`.
    spec: { ...registration.spec, probe: { ...probe, confineTo: safety.allowedPathPrefixes } as ProbeSpec },
  };
}
