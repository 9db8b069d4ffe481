// kubectl-nodecare: the kubectl plugin (`kubectl nodecare <verb>`). One table of verbs; each verb has its own
// option table (parsed and validated before any I/O, docs/conventions.md 10) and a run function.

import { escapeForTerminal } from '../api/text.ts';
import { OptionsError, parseOptions, renderHelp, type OptionValues } from '../lib/options.ts';
import { versionLine } from '../lib/version.ts';
import { examplesSection, helpWidth, wrapHelp } from './help.ts';
import type { CliIo, Verb } from './verb.ts';
import { Exit } from './verbs/common.ts';
import { completionVerbs } from './verbs/completion.ts';
import { explainVerb } from './verbs/explain.ts';
import { extensionsVerb } from './verbs/extensions.ts';
import { statusVerb } from './verbs/status.ts';
import { uninstallVerb } from './verbs/uninstall.ts';

export type { CliIo, Verb } from './verb.ts';

const COMMANDS = {
  status: statusVerb,
  explain: explainVerb,
  extensions: extensionsVerb,
  uninstall: uninstallVerb,
} satisfies Record<string, Verb>;

/** The verbs: the commands, then `completion` and the hidden `__complete`, which complete all of them. */
export const VERBS = { ...COMMANDS, ...completionVerbs(COMMANDS) } satisfies Record<string, Verb>;

const PROGRAM = 'kubectl nodecare';

export function usage(): string {
  const shown = Object.entries(VERBS as Record<string, Verb>).filter(([, verb]) => !verb.hidden);
  const width = Math.max(...shown.map(([name]) => name.length));
  return [
    `Usage: ${PROGRAM} <command> [options]`,
    '',
    'Commands:',
    ...shown.map(([name, verb]) => `  ${name.padEnd(width)}  ${verb.summary}`),
    '',
    `Run ${PROGRAM} <command> --help for the options of a command.`,
    '',
    'Exit codes: 0 healthy (uninstall: done, or nothing to do), 1 not healthy (uninstall: something left',
    'behind), 2 error: bad usage, no cluster to ask, or the command could not finish.',
    '',
    'The cluster is chosen as kubectl chooses it: --kubeconfig, else $KUBECONFIG, else ~/.kube/config;',
    "every command takes kubectl's connection flags: --context, --cluster, --user, --server (-s), --token,",
    "--insecure-skip-tls-verify, --as, --as-group and --request-timeout. A kubeconfig cluster's proxy-url,",
    'else HTTPS_PROXY (minus NO_PROXY), is the proxy.',
    '',
    'Examples:',
    '  # Every node, worst first; then why one of them is held',
    '  kubectl nodecare status',
    '  kubectl nodecare explain gpu-7',
  ].join('\n');
}

/**
 * kubectl's wording for a flag it does not know (`error: unknown flag: --x`; `-x`: unknown shorthand flag),
 * for each one, then the other problems; `See '…' for usage.` after them, as kubectl ends.
 */
function optionProblems(command: string, problems: readonly string[]): string {
  const lines: string[] = [];
  const rest: string[] = [];
  for (const problem of problems) {
    const flag = /^Unknown option '(.+)'$/.exec(problem)?.[1];
    if (flag === undefined) rest.push(problem);
    else lines.push(unknownFlag(flag));
  }
  if (rest.length > 0) lines.push(`${command}: ${new OptionsError(rest).message}`);
  lines.push(`See '${command} --help' for usage.`);
  return lines.join('\n');
}

function unknownFlag(flag: string): string {
  return flag.startsWith('--')
    ? `error: unknown flag: ${flag}`
    : `error: unknown shorthand flag: '${flag.slice(1, 2)}' in ${flag}`;
}

/** Exit codes (as usage() says): 0 healthy or done, 1 not healthy or something left behind, 2 error. */
export async function runCli(argv: readonly string[], rawIo: CliIo): Promise<number> {
  // What the plugin prints comes from the cluster (node conditions, lease messages, events, annotations),
  // which whoever controls one node can write: no control character reaches the terminal raw, whatever
  // the verb. The plugin's own newlines and tabs lay out its output and are kept.
  const io: CliIo = {
    out: (line) => rawIo.out(escapeForTerminal(line)),
    err: (line) => rawIo.err(escapeForTerminal(line)),
    env: rawIo.env,
  };
  const [first, ...rest] = argv;
  const width = helpWidth(rawIo.columns, rawIo.env);
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    io.out(wrapHelp(usage(), width));
    return first === undefined ? Exit.error : 0;
  }
  if (first === '--version') {
    io.out(versionLine('kubectl-nodecare'));
    return 0;
  }
  if (first.startsWith('-')) {
    io.err(`${unknownFlag(first.split('=', 1)[0] as string)}\nSee '${PROGRAM} --help' for usage.`);
    return Exit.error;
  }
  const verb = (VERBS as Record<string, Verb>)[first];
  if (!verb) {
    io.err(`${PROGRAM}: unknown command "${first}"\n\n${wrapHelp(usage(), width)}`);
    return Exit.error;
  }
  let parsed: { help: boolean; values: OptionValues };
  try {
    parsed = parseOptions(verb.options, verb.normalizeArgs ? verb.normalizeArgs(rest) : rest, io.env);
  } catch (err) {
    if (!(err instanceof OptionsError)) throw err;
    io.err(optionProblems(`${PROGRAM} ${first}`, err.problems));
    return Exit.error;
  }
  if (parsed.help) {
    const help = renderHelp(`${PROGRAM} ${first}`, verb.summary, verb.options, verb.usage);
    io.out(wrapHelp(help + examplesSection(first), width));
    return 0;
  }
  try {
    return await verb.run(parsed.values, io);
  } catch (err) {
    io.err(`${PROGRAM} ${first}: ${err instanceof Error ? err.message : String(err)}`);
    return Exit.error;
  }
}
