// nodecare-controller's command line: bad flags exit 2 before any I/O with every problem listed; --help
// lists every option; the binary re-executes itself once with its V8 flags.

import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { CONTROLLER_OPTIONS } from '../../controller/config-options.ts';
import { tokenKubeconfig } from '../../lib/kube/testing.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'controller', 'main.ts');

function run(args: string[]) {
  const result = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { PATH: process.env.PATH ?? '' },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('nodecare-controller command line', () => {
  it('lists every problem at once and exits 2 before reading any kubeconfig', () => {
    const { code, stderr } = run([
      '--kubeconfig=/nonexistent/kubeconfig',
      '--workers=zero',
      '--max-unhealthy-fraction=2',
      '--log-level=loud',
      '--bogus',
    ]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/--workers: expected an integer, got "zero"/);
    expect(stderr).toMatch(/--max-unhealthy-fraction: 2 is out of range \[0, 1\]/);
    expect(stderr).toMatch(
      /--log-level: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"/,
    );
    expect(stderr).toMatch(/bogus/);
    expect(stderr).not.toMatch(/nonexistent/);
  });

  it.each([
    {
      behaviour: 'leader election timing that cannot work',
      args: ['--leader-election-lease-duration-seconds=5', '--leader-election-renew-deadline-seconds=10'],
      message: /lease duration \(5\) > renew deadline \(10\)/,
    },
    {
      behaviour: 'the same key for both taints',
      args: ['--bootstrap-taint-key=a/b', '--runtime-taint-key=a/b'],
      message: /must differ/,
    },
    {
      behaviour: 'an invalid taint key',
      args: ['--runtime-taint-key=not a key'],
      message: /not a valid taint key/,
    },
    {
      behaviour: 'a roll-up threshold without a condition type',
      args: ['--rollup-threshold=300'],
      message: /--rollup-threshold: "300" is not <ConditionType>=<seconds> with a PascalCase condition type/,
    },
    {
      behaviour: 'a roll-up threshold for a type that is not PascalCase',
      args: ['--rollup-threshold=everyNodeReady=60'],
      message: /"everyNodeReady=60" is not <ConditionType>=<seconds>/,
    },
    {
      behaviour: 'a roll-up threshold that is not a number of seconds',
      args: ['--rollup-threshold=EveryNodeReady=5m'],
      message: /--rollup-threshold: "EveryNodeReady=5m": seconds must be a number from 0 to 86400/,
    },
    {
      behaviour: 'a node selector that is not a label selector',
      args: ['--node-selector=kubernetes.io/os in linux'],
      message: /--node-selector: "kubernetes.io\/os in linux" is not a requirement/,
    },
    {
      behaviour: 'a node selector with an invalid label key',
      args: ['--node-selector=-bad-=x'],
      message: /--node-selector: "-bad-" is not a label key/,
    },
    {
      behaviour: 'an eviction policy the evictor would refuse (one validation, regression: never called)',
      args: ['--unhealthy-zone-threshold=0'],
      message:
        /eviction \(--evict-after-seconds, --eviction-rate, --unhealthy-zone-threshold\): unhealthyZoneThreshold must be in \(0, 1\] \(got 0\)/,
    },
    {
      behaviour: 'a Gardener Cluster name that is not an object name',
      args: ['--gardener-cluster=Shoot Dev'],
      message: /--gardener-cluster: "Shoot Dev" is not a valid object name/,
    },
  ])('rejects $behaviour', ({ args, message }) => {
    const { code, stderr } = run(args);
    expect(code).toBe(2);
    expect(stderr).toMatch(message);
  });

  it('is documented: docs/controller.md has a row for every option of CONTROLLER_OPTIONS, with its default', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'controller.md'), 'utf8');
    const rows = doc.split('\n').filter((line) => line.startsWith('| `--'));
    for (const [name, spec] of Object.entries(CONTROLLER_OPTIONS)) {
      const row = rows.find((line) => line.startsWith(`| \`--${name}\` `));
      expect(row, `docs/controller.md has no flag row for --${name}`).toBeDefined();
      const value: unknown = 'default' in spec ? spec.default : undefined;
      if (value !== undefined && value !== '' && !(Array.isArray(value) && value.length === 0))
        expect(row, `--${name}'s default`).toContain(String(value));
    }
    // …and no row for a flag the controller does not have.
    for (const row of rows)
      expect(Object.keys(CONTROLLER_OPTIONS)).toContain(/^\| `--([a-z-]+)`/.exec(row)?.[1]);
  });

  it('--help lists every option and exits 0', () => {
    const { code, stdout } = run(['--help']);
    expect(code).toBe(0);
    for (const name of Object.keys(CONTROLLER_OPTIONS)) expect(stdout).toContain(`--${name}`);
  });

  it("--version prints the name, the version of package.json and the checkout's revision, and exits 0", () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(run(['--version'])).toEqual({
      code: 0,
      stdout: `nodecare-controller ${pkg.version} (revision ${execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim()})\n`,
      stderr: '',
    });
  });

  it('--leader-elect=maybe says which values the flag takes', () => {
    const { code, stderr } = run(['--leader-elect=maybe']);
    expect(code).toBe(2);
    expect(stderr).toContain(
      '--leader-elect: expected true or false (--leader-elect, --leader-elect=true, --leader-elect=false), got "maybe"',
    );
  });

  it('--help lists the shared options: --log-format, --health-address (loopback by default), --version', () => {
    const { stdout } = run(['--help']);
    expect(stdout).toMatch(/--log-format <string>\n.*one of json\|text/);
    expect(stdout).toMatch(/--health-address <string>\n.*default "127\.0\.0\.1"/);
    expect(stdout).toContain('--version');
  });
});

describe('the self re-exec with V8 flags (controller/runtime-flags.ts)', () => {
  it('re-executes itself with --max-semi-space-size=16 and --v8-pool-size=1 (same pid) and warns of nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nodecare-controller-cli-'));
    const kubeconfig = join(dir, 'kubeconfig');
    // Nothing listens on port 1: the controller starts, and retries its lists in the background.
    await writeFile(kubeconfig, tokenKubeconfig('https://127.0.0.1:1'));
    const child = spawn(
      process.execPath,
      [MAIN, `--kubeconfig=${kubeconfig}`, '--health-port=0', '--leader-elect=false'],
      { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      const lines: string[] = [];
      const started = await new Promise<boolean>((resolve) => {
        createInterface({ input: child.stdout }).on('line', (line) => {
          lines.push(line);
          if (line.includes('Started nodecare-controller')) resolve(true);
        });
        child.once('close', () => resolve(false));
      });
      const cmdline = started ? await readFile(`/proc/${child.pid}/cmdline`, 'utf8') : '';
      expect(started, lines.join('\n')).toBe(true);
      expect(cmdline.split('\0')).toEqual(
        expect.arrayContaining(['--max-semi-space-size=16', '--v8-pool-size=1']),
      );
      expect(lines.filter((l) => l.includes('Running without the runtime flags'))).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
