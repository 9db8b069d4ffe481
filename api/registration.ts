// Which extensions a node requires (SPEC section 2), and the security rules for registrations that come
// from node annotations (SPEC section 3). Pure functions of plain data, shared by agent and controller.

import { isIP } from 'node:net';
import { posix } from 'node:path';
import { EXTENSION_ANNOTATION_PREFIX } from './names.ts';
import {
  parseAnnotationValue,
  parseExtensionSpec,
  parseHostPort,
  validateExtensionName,
  type ExtensionPolicy,
  type ExtensionSpec,
  type ProbeSpec,
  type SpecParse,
} from './extension.ts';
import { matchesSelector, validateSelector, type LabelSelector } from './selector.ts';

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
}

/** A SystemExtension object as read from the API (spec untrusted until parsed). */
export interface SystemExtensionObject {
  metadata: { name?: string };
  spec?: unknown;
}

export interface ParsedSystemExtension {
  name: string;
  /** undefined when the nodeSelector is invalid: the object then applies to no node. */
  selector: LabelSelector | undefined;
  selectorProblems: string[];
  parse: SpecParse;
}

/** Where an annotation-registered probe may point: loopback, these addresses, and paths under these prefixes. */
export interface AnnotationSafety {
  nodeAddresses: readonly string[];
  allowedPathPrefixes: readonly string[];
}

export function parseSystemExtension(obj: SystemExtensionObject): ParsedSystemExtension {
  const name = obj.metadata.name ?? '';
  const spec = (typeof obj.spec === 'object' && obj.spec !== null ? obj.spec : {}) as Record<string, unknown>;
  const selectorProblems = validateSelector(spec.nodeSelector, 'nodeSelector');
  const nameProblem = validateExtensionName(name);
  if (nameProblem) selectorProblems.push(nameProblem);
  return {
    name,
    selector: selectorProblems.length === 0 ? ((spec.nodeSelector ?? {}) as LabelSelector) : undefined,
    selectorProblems,
    parse: parseExtensionSpec(obj.spec, ['nodeSelector']),
  };
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
  /** Keyed by extension name; annotation wins over a SystemExtension of the same name. */
  byName: Map<string, Registration>;
  /** Annotations whose key does not carry a valid extension name (no Lease can exist for them). */
  badAnnotationKeys: string[];
  /**
   * Annotations ignored because a SystemExtension of the same name is in force on the node and does not set
   * `spec.allowAnnotationOverride` (SPEC section 2): the SystemExtension stays in `byName`.
   */
  conflicts: RegistrationConflict[];
}

export interface RegistrationConflict {
  /** The extension name both define. */
  name: string;
  /** Human sentence for events and the lease message (input it repeats is capped). */
  message: string;
}

/**
 * The extensions a node requires: every SystemExtension whose nodeSelector matches, overridden per name by
 * the node's `extensions.nodecare.io/<name>` annotations. `safety` applies the annotation security rules;
 * the controller, which does not probe, passes undefined and learns about unsafe targets from the Lease.
 */
export function resolveRegistrations(
  node: NodeView,
  systemExtensions: Iterable<ParsedSystemExtension>,
  safety?: AnnotationSafety,
): ResolvedRegistrations {
  const byName = new Map<string, Registration>();
  const badAnnotationKeys: string[] = [];
  for (const sx of systemExtensions) {
    if (!sx.selector || !matchesSelector(sx.selector, node.labels)) continue;
    byName.set(sx.name, toRegistration(sx.name, 'systemExtension', sx.parse, []));
  }
  for (const [key, value] of Object.entries(node.annotations)) {
    if (!key.startsWith(EXTENSION_ANNOTATION_PREFIX)) continue;
    const name = key.slice(EXTENSION_ANNOTATION_PREFIX.length);
    if (validateExtensionName(name)) {
      badAnnotationKeys.push(key);
      continue;
    }
    const parse = parseAnnotationValue(value);
    const unsafe =
      safety && parse.result.ok ? annotationSafetyProblems(parse.result.value.probe, safety) : [];
    byName.set(name, toRegistration(name, 'annotation', parse, unsafe));
  }
  return { byName, badAnnotationKeys, conflicts: [] };
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

function hostProblem(field: string, host: string, safety: AnnotationSafety): string[] {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (isLoopback(bare) || safety.nodeAddresses.includes(bare)) return [];
  return [
    `${field}: target "${host}" is not allowed from a node annotation (only loopback, the node's own addresses or a SystemExtension may name other hosts)`,
  ];
}

function pathProblem(field: string, path: string, safety: AnnotationSafety): string[] {
  const normal = posix.normalize(path);
  const allowed = safety.allowedPathPrefixes.some((prefix) => {
    const p = posix.normalize(prefix).replace(/\/+$/, '');
    return normal === p || normal.startsWith(`${p}/`);
  });
  if (allowed) return [];
  return [
    `${field}: path "${path}" is not under an allowed directory (${safety.allowedPathPrefixes.join(', ') || 'none configured'}) for a node annotation`,
  ];
}

/** The SPEC section 3 rules for annotation-registered probes; empty when the probe is acceptable. */
export function annotationSafetyProblems(probe: ProbeSpec, safety: AnnotationSafety): string[] {
  switch (probe.kind) {
    case 'exec':
      return [
        'probe.exec: exec probes are accepted only from SystemExtension objects or the agent config file, never from node annotations',
      ];
    case 'http': {
      const url = new URL(probe.url);
      return [
        ...hostProblem('probe.http.url', url.hostname, safety),
        ...(probe.caFile ? pathProblem('probe.http.caFile', probe.caFile, safety) : []),
      ];
    }
    case 'tcp':
      return hostProblem('probe.tcp.host', probe.host, safety);
    case 'grpc': {
      if (probe.address.startsWith('unix://'))
        return pathProblem('probe.grpc.address', probe.address.slice(7), safety);
      const target = parseHostPort(probe.address);
      return target ? hostProblem('probe.grpc.address', target.host, safety) : [];
    }
    case 'csi':
      return pathProblem('probe.csi.socket', probe.socket, safety);
    case 'devicePlugin':
      return pathProblem('probe.devicePlugin.socket', probe.socket, safety);
    case 'file':
      return pathProblem('probe.file.path', probe.path, safety);
    case 'nodeResource':
    case 'nodeCondition':
    case 'podReady':
    case 'process':
    case 'host':
      return [];
    default: {
      const unreachable: never = probe;
      return [`probe: unknown kind ${JSON.stringify(unreachable)}`];
    }
  }
}
