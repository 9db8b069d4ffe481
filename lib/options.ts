// Config (docs/conventions.md 10): one table per program drives the parser, the validation and --help. Defaults, then
// validation that reports every problem at once, then a frozen object — all before any I/O.

// Not an ES import: that evaluates every export of node:util, and its lazy transferable-abort ones load
// worker messaging (~1 MiB of the agent's 64, docs/adr/0006).
const { parseArgs } = process.getBuiltinModule('node:util');

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

/** `args`: what follows the program name in the usage line (positional arguments first). */
export function renderHelp(program: string, summary: string, table: OptionTable, args = '[options]'): string {
  const lines = [`Usage: ${program} ${args}`, '', summary, '', 'Options:'];
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
  lines.push(
    '  --help',
    '      Show this help and exit.',
    '  --version',
    '      Print the version and exit.',
  );
  return lines.join('\n');
}

type ParseTable = Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;
type ArgToken = NonNullable<ReturnType<typeof parseArgs>['tokens']>[number];

/**
 * What strict parseArgs would object to, for every token rather than only the first: unknown or wrongly
 * negated options, positionals, values missing or given where none is taken. `reported` collects the options
 * whose value is unusable, so that they are not judged a second time.
 */
function tokenProblems(tokens: readonly ArgToken[], table: ParseTable, reported: Set<string>): string[] {
  const problems: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') {
      problems.push(`Unexpected argument '${token.value}'. This command does not take positional arguments`);
      continue;
    }
    if (token.kind !== 'option') continue;
    const spec = table[token.name];
    const negated = token.rawName.startsWith('--no-') && !token.rawName.startsWith(`--${token.name}`);
    if (!spec || (negated && spec.type !== 'boolean')) {
      problems.push(`Unknown option '${token.rawName}'`);
    } else if (spec.type === 'boolean' && token.value !== undefined) {
      // Only a value other than true/false gets here (those are rewritten before parsing).
      problems.push(
        `${token.rawName}: expected true or false (${token.rawName}, ${token.rawName}=true, ${token.rawName}=false), got "${token.value}"`,
      );
      reported.add(token.name);
    } else if (spec.type === 'string' && token.value === undefined) {
      problems.push(`Option '${token.rawName} <value>' argument missing`);
      reported.add(token.name);
    } else if (spec.type === 'string' && !token.inlineValue && token.value?.startsWith('-')) {
      problems.push(
        `Option '${token.rawName} <value>' argument is ambiguous: write ${token.rawName}=${token.value} if "${token.value}" is the value`,
      );
      reported.add(token.name);
    }
  }
  return problems;
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
  const { help, values, problems } = collectOptions(table, argv, env);
  if (problems.length > 0) throw new OptionsError(problems);
  return { help, values };
}

/**
 * Like parseOptions, but returns the problems instead of throwing, with the values of every option that is
 * fine, so a caller can go on validating (a config file named by a good flag) and report everything at once.
 */
export function collectOptions(
  table: OptionTable,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { help: boolean; values: OptionValues; problems: string[] } {
  const problems: string[] = [];
  const reported = new Set<string>();
  const parsed = parseArgv(table, argv, reported, problems);
  if (parsed.help === true) return { help: true, values: {}, problems: [] };
  const values: OptionValues = {};
  for (const [name, spec] of Object.entries(table)) {
    if (reported.has(name)) {
      values[name] = spec.default;
      continue;
    }
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
    const value = optionValue(name, spec, raw, source, problems);
    if (value !== undefined) values[name] = value;
  }
  return { help: false, values, problems };
}

type ParsedArgs = Record<string, string | boolean | string[] | undefined>;

/**
 * argv as parseArgs reads it against the table; each problem (every one, not only the first) pushed to
 * `problems`, the flags they are about added to `reported`.
 */
function parseArgv(
  table: OptionTable,
  argv: readonly string[],
  reported: Set<string>,
  problems: string[],
): ParsedArgs {
  // --version is answered by runProgram before options are parsed; it is known here so it is never "unknown".
  const parseTable: ParseTable = {
    help: { type: 'boolean' },
    version: { type: 'boolean' },
  };
  for (const [name, spec] of Object.entries(table)) {
    parseTable[name] = {
      type: spec.type === 'boolean' ? 'boolean' : 'string',
      ...(spec.type === 'list' ? { multiple: true } : {}),
    };
  }
  // Kubernetes components take `--flag=true|false` for booleans; parseArgs knows `--flag` / `--no-flag`.
  const args = argv.map((arg) => {
    const match = /^--([^=]+)=(true|false)$/.exec(arg);
    if (!match || table[match[1] as string]?.type !== 'boolean') return arg;
    return match[2] === 'true' ? `--${match[1]}` : `--no-${match[1]}`;
  });
  try {
    return parseArgs({
      args,
      options: parseTable,
      strict: true,
      allowPositionals: false,
      allowNegative: true,
    }).values as ParsedArgs;
  } catch (err) {
    // parseArgs stops at the first problem; a lenient parse with tokens lets us list every one.
    const lenient = parseArgs({
      args,
      options: parseTable,
      strict: false,
      allowPositionals: true,
      allowNegative: true,
      tokens: true,
    });
    const found = tokenProblems(lenient.tokens, parseTable, reported);
    problems.push(...(found.length > 0 ? found : [(err as Error).message.replace(/\. To specify.*$/s, '')]));
    return lenient.values as ParsedArgs;
  }
}

/** The value of option `name` given as `raw` (by `source`: its flag or its variable); undefined, and a problem, when it is not one. */
function optionValue(
  name: string,
  spec: OptionSpec,
  raw: string | boolean | string[],
  source: string,
  problems: string[],
): OptionValues[string] {
  switch (spec.type) {
    case 'boolean':
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === 'false') return raw === 'true';
      problems.push(`${source}: expected true or false, got "${String(raw)}"`);
      return undefined;
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
      } else return n;
      return undefined;
    }
    case 'list':
      return (Array.isArray(raw) ? raw : [String(raw)]).flatMap((v) => v.split(',')).filter(Boolean);
    case 'string':
      if (typeof raw !== 'string') problems.push(`${source}: expected a value`);
      else if (spec.choices && !spec.choices.includes(raw))
        problems.push(`${source}: expected one of ${spec.choices.join(', ')}, got "${raw}"`);
      else return raw;
      return undefined;
    default: {
      const unreachable: never = spec.type;
      problems.push(`--${name}: unknown option type ${String(unreachable)}`);
      return undefined;
    }
  }
}
