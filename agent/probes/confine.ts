// Paths from node annotations, checked when the probe runs (docs/design.md section 3). At registration the path was
// checked as text (api/registration.ts); a symlink inside an allowed directory can point anywhere, and can be
// changed after registration, so here the path is resolved (every symlink followed) and the result must still
// lie in an allowed directory (itself resolved: /var/run is usually a link to /run). The probe then uses the
// resolved path, which had no symlink left when it was checked. A missing path is judged by its deepest
// existing ancestor, so "does not exist" cannot be learnt about a place outside either.
//
// Only imports node built-ins and small modules of its own (tests run it as another user from a copy).

import { lstat, realpath } from '../../lib/fs.ts';
import { basename, dirname, join, posix } from 'node:path';
import { ProbeReason } from '../../api/reasons.ts';
import { capInput } from '../../api/text.ts';
import { errorCode, fileError, unknown } from './result.ts';
import type { ProbeResult } from './types.ts';

export type Confined = { ok: true; path: string } | { ok: false; result: ProbeResult };

/**
 * `path` resolved and checked against `directories`; `directories` undefined means the registration is
 * trusted (a SystemExtension or the config file) and the path is used as written.
 */
export async function confinePath(
  path: string,
  directories: readonly string[] | undefined,
): Promise<Confined> {
  if (directories === undefined) return { ok: true, path };
  let resolved: string | undefined;
  try {
    resolved = await resolveAllowingMissing(path);
  } catch (err) {
    return { ok: false, result: fileError(capInput(path), err) };
  }
  const roots = await Promise.all(directories.map((d) => realpath(d).catch(() => posix.normalize(d))));
  if (resolved === undefined || !within(resolved, roots)) {
    return {
      ok: false,
      result: unknown(
        ProbeReason.InvalidRegistration,
        `${capInput(path)} resolves outside the allowed directories (a symlink); refused`,
      ),
    };
  }
  return { ok: true, path: resolved };
}

function within(path: string, roots: readonly string[]): boolean {
  return roots.some((root) => path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`));
}

/**
 * The real path of `path`; for a path that does not exist, the real path of its deepest existing ancestor
 * joined with the rest. undefined when an existing component is a link that does not resolve (its target
 * is elsewhere, and whether that exists is none of the annotation's business).
 */
async function resolveAllowingMissing(path: string): Promise<string | undefined> {
  const missing: string[] = [];
  let current = posix.normalize(path);
  for (;;) {
    try {
      return join(await realpath(current), ...missing);
    } catch (err) {
      const code = errorCode(err);
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err;
    }
    if (await exists(current)) return undefined; // it exists, yet cannot be resolved: a dangling link
    if (current === '/') return undefined;
    missing.unshift(basename(current));
    current = dirname(current);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
