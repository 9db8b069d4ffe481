// The version a program reports (--version, the start-up log, the build_info metric): nodecare's package.json,
// found upward from this file so that it works from the sources and from the build in dist/ alike; and the
// revision it was built from: build-info.json beside that package.json (the Dockerfile writes it from its
// REVISION build argument, release/release.sh passes the commit), else, in a git checkout, `git rev-parse HEAD`.

import { readFileSync } from './fs.ts';
import { dirname, join } from 'node:path';

let root: { dir: string; version: string } | null | undefined;
let revision: string | undefined;

function packageRoot(): { dir: string; version: string } | null {
  if (root !== undefined) return root;
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'nodecare' && pkg.version) return (root = { dir, version: pkg.version });
    } catch {
      // no package.json here: look further up
    }
    if (dirname(dir) === dir) return (root = null);
  }
}

export function packageVersion(): string {
  return packageRoot()?.version ?? 'unknown';
}

/** The commit the program was built from: a 40-hex-digit git revision, or 'unknown'. */
export function packageRevision(): string {
  if (revision !== undefined) return revision;
  const dir = packageRoot()?.dir;
  if (dir === undefined) return (revision = 'unknown');
  try {
    const info = JSON.parse(readFileSync(join(dir, 'build-info.json'), 'utf8')) as { revision?: unknown };
    if (typeof info.revision === 'string' && /^[0-9a-f]{40}$/.test(info.revision))
      return (revision = info.revision);
  } catch {
    // no build-info.json: a checkout, perhaps
  }
  try {
    // Loaded here, not imported: only --version in a checkout gets this far (docs/adr/0006 on built-ins).
    const { execFileSync } = process.getBuiltinModule('node:child_process');
    const head = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
    if (/^[0-9a-f]{40}$/.test(head)) return (revision = head);
  } catch {
    // not a checkout, or no git
  }
  return (revision = 'unknown');
}

/** What `--version` prints, the same in all three programs: `<program> <version> (revision <commit>)`. */
export function versionLine(program: string): string {
  return `${program} ${packageVersion()} (revision ${packageRevision()})`;
}
