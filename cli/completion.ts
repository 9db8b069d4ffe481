// Shell completion of kubectl-nodecare, as data: every verb's flags come from its option table, its short flags
// from its own normalizeArgs, so a flag added to a table is completed without anything else to change. complete()
// answers what cobra's `__complete` answers (candidates, then a directive), for the `__complete` verb, which
// kubectl_complete-nodecare (kubectl's plugin completion) and the shell scripts (completion-scripts.ts) call.

import type { OptionSpec, OptionTable } from '../lib/options.ts';
import type { Verb } from './verb.ts';

/** cobra's ShellCompDirective values (what the line after the candidates says to the shell). */
export const Directive = {
  /** The shell may complete file names (no candidates: a path is expected). */
  Default: 0,
  NoFileComp: 4,
} as const;
export type Directive = (typeof Directive)[keyof typeof Directive];

export interface FlagSpec {
  /** The long name, without `--`. */
  name: string;
  /** The one-letter short form (`o` for -o), if the verb takes one. */
  short?: string;
  takesValue: boolean;
  /** The values it takes, when it takes only some (a table's `choices`). */
  values?: readonly string[];
  /** Its value is a file (--kubeconfig). */
  file: boolean;
  /** Its value is a node's name (explain's --node, and its first argument). */
  node: boolean;
  /** The first sentence of its description. */
  description: string;
}

export interface CommandSpec {
  name: string;
  summary: string;
  flags: FlagSpec[];
  /** The flag the first bare argument stands for (explain <node>: `node`; completion <shell>: `shell`). */
  positional?: FlagSpec;
}

/** Completion's view of the verbs table: what is in its usage is in its completion. */
export interface CompletionSpec {
  commands: CommandSpec[];
}

/** The top-level flags (runCli answers them before any verb). */
export const TOP_FLAGS = ['--help', '--version'] as const;

const SHORT_LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** "Output format (-o): text, ..." → "Output format": the start of a description, for a completion menu. */
export function shortDescription(text: string): string {
  const first = text.split(/\s\(|[.:;](\s|$)/, 1)[0] ?? text;
  return first.length > 70 ? `${first.slice(0, 67)}...` : first;
}

/**
 * The short flags a verb rewrites, found by asking its normalizeArgs: `-o x` becoming `--output=x` means -o is
 * output's short form. The verb's own rewriting is the truth, so nothing lists short flags twice.
 */
function shortFlags(verb: Verb): Map<string, string> {
  const found = new Map<string, string>();
  if (!verb.normalizeArgs) return found;
  for (const letter of SHORT_LETTERS) {
    const [first] = verb.normalizeArgs([`-${letter}`, 'x']);
    const name = first?.startsWith('--') ? /^--([^=]+)=x$/.exec(first)?.[1] : undefined;
    if (name !== undefined && verb.options[name] !== undefined) found.set(name, letter);
  }
  return found;
}

function flagSpec(name: string, spec: OptionSpec, short: string | undefined): FlagSpec {
  return {
    name,
    ...(short !== undefined ? { short } : {}),
    takesValue: spec.type !== 'boolean',
    ...(spec.choices ? { values: spec.choices } : {}),
    file: name === 'kubeconfig',
    node: name === 'node',
    description: shortDescription(spec.description),
  };
}

export function commandSpec(name: string, verb: Verb): CommandSpec {
  const shorts = shortFlags(verb);
  const table: OptionTable = verb.options;
  const flags = Object.entries(table).map(([flag, spec]) => flagSpec(flag, spec, shorts.get(flag)));
  flags.push({
    name: 'help',
    takesValue: false,
    file: false,
    node: false,
    description: 'Show the help of the command',
  });
  const argument = /^<([a-z-]+)>/.exec(verb.usage ?? '')?.[1];
  const positional = flags.find((f) => f.name === argument);
  return { name, summary: shortDescription(verb.summary), flags, ...(positional ? { positional } : {}) };
}

/** The spec of a verbs table; hidden verbs (`__complete`) are left out, as usage() leaves them out. */
export function completionSpec(verbs: Readonly<Record<string, Verb>>): CompletionSpec {
  return {
    commands: Object.entries(verbs)
      .filter(([, verb]) => !verb.hidden)
      .map(([name, verb]) => commandSpec(name, verb)),
  };
}

/** What complete() found: candidates (`word\tdescription`), or the prefix of the node names to list. */
export interface Completion {
  candidates: string[];
  directive: Directive;
  /** Node names starting with `prefix` are wanted, each written after `before` (`--node=`). */
  nodes?: { prefix: string; before: string };
}

const none = (directive: Directive = Directive.NoFileComp): Completion => ({ candidates: [], directive });

function candidate(word: string, description: string): string {
  return description ? `${word}\t${description}` : word;
}

/** The values of `flag` starting with `prefix`, each written after `before`. */
function flagValues(flag: FlagSpec, prefix: string, before = ''): Completion {
  if (flag.node) return { candidates: [], directive: Directive.NoFileComp, nodes: { prefix, before } };
  if (flag.file) return none(Directive.Default);
  const candidates = (flag.values ?? []).filter((v) => v.startsWith(prefix)).map((v) => `${before}${v}`);
  return { candidates, directive: Directive.NoFileComp };
}

function findFlag(command: CommandSpec, word: string): FlagSpec | undefined {
  if (word.startsWith('--')) return command.flags.find((f) => f.name === word.slice(2));
  return word.length === 2 ? command.flags.find((f) => f.short === word.slice(1)) : undefined;
}

/**
 * cobra's `__complete <args...> <toComplete>`: `args` are the words after the program's name, the last the
 * one being completed ('' after a space). Pure; node names are left to the caller (Completion.nodes).
 */
export function complete(spec: CompletionSpec, args: readonly string[]): Completion {
  const toComplete = args.at(-1) ?? '';
  const typed = args.slice(0, -1);
  if (typed.length === 0) {
    if (toComplete.startsWith('-'))
      return {
        candidates: TOP_FLAGS.filter((f) => f.startsWith(toComplete)),
        directive: Directive.NoFileComp,
      };
    return {
      candidates: spec.commands
        .filter((c) => c.name.startsWith(toComplete))
        .map((c) => candidate(c.name, c.summary)),
      directive: Directive.NoFileComp,
    };
  }
  const command = spec.commands.find((c) => c.name === typed[0]);
  if (!command) return none();
  let positionalGiven = false;
  let pending: FlagSpec | undefined;
  for (const word of typed.slice(1)) {
    if (pending) {
      if (pending === command.positional) positionalGiven = true;
      pending = undefined;
      continue;
    }
    if (word.startsWith('-') && word !== '-') {
      const flag = findFlag(command, word.split('=', 1)[0] as string);
      if (flag === command.positional && flag !== undefined && word.includes('=')) positionalGiven = true;
      if (flag?.takesValue && !word.includes('=')) pending = flag;
      continue;
    }
    positionalGiven = true;
  }
  if (pending) return flagValues(pending, toComplete);
  const assigned = /^(--[^=]+)=(.*)$/s.exec(toComplete);
  if (assigned) {
    const flag = findFlag(command, assigned[1] as string);
    return flag?.takesValue ? flagValues(flag, assigned[2] as string, `${assigned[1]}=`) : none();
  }
  if (toComplete.startsWith('-')) {
    const candidates: string[] = [];
    for (const flag of command.flags) {
      if (flag.short !== undefined && `-${flag.short}`.startsWith(toComplete) && toComplete.length < 3)
        candidates.push(candidate(`-${flag.short}`, flag.description));
      if (`--${flag.name}`.startsWith(toComplete))
        candidates.push(candidate(`--${flag.name}`, flag.description));
    }
    return { candidates, directive: Directive.NoFileComp };
  }
  if (command.positional && !positionalGiven) return flagValues(command.positional, toComplete);
  return none();
}

/** What `__complete` prints: the candidates one per line, then `:<directive>` (cobra's protocol). */
export function completionOutput(candidates: readonly string[], directive: Directive): string[] {
  return [...candidates, `:${directive}`];
}
