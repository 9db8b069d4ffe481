// `npm start -- --once`: the README's main job runs its whole story against its own local control plane (not
// the one of this test run) and observes every phase: bootstrap taint, all Ready, runtime taint, recovery,
// agent lost and back.

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PHASES } from '../../demo/scenario.ts';

const ROOT = join(import.meta.dirname, '..', '..');
/** Normally about 40 s; generous for 2 shared cores that also run this run's control plane. */
const TIMEOUT_MS = 240_000;

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
      for (const phase of Object.keys(PHASES)) expect(output).toContain(`✔ PHASE ${phase}:`);
      expect(output).toContain(
        `Summary: ${Object.keys(PHASES).length} of ${Object.keys(PHASES).length} phases reached`,
      );
      expect(output).toMatch(
        /demo-node-2 +Degraded +runtime +False ExtensionsUnhealthy .*kube-proxy ✗ ConnectionRefused/,
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
      let at = -1;
      for (const states of order) {
        const next = health.findIndex((h, i) => i > at && states.includes(h));
        expect(
          next,
          `${states.join(' or ')} after ${order
            .slice(0, order.indexOf(states))
            .map((s) => s.join(' or '))
            .join(', ')} in ${health.join(' → ')}`,
        ).toBeGreaterThan(at);
        at = next;
      }
      expect(health.indexOf('True/HealthCheckSuccessful', at + 1), health.join(' → ')).toBeGreaterThan(at);
      expect(output).toContain('Legend: ✓ Healthy');
      // A normal boot (extensions starting within their grace) shows no failure.
      const boot = output.slice(0, output.indexOf('✔ PHASE all-ready'));
      const rows = boot.split('\n').filter((line) => line.includes('│ demo-node-'));
      expect(rows.length).toBeGreaterThan(3);
      expect(rows.filter((row) => row.includes('✗'))).toEqual([]);
      expect(boot).toContain('… StartupGrace');
      // A dead agent: the controller's verdict at once, and its last results not shown as ✓.
      expect(output).toMatch(
        /demo-node-3 +Unknown +runtime +Unknown AgentNotReporting +lost .*kube-proxy \? stale/,
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
