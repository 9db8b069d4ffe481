import { describe, expect, it } from 'vitest';
import { runCli, usage, VERBS } from './cli.ts';

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l), env: {} } };
}

describe('kubectl-nodecare', () => {
  it('lists every verb in its usage', () => {
    for (const verb of Object.keys(VERBS)) expect(usage()).toContain(`  ${verb} `);
  });

  it('no command → usage, exit 2', async () => {
    const t = io();
    expect(await runCli([], t.io)).toBe(2);
    expect(t.out.join('\n')).toContain('Usage: kubectl nodecare <command>');
  });

  it('unknown command → says so, exit 2', async () => {
    const t = io();
    expect(await runCli(['frobnicate'], t.io)).toBe(2);
    expect(t.err.join('\n')).toContain('unknown command "frobnicate"');
  });

  it('bad option → every problem listed, exit 2, before any I/O', async () => {
    const t = io();
    expect(await runCli(['uninstall', '--bogus', '--wait-timeout-seconds=-1'], t.io)).toBe(2);
    const text = t.err.join('\n');
    expect(text).toContain("Unknown option '--bogus'");
    expect(text).toContain('--wait-timeout-seconds');
  });

  it('verb --help → its options, exit 0', async () => {
    const t = io();
    expect(await runCli(['uninstall', '--help'], t.io)).toBe(0);
    expect(t.out.join('\n')).toContain('--dry-run');
  });

  it('an unreadable kubeconfig → exit 1 with the reason', async () => {
    const t = io();
    expect(await runCli(['uninstall', '--kubeconfig=/nonexistent/kubeconfig'], t.io)).toBe(1);
    expect(t.err.join('\n')).toContain('cannot read kubeconfig /nonexistent/kubeconfig');
  });
});
