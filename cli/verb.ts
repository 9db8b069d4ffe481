// What a verb of kubectl-nodecare is: its summary, options and run function, and the I/O it is given. The
// verbs (cli/verbs/) implement it; the command table (cli/cli.ts) lists them.

import type { OptionTable, OptionValues } from '../lib/options.ts';

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  env: Readonly<Record<string, string | undefined>>;
  /** The terminal's width, when output goes to one: --help wraps to it (else $COLUMNS, else 80). */
  columns?: number;
}

export interface Verb {
  summary: string;
  /** The usage line's arguments when the verb takes positional ones (default `[options]`). */
  usage?: string;
  options: OptionTable;
  /** Left out of usage() and of completion (`__complete`, which the completion scripts call). */
  hidden?: boolean;
  /** Rewrites kubectl-style arguments (short flags, a positional) into long options before parsing. */
  normalizeArgs?(argv: readonly string[]): string[];
  /** Runs the verb with validated options; resolves with the exit code. */
  run(values: OptionValues, io: CliIo): Promise<number>;
}
