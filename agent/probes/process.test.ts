import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, copyFile, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { processProbe } from './process.ts';
import { execDir, testContext } from './testing.ts';

// Copies of sleep under distinctive names: one longer than the kernel's 15-character comm, one shorter,
// and one that exits at once under a parent that never reaps it (a zombie).
const LONG_NAME = 'nodecare-test-proc';
const SHORT_NAME = 'ncare-short';
const ZOMBIE_NAME = 'ncare-zombie';

describe('process probe', () => {
  let dir = '';
  const children: ChildProcess[] = [];
  const start = (file: string, args: string[]): void => {
    children.push(spawn(file, args, { stdio: 'ignore' }));
  };

  beforeAll(async () => {
    dir = await execDir(); // not the system temp dir, which may be mounted noexec
    for (const name of [LONG_NAME, SHORT_NAME, ZOMBIE_NAME]) {
      await copyFile('/bin/sleep', join(dir, name));
      await chmod(join(dir, name), 0o755);
    }
    start(join(dir, LONG_NAME), ['30']);
    start(join(dir, LONG_NAME), ['30']);
    start(join(dir, SHORT_NAME), ['30']);
    // The shell starts the short-lived child, then becomes `sleep`, which never waits for it.
    start('/bin/sh', ['-c', `"${join(dir, ZOMBIE_NAME)}" 0 & exec /bin/sleep 30`]);
    await vi.waitFor(async () => expect(await states(LONG_NAME.slice(0, 15))).toEqual(['S', 'S']), {
      timeout: 10_000,
    });
    await vi.waitFor(async () => expect(await states(ZOMBIE_NAME)).toEqual(['Z']), { timeout: 10_000 });
  });
  afterAll(async () => {
    children.forEach((child) => child.kill('SIGKILL'));
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    {
      name: 'long name (beyond comm) running → Healthy',
      process: LONG_NAME,
      min: 1,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'two running, min 2 → Healthy',
      process: LONG_NAME,
      min: 2,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'two running, min 3 → Unhealthy',
      process: LONG_NAME,
      min: 3,
      outcome: 'Unhealthy',
      reason: 'ProcessMissing',
    },
    {
      name: 'short name running → Healthy',
      process: SHORT_NAME,
      min: 1,
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
    },
    {
      name: 'truncated comm alone does not match → Unhealthy',
      process: LONG_NAME.slice(0, 16),
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ProcessMissing',
    },
    {
      name: 'zombie does not count → Unhealthy',
      process: ZOMBIE_NAME,
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ProcessMissing',
    },
    {
      name: 'no such process → Unhealthy',
      process: 'nodecare-absent',
      min: 1,
      outcome: 'Unhealthy',
      reason: 'ProcessMissing',
    },
  ])('$name', async ({ process, min, outcome, reason }) => {
    const result = await processProbe({ kind: 'process', name: process, min }, testContext());
    expect(result).toMatchObject({ outcome, reason });
  });

  it('says how many it found', async () => {
    const result = await processProbe({ kind: 'process', name: LONG_NAME, min: 3 }, testContext());
    expect(result.message).toBe(`2 processes named ${LONG_NAME}, want at least 3`);
  });
});

/** The states (R, S, Z, …) of processes whose comm is `comm`, read from /proc. */
async function states(comm: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry))) {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (name === comm) found.push(stat.charAt(stat.lastIndexOf(')') + 2));
    } catch {
      // The process exited while we looked.
    }
  }
  return found.sort();
}
