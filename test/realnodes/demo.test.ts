// `npm start -- --real-nodes --once` (demo/real-nodes.ts): the demo's GPU story on real kubelets, run as a user
// runs it, in a slot of its own beside the suite's nodes. Every phase is reached in order, and it stops
// everything it started (no mount left under its slot).

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { REAL_NODE_PHASES } from '../../demo/real-nodes.ts';
import { mountsUnder } from './realnodes.ts';

const notRun = inject('realNodesNotRun');
const ROOT = join(import.meta.dirname, '..', '..');

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
      // The view showed the joining node held, then released, then failing, with the one state name.
      expect(output).toMatch(/│ node-2 +Bootstrapping \(\w+\) +bootstrap /);
      expect(output).toMatch(/│ node-2 +Degraded \(ExtensionsUnhealthy\) +runtime .*nvidia-device-plugin ✗/);
      expect(output).not.toContain('NODECLAIM');
      expect(output).toContain('Stopped.');
      const slotDir = /dir (\/\S+)\/nodes\/node-2/.exec(output)?.[1];
      expect(slotDir, 'the slot the demo used').toBeDefined();
      expect(await mountsUnder(slotDir!)).toEqual([]);
      process.stderr.write(
        `[realnodes] npm start -- --real-nodes --once: ${/Every phase reached in \d+ s/.exec(output)?.[0]}\n`,
      );
    }, 600_000);
  },
);
