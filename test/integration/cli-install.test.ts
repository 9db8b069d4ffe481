// Getting kubectl-nodecare as a user does (README, docs/install.md "The kubectl plugin"): `npm pack` of the
// repository, `npm install -g` of that tarball into a directory of its own, from a clean working directory,
// with nothing of the checkout on the PATH but the Node.js the plugin needs. Then the installed command runs
// against the real control plane, on its own and as `kubectl nodecare` through kubectl's plugin discovery; and
// on the machine's older Node.js (issue 21's acceptance) it says in one line which Node.js it needs, exit 2.

import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MINIMUM_NODE_VERSION, nodeVersionProblem } from '../../lib/node-version.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
/** The Node.js the npm scripts run on (the pinned `node` package): the one the plugin needs. */
const NODE_BIN = dirname(process.execPath);

let dir: string;
let env: NodeJS.ProcessEnv;

async function sh(file: string, args: string[], cwd: string, withEnv: NodeJS.ProcessEnv = env) {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, env: withEnv, maxBuffer: 16 << 20 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'nodecare-cli-install-'));
  // npm itself runs on the pinned Node (as `npm run` does); the installed command finds node on the PATH.
  env = { ...process.env, PATH: [join(dir, 'prefix', 'bin'), NODE_BIN, process.env.PATH].join(':') };
  const pack = await sh('npm', ['pack', '--pack-destination', dir], ROOT);
  expect(pack.code, pack.stderr).toBe(0);
  const tarball = join(dir, pack.stdout.trim().split('\n').at(-1)!);
  // From a directory that is not the checkout; dependencies from npm's cache where it has them.
  const install = await sh(
    'npm',
    [
      'install',
      '--global',
      '--prefix',
      join(dir, 'prefix'),
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      tarball,
    ],
    dir,
  );
  expect(install.code, install.stderr).toBe(0);
}, 180_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('kubectl-nodecare installed from the packed package', () => {
  it('is on the PATH of the install prefix, with the agent and the controller', async () => {
    const which = await sh(
      'sh',
      ['-c', 'for bin in kubectl-nodecare nodecare-agent nodecare-controller; do command -v "$bin"; done'],
      dir,
    );
    expect(which.stdout.trim().split('\n'), which.stderr).toEqual(
      ['kubectl-nodecare', 'nodecare-agent', 'nodecare-controller'].map((bin) =>
        join(dir, 'prefix', 'bin', bin),
      ),
    );
    const help = await sh('kubectl-nodecare', ['--help'], dir);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: kubectl nodecare <command> \[options\]/);
    for (const verb of ['status', 'explain', 'extensions', 'uninstall']) expect(help.stdout).toContain(verb);
  });

  it('answers about the real cluster, on its own and as `kubectl nodecare` (plugin discovery)', async () => {
    const kubeconfig = inject('kubeconfig');
    const own = await sh('kubectl-nodecare', ['status', `--kubeconfig=${kubeconfig}`, '-o', 'json'], dir);
    expect([0, 1], own.stderr).toContain(own.code); // 0 every node healthy, 1 not: both are answers
    const view = JSON.parse(own.stdout) as { summary: { nodes: number } };
    expect(view.summary.nodes).toBeGreaterThanOrEqual(0);
    const kubectl = join(inject('binDir'), 'kube-testenv');
    const plugin = await sh(
      kubectl,
      ['kubectl', 'nodecare', 'status', `--kubeconfig=${kubeconfig}`, '-o', 'json'],
      dir,
    );
    expect([0, 1], plugin.stderr).toContain(plugin.code);
    expect((JSON.parse(plugin.stdout) as { summary: object }).summary).toBeDefined();
    const listed = await sh(kubectl, ['kubectl', 'plugin', 'list'], dir);
    expect(listed.stdout).toContain(join(dir, 'prefix', 'bin', 'kubectl-nodecare'));
  });

  it("on an older Node.js (the machine's own) prints one line naming the version it needs and exits 2, as kubectl nodecare too", async () => {
    const candidates = ['/usr/bin/node', '/usr/local/bin/node', '/bin/node'];
    const old = candidates.find((bin) => {
      try {
        return (
          nodeVersionProblem('x', execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()) !== undefined
        );
      } catch {
        return false;
      }
    });
    if (!old) {
      const message = `no Node.js older than ${MINIMUM_NODE_VERSION} at ${candidates.join(', ')}: not run on one`;
      if (process.env.CI === 'true') throw new Error(message);
      console.warn(`[cli-install] NOT RUN: ${message}`);
      return;
    }
    const version = execFileSync(old, ['--version'], { encoding: 'utf8' }).trim();
    // The installed command and that Node.js first on the PATH; nothing of the pinned Node 24.
    const oldEnv = {
      ...process.env,
      PATH: [join(dir, 'prefix', 'bin'), dirname(old), '/usr/bin', '/bin'].join(':'),
    };
    const expected = `${nodeVersionProblem('kubectl-nodecare', version)}\n`;
    const own = await sh('kubectl-nodecare', ['status', `--kubeconfig=${inject('kubeconfig')}`], dir, oldEnv);
    expect({ code: own.code, stdout: own.stdout, stderr: own.stderr }).toEqual({
      code: 2,
      stdout: '',
      stderr: expected,
    });
    const kubectl = join(inject('binDir'), 'kube-testenv');
    const plugin = await sh(kubectl, ['kubectl', 'nodecare', 'status'], dir, oldEnv);
    expect(plugin.code, plugin.stderr).toBe(2);
    expect(plugin.stderr).toBe(expected);
  });
});
