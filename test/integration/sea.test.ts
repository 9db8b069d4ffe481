// The single-file kubectl-nodecare (release/sea/build.ts, issue 51 item 5): built once per run (cached in
// dist/sea), run with no Node.js on PATH against the real control plane of this run; the arm64 one is an
// aarch64 ELF with the blob injected.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { buildSea, type BuildResult } from '../../release/sea/build.ts';
import type { StatusView } from '../../cli/verbs/status.ts';
import { applyBaseManifests } from './setup.ts';
import { elfMachine } from './helpers.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const kubeconfig = inject('kubeconfig');
/** A PATH with nothing on it: no node, no kubectl. */
const emptyPath = mkdtempSync(join(tmpdir(), 'nodecare-sea-path-'));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let built: Record<string, BuildResult>;
const exe = (): string => built['linux/amd64']!.path;
const withoutNode = (extra: Record<string, string> = {}): Record<string, string> => ({
  PATH: emptyPath,
  HOME: emptyPath,
  ...extra,
});

beforeAll(async () => {
  const results = await buildSea(join(ROOT, 'dist', 'sea'), ['linux/amd64', 'linux/arm64']);
  built = Object.fromEntries(results.map((r) => [r.platform, r]));
  await applyBaseManifests();
}, 600_000);

afterAll(() => rmSync(emptyPath, { recursive: true, force: true }));

describe('the single-file kubectl-nodecare', () => {
  it('runs where PATH has no node', async () => {
    // The PATH really has none (the test proves nothing if a node could be found there).
    expect(existsSync(join(emptyPath, 'node'))).toBe(false);
    expect((await run('/bin/sh', ['-c', 'command -v node || echo none'], withoutNode())).stdout.trim()).toBe(
      'none',
    );
    const help = await run(exe(), ['--help'], withoutNode());
    expect(help.stderr).toBe('');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: kubectl nodecare <command>/);
    expect(help.stdout).toContain('explain');
  });

  it('prints the version and revision the sources print', async () => {
    const fromSources = await run(process.execPath, [join(ROOT, 'cli', 'main.ts'), '--version'], {
      PATH: process.env.PATH ?? '',
    });
    const single = await run(exe(), ['--version'], withoutNode());
    expect(single.code).toBe(0);
    expect(single.stdout).toMatch(/^kubectl-nodecare \d+\.\d+\.\d+\S* \(revision [0-9a-f]{40}\)\n$/);
    expect(single.stdout).toBe(fromSources.stdout);
  });

  it('reads the real control plane: status equals the sources’ status', async () => {
    const args = ['status', '-o', 'json'];
    const single = await run(exe(), args, withoutNode({ KUBECONFIG: kubeconfig }));
    expect(single.stderr).toBe('');
    expect([0, 1]).toContain(single.code);
    const fromSources = await run(process.execPath, [join(ROOT, 'cli', 'main.ts'), ...args], {
      PATH: process.env.PATH ?? '',
      HOME: emptyPath,
      KUBECONFIG: kubeconfig,
    });
    const names = (out: string): string[] => (JSON.parse(out) as StatusView).nodes.map((n) => n.name).sort();
    expect((JSON.parse(single.stdout) as StatusView).kind).toBe('NodecareStatus');
    expect(names(single.stdout)).toEqual(names(fromSources.stdout));
  });

  it('says clearly when it cannot connect (an error, exit 2)', async () => {
    const r = await run(exe(), ['status', '--kubeconfig', join(emptyPath, 'missing')], withoutNode());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/missing/);
  });

  it('for linux/arm64 is an aarch64 ELF with the blob injected; linux/amd64 an x86-64 one', () => {
    expect(elfMachine(built['linux/arm64']!.path)).toBe(183);
    expect(elfMachine(exe())).toBe(62);
    // postject flips the fuse's last character from 0 to 1 when it injects NODE_SEA_BLOB.
    for (const r of Object.values(built)) {
      expect(readFileSync(r.path).includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1')).toBe(true);
    }
  });
});
