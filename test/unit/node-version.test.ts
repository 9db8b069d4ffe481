// Every program checks the Node.js version before loading anything that needs it (lib/node-version.ts): on an
// older Node it prints one line naming the version it needs and exits 2, instead of failing later as a
// misleading network error. The last test runs the real entry point of kubectl-nodecare, compiled as the
// package ships it, on the machine's own older Node.js.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { MINIMUM_NODE_VERSION, nodeVersionProblem } from '../../lib/node-version.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the Node.js version check', () => {
  it('is the minimum package.json declares', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${MINIMUM_NODE_VERSION}`);
  });

  it.each([
    ['v24.0.0', true],
    ['v24.21.0', true],
    ['v25.1.0', true],
    ['v23.11.1', false],
    ['v22.19.0', false],
    ['v20.20.2', false],
    ['not a version', false],
  ])('Node.js %s → runs: %s', (version, runs) => {
    const problem = nodeVersionProblem('kubectl-nodecare', version);
    if (runs) expect(problem).toBeUndefined();
    else {
      expect(problem).toBe(
        `kubectl-nodecare needs Node.js 24.0.0 or newer; this is Node.js ${version}. Install Node.js 24 (or run it through npm in the repository, which uses the pinned one).`,
      );
      expect(problem).not.toContain('\n');
    }
  });

  it('every entry point imports only the check before it loads its program', () => {
    for (const entry of ['cli', 'agent', 'controller', 'demo', 'bench']) {
      const text = readFileSync(join(ROOT, entry, 'main.ts'), 'utf8');
      const imports = [...text.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
      expect(imports, entry).toEqual(['../lib/node-version.ts']);
      expect(text, entry).toMatch(/^requireNodeVersion\(/m);
      expect(text.indexOf("requireNodeVersion('"), entry).toBeLessThan(text.indexOf('await import('));
    }
  });

  it("kubectl-nodecare on an older Node.js (the machine's own) prints one line naming the version it needs and exits 2", () => {
    // An older node on the PATH (the machines have Node 20 besides the project's pinned 24).
    const candidates = ['/usr/bin/node', '/usr/local/bin/node', '/bin/node'];
    const old = candidates.find((bin) => {
      try {
        const version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim();
        return nodeVersionProblem('x', version) !== undefined;
      } catch {
        return false;
      }
    });
    if (!old) {
      const message = `no Node.js older than ${MINIMUM_NODE_VERSION} at ${candidates.join(', ')}: the check was not run on one`;
      if (process.env.CI === 'true') throw new Error(message);
      console.warn(`[node-version] NOT RUN: ${message}`);
      return;
    }
    // The entry and the check, compiled as `npm run build` compiles them (.ts imports become .js). The program it
    // would load next is left out on purpose: if the check did not exit first, the import would fail instead.
    const dir = mkdtempSync(join(tmpdir(), 'nodecare-node-version-'));
    try {
      for (const file of ['cli/main.ts', 'lib/node-version.ts']) {
        const out = ts.transpileModule(readFileSync(join(ROOT, file), 'utf8'), {
          fileName: file,
          compilerOptions: {
            target: ts.ScriptTarget.ES2022,
            module: ts.ModuleKind.ESNext,
            rewriteRelativeImportExtensions: true,
          },
        });
        const target = join(dir, file.replace(/\.ts$/, '.js'));
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, out.outputText);
      }
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
      const result = spawnSync(old, [join(dir, 'cli', 'main.js'), 'status'], { encoding: 'utf8' });
      const version = execFileSync(old, ['--version'], { encoding: 'utf8' }).trim();
      expect(result.status, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`${nodeVersionProblem('kubectl-nodecare', version)}\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
