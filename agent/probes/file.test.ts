import { execFile } from 'node:child_process';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FileProbe } from '../../api/extension.ts';
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
