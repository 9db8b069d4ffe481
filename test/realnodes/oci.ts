// One-layer OCI image archives made from a list of files, for `ctr -n k8s.io images import` on the real test
// nodes (no registry is reachable here). The archive is an OCI image layout in a tar (oci-layout, index.json,
// blobs/sha256/...) whose index entry carries the image name annotations: containerd imports an archive
// without `io.containerd.image.name` as nothing at all, and still exits 0. Deterministic: the same input gives
// the same digests (mtime 0, sorted entries), so re-importing an unchanged image is a no-op.

import { createHash } from 'node:crypto';
import { readdirSync, readlinkSync } from 'node:fs';
import { readFile, stat, writeFile, rename } from 'node:fs/promises';
import { join, posix, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

export interface OciFile {
  /** Absolute path inside the image, e.g. /pause. */
  path: string;
  /** Permission bits (default 0o644, or 0o755 for a source file that is executable). */
  mode?: number;
  uid?: number;
  gid?: number;
  /** The file's content, or `source`: a file on this machine to copy. */
  content?: string | Buffer;
  source?: string;
  /** Makes the entry a symbolic link to this target instead of a file. */
  symlink?: string;
}

export interface OciImage {
  /** Image reference, e.g. `nodecare-pause:test`; normalized like the kubelet does (docker.io/library/...). */
  ref: string;
  files: OciFile[];
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  user?: string;
  labels?: Record<string, string>;
}

export interface OciArchive {
  /** The fully qualified name the image is imported as (what a Pod's `image:` resolves to). */
  name: string;
  /** The manifest digest (sha256:...). */
  digest: string;
  /** The archive's bytes. */
  archive: Buffer;
}

const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const CONFIG = 'application/vnd.oci.image.config.v1+json';
const LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip';

/** `pause:1` -> `docker.io/library/pause:1`, `example.test/x` -> `example.test/x:latest`, as the kubelet resolves. */
export function normalizeImageRef(ref: string): string {
  if (!/^[a-z0-9][a-z0-9._/:@-]*$/.test(ref))
    throw new Error(`invalid image reference ${JSON.stringify(ref)}`);
  const slash = ref.indexOf('/');
  const first = slash < 0 ? '' : ref.slice(0, slash);
  let name = ref;
  if (slash < 0) name = `docker.io/library/${ref}`;
  else if (!first.includes('.') && !first.includes(':') && first !== 'localhost') name = `docker.io/${ref}`;
  const last = name.slice(name.lastIndexOf('/') + 1);
  if (!last.includes(':') && !name.includes('@')) name += ':latest';
  return name;
}

/** Builds the archive in memory. */
export async function ociArchive(image: OciImage): Promise<OciArchive> {
  const name = normalizeImageRef(image.ref);
  const layerTar = await tarLayer(image.files);
  const layer = gzipSync(layerTar, { level: 9 });
  const config = json({
    architecture: 'amd64',
    os: 'linux',
    config: {
      ...(image.entrypoint ? { Entrypoint: image.entrypoint } : {}),
      ...(image.cmd ? { Cmd: image.cmd } : {}),
      Env: image.env ?? ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      ...(image.workingDir ? { WorkingDir: image.workingDir } : {}),
      ...(image.user ? { User: image.user } : {}),
      ...(image.labels ? { Labels: image.labels } : {}),
    },
    rootfs: { type: 'layers', diff_ids: [digest(layerTar)] },
  });
  const manifest = json({
    schemaVersion: 2,
    mediaType: MANIFEST,
    config: { mediaType: CONFIG, digest: digest(config), size: config.length },
    layers: [{ mediaType: LAYER, digest: digest(layer), size: layer.length }],
  });
  const tag = name.slice(name.lastIndexOf('/') + 1).split(':')[1] ?? 'latest';
  const index = json({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      {
        mediaType: MANIFEST,
        digest: digest(manifest),
        size: manifest.length,
        annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': tag },
      },
    ],
  });
  const entries: TarEntry[] = [
    { path: 'oci-layout', content: json({ imageLayoutVersion: '1.0.0' }) },
    { path: 'index.json', content: index },
    { path: 'blobs/', dir: true },
    { path: 'blobs/sha256/', dir: true },
    ...[config, manifest, layer].map((blob) => ({
      path: `blobs/sha256/${digest(blob).slice('sha256:'.length)}`,
      content: blob,
    })),
  ];
  return { name, digest: digest(manifest), archive: tar(entries) };
}

/** Builds the archive and writes it to `path` (atomically). */
export async function writeOciArchive(path: string, image: OciImage): Promise<OciArchive> {
  const result = await ociArchive(image);
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, result.archive);
  await rename(tmp, path);
  return result;
}

interface TarEntry {
  path: string;
  content?: Buffer;
  dir?: boolean;
  symlink?: string;
  mode?: number;
  uid?: number;
  gid?: number;
}

async function tarLayer(files: OciFile[]): Promise<Buffer> {
  const entries = new Map<string, TarEntry>();
  for (const file of files) {
    if (!file.path.startsWith('/') || posix.normalize(file.path) !== file.path || file.path === '/')
      throw new Error(`OCI image file path must be absolute and normalized: ${JSON.stringify(file.path)}`);
    const given = [file.content, file.source, file.symlink].filter((x) => x !== undefined).length;
    if (given !== 1)
      throw new Error(`OCI image file ${file.path}: give exactly one of content, source or symlink`);
    const rel = file.path.slice(1);
    // Parent directories, as a real image has them.
    const parts = rel.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = `${parts.slice(0, i).join('/')}/`;
      if (!entries.has(dir)) entries.set(dir, { path: dir, dir: true, mode: 0o755 });
    }
    let content: Buffer | undefined;
    let mode = file.mode;
    if (file.source !== undefined) {
      content = await readFile(file.source);
      mode ??= (await stat(file.source)).mode & 0o111 ? 0o755 : 0o644;
    } else if (file.content !== undefined) {
      content = Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content);
    }
    entries.set(rel, {
      path: rel,
      content,
      symlink: file.symlink,
      mode: mode ?? (file.symlink ? 0o777 : 0o644),
      uid: file.uid,
      gid: file.gid,
    });
  }
  return tar([...entries.values()].sort((a, b) => (a.path < b.path ? -1 : 1)));
}

/** A POSIX ustar archive (names up to 255 bytes through the prefix field). */
function tar(entries: TarEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const header = Buffer.alloc(512);
    let name = entry.path;
    let prefix = '';
    if (Buffer.byteLength(name) > 100) {
      const cut = name.lastIndexOf('/', name.length - 2);
      prefix = name.slice(0, cut);
      name = name.slice(cut + 1);
      if (cut < 0 || Buffer.byteLength(name) > 100 || Buffer.byteLength(prefix) > 155)
        throw new Error(`path too long for a tar header: ${entry.path}`);
    }
    const size = entry.content?.length ?? 0;
    header.write(name, 0, 100);
    octal(header, 100, 8, entry.mode ?? (entry.dir ? 0o755 : 0o644));
    octal(header, 108, 8, entry.uid ?? 0);
    octal(header, 116, 8, entry.gid ?? 0);
    octal(header, 124, 12, size);
    octal(header, 136, 12, 0);
    header.write(entry.dir ? '5' : entry.symlink !== undefined ? '2' : '0', 156);
    if (entry.symlink !== undefined) {
      if (Buffer.byteLength(entry.symlink) > 100)
        throw new Error(`symlink target too long: ${entry.symlink}`);
      header.write(entry.symlink, 157, 100);
    }
    header.write('ustar\0', 257);
    header.write('00', 263);
    header.write(prefix, 345, 155);
    header.fill(' ', 148, 156);
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    blocks.push(header);
    if (entry.content && size > 0) {
      blocks.push(entry.content);
      const pad = (512 - (size % 512)) % 512;
      if (pad) blocks.push(Buffer.alloc(pad));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function octal(buf: Buffer, offset: number, length: number, value: number): void {
  buf.write(`${value.toString(8).padStart(length - 1, '0')}\0`, offset, length);
}

function json(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function digest(data: Buffer): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/**
 * Every file and symbolic link under `dir` as image files under `at` (the layout a Dockerfile's `COPY dir/ at`
 * gives), but those under a `skip` subdirectory (relative to `dir`, e.g. `usr/share/doc`).
 */
export function filesUnder(dir: string, at: string, skip: readonly string[] = []): OciFile[] {
  const files: OciFile[] = [];
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const inside = relative(dir, path);
    if (skip.some((s) => inside === s || inside.startsWith(`${s}/`))) continue;
    const target = posix.join(at, inside);
    if (entry.isSymbolicLink()) files.push({ path: target, symlink: readlinkSync(path) });
    else if (entry.isFile()) files.push({ path: target, source: path });
  }
  return files;
}
