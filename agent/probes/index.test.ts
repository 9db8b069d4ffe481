import { spawn } from 'node:child_process';
import { chmod, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBE_KINDS, type ProbeSpec } from '../../api/index.ts';
import { PROBES, runProbe } from './index.ts';
import { execDir, testContext } from './testing.ts';
import type { ProbeResult } from './types.ts';

const never = (): Promise<never> => new Promise(() => {});
const podReady: ProbeSpec = {
  kind: 'podReady',
  namespace: 'ns',
  selector: { matchLabels: { a: 'b' } },
  min: 1,
};

describe('probe table', () => {
  it('registers exactly one probe per kind', () => {
    expect(Object.keys(PROBES).sort()).toEqual([...PROBE_KINDS].sort());
  });
});

describe('runProbe', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await execDir(); // not the system temp dir, which may be mounted noexec
    await writeFile(join(dir, 'slow.sh'), '#!/bin/sh\nexec sleep 30\n');
    await chmod(join(dir, 'slow.sh'), 0o755);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it.each<{ name: string; run: () => Promise<ProbeResult>; expected: Partial<ProbeResult> }>([
    {
      name: 'probe that answers → its result',
      run: () => runProbe(podReady, testContext({ pods: async () => [{ name: 'p', ready: true }] })),
      expected: { outcome: 'Healthy', reason: 'ProbeSucceeded' },
    },
    {
      name: 'probe that throws → Unknown/ProbeError',
      run: () =>
        runProbe(
          { kind: 'http', url: 'not a url', expectStatus: [[200, 399]], insecureSkipVerify: false },
          testContext(),
        ),
      expected: { outcome: 'Unknown', reason: 'ProbeError', message: 'probe failed: ERR_INVALID_URL' },
    },
    {
      name: 'port that rejects → Unknown/ProbeError',
      run: () =>
        runProbe(podReady, testContext({ pods: () => Promise.reject(new Error('cache not synced')) })),
      expected: { outcome: 'Unknown', reason: 'ProbeError', message: 'probe failed: cache not synced' },
    },
    {
      name: 'probe that ignores its deadline → ProbeTimeout at timeoutMs',
      run: () =>
        runProbe(
          podReady,
          testContext({ pods: never, timeoutMs: 300, signal: new AbortController().signal }),
        ),
      expected: { outcome: 'Unhealthy', reason: 'ProbeTimeout', message: 'no answer within 0.3s' },
    },
    {
      name: "caller's signal aborting first → ProbeTimeout",
      run: () =>
        runProbe(podReady, testContext({ pods: never, timeoutMs: 10_000, signal: AbortSignal.timeout(200) })),
      expected: { outcome: 'Unhealthy', reason: 'ProbeTimeout' },
    },
    {
      name: 'already aborted → ProbeTimeout',
      run: () => runProbe(podReady, testContext({ signal: AbortSignal.abort() })),
      expected: { outcome: 'Unhealthy', reason: 'ProbeTimeout' },
    },
    {
      name: 'probe that honours the deadline keeps its own answer (exec timeout → Unknown)',
      run: () =>
        runProbe(
          { kind: 'exec', command: [join(dir, 'slow.sh')] },
          testContext({ timeoutMs: 300, signal: new AbortController().signal }),
        ),
      expected: { outcome: 'Unknown', reason: 'CommandError' },
    },
  ])('$name', async ({ run, expected }) => {
    expect(await run()).toMatchObject(expected);
  });

  it('a catastrophically backtracking content regex answers at once instead of freezing the agent', async () => {
    // Run in a child process: without the fix the regex blocks its event loop (and no timeout could fire).
    const file = join(dir, 'aaaa.txt');
    await writeFile(file, `${'a'.repeat(64 * 1024 - 1)}b`);
    const script = `
      const { runProbe } = await import(${JSON.stringify(join(import.meta.dirname, 'index.ts'))});
      const spec = { kind: 'file', path: ${JSON.stringify(file)}, contentRegex: '^(a+)+$' };
      const ctx = { signal: AbortSignal.timeout(3000), timeoutMs: 3000, now: () => Date.now(), env: {} };
      process.stdout.write(JSON.stringify(await runProbe(spec, ctx)));
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) =>
      child.once('exit', (c, s) => resolve([c, s])),
    );
    clearTimeout(killer);
    expect(signal, 'the probe froze its process').toBeNull();
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ outcome: 'Unhealthy', reason: 'ContentMismatch' });
  }, 30_000);
});
