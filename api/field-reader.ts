// Reads the fields of an untyped object (a SystemExtension's spec, an annotation's JSON) without throwing: each
// getter records a problem naming the field's path and the expected form and returns undefined, so one pass
// reports every problem at once. Echoed input is capped and quoted (api/text.ts).

import type { StatusRange } from './probe-spec.ts';
import { parseQuantity } from './quantity.ts';
import { capInput, quoteInput } from './text.ts';

/** The longest regular expression a spec may carry. */
const MAX_REGEX_LENGTH = 512;

/** A value of any type as a message repeats it: JSON, capped. */
function echo(value: unknown): string {
  return capInput(JSON.stringify(value) ?? String(value));
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; problems: string[] };

/** Input-form defaults; a nested object's apply inside that object when it is there (as a CRD's do). */
export interface Defaults {
  readonly [field: string]: string | number | boolean | Defaults;
}

/** A copy of `raw` with `defaults` filled in where fields are absent; `raw` itself is never changed. */
function withDefaults(raw: Record<string, unknown>, defaults: Defaults): Record<string, unknown> {
  const filled = { ...raw };
  for (const [field, value] of Object.entries(defaults)) {
    const present = filled[field];
    if (typeof value !== 'object') {
      if (present === undefined) filled[field] = value;
    } else if (typeof present === 'object' && present !== null && !Array.isArray(present)) {
      filled[field] = withDefaults(present as Record<string, unknown>, value);
    }
  }
  return filled;
}

/**
 * Collects problems while reading fields of an untyped object. Each getter records a problem with the
 * field's path and returns undefined instead of throwing, so one pass reports every problem at once.
 */
export class FieldReader {
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

  /** This reader over a copy of its object with `defaults` filled in where fields are absent. */
  withDefaults(defaults: Defaults): FieldReader {
    return new FieldReader(withDefaults(this.raw, defaults), this.path, this.problems);
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

  quantity(field: string): number | undefined {
    const value = this.raw[field];
    if (value === undefined) return undefined;
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

export function parseStatusRanges(reader: FieldReader): StatusRange[] | undefined {
  const raw = reader.raw.expectStatus;
  if (raw === undefined) return reader.problem('expectStatus', 'required');
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

export function parseHostPort(address: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:/\s[\]]+):(\d{1,5})$/.exec(address);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  const host = (match[1] as string).replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}
