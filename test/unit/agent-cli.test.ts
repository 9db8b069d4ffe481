// nodecare-agent's command line as users meet it: the real entry point run as a process, its exit code and
// what it prints. A bad flag or config exits 2 before any I/O with every problem in one message (docs/design.md section 10).

import { execFileSync, spawn } from 'node:child_process';
import {
  chmod,
  copyFile,
  link,
  mkdir,
  mkdtemp,
  readFile,
  realpath,
  rm,
  unlink,
  writeFile,
} from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { MAX_LEASE_DURATION_SECONDS } from '../../api/lease.ts';
import { duplicateKeys } from '../../lib/testing.ts';
import { tokenKubeconfig } from '../../lib/kube/testing.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'agent', 'main.ts');
const TIMEOUT_MS = 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of the test runner without anything that would tell the agent its node or cluster. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (['NODE_NAME', 'POD_NAME', 'KUBECONFIG', 'KUBERNETES_SERVICE_HOST'].includes(key)) continue;
    env[key] = value;
  }
  return { ...env, ...extra };
}

function runAgent(args: string[], env: Record<string, string> = cleanEnv()): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Runs the agent until `done` is true of the stdout lines seen so far (or 30 s pass), then kills it.
 * Resolves with every stdout line.
 */
function runAgentUntil(
  args: string[],
  env: Record<string, string>,
  done: (lines: string[]) => boolean,
): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    createInterface({ input: child.stdout }).on('line', (line) => {
      lines.push(line);
      if (done(lines)) child.kill('SIGKILL');
    });
    child.once('error', reject);
    child.once('close', () => {
      clearTimeout(timer);
      if (!done(lines))
        reject(new Error(`the agent stopped early; stdout: ${lines.join('\n')}; stderr: ${stderr}`));
      else resolve(lines);
    });
  });
}

/** The problems listed under "invalid configuration:" (each on a "  - " line). */
function problems(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('  - '))
    .map((line) => line.slice(4));
}

let dir: string;
/** A loopback TCP listener that counts connections: the kubeconfig below points the agent at it. */
let apiServer: Server;
let connections = 0;
let kubeconfig: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodecare-agent-cli-'));
  apiServer = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => apiServer.listen(0, '127.0.0.1', resolve));
  const { port } = apiServer.address() as AddressInfo;
  kubeconfig = join(dir, 'kubeconfig');
  await writeFile(kubeconfig, tokenKubeconfig(`https://127.0.0.1:${port}`));
});

afterAll(async () => {
  await new Promise((resolve) => apiServer?.close(resolve));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('nodecare-agent command line', { timeout: TIMEOUT_MS }, () => {
  it('lists every problem of the command line in one message and exits 2 before reading the kubeconfig', async () => {
    const missingKubeconfig = join(dir, 'does-not-exist.kubeconfig');
    const run = await runAgent([
      '--bogus',
      '--health-port',
      'abc',
      '--log-level',
      'loud',
      `--kubeconfig=${missingKubeconfig}`,
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr.match(/^nodecare-agent: invalid configuration:$/gm)).toHaveLength(1);
    expect(problems(run.stderr)).toEqual(
      expect.arrayContaining([
        "Unknown option '--bogus'",
        '--node-name is required (or set NODE_NAME)',
        '--health-port: expected an integer, got "abc"',
        '--log-level: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"',
      ]),
    );
    expect(problems(run.stderr)).toHaveLength(4);
    expect(run.stderr).toMatch(/Run nodecare-agent --help for the options\./);
    // The error is about the flags; the (missing) kubeconfig was never opened, and nothing was logged.
    expect(run.stderr).not.toMatch(/kubeconfig|ENOENT/i);
    expect(run.stdout).toBe('');
  });

  it.each([
    {
      behaviour: 'unknown flag → exit 2',
      args: ['--node-name=a', '--bogus'],
      problem: "Unknown option '--bogus'",
    },
    {
      behaviour: 'two unknown flags → both listed',
      args: ['--node-name=a', '--bogus', '--also-bogus'],
      problem: "Unknown option '--also-bogus'",
    },
    {
      behaviour: '--health-port abc → exit 2',
      args: ['--node-name=a', '--health-port', 'abc'],
      problem: '--health-port: expected an integer, got "abc"',
    },
    {
      behaviour: '--health-port out of range → exit 2',
      args: ['--node-name=a', '--health-port=70000'],
      problem: '--health-port: 70000 is out of range [0, 65535]',
    },
    {
      behaviour: '--log-level loud → exit 2',
      args: ['--node-name=a', '--log-level', 'loud'],
      problem: '--log-level: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    },
    {
      behaviour: 'missing NODE_NAME → exit 2',
      args: [],
      problem: '--node-name is required (or set NODE_NAME)',
    },
    {
      behaviour: 'invalid node name → exit 2',
      args: ['--node-name=Not_A_Node'],
      problem: '--node-name: "Not_A_Node" is not a valid node name (DNS subdomain)',
    },
    {
      behaviour: 'a flag without its value → exit 2 (not a crash)',
      args: ['--node-name=a', '--allowed-path'],
      problem: "Option '--allowed-path <value>' argument missing",
    },
    {
      behaviour: 'a positional argument → exit 2',
      args: ['--node-name=a', 'stray'],
      problem: "Unexpected argument 'stray'. This command does not take positional arguments",
    },
  ])('$behaviour', async ({ args, problem }) => {
    const run = await runAgent([`--kubeconfig=${kubeconfig}`, ...args]);
    expect(run.code).toBe(2);
    expect(problems(run.stderr)).toContain(problem);
    expect(run.stdout).toBe('');
  });

  it('opens no connection when the configuration is bad, and does once it is good', async () => {
    const before = connections;
    const bad = await runAgent(['--node-name=node-a', '--log-level=loud', `--kubeconfig=${kubeconfig}`]);
    expect(bad.code).toBe(2);
    expect(connections).toBe(before);

    // The same command with good flags reaches the API server (here: the counting listener), so the check
    // above would have seen a connection had there been one.
    const child = spawn(
      process.execPath,
      [
        MAIN,
        '--node-name=node-a',
        '--health-port=0',
        '--health-address=127.0.0.1',
        `--kubeconfig=${kubeconfig}`,
      ],
      { env: cleanEnv(), stdio: 'ignore' },
    );
    try {
      const deadline = Date.now() + 30_000;
      while (connections === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(connections).toBeGreaterThan(before);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  });

  it('prints help listing every option of AGENT_OPTIONS and exits 0', async () => {
    const run = await runAgent(['--help']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^Usage: nodecare-agent \[options\]/);
    for (const [name, spec] of Object.entries(AGENT_OPTIONS)) {
      expect(run.stdout).toContain(`--${name}`);
      expect(run.stdout).toContain(spec.description);
      if ('env' in spec) expect(run.stdout).toContain(`env ${spec.env}`);
    }
    expect(run.stdout).toContain('--help');
  });

  it('is documented: docs/agent.md has a row for every option of AGENT_OPTIONS, with its default', async () => {
    const doc = await readFile(join(import.meta.dirname, '..', '..', 'docs', 'agent.md'), 'utf8');
    for (const [name, spec] of Object.entries(AGENT_OPTIONS)) {
      const row = doc.split('\n').find((line) => line.startsWith(`| \`--${name}\``));
      expect(row, `docs/agent.md has no flag row for --${name}`).toBeDefined();
      if ('env' in spec) expect(row).toContain(`\`${spec.env}\``);
      const value = 'default' in spec ? spec.default : undefined;
      const shown = Array.isArray(value) ? value.map((v) => `\`${v}\``).join(', ') : String(value);
      if (value !== undefined && value !== '') expect(row).toContain(shown);
    }
  });

  it('accepts exec extensions from its own config file (a trusted source) and only then reads the kubeconfig', async () => {
    const config = join(dir, 'exec.yaml');
    await writeFile(
      config,
      [
        'extensions:',
        '  disk-check:',
        '    probe:',
        '      exec:',
        '        command: [/usr/local/bin/check-disk, --mount, /var/lib/containerd]',
        '    periodSeconds: 30',
        '    timeoutSeconds: 5',
        '    critical: false',
        'allowedPaths: [/opt/plugins]',
        '',
      ].join('\n'),
    );
    const missingKubeconfig = join(dir, 'missing.kubeconfig');
    const run = await runAgent([
      '--node-name=node-a',
      `--config=${config}`,
      `--kubeconfig=${missingKubeconfig}`,
    ]);
    // Past validation, the first I/O is reading the kubeconfig, which is missing: exit 1, not a config error.
    expect(run.stderr).not.toMatch(/invalid configuration/);
    expect(run.stderr).toContain(`cannot read kubeconfig ${missingKubeconfig}`);
    expect(run.code).toBe(1);
  });

  it('rejects a config file with malformed extensions, naming each field path', async () => {
    const config = join(dir, 'bad.yaml');
    await writeFile(
      config,
      [
        'extensions:',
        '  gpu-plugin:',
        '    probe:',
        '      http:',
        '        url: ftp://127.0.0.1/healthz',
        '    periodSeconds: 0',
        '  Bad_Name:',
        '    probe: { tcp: { port: 9000 } }',
        '  no-probe:',
        '    periodSeconds: 10',
        '  shell:',
        '    probe: { exec: { command: [sh, -c, "true"] } }',
        'extensionz: {}',
        '',
      ].join('\n'),
    );
    const run = await runAgent(['--node-name=node-a', `--config=${config}`, `--kubeconfig=${kubeconfig}`]);
    expect(run.code).toBe(2);
    const prefix = `--config ${config}: `;
    expect(problems(run.stderr)).toEqual(
      expect.arrayContaining([
        `${prefix}extensionz: unknown field`,
        `${prefix}extensions.gpu-plugin.probe.http.url: expected an http:// or https:// URL, got "ftp://127.0.0.1/healthz"`,
        `${prefix}extensions.gpu-plugin.periodSeconds: expected an integer from 1 to 3600, got 0`,
        `${prefix}extensions.name "Bad_Name": expected a DNS label (lowercase letters, digits and '-', at most 63 characters)`,
        `${prefix}extensions.no-probe.probe: required`,
        `${prefix}extensions.shell.probe.exec.command: command[0] must be an absolute path, got "sh"`,
      ]),
    );
    expect(problems(run.stderr)).toHaveLength(6);
  });

  it('reports problems of the flags and of the config file together', async () => {
    const config = join(dir, 'also-bad.yaml');
    await writeFile(config, 'extensions:\n  web:\n    probe: { http: {} }\n');
    const run = await runAgent(['--health-port=abc', `--config=${config}`, `--kubeconfig=${kubeconfig}`]);
    expect(run.code).toBe(2);
    expect(problems(run.stderr)).toEqual([
      '--node-name is required (or set NODE_NAME)',
      '--health-port: expected an integer, got "abc"',
      `--config ${config}: extensions.web.probe.http.url: required`,
    ]);
  });

  it("--version prints the name, the version of package.json and the checkout's revision, and exits 0", async () => {
    const pkg = JSON.parse(await readFile(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const run = await runAgent(['--version']);
    expect(run).toEqual({
      code: 0,
      stdout: `nodecare-agent ${pkg.version} (revision ${head})\n`,
      stderr: '',
    });
  });

  it('without --kubeconfig and KUBECONFIG uses ~/.kube/config when it exists', async () => {
    const home = join(dir, 'home-with-config');
    await mkdir(join(home, '.kube'), { recursive: true });
    await writeFile(join(home, '.kube', 'config'), await readFile(kubeconfig));
    const before = connections;
    await runAgentUntil(
      ['--node-name=node-a', '--health-port=0'],
      cleanEnv({ HOME: home }),
      () => connections > before,
    );
    expect(connections).toBeGreaterThan(before);
  });

  it('without any kubeconfig and outside a cluster says where it looked and exits 1', async () => {
    const home = join(dir, 'empty-home');
    await mkdir(home, { recursive: true });
    const run = await runAgent(['--node-name=node-a', '--health-port=0'], cleanEnv({ HOME: home }));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `no kubeconfig: pass --kubeconfig, set KUBECONFIG, create ${join(home, '.kube', 'config')}, or run in a cluster`,
    );
  });

  it('binds health and metrics to loopback by default, not to every interface of the node', async () => {
    const lines = await runAgentUntil(
      ['--node-name=node-a', '--health-port=0', `--kubeconfig=${kubeconfig}`],
      cleanEnv(),
      (seen) => seen.some((l) => l.includes('Started nodecare-agent')),
    );
    const started = JSON.parse(lines.find((l) => l.includes('Started nodecare-agent')) as string) as {
      address: string;
      port: number;
    };
    expect(started.address).toBe('127.0.0.1');
    // Another address of this machine, if it has one, must refuse (the agent was killed: use a fresh one).
    const other = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    if (other) {
      const child = spawn(
        process.execPath,
        [MAIN, '--node-name=node-a', '--health-port=0', `--kubeconfig=${kubeconfig}`],
        { env: cleanEnv(), stdio: ['ignore', 'pipe', 'ignore'] },
      );
      try {
        const port = await new Promise<number>((resolve) =>
          createInterface({ input: child.stdout }).on('line', (line) => {
            if (line.includes('Started nodecare-agent')) resolve((JSON.parse(line) as { port: number }).port);
          }),
        );
        const reached = await new Promise<boolean>((resolve) => {
          const socket = connect({ host: other, port });
          socket.once('connect', () => {
            socket.destroy();
            resolve(true);
          });
          socket.once('error', () => resolve(false));
        });
        expect(reached, `health port ${port} reachable on ${other}`).toBe(false);
      } finally {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await exited;
      }
    }
  });

  it('logs each failed watch retry as one JSON line, its expected error without a stack, and never repeats a key', async () => {
    // The listener behind the kubeconfig drops every connection: a transport error on every attempt.
    const lines = await runAgentUntil(
      ['--node-name=node-a', '--health-port=0', `--kubeconfig=${kubeconfig}`],
      cleanEnv(),
      (seen) => seen.filter((l) => l.includes('Watch failed')).length >= 2,
    );
    for (const line of lines) expect(duplicateKeys(line), line).toEqual([]);
    const failures = lines
      .filter((l) => l.includes('Watch failed'))
      .map((l) => JSON.parse(l) as { err: Record<string, unknown> });
    for (const { err } of failures) {
      expect(err).toMatchObject({ type: 'KubeError', code: 'Network', status: 0 });
      expect(err).not.toHaveProperty('stack');
    }
  });

  it('--log-format=text writes one readable line per entry', async () => {
    const lines = await runAgentUntil(
      ['--node-name=node-a', '--health-port=0', '--log-format=text', `--kubeconfig=${kubeconfig}`],
      cleanEnv(),
      (seen) => seen.some((l) => l.includes('Watch failed')),
    );
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}Started nodecare-agent .*address=127\.0\.0\.1/,
    );
    expect(lines.find((l) => l.includes('Watch failed'))).toMatch(
      / WARN {2}Watch failed; retrying with backoff .*err="Network: /,
    );
    expect(lines.filter((l) => /^\s+at /.test(l))).toEqual([]);
  });
});

describe('lease durations the agent may write', () => {
  it('stay within what the controller believes (api/lease.ts MAX_LEASE_DURATION_SECONDS)', () => {
    expect(AGENT_OPTIONS['heartbeat-duration-seconds'].max).toBeLessThanOrEqual(MAX_LEASE_DURATION_SECONDS);
    // Extension leases last three renewal intervals (agent/runner.ts).
    expect(AGENT_OPTIONS['extension-renew-seconds'].max * 3).toBeLessThanOrEqual(MAX_LEASE_DURATION_SECONDS);
  });
});

describe('the self re-exec with V8 flags (agent/runtime-flags.ts)', { timeout: TIMEOUT_MS }, () => {
  it('re-executes itself with the flags when it can (same pid), and warns of nothing', async () => {
    const child = spawn(
      process.execPath,
      [MAIN, '--node-name=node-a', '--health-port=0', `--kubeconfig=${kubeconfig}`],
      { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const lines: string[] = [];
    const started = await new Promise<boolean>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        lines.push(line);
        if (line.includes('Started nodecare-agent')) resolve(true);
      });
      child.once('close', () => resolve(false));
    });
    const cmdline = started ? await readFile(`/proc/${child.pid}/cmdline`, 'utf8') : '';
    child.kill('SIGKILL');
    expect(started, lines.join('\n')).toBe(true);
    expect(cmdline.split('\0')).toEqual(
      expect.arrayContaining(['--max-semi-space-size=1', '--v8-pool-size=1']),
    );
    expect(lines.filter((l) => l.includes('Running without the runtime flags'))).toEqual([]);
  });

  it('runs on without the flags and logs why when re-executing would fail (regression: SIGABRT, crash loop)', async () => {
    // The agent runs from a private link to node that is deleted before the agent re-executes: an execve of
    // the gone executable fails (ENOENT), which node answers with abort().
    const node = join(dir, 'node-to-delete');
    const real = await realpath(process.execPath);
    await link(real, node).catch(async () => {
      await copyFile(real, node);
      await chmod(node, 0o755);
    });
    // Loaded before the agent's modules: holds them back until the test has deleted the executable.
    const gate = join(dir, 'wait-for-deletion.mjs');
    await writeFile(
      gate,
      "import { existsSync } from 'node:fs';\n" +
        'const cell = new Int32Array(new SharedArrayBuffer(4));\n' +
        'while (existsSync(process.execPath)) Atomics.wait(cell, 0, 0, 10);\n',
    );
    const child = spawn(
      node,
      [
        '--import',
        pathToFileURL(gate).href,
        MAIN,
        '--node-name=node-a',
        '--health-port=0',
        `--kubeconfig=${kubeconfig}`,
      ],
      { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const lines: string[] = [];
    const closed = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    );
    await unlink(node);
    const started = await new Promise<boolean>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        lines.push(line);
        if (line.includes('Started nodecare-agent')) resolve(true);
      });
      void closed.then(() => resolve(false));
    });
    child.kill('SIGKILL');
    const exit = await closed;
    expect(started, `exit ${JSON.stringify(exit)}; stdout: ${lines.join('\n')}; stderr: ${stderr}`).toBe(
      true,
    );
    const warning = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'Running without the runtime flags: re-executing with them would fail');
    expect(warning).toMatchObject({
      level: 'warn',
      flags: ['--max-semi-space-size=1', '--v8-pool-size=1'],
      problem: expect.stringMatching(/^cannot execute .*node-to-delete.*ENOENT/),
    });
  });
});
