#!/usr/bin/env node
// kubectl-nodecare entry point (the kubectl plugin: `kubectl nodecare <command>`): only composition.

import { runCli } from './cli.ts';

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
});
