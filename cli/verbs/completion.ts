// `kubectl nodecare completion bash|zsh|fish` prints the shell's completion script for kubectl-nodecare; the
// hidden `__complete <args...> <word>` answers as cobra's does (candidates one per line, then `:<directive>`),
// for those scripts and for kubectl's own completion of `kubectl nodecare ...` (kubectl 1.26+ runs
// kubectl_complete-nodecare, which calls it). Node names come from the cluster the words typed name, with a
// short deadline; any failure completes nothing, silently.

import { collectOptions, type OptionValues } from '../../lib/options.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { listAll } from '../../lib/kube/list.ts';
import type { CliIo, Verb } from '../verb.ts';
import { complete, completionOutput, completionSpec, type CompletionSpec } from '../completion.ts';
import { completionScript, SHELLS, type Shell } from '../completion-scripts.ts';
import { CONNECTION_OPTIONS, connect, connectionSettings, Exit, kubectlArgs } from './common.ts';

/** The deadline of the whole node listing when no --request-timeout is typed: a TAB must not hang. */
export const COMPLETION_TIMEOUT_MS = 2000;

/** The node names the connection the words name lists: all of them, paged, within the deadline. */
export type NodeNames = (values: OptionValues, io: CliIo) => Promise<string[]>;

/** The deadline of a node listing for completion: a --request-timeout typed among the words, else COMPLETION_TIMEOUT_MS. */
export function completionDeadlineMs(
  values: OptionValues,
  { requestTimeoutMs } = connectionSettings(values),
): number {
  const typed = values['request-timeout'] !== CONNECTION_OPTIONS['request-timeout'].default;
  return typed && requestTimeoutMs > 0 ? requestTimeoutMs : COMPLETION_TIMEOUT_MS;
}

export const listNodeNames: NodeNames = async (values, io) => {
  const settings = connectionSettings(values);
  const deadlineMs = completionDeadlineMs(values, settings);
  const client = new KubeClient(await connect(settings, io), {
    userAgent: 'kubectl-nodecare/complete',
    connections: 1,
    requestTimeoutMs: deadlineMs,
  });
  const signal = AbortSignal.timeout(deadlineMs);
  try {
    const nodes = await listAll<{ metadata?: { name?: string } }>(client, '/api/v1/nodes', {
      withoutManagedFields: true,
      signal,
    });
    return nodes.flatMap((node) => (node.metadata?.name ? [node.metadata.name] : []));
  } finally {
    await client.close();
  }
};

/** The connection flags among the words typed (the rest is ignored: they are being written). */
function connectionValues(words: readonly string[], verb: Verb | undefined, io: CliIo): OptionValues {
  const args = verb?.normalizeArgs ? verb.normalizeArgs(words) : kubectlArgs(words);
  return collectOptions(CONNECTION_OPTIONS, args, io.env).values;
}

/**
 * `__complete`: every argument is a word typed, flags included (none is this verb's own). Each is passed
 * passed through a list option URI-encoded after a `w`, which would otherwise split a word at its commas
 * (-l a=b,c=d) and drop an empty one (the word after a space).
 */
export function completeVerb(
  spec: () => CompletionSpec,
  verbs: () => Readonly<Record<string, Verb>>,
  nodeNames: NodeNames = listNodeNames,
): Verb {
  return {
    summary: 'Print completion candidates for the words given (what the completion scripts ask).',
    usage: '<args...> <word>',
    hidden: true,
    options: { arg: { type: 'list', description: 'A word typed, URI-encoded.', default: [] } },
    normalizeArgs: (argv) => argv.map((word) => `--arg=w${encodeURIComponent(word)}`),
    async run(values: OptionValues, io: CliIo): Promise<number> {
      const given = (values.arg as string[]).map((word) => decodeURIComponent(word.slice(1)));
      const words = given.length > 0 ? given : [''];
      const found = complete(spec(), words);
      let candidates = found.candidates;
      if (found.nodes) {
        const { prefix, before } = found.nodes;
        const [verbName, ...typed] = words.slice(0, -1);
        try {
          const names = await nodeNames(connectionValues(typed, verbs()[verbName as string], io), io);
          candidates = names.filter((n) => n.startsWith(prefix)).map((n) => `${before}${n}`);
        } catch {
          candidates = []; // Completion fails silently: no cluster, no answer, no candidates.
        }
      }
      for (const line of completionOutput(candidates, found.directive)) io.out(line);
      return Exit.healthy;
    },
  };
}

const SHELL_OPTIONS = {
  shell: {
    type: 'string',
    description: 'The shell: bash, zsh or fish (also the first argument).',
    choices: SHELLS,
  },
} as const;

/** `completion` and `__complete` for the commands given (and for themselves). */
export function completionVerbs(
  commands: Readonly<Record<string, Verb>>,
  nodeNames: NodeNames = listNodeNames,
): { completion: Verb; __complete: Verb } {
  const all = (): Record<string, Verb> => ({ ...commands, completion, __complete });
  const spec = (): CompletionSpec => completionSpec(all());
  const completion: Verb = {
    summary:
      'Print the shell completion script of kubectl-nodecare for bash, zsh or fish (docs/operations.md, "Shell completion"); exit 0 printed, 2 error.',
    usage: '<shell> [options]',
    options: SHELL_OPTIONS,
    normalizeArgs: (argv) => kubectlArgs(argv, 'shell', undefined, SHELL_OPTIONS),
    async run(values: OptionValues, io: CliIo): Promise<number> {
      const shell = values.shell as Shell | undefined;
      if (!shell) {
        io.err(`kubectl nodecare completion: name a shell: kubectl nodecare completion ${SHELLS.join('|')}`);
        return Exit.error;
      }
      io.out(completionScript(shell, spec()).trimEnd());
      return Exit.healthy;
    },
  };
  const __complete = completeVerb(spec, all, nodeNames);
  return { completion, __complete };
}
