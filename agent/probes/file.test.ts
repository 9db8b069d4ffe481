import { execFile } from 'node:child_process';
import { mkdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileProbe } from '../../api/probe-spec.ts';
import { fileProbe, MAX_CONTENT_BYTES } from './file.ts';
import { tempDir, testContext } from './testing.ts';

const NOW_MS = Date.UTC(2026, 0, 1);
const SECRET = 'token=0xdeadbeef';

describe('file probe', () => {
  let dir = '';
  const path = (name: string): string => join(dir, name);

  beforeAll(async () => {
    dir = await tempDir();
    const ageFile = async (name: string, content: string, ageSeconds: number): Promise<void> => {
      await writeFile(path(name), content);
      const mtime = NOW_MS / 1000 - ageSeconds;
      await utimes(path(name), mtime, mtime);
    };
    await ageFile('fresh', `state=ok ${SECRET}`, 10);
    await ageFile('stale', `state=ok ${SECRET}`, 120);
    await ageFile('late-needle', `${'a'.repeat(MAX_CONTENT_BYTES)}NEEDLE`, 0);
    await mkdir(path('a-directory'));
    await promisify(execFile)('mkfifo', [path('fifo')]);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each([
    {
      name: 'existing file → Healthy',
      fields: { path: 'fresh' },
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'existing directory → Healthy',
      fields: { path: 'a-directory' },
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'missing file → Unhealthy',
      fields: { path: 'missing' },
      outcome: 'Unhealthy',
      reason: 'FileMissing',
    },
    {
      name: 'heartbeat within maxAge → Healthy',
      fields: { path: 'fresh', maxAgeSeconds: 60 },
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'heartbeat older than maxAge → Unhealthy',
      fields: { path: 'stale', maxAgeSeconds: 60 },
      outcome: 'Unhealthy',
      reason: 'FileStale',
    },
    {
      name: 'content matches → Healthy',
      fields: { path: 'fresh', contentRegex: '^state=ok' },
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'content does not match → Unhealthy',
      fields: { path: 'fresh', contentRegex: '^state=failed' },
      outcome: 'Unhealthy',
      reason: 'ContentMismatch',
    },
    {
      name: 'match beyond the 64 KiB read cap → Unhealthy',
      fields: { path: 'late-needle', contentRegex: 'NEEDLE' },
      outcome: 'Unhealthy',
      reason: 'ContentMismatch',
    },
    {
      name: 'content regex on a FIFO → Unknown, without blocking',
      fields: { path: 'fifo', contentRegex: 'x' },
      outcome: 'Unknown',
      reason: 'ProbeError',
    },
    {
      name: 'content regex on a directory → Unknown',
      fields: { path: 'a-directory', contentRegex: 'x' },
      outcome: 'Unknown',
      reason: 'ProbeError',
    },
  ])('$name', async ({ fields, outcome, reason }) => {
    const spec: FileProbe = { kind: 'file', ...fields, path: path(fields.path) };
    const result = await fileProbe(spec, testContext({ now: () => NOW_MS }));
    expect(result).toMatchObject({ outcome, reason });
    expect(result.message).not.toContain(SECRET);
  });

  it('ages are measured against the injected clock', async () => {
    const spec: FileProbe = { kind: 'file', path: path('fresh'), maxAgeSeconds: 60 };
    const later = await fileProbe(spec, testContext({ now: () => NOW_MS + 3_600_000 }));
    expect(later).toMatchObject({ outcome: 'Unhealthy', reason: 'FileStale' });
    expect(later.message).toContain('modified 3610s ago, want at most 60s');
  });
});

// Regression, issue 7 item 1: a path from a node annotation was checked as text and symlinks were then
// followed, so a link inside an allowed directory reached any file. The agent resolves it when it probes.
describe('file probe confined to the allowed directories (annotation registrations)', () => {
  let root = '';
  let allowed = '';
  const at = (...parts: string[]): string => join(allowed, ...parts);

  beforeAll(async () => {
    root = await tempDir();
    allowed = join(root, 'allowed');
    await mkdir(join(root, 'outside'));
    await mkdir(join(allowed, 'sub'), { recursive: true });
    await writeFile(join(root, 'outside', 'secret'), SECRET);
    await writeFile(at('sub', 'beat'), 'x');
    await symlink(join(root, 'outside', 'secret'), at('to-secret'));
    await symlink(join(root, 'outside'), at('to-outside-dir'));
    await symlink(join(root, 'outside', 'gone'), at('dangling'));
    await symlink(at('sub', 'beat'), at('to-inside'));
    // The allowed directory named through a link of its own (as /var/run is a link to /run).
    await symlink(allowed, join(root, 'allowed-link'));
  });
  afterAll(() => rm(root, { recursive: true, force: true }));

  const refused = { outcome: 'Unknown', reason: 'InvalidRegistration' };
  it.each([
    { name: 'a link to a file outside → refused', file: ['to-secret'], expected: refused },
    {
      name: 'a path through a link to a directory outside → refused',
      file: ['to-outside-dir', 'secret'],
      expected: refused,
    },
    {
      name: 'a missing path under a link to outside → refused, not "missing"',
      file: ['to-outside-dir', 'nope'],
      expected: refused,
    },
    { name: 'a dangling link → refused, not "missing"', file: ['dangling'], expected: refused },
    {
      name: 'a link that stays inside → Healthy',
      file: ['to-inside'],
      expected: { outcome: 'Healthy', reason: 'ProbeSucceeded' },
    },
    {
      name: 'a missing file inside → FileMissing',
      file: ['sub', 'nope'],
      expected: { outcome: 'Unhealthy', reason: 'FileMissing' },
    },
  ])('$name', async ({ file, expected }) => {
    const spec: FileProbe = { kind: 'file', path: at(...file), confineTo: [allowed] };
    const result = await fileProbe(spec, testContext());
    expect(result).toMatchObject(expected);
    if (expected === refused) {
      expect(result.message).toBe(
        `${at(...file)} resolves outside the allowed directories (a symlink); refused`,
      );
    }
  });

  it('resolves the allowed directories too', async () => {
    const spec: FileProbe = {
      kind: 'file',
      path: at('sub', 'beat'),
      confineTo: [join(root, 'allowed-link')],
    };
    expect(await fileProbe(spec, testContext())).toMatchObject({ outcome: 'Healthy' });
  });

  it('judges the link as it is when probing, not as it was at registration', async () => {
    const spec: FileProbe = { kind: 'file', path: at('swapped'), confineTo: [allowed] };
    await symlink(at('sub', 'beat'), at('swapped'));
    expect(await fileProbe(spec, testContext())).toMatchObject({ outcome: 'Healthy' });
    await rm(at('swapped'));
    await symlink(join(root, 'outside', 'secret'), at('swapped'));
    expect(await fileProbe(spec, testContext())).toMatchObject(refused);
  });

  it('follows links for trusted registrations (no confinement)', async () => {
    const spec: FileProbe = { kind: 'file', path: at('to-secret') };
    expect(await fileProbe(spec, testContext())).toMatchObject({ outcome: 'Healthy' });
  });
});
