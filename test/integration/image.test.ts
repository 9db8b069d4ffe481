// The image users get, built for real: BuildKit (from the Go module proxy) builds the repository's Dockerfile
// with local Debian bookworm bases standing in for its public ones (test/image/build.sh). The test reads the
// resulting OCI archive and checks what could go wrong: the name containerd imports it under, the config the
// manifests rely on, the programs on PATH, and that nothing but the runtime is in it (no npm, no sources, no
// devDependencies). Then it runs the image's own node and nodecare-agent with runc from its unpacked layers.
// Building needs root (BuildKit's runc worker): as another user the test says so and does not run, and under
// CI=true it fails instead.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildImage,
  describeImage,
  readImage,
  type BuiltImage,
  type FileEntry,
  type ImageContents,
} from '../image/image.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
  devDependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { dev?: boolean; optional?: boolean }>;
};

const isRoot = process.getuid?.() === 0;
if (!isRoot)
  process.stderr.write(
    `[image] NOT RUN: building the image needs root (BuildKit's runc worker); this is uid ${process.getuid?.()}\n`,
  );

function run(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe.skipIf(!isRoot && process.env.CI !== 'true')('the nodecare image built from the Dockerfile', () => {
  let image: BuiltImage;
  let contents: ImageContents;
  const file = (path: string): FileEntry | undefined => contents.files.get(path);

  beforeAll(async () => {
    image = await buildImage();
    contents = await readImage(image.archive);
    process.stderr.write(
      `[image] ${describeImage(image)}, ${contents.layers.length} layers: ${image.archive}\n`,
    );
  }, 1_800_000);

  it('is named nodecare.local/nodecare:<package.json version> in the archive index, so containerd imports it', () => {
    expect(image.ref).toBe(`nodecare.local/nodecare:${pkg.version}`);
    expect(contents.ref).toBe(image.ref);
    expect(image.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(image.compressedBytes).toBeGreaterThan(0);
    expect(image.sizeBytes).toBeGreaterThan(image.compressedBytes);
  });

  it('runs nodecare-controller as uid 65532 by default, with NODE_ENV=production and /usr/local/bin on PATH', () => {
    expect(contents.config.Entrypoint).toEqual(['nodecare-controller']);
    expect(contents.config.User).toBe('65532:65532');
    expect(contents.config.Env).toContain('NODE_ENV=production');
    const path = contents.config.Env?.find((e) => e.startsWith('PATH='));
    expect(path?.slice(5).split(':')).toContain('/usr/local/bin');
  });

  it('has node, /usr/bin/env and every package.json "bin" on PATH, each linked to an executable entry point', () => {
    expect(file('usr/local/bin/node')).toMatchObject({ type: 'file', mode: 0o755 });
    expect(file('usr/local/bin/node')!.size).toBeGreaterThan(50e6);
    expect(file('usr/bin/env')?.type).toBe('file');
    expect(Object.keys(pkg.bin)).toContain('nodecare-agent');
    for (const [name, target] of Object.entries(pkg.bin)) {
      expect(file(`usr/local/bin/${name}`), name).toMatchObject({
        type: 'symlink',
        linkname: `/app/${target}`,
      });
      expect(file(`app/${target}`), target).toMatchObject({ type: 'file', mode: 0o755 });
    }
    expect(file('app/dist/agent/main.js')?.type).toBe('file');
    expect(file('app/package.json')?.type).toBe('file');
    const protos = [...contents.files.keys()].filter(
      (p) => p.startsWith('app/api/proto/') && p.endsWith('.proto'),
    );
    expect(protos.length).toBeGreaterThan(0);
  });

  it('holds every production dependency and no devDependency', () => {
    const installed = Object.entries(lock.packages).filter(([path]) => path.includes('node_modules/'));
    const production = installed.filter(([, meta]) => !meta.dev && !meta.optional).map(([path]) => path);
    const development = installed.filter(([, meta]) => meta.dev).map(([path]) => path);
    expect(production.length).toBeGreaterThan(20);
    expect(development.length).toBeGreaterThan(20);
    for (const path of production) expect(file(`app/${path}`)?.type, path).toBe('dir');
    for (const path of development) expect(file(`app/${path}`), path).toBeUndefined();
    // The lock marks what only devDependencies need; these are among them (@types/node is not: a dependency
    // of @kubernetes/client-node needs it too).
    for (const name of ['typescript', 'vitest', 'eslint', 'prettier', 'node'])
      expect(development).toContain(`node_modules/${name}`);
  });

  it('has no npm, corepack, compiler, sources, source maps or type declarations', () => {
    for (const path of [
      'usr/local/lib/node_modules/npm',
      'usr/local/lib/node_modules/corepack',
      'usr/local/bin/npm',
      'usr/local/bin/npx',
      'usr/local/bin/corepack',
      'usr/bin/gcc',
      'usr/bin/make',
    ])
      expect(file(path), path).toBeUndefined();
    const app = [...contents.files.keys()].filter((p) => p.startsWith('app/'));
    expect(app.filter((p) => /\.([cm]?ts|map)$/.test(p))).toEqual([]);
    // Only what the runtime stage copies: no agent/, lib/, tsconfig.json or package-lock.json (build-info.json
    // holds the revision --version prints).
    const top = new Set(app.map((p) => p.split('/')[1]));
    expect([...top].sort()).toEqual(['api', 'build-info.json', 'dist', 'node_modules', 'package.json']);
    expect(app.filter((p) => p.startsWith('app/api/') && !p.startsWith('app/api/proto'))).toEqual([]);
  });

  describe('run with runc from its unpacked layers', () => {
    let bundle = '';
    let runc = '';
    let spec: { process: Record<string, unknown>; root: Record<string, unknown> };

    beforeAll(async () => {
      const debs = await run('bash', [join(ROOT, 'test/image/debs.sh'), 'runc']);
      if (debs.code !== 0) throw new Error(`test/image/debs.sh runc failed:\n${debs.stderr}`);
      runc = join(debs.stdout.trim().split('\n').pop()!, 'usr/sbin/runc');
      bundle = mkdtempSync(join(tmpdir(), 'nodecare-image-'));
      for (const layer of contents.layers) {
        const blob = `blobs/${layer.digest.replace(':', '/')}`;
        const untar = await run('bash', [
          '-c',
          'set -o pipefail; mkdir -p "$3" && tar -xOf "$1" "$2" | tar -xz --no-same-owner -C "$3"',
          'untar',
          image.archive,
          blob,
          join(bundle, 'rootfs'),
        ]);
        if (untar.code !== 0) throw new Error(`unpacking ${blob}: ${untar.stderr}`);
      }
      const generated = await run(runc, ['spec', '--bundle', bundle]);
      if (generated.code !== 0) throw new Error(`runc spec: ${generated.stderr}`);
      spec = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as typeof spec;
    }, 300_000);

    afterAll(() => {
      if (bundle) rmSync(bundle, { recursive: true, force: true });
    });

    /** Runs argv in the image as its user, read-only, with no network, and returns what it printed. */
    async function runInImage(id: string, args: string[]) {
      const [uid, gid] = (contents.config.User ?? '0:0').split(':').map(Number);
      const config = {
        ...spec,
        process: {
          ...spec.process,
          terminal: false,
          args,
          env: contents.config.Env,
          cwd: contents.config.WorkingDir ?? '/',
          user: { uid, gid },
        },
        root: { path: 'rootfs', readonly: true },
      };
      writeFileSync(join(bundle, 'config.json'), JSON.stringify(config));
      const name = `nodecare-image-test-${process.pid}-${id}`;
      return run(runc, ['--root', join(bundle, 'state'), 'run', '--bundle', bundle, name]);
    }

    it('its node is the version package.json pins', async () => {
      const result = await runInImage('node', ['node', '--version']);
      expect(result.stderr).toBe('');
      expect(result.stdout.trim()).toBe(`v${pkg.devDependencies.node}`);
      expect(result.code).toBe(0);
    });

    it('nodecare-agent --help runs through its #!/usr/bin/env node line', async () => {
      const result = await runInImage('agent', ['nodecare-agent', '--help']);
      expect(result.stdout).toContain('Usage: nodecare-agent');
      expect(result.code).toBe(0);
    });

    it('--version prints the same version and the commit it was built from in all three programs', async () => {
      const head = await run('git', ['-C', ROOT, 'rev-parse', 'HEAD']);
      for (const program of ['nodecare-agent', 'nodecare-controller', 'kubectl-nodecare']) {
        const result = await runInImage(`version-${program}`, [program, '--version']);
        expect(result.stdout).toBe(`${program} ${pkg.version} (revision ${head.stdout.trim()})\n`);
        expect(result.code).toBe(0);
      }
    });

    it('the default entrypoint is the controller', async () => {
      const result = await runInImage('controller', [...(contents.config.Entrypoint ?? []), '--help']);
      expect(result.stdout).toContain('Usage: nodecare-controller');
      expect(result.code).toBe(0);
    });
  });
});
