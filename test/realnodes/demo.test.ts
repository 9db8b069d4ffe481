// `npm start -- --real-nodes --once` (demo/real-nodes.ts): the demo's GPU story on real kubelets, run as a user
// runs it, in a slot of its own beside the suite's nodes. Every phase is reached in order, and it stops
// everything it started (no mount left under its slot). Stopped while its control plane is still starting, it
// waits for that start to end and stops what it made: no process, address or directory is left for the next
// run to clean.

import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { REAL_NODE_PHASES } from '../../demo/real-nodes.ts';
import { mountsUnder } from './realnodes.ts';

const notRun = inject('realNodesNotRun');
const ROOT = join(import.meta.dirname, '..', '..');
const execFileAsync = promisify(execFile);

/** The processes whose command line mentions `text`, as `pid: command line`. */
async function processesMentioning(text: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ');
    if (cmdline.includes(text)) found.push(`${pid}: ${cmdline}`);
  }
  return found;
}

describe.skipIf(notRun !== '')(
  `npm start -- --real-nodes --once${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    it('reaches every phase of the GPU story on real kubelets, in order, and stops everything', async () => {
      const child = spawn(process.execPath, [join(ROOT, 'demo', 'main.ts'), '--real-nodes', '--once'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect(code, output).toBe(0);
      const ids = Object.keys(REAL_NODE_PHASES);
      expect(output).toContain(`Summary: ${ids.length} of ${ids.length} phases reached`);
      const at = ids.map((id) => output.indexOf(`✔ PHASE ${id}:`));
      expect(
        at.every((i) => i >= 0),
        output,
      ).toBe(true);
      expect(at).toEqual([...at].sort((a, b) => a - b));
      // The view showed the joining node held, then released, then failing, with the one state name. The TAINTS
      // column lists every taint (the kubelet's node.kubernetes.io/not-ready may still be there beside ours).
      expect(output).toMatch(/│ node-2 +Bootstrapping \(\w+\) +(\S+,)?bootstrap(,\S+)? /);
      expect(output).toMatch(
        /│ node-2 +Degraded \(ExtensionsUnhealthy\) +(\S+,)?runtime(,\S+)? .*nvidia-device-plugin ✗/,
      );
      // Released only once the view showed the extension Healthy and the node without a taint.
      const healthy = output.search(/│ node-2 +Ready +- +up +\d+s +nvidia-device-plugin ✓/);
      expect(healthy, output).toBeGreaterThanOrEqual(0);
      expect(healthy).toBeLessThan(output.indexOf('✔ PHASE released:'));
      expect(output).not.toContain('NODECLAIM');
      expect(output).toContain('Stopped.');
      const slotDir = /dir (\/\S+)\/nodes\/node-2/.exec(output)?.[1];
      expect(slotDir, 'the slot the demo used').toBeDefined();
      expect(await mountsUnder(slotDir!)).toEqual([]);
      // The install overlay went with the slot.
      const overlay = /kubectl apply -k (\/\S+) \(manifests\/ with only the image set/.exec(output)?.[1];
      expect(overlay, output).toBeDefined();
      expect(existsSync(overlay!)).toBe(false);
      process.stderr.write(
        `[realnodes] npm start -- --real-nodes --once: ${/Every phase reached in \d+ s/.exec(output)?.[0]}\n`,
      );
    }, 600_000);

    it('stopped (SIGINT) while its control plane starts: waits for the start, then leaves no process, address or directory', async () => {
      const child = spawn(process.execPath, [join(ROOT, 'demo', 'main.ts'), '--real-nodes'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
      const apiserverStarting = new Promise<void>((resolve) => {
        const onData = (d: Buffer): void => {
          output += d.toString();
          if (output.includes('[controlplane] starting kube-apiserver')) resolve();
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
      });
      await Promise.race([apiserverStarting, closed]);
      // The demo alone, not its process group: its etcd and API server do not see the signal.
      child.kill('SIGINT');
      const code = await closed;
      expect(code, output).toBe(0);
      expect(output).toContain('SIGINT: stopping the demo.');
      expect(output).toContain('Waiting for the start under way to end, to stop what it made…');
      expect(output).toContain('Stopped.');
      const planeDir = /starting etcd on \S+ \(dir (\/\S+)\)/.exec(output)?.[1];
      const slot = /\[realnodes\] slot (\d+): API server address (\S+) on lo/.exec(output);
      expect(planeDir, output).toBeDefined();
      expect(slot, output).not.toBeNull();
      expect(await processesMentioning(planeDir!)).toEqual([]);
      expect(existsSync(planeDir!)).toBe(false);
      const { stdout: lo } = await execFileAsync('ip', ['-o', 'addr', 'show', 'dev', 'lo']);
      expect(lo).not.toContain(` ${slot![2]}/`);
      expect(existsSync(join(dirname(inject('realNodesSlotDir')), `slot-${slot![1]}`))).toBe(false);
    }, 300_000);
  },
);
