// `npm start -- --once`: the README's main job runs its whole story against its own local control plane (not
// the one of this test run), with Karpenter (KWOK provider) launching the node, and observes every phase in
// order: the GPU pod pending, one NodeClaim launched, the node held with the bootstrap taint while its device
// plugin starts (NodeClaim not initialized, pod still pending), the pod running once the taint is gone,
// runtime taint and recovery, agent lost and back. And with a Karpenter that cannot start, it fails saying so:
// there is no demo without the autoscaler.

import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PHASES } from '../../demo/scenario.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** Normally about a minute; generous for 2 shared cores that also run this run's control plane. */
const TIMEOUT_MS = 360_000;

const children = new Set<ReturnType<typeof spawn>>();
const dirs: string[] = [];

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** Runs `npm start -- --once` to its end; stdout and stderr together. */
async function runDemo(env: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const started = spawn(process.execPath, [join(ROOT, 'demo', 'main.ts'), '--once'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(started);
  let output = '';
  started.stdout.on('data', (d: Buffer) => (output += d.toString()));
  started.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => started.once('exit', resolve));
  return { code, output };
}

/**
 * A tool cache (NODECARE_CACHE) with the real control plane and KWOK, and in Karpenter's place a program that
 * exits 3 at once: Karpenter is "built" but cannot start.
 */
async function cacheWithBrokenKarpenter(): Promise<string> {
  const real =
    process.env.NODECARE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nodecare');
  const version = /^KARPENTER_VERSION=(\S+)$/m.exec(
    await readFile(join(ROOT, 'test', 'autoscalers', 'build.sh'), 'utf8'),
  )?.[1];
  if (!version) throw new Error('test/autoscalers/build.sh: no KARPENTER_VERSION');
  const cache = await mkdtemp(join(tmpdir(), 'nodecare-demo-cache-'));
  dirs.push(cache);
  await symlink(join(real, 'controlplane'), join(cache, 'controlplane'));
  await symlink(join(real, 'kwok'), join(cache, 'kwok'));
  const karpenter = join(cache, 'karpenter', version);
  await mkdir(karpenter, { recursive: true });
  await symlink(join(real, 'karpenter', version, 'crds'), join(karpenter, 'crds'));
  await writeFile(
    join(karpenter, 'karpenter'),
    '#!/bin/sh\necho "karpenter: cannot start (injected by the test)" >&2\nexit 3\n',
    { mode: 0o755 },
  );
  return cache;
}

describe('demo (npm start -- --once)', () => {
  it(
    'runs the scenario, reaches every phase and stops everything',
    async () => {
      const { code, output } = await runDemo();

      expect(code, output).toBe(0);
      // Every phase, in the order of the story.
      const at = Object.keys(PHASES).map((phase) => output.indexOf(`✔ PHASE ${phase}:`));
      expect(at.every((i) => i >= 0)).toBe(true);
      expect(at).toEqual([...at].sort((a, b) => a - b));
      expect(output).toContain(
        `Summary: ${Object.keys(PHASES).length} of ${Object.keys(PHASES).length} phases reached`,
      );
      // Karpenter launched exactly one node for the GPU pod, and the pod waited for nodecare.
      expect(output).toMatch(
        /Autoscaler: NodeClaims launched: 1 \(gpu-\w+\); workload pod seen Pending while the node was held: yes; bound to a held node: no;/,
      );
      const lines = output.split('\n');
      const rows = lines.filter((line) => /│ kwok-/.test(line));
      expect(new Set(rows.map((row) => /│ (kwok-\S+)/.exec(row)?.[1])).size).toBe(1);
      // While held, Karpenter's NodeClaim was registered but not initialized: the startup taint was on.
      expect(output).toMatch(
        /│ kwok-\S+ +gpu-\w+ Registered \(StartupTaintsExist\) +Bootstrapping \(\w+\) +bootstrap /,
      );
      expect(output).not.toMatch(/│ kwok-\S+ +gpu-\w+ Initialized +Bootstrapping/);
      // The pod was Pending, untolerated taint, while the node was held, and Running only after the last row
      // that showed the bootstrap taint.
      const lastHeld = lines.findLastIndex((line) =>
        /│ kwok-\S+ .* Bootstrapping( \(\w+\))? +\S*bootstrap/.test(line),
      );
      expect(lastHeld).toBeGreaterThan(0);
      expect(output).toMatch(/│ Workload: pod gpu-workload Pending — Unschedulable: .*untolerated taint/);
      const running = lines.findIndex((line) =>
        line.includes('│ Workload: pod gpu-workload Running on kwok-'),
      );
      expect(running).toBeGreaterThan(lastHeld);
      expect(output).toMatch(
        /│ kwok-\S+ +gpu-\w+ Initialized +Degraded \(ExtensionsUnhealthy\) +runtime +up .*kube-proxy ✗ ConnectionRefused/,
      );
      // The ClusterHealth line follows the story: Progressing while booting, True, failing, True again.
      const health = [...output.matchAll(/│ ClusterHealth: EveryNodeReady (\S+) \((\w+)\)/g)].map(
        (m) => `${m[1]}/${m[2]}`,
      );
      // Failing is Progressing/HealthCheckUnsuccessful (from True, within the threshold) — or, on a machine
      // so loaded that an agent's heartbeat lapsed first (Unknown/ConditionCheckError), False at once, as
      // Gardener's threshold machine goes from Unknown.
      const order = [
        ['Progressing/HealthCheckProgressing'],
        ['True/HealthCheckSuccessful'],
        ['Progressing/HealthCheckUnsuccessful', 'False/HealthCheckUnsuccessful'],
      ];
      let seen = -1;
      for (const states of order) {
        const next = health.findIndex((h, i) => i > seen && states.includes(h));
        expect(
          next,
          `${states.join(' or ')} after ${order
            .slice(0, order.indexOf(states))
            .map((s) => s.join(' or '))
            .join(', ')} in ${health.join(' → ')}`,
        ).toBeGreaterThan(seen);
        seen = next;
      }
      expect(health.indexOf('True/HealthCheckSuccessful', seen + 1), health.join(' → ')).toBeGreaterThan(
        seen,
      );
      expect(output).toContain('Legend: STATE is');
      expect(output).toContain('✓ Healthy  ✗ Unhealthy');
      // A normal boot (extensions starting within their grace) shows no failure.
      const boot = output.slice(0, output.indexOf('✔ PHASE node-ready'));
      const bootRows = boot.split('\n').filter((line) => line.includes('│ kwok-'));
      expect(bootRows.length).toBeGreaterThan(2);
      expect(bootRows.filter((row) => row.includes('✗'))).toEqual([]);
      expect(boot).toContain('gpu-plugin … StartupGrace');
      // A dead agent: the controller's verdict at once, and its last results not shown as ✓.
      expect(output).toMatch(
        /│ kwok-\S+ +gpu-\w+ Initialized +Degraded \(AgentNotReporting\) +runtime +lost .*kube-proxy \? stale/,
      );
      expect(output).not.toMatch(/\(AgentNotReporting\) +\S+ +up /);
      // One name for the state (issue 21 item 3): no fifth state the controller does not have.
      expect(output).not.toMatch(/│ kwok-\S+ +\S+( \S+)? +(Unknown|Pending) /);
      // --once stops the cluster: no commands to try against it are printed.
      expect(output).not.toContain('nodecare status');
      expect(output).not.toContain('K=');
      expect(output).toContain('Stopped.');
    },
    TIMEOUT_MS,
  );

  it(
    'fails with a clear message when Karpenter cannot start, and runs no story without it',
    async () => {
      const { code, output } = await runDemo({ NODECARE_CACHE: await cacheWithBrokenKarpenter() });

      expect(code, output).toBe(1);
      expect(output).toContain(
        'demo failed: Karpenter with its KWOK provider could not be built or started, and the demo does not ' +
          'run without it: karpenter exited 3',
      );
      expect(output).toContain('karpenter: cannot start (injected by the test)');
      expect(output).not.toContain('✔ PHASE');
      expect(output).toContain('Stopped.');
    },
    TIMEOUT_MS,
  );
});
