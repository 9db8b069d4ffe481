// `npm run release` (release/release.sh) for real, into a temporary directory: BuildKit builds both platforms
// from the Dockerfile (the build stage comes from the cache test/integration/image.test.ts's build fills), and
// the artifacts are read back: SHA256SUMS matches every file, the image index holds linux/amd64 and
// linux/arm64 with the OCI labels, the arm64 image's ELF files are aarch64 (read from their headers, nothing
// run; other platforms' prebuilds/ directories aside), install.yaml runs the release's image, the chart carries the version, the SBOM is SPDX,
// and the krew manifest's sha256s are those of the single-file kubectl-nodecare archives, each of its machine;
// krew itself (test/tools/build-krew.sh) installs the plugin from the manifest and this machine's archive alone,
// and kubectl runs it.

import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readImage, readImageIndex } from '../image/image.ts';
import { elfMachine } from './helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
const isRoot = process.getuid?.() === 0;
const IMAGE = 'nodecare.local/nodecare';
const SOURCE = 'https://example.invalid/nodecare';
const RELEASE_URL = 'https://example.invalid/releases/v1';
const EM_X86_64 = 62;
const EM_AARCH64 = 183;
if (!isRoot)
  process.stderr.write(
    `[release] NOT RUN: the release builds its images with BuildKit's runc worker, which needs root; this is uid ${process.getuid?.()}${process.env.CI === 'true' ? ' (with CI=true the test runs and fails)' : ''}\n`,
  );

describe.skipIf(!isRoot && process.env.CI !== 'true')('npm run release', () => {
  let out: string;
  let printed: string;
  const head = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  const archive = () => join(out, `nodecare-${pkg.version}.oci.tar`);

  beforeAll(async () => {
    out = join(mkdtempSync(join(tmpdir(), 'nodecare-release-')), `v${pkg.version}`);
    printed = await new Promise<string>((resolve, reject) =>
      execFile(
        'bash',
        [join(ROOT, 'release', 'release.sh'), '--allow-dirty', out],
        {
          env: {
            ...process.env,
            NODECARE_RELEASE_IMAGE: IMAGE,
            NODECARE_SOURCE: SOURCE,
            NODECARE_RELEASE_URL: `${RELEASE_URL}/`,
          },
          maxBuffer: 64 << 20,
        },
        (err, stdout, stderr) =>
          err ? reject(new Error(`release.sh: ${err.message}\n${stderr.slice(-4000)}`)) : resolve(stdout),
      ),
    );
  }, 1_800_000);

  afterAll(() => {
    if (out) rmSync(join(out, '..'), { recursive: true, force: true });
  });

  it('writes the artifacts, SHA256SUMS matching each, and prints each with its size and digest', () => {
    const files = readdirSync(out).sort();
    expect(files).toEqual(
      [
        'CHANGELOG.md',
        'SHA256SUMS',
        'crds.yaml',
        'install.yaml',
        `nodecare-${pkg.version}.oci.tar`,
        `nodecare-${pkg.version}.spdx.json`,
        `nodecare-${pkg.version}.tgz`,
        'kubectl-nodecare-linux-amd64.tar.gz',
        'kubectl-nodecare-linux-arm64.tar.gz',
        'nodecare-krew.yaml',
      ].sort(),
    );
    const sums = readFileSync(join(out, 'SHA256SUMS'), 'utf8').trim().split('\n');
    expect(sums.map((l) => l.split(/\s+/)[1]).sort()).toEqual(files.filter((f) => f !== 'SHA256SUMS'));
    for (const line of sums) {
      const [sum, name] = line.split(/\s+/) as [string, string];
      const data = readFileSync(join(out, name));
      expect(createHash('sha256').update(data).digest('hex'), name).toBe(sum);
      expect(printed).toContain(`${data.length}  sha256:${sum}  ${name}`);
    }
    expect(readFileSync(join(out, 'CHANGELOG.md'), 'utf8')).toMatch(new RegExp(`^## \\[${pkg.version}\\]`));
  });

  it('the image index holds linux/amd64 and linux/arm64, each with the OCI labels', async () => {
    const index = await readImageIndex(archive());
    expect(index.platforms.map((p) => p.platform).sort()).toEqual(['linux/amd64', 'linux/arm64']);
    expect(printed).toContain(index.digest);
    for (const { platform } of index.platforms) {
      const labels = (await readImage(archive(), platform)).config.Labels ?? {};
      expect(labels).toMatchObject({
        'org.opencontainers.image.source': SOURCE,
        'org.opencontainers.image.version': pkg.version,
        'org.opencontainers.image.revision': head,
        'org.opencontainers.image.licenses': 'Apache-2.0',
      });
      expect(Date.parse(labels['org.opencontainers.image.created'] ?? '')).not.toBeNaN();
    }
  });

  it("the arm64 image's node and every other ELF file are aarch64, the amd64 image's x86-64; both carry the commit", async () => {
    for (const [platform, machine, nodeArch] of [
      ['linux/arm64', EM_AARCH64, 'arm64'],
      ['linux/amd64', EM_X86_64, 'x64'],
    ] as const) {
      const image = await readImage(archive(), platform);
      const node = image.files.get('usr/local/bin/node');
      expect(node?.head.subarray(0, 4).toString('latin1'), `${platform} node`).toBe('\x7fELF');
      expect(node?.head.readUInt16LE(18), `${platform} node`).toBe(machine);
      const elves = [...image.files].filter(
        ([, f]) => f.type === 'file' && f.head.subarray(0, 4).toString('latin1') === '\x7fELF',
      );
      expect(elves.length).toBeGreaterThan(20);
      // Prebuilt binaries for other platforms, each in its prebuilds/<platform>-<arch>/ directory, are loaded only
      // there (node-gyp-build and Bare pick the directory by name): @kubernetes/client-node's tar-fs brings
      // bare-fs's, for the Bare runtime. Any other ELF file, and those of prebuilds/linux-<arch>/, must be ours.
      const loadable = (path: string) => {
        const dir = /\/prebuilds\/([^/]+)\//.exec(path)?.[1];
        return dir === undefined || dir === `linux-${nodeArch}`;
      };
      const foreign = elves
        .filter(([path, f]) => loadable(path) && f.head.readUInt16LE(18) !== machine)
        .map(([path]) => path);
      expect(foreign, `${platform}: ELF files of another machine`).toEqual([]);
      expect(image.files.get('app/build-info.json')?.size).toBe(`{"revision":"${head}"}\n`.length);
    }
  });

  it("install.yaml runs the release's image and holds the CRDs crds.yaml holds; the chart has the version", () => {
    const docs = (file: string) =>
      loadAll(readFileSync(join(out, file), 'utf8')) as Array<Record<string, unknown>>;
    const images = JSON.stringify(docs('install.yaml')).match(/"image":"[^"]*"/g) ?? [];
    expect(new Set(images)).toEqual(new Set([`"image":"${IMAGE}:${pkg.version}"`]));
    const crds = (file: string) =>
      docs(file)
        .filter((d) => d?.kind === 'CustomResourceDefinition')
        .map((d) => JSON.stringify(d))
        .sort();
    expect(crds('crds.yaml')).toEqual(crds('install.yaml'));
    expect(crds('crds.yaml').length).toBe(2);
    const chart = execFileSync(
      'tar',
      ['-xzOf', join(out, `nodecare-${pkg.version}.tgz`), 'nodecare/Chart.yaml'],
      {
        encoding: 'utf8',
      },
    );
    expect(chart).toMatch(new RegExp(`^version: ${pkg.version}$`, 'm'));
    expect(chart).toMatch(new RegExp(`^appVersion: ${pkg.version}$`, 'm'));
    const values = execFileSync(
      'tar',
      ['-xzOf', join(out, `nodecare-${pkg.version}.tgz`), 'nodecare/values.yaml'],
      {
        encoding: 'utf8',
      },
    );
    expect(values).toMatch(new RegExp(`^  repository: ${IMAGE}$`, 'm'));
  });

  it('the SBOM lists the npm packages, and each platform image with the Debian packages its dpkg database lists and its Node.js', async () => {
    interface Package {
      name: string;
      SPDXID: string;
      versionInfo: string;
      supplier?: string;
      primaryPackagePurpose?: string;
      externalRefs?: Array<{ referenceLocator: string }>;
    }
    const sbom = JSON.parse(readFileSync(join(out, `nodecare-${pkg.version}.spdx.json`), 'utf8')) as {
      spdxVersion: string;
      documentDescribes: string[];
      packages: Package[];
      relationships: Array<{ spdxElementId: string; relatedSpdxElement: string; relationshipType: string }>;
    };
    expect(sbom.spdxVersion).toBe('SPDX-2.3');
    expect(sbom.packages.map((p) => p.name)).toContain('@kubernetes/client-node');
    const ids = new Set(sbom.packages.map((p) => p.SPDXID));
    expect(ids.size).toBe(sbom.packages.length);
    const index = await readImageIndex(archive());
    const images = sbom.packages.filter((p) => p.primaryPackagePurpose === 'CONTAINER');
    expect(images.map((p) => p.versionInfo).sort()).toEqual(index.platforms.map((p) => p.digest).sort());
    for (const { platform, digest } of index.platforms) {
      const arch = platform.split('/')[1]!;
      const image = images.find((p) => p.versionInfo === digest)!;
      expect(sbom.documentDescribes).toContain(image.SPDXID);
      const contained = new Set(
        sbom.relationships
          .filter((r) => r.spdxElementId === image.SPDXID && r.relationshipType === 'CONTAINS')
          .map((r) => r.relatedSpdxElement),
      );
      for (const id of contained) expect(ids.has(id), id).toBe(true);
      const inImage = sbom.packages.filter((p) => contained.has(p.SPDXID));
      // The Debian packages are exactly those the image's own dpkg database says are installed.
      const status = (await readImage(archive(), platform, ['var/lib/dpkg/status'])).files.get(
        'var/lib/dpkg/status',
      );
      const installed = [...(status?.data?.toString('utf8') ?? '').matchAll(/^Package: (\S+)$/gm)].map(
        (m) => m[1],
      );
      expect(installed.length, `${platform}: packages in var/lib/dpkg/status`).toBeGreaterThan(30);
      const debs = inImage.filter((p) => p.supplier === 'Organization: Debian');
      expect(debs.map((p) => p.name).sort()).toEqual([...installed].sort());
      for (const deb of debs)
        expect(deb.externalRefs?.[0]?.referenceLocator).toMatch(
          new RegExp(
            `^pkg:deb/debian/${deb.name.replaceAll('+', '\\+')}@\\S+\\?arch=(${arch}|all)&distro=debian-12`,
          ),
        );
      expect(debs.map((p) => p.name)).toEqual(expect.arrayContaining(['libc6', 'base-files']));
      const node = inImage.find((p) => p.name === 'node');
      expect(node?.versionInfo).toBe(process.versions.node);
      expect(contained.has(sbom.documentDescribes[0]!), 'the image contains the npm package nodecare').toBe(
        true,
      );
    }
  });

  it("the krew manifest names both platforms, each archive's address and sha256; each archive holds an executable kubectl-nodecare of its machine and LICENSE", () => {
    interface KrewPlatform {
      selector: { matchLabels: Record<string, string> };
      uri: string;
      sha256: string;
      bin: string;
      files: Array<{ from: string; to: string }>;
    }
    const manifest = load(readFileSync(join(out, 'nodecare-krew.yaml'), 'utf8')) as {
      apiVersion: string;
      kind: string;
      metadata: { name: string };
      spec: { version: string; homepage: string; shortDescription: string; platforms: KrewPlatform[] };
    };
    expect(manifest).toMatchObject({
      apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
      kind: 'Plugin',
      metadata: { name: 'nodecare' },
      spec: { version: `v${pkg.version}`, homepage: SOURCE },
    });
    expect(manifest.spec.shortDescription).toBeTruthy();
    const platforms = manifest.spec.platforms;
    expect(platforms.map((p) => p.selector.matchLabels)).toEqual([
      { os: 'linux', arch: 'amd64' },
      { os: 'linux', arch: 'arm64' },
    ]);
    for (const [platform, machine] of [
      [platforms[0]!, EM_X86_64],
      [platforms[1]!, EM_AARCH64],
    ] as const) {
      const name = `kubectl-nodecare-linux-${platform.selector.matchLabels.arch}.tar.gz`;
      expect(platform.uri).toBe(`${RELEASE_URL}/${name}`);
      const archive = join(out, name);
      expect(platform.sha256).toBe(createHash('sha256').update(readFileSync(archive)).digest('hex'));
      expect(platform.bin).toBe('kubectl-nodecare');
      expect(platform.files.map((f) => f.from).sort()).toEqual(['LICENSE', 'kubectl-nodecare']);
      const listing = execFileSync('tar', ['-tvzf', archive], { encoding: 'utf8' }).trim().split('\n');
      expect(listing.map((l) => l.split(/\s+/).at(-1)).sort()).toEqual(['LICENSE', 'kubectl-nodecare']);
      expect(listing.find((l) => l.endsWith(' kubectl-nodecare'))).toMatch(/^-rwxr-xr-x (root\/root|0\/0) /);
      const dir = mkdtempSync(join(tmpdir(), 'nodecare-krew-'));
      try {
        execFileSync('tar', ['-xzf', archive, '-C', dir]);
        expect(elfMachine(join(dir, 'kubectl-nodecare')), name).toBe(machine);
        expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it("krew installs kubectl-nodecare from nodecare-krew.yaml and this machine's archive alone, and kubectl runs it", () => {
    const krew = execFileSync('bash', [join(ROOT, 'test', 'tools', 'build-krew.sh')], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .at(-1)!;
    const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
    const root = mkdtempSync(join(tmpdir(), 'nodecare-krew-root-'));
    try {
      const env = { ...process.env, KREW_ROOT: root, PATH: `${join(root, 'bin')}:${process.env.PATH ?? ''}` };
      const krewRun = (args: string[]) => {
        const r = spawnSync(krew, args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
        expect(r.status, `krew ${args.join(' ')}: ${r.stderr}`).toBe(0);
        return `${r.stdout}${r.stderr}`;
      };
      // krew wants an initialized plugin index for list and uninstall, which `krew update` clones from the
      // network; an empty git repository stands in for it (a plugin installed from a manifest is `detached`).
      mkdirSync(join(root, 'index', 'default', 'plugins'), { recursive: true });
      execFileSync('git', ['-C', join(root, 'index', 'default'), 'init', '-q']);
      const installed = krewRun([
        'install',
        `--manifest=${join(out, 'nodecare-krew.yaml')}`,
        `--archive=${join(out, `kubectl-nodecare-linux-${arch}.tar.gz`)}`,
      ]);
      expect(installed).toContain('Installed plugin: nodecare');
      expect(krewRun(['list'])).toMatch(/^detached\/nodecare$/m);
      // kubectl finds the plugin krew linked onto PATH, and runs the single executable (no Node.js needed).
      const kubectl = join(inject('binDir'), 'kube-testenv');
      const version = spawnSync(kubectl, ['kubectl', 'nodecare', '--version'], { env, encoding: 'utf8' });
      expect(version.stderr).toBe('');
      expect(version.stdout).toMatch(
        new RegExp(`^kubectl-nodecare ${pkg.version.replaceAll('.', '\\.')} \\(revision ${head}[^)]*\\)\n$`),
      );
      krewRun(['uninstall', 'nodecare']);
      expect(readdirSync(join(root, 'bin'))).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
