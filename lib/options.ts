// Config (STYLE.md 10): one table per program drives the parser, the validation and --help. Defaults, then
// validation that reports every problem at once, then a frozen object — all before any I/O.

import { parseArgs } from 'node:util';

export interface OptionSpec {
  type: 'string' | 'boolean' | 'integer' | 'number' | 'list';
  description: string;
  /** Environment variable read when the flag is absent. */
  env?: string;
  default?: string | number | boolean | string[];
  /** For numbers: inclusive range. */
  min?: number;
  max?: number;
  /** For strings: allowed values. */
  choices?: readonly string[];
  required?: boolean;
}

export type OptionTable = Record<string, OptionSpec>;

export type OptionValues = Record<string, string | number | boolean | string[] | undefined>;

export class OptionsError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'OptionsError';
    this.problems = problems;
  }
}

export function renderHelp(program: string, summary: string, table: OptionTable): string {
  const lines = [`Usage: ${program} [options]`, '', summary, '', 'Options:'];
  for (const [name, spec] of Object.entries(table)) {
    const value = spec.type === 'boolean' ? '' : ` <${spec.type === 'list' ? 'value' : spec.type}>`;
    const extras = [
      spec.default !== undefined && spec.default !== ''
        ? `default ${JSON.stringify(spec.default)}`
        : undefined,
      spec.env ? `env ${spec.env}` : undefined,
      spec.choices ? `one of ${spec.choices.join('|')}` : undefined,
      spec.type === 'list' ? 'repeatable' : undefined,
      spec.required ? 'required' : undefined,
    ].filter(Boolean);
    lines.push(
      `  --${name}${value}`,
      `      ${spec.description}${extras.length ? ` (${extras.join('; ')})` : ''}`,
    );
  }
  lines.push('  --help', '      Show this help and exit.');
  return lines.join('\n');
}

/**
 * Parses argv against the table. Returns `help: true` when --help was given. Throws OptionsError listing
 * every problem (unknown flags, bad numbers, out-of-range values, missing required options).
 */
export function parseOptions(
  table: OptionTable,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { help: boolean; values: OptionValues } {
  const parseTable: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {
    help: { type: 'boolean' },
  };
  for (const [name, spec] of Object.entries(table)) {
    parseTable[name] = {
      type: spec.type === 'boolean' ? 'boolean' : 'string',
      ...(spec.type === 'list' ? { multiple: true } : {}),
    };
  }
  const problems: string[] = [];
  let parsed: Record<string, string | boolean | string[] | undefined>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: parseTable,
      strict: true,
      allowPositionals: false,
      allowNegative: true,
    }).values as typeof parsed;
  } catch (err) {
    // parseArgs stops at the first problem; report it with the rest of what we can check.
    problems.push((err as Error).message.replace(/\. To specify.*$/s, ''));
    parsed = parseArgs({
      args: [...argv],
      options: parseTable,
      strict: false,
      allowPositionals: true,
      allowNegative: true,
    }).values as typeof parsed;
  }
  if (parsed.help === true) return { help: true, values: {} };
  const values: OptionValues = {};
  for (const [name, spec] of Object.entries(table)) {
    let raw = parsed[name];
    if (raw === undefined && spec.env && env[spec.env] !== undefined && env[spec.env] !== '') {
      const fromEnv = env[spec.env] as string;
      raw = spec.type === 'boolean' ? fromEnv : spec.type === 'list' ? fromEnv.split(',') : fromEnv;
    }
    if (raw === undefined) {
      if (spec.required) problems.push(`--${name} is required${spec.env ? ` (or set ${spec.env})` : ''}`);
      values[name] = spec.default;
      continue;
    }
    const source = parsed[name] === undefined ? `${spec.env}` : `--${name}`;
    switch (spec.type) {
      case 'boolean':
        if (typeof raw === 'boolean') values[name] = raw;
        else if (raw === 'true' || raw === 'false') values[name] = raw === 'true';
        else problems.push(`${source}: expected true or false, got "${String(raw)}"`);
        break;
      case 'integer':
      case 'number': {
        const n = Number(raw);
        if (
          typeof raw !== 'string' ||
          raw.trim() === '' ||
          !Number.isFinite(n) ||
          (spec.type === 'integer' && !Number.isInteger(n))
        ) {
          problems.push(
            `${source}: expected ${spec.type === 'integer' ? 'an integer' : 'a number'}, got "${String(raw)}"`,
          );
        } else if ((spec.min !== undefined && n < spec.min) || (spec.max !== undefined && n > spec.max)) {
          problems.push(`${source}: ${n} is out of range [${spec.min ?? '-∞'}, ${spec.max ?? '∞'}]`);
        } else values[name] = n;
        break;
      }
      case 'list':
        values[name] = (Array.isArray(raw) ? raw : [String(raw)])
          .flatMap((v) => v.split(','))
          .filter(Boolean);
        break;
      case 'string':
        if (typeof raw !== 'string') problems.push(`${source}: expected a value`);
        else if (spec.choices && !spec.choices.includes(raw))
          problems.push(`${source}: expected one of ${spec.choices.join(', ')}, got "${raw}"`);
        else values[name] = raw;
        break;
      default: {
        const unreachable: never = spec.type;
        problems.push(`--${name}: unknown option type ${String(unreachable)}`);
      }
    }
  }
  if (problems.length > 0) throw new OptionsError(problems);
  return { help: false, values };
}
