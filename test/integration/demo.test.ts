// `npm start -- --once`: the README's main job runs its whole story against its own local control plane (not
// the one of this test run), with Karpenter (KWOK provider) launching the node, and observes every phase in
// order: the GPU pod pending, one NodeClaim launched, the node held with the bootstrap taint while its device
// plugin starts (NodeClaim not initialized, pod still pending), the pod running once the taint is gone,
// runtime taint and recovery, agent lost and back.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PHASES } from '../../demo/scenario.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** Normally about a minute; generous for 2 shared cores that also run this run's control plane. */
const TIMEOUT_MS = 360_000;

let child: ReturnType<typeof spawn> | undefined;

afterAll(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

describe('demo (npm start -- --once)', () => {
  it(
    'runs the scenario, reaches every phase and stops everything',
    async () => {
      const started = spawn(process.execPath, [join(ROOT, 'demo', 'main.ts'), '--once'], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = started;
      let output = '';
      started.stdout.on('data', (d: Buffer) => (output += d.toString()));
      started.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => started.once('exit', resolve));

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
        /│ kwok-\S+ +gpu-\w+ Registered \(StartupTaintsExist\) +Bootstrapping +bootstrap /,
      );
      expect(output).not.toMatch(/│ kwok-\S+ +gpu-\w+ Initialized +Bootstrapping/);
      // The pod was Pending, untolerated taint, while the node was held, and Running only after the last row
      // that showed the bootstrap taint.
      const lastHeld = lines.findLastIndex((line) => /│ kwok-\S+ .* Bootstrapping +\S*bootstrap/.test(line));
      expect(lastHeld).toBeGreaterThan(0);
      expect(output).toMatch(/│ Workload: pod gpu-workload Pending — Unschedulable: .*untolerated taint/);
      const running = lines.findIndex((line) =>
        line.includes('│ Workload: pod gpu-workload Running on kwok-'),
      );
      expect(running).toBeGreaterThan(lastHeld);
      expect(output).toMatch(
        /│ kwok-\S+ +gpu-\w+ Initialized +Degraded +runtime +False ExtensionsUnhealthy .*kube-proxy ✗ ConnectionRefused/,
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
      expect(output).toContain('Legend: ✓ Healthy');
      // A normal boot (extensions starting within their grace) shows no failure.
      const boot = output.slice(0, output.indexOf('✔ PHASE node-ready'));
      const bootRows = boot.split('\n').filter((line) => line.includes('│ kwok-'));
      expect(bootRows.length).toBeGreaterThan(2);
      expect(bootRows.filter((row) => row.includes('✗'))).toEqual([]);
      expect(boot).toContain('gpu-plugin … StartupGrace');
      // A dead agent: the controller's verdict at once, and its last results not shown as ✓.
      expect(output).toMatch(
        /│ kwok-\S+ +gpu-\w+ Initialized +Unknown +runtime +Unknown AgentNotReporting +lost .*kube-proxy \? stale/,
      );
      expect(output).not.toMatch(/AgentNotReporting +up /);
      // --once stops the cluster: no commands to try against it are printed.
      expect(output).not.toContain('nodecare status');
      expect(output).not.toContain('K=');
      expect(output).toContain('Stopped.');
    },
    TIMEOUT_MS,
  );
});
