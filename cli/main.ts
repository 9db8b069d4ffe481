#!/usr/bin/env node
// kubectl-nodecare entry point (the kubectl plugin: `kubectl nodecare <command>`): only composition. The
// Node.js version is checked before the program is loaded (lib/node-version.ts).

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('kubectl-nodecare');
const { runCli } = await import('./cli.ts');

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
});
