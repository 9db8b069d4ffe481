// The lifecycle every nodecare program shares (docs/conventions.md 14: thin mains): parse and validate config before any
// I/O (exit 2 listing every problem, or print --help), start, then on SIGTERM/SIGINT stop within a deadline.

import { OptionsError } from './options.ts';
import { versionLine } from './version.ts';

export interface Program<C> {
  name: string;
  /** Parses argv and env; throws OptionsError listing every problem. */
  load(argv: readonly string[], env: NodeJS.ProcessEnv): { help: string } | { config: C };
  /** Starts the program; the returned stop() is given shutdownDeadlineMs and must finish within it. */
  start(config: C): Promise<{ stop(budgetMs: number): Promise<void> }>;
  shutdownDeadlineMs: number;
}

export function runProgram<C>(program: Program<C>): void {
  const main = async (): Promise<number> => {
    if (process.argv.slice(2).includes('--version')) {
      process.stdout.write(`${versionLine(program.name)}\n`);
      return 0;
    }
    let loaded: { help: string } | { config: C };
    try {
      loaded = program.load(process.argv.slice(2), process.env);
    } catch (err) {
      if (!(err instanceof OptionsError)) throw err;
      process.stderr.write(`${program.name}: ${err.message}\nRun ${program.name} --help for the options.\n`);
      return 2;
    }
    if ('help' in loaded) {
      process.stdout.write(`${loaded.help}\n`);
      return 0;
    }
    const running = await program.start(loaded.config);
    await new Promise<void>((resolve) => {
      const onSignal = (): void => {
        setTimeout(() => process.exit(0), program.shutdownDeadlineMs).unref();
        void running.stop(program.shutdownDeadlineMs).then(resolve);
      };
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
    });
    return 0;
  };
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`${program.name}: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
