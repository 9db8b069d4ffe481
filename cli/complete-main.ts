#!/usr/bin/env node
// kubectl_complete-nodecare, kubectl's completion of `kubectl nodecare ...` (kubectl 1.26 and later): kubectl
// finds this executable on PATH and runs it with the words after `nodecare`, the one being completed last, and
// reads cobra's answer, the candidates one per line, then :<directive>. It is `kubectl-nodecare __complete`.

import { requireNodeVersion } from '../lib/node-version.ts';

requireNodeVersion('kubectl_complete-nodecare');
const { runCli } = await import('./cli.ts');

process.exitCode = await runCli(['__complete', ...process.argv.slice(2)], {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
});
