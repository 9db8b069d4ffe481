// A node annotation's value (`extensions.nodecare.io/<name>`): JSON or a shorthand URL, capped before it is
// parsed and cached by value, and held to the rules of what an annotation may ask for (docs/design.md section
// 3): the probe kinds' table says what each kind forbids (probe-kinds.ts); where it points is registration.ts.

import { DEFAULT_POLICY, parseExtensionSpec, type SpecParse } from './extension.ts';
import { parseHostPort, type ParseResult } from './field-reader.ts';
import { probeKind } from './probe-kinds.ts';
import type { ProbeSpec } from './probe-spec.ts';
import { capInput, quoteInput } from './text.ts';

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
export const SYSTEM_EXTENSION_FIELDS = [
  'nodeSelector',
  'allowAnnotationOverride',
  'suspend',
  'rollout',
  'labelWait',
] as const;

/**
 * The rules for what an annotation may ask for, whatever node it is on (docs/design.md section 3): no `exec`, and
 * nothing whose answer on the Lease is an oracle on content the annotation's author could not read
 * otherwise — a file's content (`contentRegex`), a loopback service's body (`bodyRegex`), or a CA file
 * (`caFile`; a TLS failure or success tells whether a file is a CA that verifies the server). A SystemExtension
 * or the agent's config file (cluster-admin territory) may use all of them. Pure and text-only: the agent and
 * the controller agree on it without looking at the node.
 */
export function annotationFieldProblems(probe: ProbeSpec): string[] {
  return probeKind(probe).annotationForbids?.(probe) ?? [];
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
