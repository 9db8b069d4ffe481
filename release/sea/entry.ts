// The single-file kubectl-nodecare's main script (release/sea/build.ts bundles it): cli/main.ts without its
// top-level await, which a CommonJS script (what Node's single executable applications run) cannot have. The
// Node.js version is the executable's own, so it needs no check.

import { runCli } from '../../cli/cli.ts';

runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 2;
  },
);
