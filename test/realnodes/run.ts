// `npm run realnodes:build` (build) and `npm run test:realnodes` (test): the real-node suite needs root. As
// another user this prints one line saying it did not run and why, and exits 0 — or 1 under CI=true.
//   node test/realnodes/run.ts build|test

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ensureBinaries } from '../controlplane/controlplane.ts';
import { ensureNodeParts } from './realnodes.ts';
import { ensureUpstreamBuilds } from './upstream/upstream.ts';

const mode = process.argv[2];
if (mode !== 'build' && mode !== 'test') {
  process.stderr.write('usage: node test/realnodes/run.ts build|test\n');
  process.exit(2);
}
const uid = process.getuid?.();
if (uid !== 0) {
  const ci = process.env.CI === 'true';
  process.stdout.write(
    `[realnodes] the real-node suite did NOT run: it needs root (kubelets, containerd, namespaces, cgroups, addresses on lo) and this is uid ${uid}${ci ? '; with CI=true that is a failure' : ''}\n`,
  );
  process.exit(ci ? 1 : 0);
}
try {
  await ensureBinaries();
  await ensureNodeParts();
  // The upstream extensions the upstream-*.test.ts files install (upstream/build.sh).
  await ensureUpstreamBuilds();
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
}
if (mode === 'test') {
  const vitest = join(import.meta.dirname, '..', '..', 'node_modules', 'vitest', 'vitest.mjs');
  const child = spawn(process.execPath, [vitest, 'run', '--project', 'realnodes', ...process.argv.slice(3)], {
    stdio: 'inherit',
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
