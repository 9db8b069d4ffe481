import { readFileSync } from 'node:fs';
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execProbe } from './exec.ts';
import { execDir, testContext } from './testing.ts';

/** Real scripts, written to a temp dir and made executable. */
const SCRIPTS: Record<string, string> = {
  'ok.sh': 'echo "all good: 3 of 3 mounts"\necho "second line"\nexit 0',
  'silent-ok.sh': 'exit 0',
  'fail.sh': 'echo "disk /var is full"\nexit 1',
  'exit2.sh': 'echo "cannot read config"\nexit 2',
  'crash.sh': 'echo "about to crash"\nkill -SEGV $$',
  'slow.sh': 'exec sleep 30',
  'spawns-child.sh': 'sleep 300 &\necho $! > "$1"\nwait',
  'long-line.sh': 'head -c 5000 /dev/zero | tr "\\0" "x"\necho',
  'chatty.sh': 'head -c 1048576 /dev/zero | tr "\\0" "y"\nexit 0',
  'echo-arg.sh': 'echo "$1"',
};

describe('exec probe', () => {
  let dir = '';
  const script = (name: string): string => join(dir, name);

  beforeAll(async () => {
    dir = await execDir(); // not the system temp dir, which may be mounted noexec
    for (const [name, body] of Object.entries(SCRIPTS)) {
      await writeFile(script(name), `#!/bin/sh\n${body}\n`);
      await chmod(script(name), 0o755);
    }
    await writeFile(script('not-executable.sh'), '#!/bin/sh\nexit 0\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each([
    {
      name: 'exit 0 → Healthy, first line is the message',
      file: 'ok.sh',
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
      message: 'all good: 3 of 3 mounts',
    },
    {
      name: 'exit 0 without output → Healthy',
      file: 'silent-ok.sh',
      outcome: 'Healthy',
      reason: 'ProbeSucceeded',
      message: 'exit 0',
    },
    {
      name: 'exit 1 → Unhealthy',
      file: 'fail.sh',
      outcome: 'Unhealthy',
      reason: 'CommandFailed',
      message: 'exit 1: disk /var is full',
    },
    {
      name: 'exit 2 → Unknown',
      file: 'exit2.sh',
      outcome: 'Unknown',
      reason: 'CommandError',
      message: 'exit 2: cannot read config',
    },
    {
      name: 'killed by a signal → Unknown',
      file: 'crash.sh',
      outcome: 'Unknown',
      reason: 'CommandError',
      message: 'killed by SIGSEGV: about to crash',
    },
    {
      name: 'missing command → Unknown',
      file: 'missing.sh',
      outcome: 'Unknown',
      reason: 'CommandError',
      message: 'DIR/missing.sh not found',
    },
    {
      name: 'file without execute permission → Unknown',
      file: 'not-executable.sh',
      outcome: 'Unknown',
      reason: 'PermissionDenied',
      message: 'cannot execute DIR/not-executable.sh: EACCES',
    },
  ])('$name', async ({ file, outcome, reason, message }) => {
    const result = await execProbe({ kind: 'exec', command: [script(file)] }, testContext());
    expect(result).toEqual({ outcome, reason, message: message.replace('DIR', dir) });
  });

  it('deadline → Unknown, and the command is killed', async () => {
    const result = await execProbe(
      { kind: 'exec', command: [script('slow.sh')] },
      testContext({ timeoutMs: 500 }),
    );
    expect(result).toMatchObject({ outcome: 'Unknown', reason: 'CommandError' });
    expect(result.message).toMatch(/^timed out after 0.5s/);
  });

  it('deadline kills the whole process group, children included', async () => {
    const pidFile = join(dir, 'child.pid');
    const result = await execProbe(
      { kind: 'exec', command: [script('spawns-child.sh'), pidFile] },
      testContext({ timeoutMs: 1000 }),
    );
    expect(result).toMatchObject({ outcome: 'Unknown', reason: 'CommandError' });
    const childPid = Number((await readFile(pidFile, 'utf8')).trim());
    await vi.waitFor(() => expect(isAlive(childPid)).toBe(false), { timeout: 5000 });
  });

  it('message is capped to 200 characters', async () => {
    const result = await execProbe({ kind: 'exec', command: [script('long-line.sh')] }, testContext());
    expect(result.outcome).toBe('Healthy');
    expect([...result.message].length).toBeLessThanOrEqual(200);
    expect(result.message.startsWith('xxxx')).toBe(true);
  });

  it('output beyond the 4 KiB cap is drained, not fatal', async () => {
    const result = await execProbe({ kind: 'exec', command: [script('chatty.sh')] }, testContext());
    expect(result).toMatchObject({ outcome: 'Healthy', reason: 'ProbeSucceeded' });
    expect([...result.message].length).toBeLessThanOrEqual(200);
  });

  it('argv is passed without a shell', async () => {
    const argument = '$(touch /tmp/nodecare-should-not-exist) ; echo injected';
    const result = await execProbe(
      { kind: 'exec', command: [script('echo-arg.sh'), argument] },
      testContext(),
    );
    expect(result).toMatchObject({ outcome: 'Healthy', message: argument });
  });
});

/** Running, as opposed to gone or a zombie waiting for a parent (PID 1 in a container may never reap it). */
function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}
