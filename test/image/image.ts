// The nodecare image, built for real from the repository's Dockerfile by BuildKit on this machine
// (test/image/build.sh: BuildKit from the Go module proxy, local Debian bookworm bases standing in for the
// Dockerfile's public ones), and read back from its OCI archive: index, manifest, config, and the file tree its
// layers make. Tests use it to check the image itself; the real-node tests import the archive into containerd.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

const ROOT = join(import.meta.dirname, '..', '..');
const BUILD = join(import.meta.dirname, 'build.sh');

export interface BuiltImage {
  /** The OCI archive (`ctr images import` takes it as it is); its index names the image `ref`. */
  archive: string;
  /** nodecare.local/nodecare:<package.json version>. */
  ref: string;
  /** The image manifest's digest. */
  digest: string;
  /** The image config's digest: the image ID a container runtime reports (a Pod's `imageID`). */
  configDigest: string;
  /** The layers unpacked. */
  sizeBytes: number;
  /** The layers as stored and pulled (gzip). */
  compressedBytes: number;
}

export interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  User?: string;
  Env?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
}

export type FileType = 'file' | 'dir' | 'symlink' | 'hardlink' | 'other';

export interface FileEntry {
  type: FileType;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  /** A link's target. */
  linkname: string;
  /** A file's first 64 bytes (an ELF header's machine field is at bytes 18-19). */
  head: Buffer;
  /** The whole content, for the paths `readImage` was asked to keep. */
  data?: Buffer;
}

export interface ImageContents {
  ref: string;
  digest: string;
  configDigest: string;
  config: ImageConfig;
  layers: Array<{ digest: string; compressedBytes: number; sizeBytes: number }>;
  /** The file system the layers make, whiteouts applied; paths without a leading slash. */
  files: Map<string, FileEntry>;
}

/** The cache root test/image/build.sh uses. */
export function cacheRoot(): string {
  return (
    process.env.NODECARE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nodecare')
  );
}

let building: Promise<BuiltImage> | undefined;

/**
 * Builds the image (once per process; BuildKit's cache makes a warm build a few seconds) into one archive
 * per checkout under the cache, overwritten by the next build. Progress lines go to `log`; a failed build
 * throws with the end of the build's output.
 */
export function buildImage(
  log: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): Promise<BuiltImage> {
  building ??= build(log);
  return building;
}

async function build(log: (line: string) => void): Promise<BuiltImage> {
  const dir = join(cacheRoot(), 'image', createHash('sha256').update(ROOT).digest('hex').slice(0, 12));
  mkdirSync(dir, { recursive: true });
  const { stdout } = await runBuild([join(dir, 'nodecare.tar')], log);
  const [ref, archive] = stdout.trim().split('\n').slice(-2);
  if (!ref || !archive)
    throw new Error(`test/image/build.sh printed no image reference and archive:\n${stdout}`);
  const image = await readImage(archive);
  if (image.ref !== ref) throw new Error(`${archive} names ${image.ref}, not ${ref}`);
  return {
    archive,
    ref,
    digest: image.digest,
    configDigest: image.configDigest,
    sizeBytes: image.layers.reduce((sum, l) => sum + l.sizeBytes, 0),
    compressedBytes: image.layers.reduce((sum, l) => sum + l.compressedBytes, 0),
  };
}

function runBuild(args: string[], log: (line: string) => void): Promise<{ stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [BUILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.startsWith('[')) log(line);
    });
    child.on('error', (err) => reject(new Error(`test/image/build.sh: ${err.message}`)));
    child.on('close', (code) => {
      if (code === 0) return resolve({ stdout });
      const tail = stderr.trimEnd().split('\n').slice(-40).join('\n');
      reject(new Error(`test/image/build.sh exited ${code}:\n${tail}`));
    });
  });
}

/** One readable line: reference, digest, compressed and unpacked size. */
export function describeImage(image: BuiltImage): string {
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  return `${image.ref} (${image.digest.slice(0, 19)}…): ${mb(image.compressedBytes)} compressed, ${mb(image.sizeBytes)} unpacked`;
}

interface Descriptor {
  digest: string;
  size: number;
  mediaType: string;
  annotations?: Record<string, string>;
  platform?: { os: string; architecture: string; variant?: string };
}

const INDEX = 'application/vnd.oci.image.index.v1+json';

/** An OCI archive's entries, and its blobs checked against their digests. */
async function openArchive(archive: string) {
  const entries = new Map<string, Buffer>();
  for (const entry of readTar(await readFile(archive)))
    if (entry.type === 'file') entries.set(entry.path, entry.data);
  const blob = (digest: string): Buffer => {
    const data = entries.get(`blobs/${digest.replace(':', '/')}`);
    if (!data) throw new Error(`${archive}: no blob ${digest}`);
    const actual = `sha256:${createHash('sha256').update(data).digest('hex')}`;
    if (actual !== digest) throw new Error(`${archive}: blob ${digest} has digest ${actual}`);
    return data;
  };
  const json = <T>(data: Buffer | undefined, what: string): T => {
    if (!data) throw new Error(`${archive}: no ${what}`);
    return JSON.parse(data.toString('utf8')) as T;
  };
  const index = json<{ manifests: Descriptor[] }>(entries.get('index.json'), 'index.json');
  if (index.manifests.length !== 1)
    throw new Error(`${archive}: ${index.manifests.length} manifests, not one`);
  return { top: index.manifests[0]!, blob, json };
}

export interface ImageIndex {
  ref: string;
  /** The digest a registry gives the image once pushed: the multi-platform index's, or the one manifest's. */
  digest: string;
  /** Each platform's manifest ("linux/arm64"). */
  platforms: Array<{ platform: string; digest: string; size: number }>;
}

/** An OCI archive's image: its name, digest and the manifest of each platform it holds. */
export async function readImageIndex(archive: string): Promise<ImageIndex> {
  const { top, blob, json } = await openArchive(archive);
  const ref = top.annotations?.['io.containerd.image.name'] ?? '';
  if (top.mediaType !== INDEX) {
    const manifest = json<{ config: Descriptor }>(blob(top.digest), 'manifest');
    const config = json<{ os: string; architecture: string }>(blob(manifest.config.digest), 'config');
    return {
      ref,
      digest: top.digest,
      platforms: [{ platform: `${config.os}/${config.architecture}`, digest: top.digest, size: top.size }],
    };
  }
  const nested = json<{ manifests: Descriptor[] }>(blob(top.digest), 'image index');
  return {
    ref,
    digest: top.digest,
    platforms: nested.manifests
      // BuildKit's attestation manifests (platform unknown/unknown) are not images.
      .filter((m) => m.platform && m.platform.os !== 'unknown')
      .map((m) => ({
        platform: `${m.platform!.os}/${m.platform!.architecture}`,
        digest: m.digest,
        size: m.size,
      })),
  };
}

/**
 * Reads an OCI archive: its image's name, manifest digest, config and the file tree of its layers. An archive
 * of several platforms needs `platform` ("linux/arm64"), which picks one. The files named in `keep` carry
 * their whole content (`data`); the others only their head.
 */
export async function readImage(
  archive: string,
  platform?: string,
  keep: readonly string[] = [],
): Promise<ImageContents> {
  const { top, blob, json } = await openArchive(archive);
  let chosen = top;
  if (top.mediaType === INDEX) {
    const nested = json<{ manifests: Descriptor[] }>(blob(top.digest), 'image index');
    const match = nested.manifests.filter(
      (m) => m.platform && `${m.platform.os}/${m.platform.architecture}` === platform,
    );
    if (match.length !== 1)
      throw new Error(
        `${archive}: ${match.length} manifests for platform ${platform ?? '(none given)'}, not one`,
      );
    chosen = match[0]!;
  } else if (platform !== undefined) {
    const manifest = json<{ config: Descriptor }>(blob(top.digest), 'manifest');
    const config = json<{ os: string; architecture: string }>(blob(manifest.config.digest), 'config');
    if (`${config.os}/${config.architecture}` !== platform)
      throw new Error(`${archive}: the image is ${config.os}/${config.architecture}, not ${platform}`);
  }
  const manifest = json<{ config: Descriptor; layers: Descriptor[] }>(blob(chosen.digest), 'manifest');
  const config = json<{ config: ImageConfig }>(blob(manifest.config.digest), 'config').config;
  const files = new Map<string, FileEntry>();
  const layers: ImageContents['layers'] = [];
  for (const layer of manifest.layers) {
    const stored = blob(layer.digest);
    const tar = layer.mediaType.endsWith('gzip') ? gunzipSync(stored) : stored;
    layers.push({ digest: layer.digest, compressedBytes: stored.length, sizeBytes: tar.length });
    applyLayer(files, tar, new Set(keep));
  }
  return {
    ref: top.annotations?.['io.containerd.image.name'] ?? '',
    digest: chosen.digest,
    configDigest: manifest.config.digest,
    config,
    layers,
    files,
  };
}

/** Applies one layer to a file tree: whiteouts delete what earlier layers made, entries add or replace. */
function applyLayer(files: Map<string, FileEntry>, tar: Buffer, keep: ReadonlySet<string>): void {
  const removeTree = (path: string, keepSelf: boolean) => {
    if (!keepSelf) files.delete(path);
    for (const key of files.keys()) if (key.startsWith(`${path}/`)) files.delete(key);
  };
  for (const entry of readTar(tar)) {
    const slash = entry.path.lastIndexOf('/');
    const [dir, base] = [entry.path.slice(0, Math.max(slash, 0)), entry.path.slice(slash + 1)];
    if (base === '.wh..wh..opq') removeTree(dir, true);
    else if (base.startsWith('.wh.')) removeTree(`${dir ? `${dir}/` : ''}${base.slice(4)}`, false);
    else {
      // A non-directory replacing a directory replaces its contents too.
      if (entry.type !== 'dir' && files.get(entry.path)?.type === 'dir') removeTree(entry.path, false);
      const { path: _path, data, ...file } = entry;
      const kept = keep.has(entry.path) ? { data: Buffer.from(data) } : {};
      files.set(entry.path, { ...file, size: data.length, head: Buffer.from(data.subarray(0, 64)), ...kept });
    }
  }
}

interface TarEntry {
  path: string;
  type: FileType;
  mode: number;
  uid: number;
  gid: number;
  linkname: string;
  data: Buffer;
}

/** The entries of a tar stream (ustar, with pax and GNU long names), paths normalized without ./ or slashes. */
export function* readTar(buf: Buffer): Generator<TarEntry> {
  const text = (start: number, length: number) => {
    const field = buf.subarray(start, start + length);
    const end = field.indexOf(0);
    return field.subarray(0, end === -1 ? length : end).toString('utf8');
  };
  const octal = (start: number, length: number) => parseInt(text(start, length).trim() || '0', 8);
  let pax: Record<string, string> = {};
  let offset = 0;
  while (offset + 512 <= buf.length) {
    if (buf.subarray(offset, offset + 512).every((b) => b === 0)) break;
    const flag = String.fromCharCode(buf[offset + 156] ?? 0);
    const prefix = text(offset + 345, 155);
    const name = text(offset, 100);
    const size = pax.size ? Number(pax.size) : octal(offset + 124, 12);
    const data = buf.subarray(offset + 512, offset + 512 + size);
    const header = { mode: octal(offset + 100, 8), uid: octal(offset + 108, 8), gid: octal(offset + 116, 8) };
    const linkname = pax.linkpath ?? text(offset + 157, 100);
    offset += 512 + Math.ceil(size / 512) * 512;
    if (flag === 'x') {
      pax = { ...pax, ...parsePax(data) };
      continue;
    }
    if (flag === 'L' || flag === 'K') {
      pax = { ...pax, [flag === 'L' ? 'path' : 'linkpath']: data.toString('utf8').replace(/\0+$/, '') };
      continue;
    }
    if (flag === 'g') continue;
    const path = (pax.path ?? (prefix ? `${prefix}/${name}` : name))
      .replace(/^(\.\/|\/)+/, '')
      .replace(/\/+$/, '');
    pax = {};
    if (!path || path === '.') continue;
    const type: FileType =
      flag === '0' || flag === '\0' || flag === '7'
        ? 'file'
        : flag === '5'
          ? 'dir'
          : flag === '2'
            ? 'symlink'
            : flag === '1'
              ? 'hardlink'
              : 'other';
    yield { path, type, ...header, linkname, data };
  }
}

function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let offset = 0;
  while (offset < data.length) {
    const space = data.indexOf(0x20, offset);
    if (space === -1) break;
    const length = parseInt(data.subarray(offset, space).toString('utf8'), 10);
    if (!(length > 0)) break;
    const record = data.subarray(space + 1, offset + length - 1).toString('utf8');
    const eq = record.indexOf('=');
    out[record.slice(0, eq)] = record.slice(eq + 1);
    offset += length;
  }
  return out;
}
