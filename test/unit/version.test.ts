// --version: the three programs print the same `<program> <version> (revision <commit>)`, the revision coming
// from build-info.json (what the image and the release carry) before git, and 'unknown' when neither says.

import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = process.execPath;
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();

/** lib/version.ts and lib/fs.ts copied under a package.json of their own, outside any git checkout. */
function copiedPackage(buildInfo?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'nodecare-version-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  for (const file of ['version.ts', 'fs.ts']) cpSync(join(ROOT, 'lib', file), join(dir, 'lib', file));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'nodecare', version: '9.8.7', type: 'module' }),
  );
  if (buildInfo !== undefined) writeFileSync(join(dir, 'build-info.json'), buildInfo);
  return dir;
}

const line = (dir: string): string =>
  execFileSync(
    NODE,
    [
      '--input-type=module',
      '-e',
      `import { versionLine } from '${join(dir, 'lib', 'version.ts')}'; console.log(versionLine('p'));`,
    ],
    {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, GIT_CEILING_DIRECTORIES: tmpdir() },
    },
  ).trim();

describe('--version', () => {
  it('prints the same version and revision in the agent, the controller and kubectl-nodecare', () => {
    const out = ['agent/main.ts', 'controller/main.ts', 'cli/main.ts'].map((main) =>
      execFileSync(NODE, [join(ROOT, main), '--version'], { encoding: 'utf8' }).trim(),
    );
    expect(out).toEqual(
      ['nodecare-agent', 'nodecare-controller', 'kubectl-nodecare'].map(
        (name) => `${name} ${version} (revision ${head})`,
      ),
    );
  });

  it('takes the revision from build-info.json beside package.json', () => {
    const revision = 'a'.repeat(40);
    expect(line(copiedPackage(JSON.stringify({ revision })))).toBe(`p 9.8.7 (revision ${revision})`);
  });

  it('says unknown outside a checkout without build-info.json, and for a build-info.json revision that is not a commit', () => {
    expect(line(copiedPackage())).toBe('p 9.8.7 (revision unknown)');
    expect(line(copiedPackage(JSON.stringify({ revision: 'main' })))).toBe('p 9.8.7 (revision unknown)');
  });
});
