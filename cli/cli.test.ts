import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildLease } from '../api/lease.ts';
import { FakeApiServer, tokenKubeconfig } from '../lib/kube/testing.ts';
import { runCli, usage, VERBS } from './cli.ts';

/** The verbs that ask a cluster (all but completion's): each takes kubectl's connection flags. */
const CLUSTER_VERBS = Object.fromEntries(
  Object.entries(VERBS).filter(([, verb]) => 'kubeconfig' in verb.options),
);

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l), env: {} } };
}

describe('kubectl-nodecare', () => {
  it('lists every verb but the hidden ones in its usage', () => {
    for (const [name, verb] of Object.entries(VERBS)) {
      if ('hidden' in verb && verb.hidden) expect(usage()).not.toContain(`  ${name} `);
      else expect(usage()).toContain(`  ${name} `);
    }
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
    expect(text).toContain('error: unknown flag: --bogus');
    expect(text).toContain('--wait-timeout-seconds');
  });

  it.each([
    {
      behaviour: "a mistyped flag → kubectl's words",
      argv: ['status', '--contxt=dev'],
      line: 'error: unknown flag: --contxt',
    },
    {
      behaviour: "an unknown short flag → kubectl's words",
      argv: ['status', '-x'],
      line: "error: unknown shorthand flag: 'x' in -x",
    },
    { behaviour: 'a flag before the command', argv: ['--x'], line: 'error: unknown flag: --x' },
  ])('$behaviour, exit 2', async ({ argv, line }) => {
    const t = io();
    expect(await runCli(argv, t.io)).toBe(2);
    expect(t.err.join('\n').split('\n')[0]).toBe(line);
    expect(t.err.join('\n')).toMatch(/^See 'kubectl nodecare( status)? --help' for usage\.$/m);
    expect(t.out).toEqual([]);
  });

  it.each(['abc', '10x', '-1s', '1s2', ''])(
    '--request-timeout=%j → exit 2 naming the flag and the forms it takes, before any I/O',
    async (value) => {
      for (const verb of Object.keys(CLUSTER_VERBS)) {
        const t = io();
        const args = [
          verb,
          ...(verb === 'explain' ? ['node-a'] : []),
          `--request-timeout=${value}`,
          '--server=https://192.0.2.1',
        ];
        expect(await runCli(args, t.io)).toBe(2);
        expect(t.err.join('\n')).toContain(
          `--request-timeout "${value}": expected a number of seconds or a duration`,
        );
        // uninstall prints the cluster once connected: it never got that far
        expect(t.out).toEqual([]);
      }
    },
  );

  it('--as-group without --as → exit 2 saying so, for every verb', async () => {
    for (const verb of Object.keys(CLUSTER_VERBS)) {
      const t = io();
      const args = [
        verb,
        ...(verb === 'explain' ? ['node-a'] : []),
        '--as-group=system:masters',
        '--server=https://192.0.2.1',
      ];
      expect(await runCli(args, t.io)).toBe(2);
      expect(t.err.join('\n')).toContain('--as-group needs --as');
    }
  });

  it('every verb lists the connection flags in its --help', async () => {
    for (const verb of Object.keys(CLUSTER_VERBS)) {
      const t = io();
      expect(await runCli([verb, '--help'], t.io)).toBe(0);
      const help = t.out.join('\n');
      for (const flag of [
        'as',
        'as-group',
        'cluster',
        'context',
        'insecure-skip-tls-verify',
        'kubeconfig',
        'request-timeout',
        'server',
        'token',
        'user',
      ])
        expect(help).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
    }
  });

  it('verb --help → its options, exit 0', async () => {
    const t = io();
    expect(await runCli(['uninstall', '--help'], t.io)).toBe(0);
    expect(t.out.join('\n')).toContain('--dry-run');
  });

  it('explain --help names its <node> argument in the usage line', async () => {
    const t = io();
    expect(await runCli(['explain', '--help'], t.io)).toBe(0);
    expect(t.out.join('\n').split('\n')[0]).toBe('Usage: kubectl nodecare explain <node> [options]');
  });

  it('usage states the exit codes every verb uses', () => {
    expect(usage()).toContain('Exit codes: 0 healthy');
    expect(usage()).toContain('2 error');
    for (const verb of Object.values(CLUSTER_VERBS))
      expect(verb.summary).toMatch(/exit 0 .*, 1 .*, 2 error\.$/);
  });

  it('uninstall refused by the API server → exit 2 naming the rights it needs; with --yes, that it stopped part-way', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 403, reason: 'Forbidden', message: 'forbidden' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const dir = await mkdtemp(join(tmpdir(), 'nodecare-cli-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      await writeFile(
        kubeconfig,
        JSON.stringify({
          clusters: [{ name: 'c', cluster: { server: url } }],
          users: [{ name: 'u', user: { token: 't' } }],
          contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'x',
        }),
      );
      for (const yes of [false, true]) {
        const t = io();
        const args = ['uninstall', `--kubeconfig=${kubeconfig}`, ...(yes ? ['--yes'] : [])];
        expect(await runCli(args, t.io)).toBe(2);
        expect(t.out[0]).toBe(`cluster: ${url} (kubeconfig ${kubeconfig} context x)`);
        const err = t.err.join('\n');
        expect(err).toContain('not allowed (');
        expect(err).toContain('uninstall needs what a cluster admin has');
        expect(err.includes('stopped part-way')).toBe(yes);
      }
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an unreadable kubeconfig → exit 2 (error, as --help says) with the reason, for every verb', async () => {
    for (const verb of Object.keys(CLUSTER_VERBS)) {
      const t = io();
      const args = [verb, ...(verb === 'explain' ? ['node-a'] : []), '--kubeconfig=/nonexistent/kubeconfig'];
      expect(await runCli(args, t.io)).toBe(2);
      expect(t.err.join('\n')).toContain('cannot read kubeconfig /nonexistent/kubeconfig');
    }
  });
});

describe('kubectl-nodecare output (regression: messages from the cluster reached the terminal raw)', () => {
  const NASTY = 'owned\u001b[2J\u001b]0;title\u0007 \u009b31m red \u202egnp.exe\r\u0008';

  it('explain escapes every control character a node can write, in conditions, leases and annotations', async () => {
    const api = await FakeApiServer.start();
    const dir = await mkdtemp(join(tmpdir(), 'nodecare-cli-'));
    try {
      const node = {
        metadata: {
          name: 'node-a',
          uid: 'uid-a',
          creationTimestamp: '2026-01-01T00:00:00Z',
          annotations: {
            'extensions.nodecare.io/web': JSON.stringify({
              probe: { tcp: { port: 1 } },
              [`x${NASTY}`]: 1,
            }),
            'extensions.nodecare.io/db': 'tcp://127.0.0.1:5432',
          },
        },
        status: {
          nodeInfo: { bootID: 'boot-1' },
          conditions: [
            { type: 'ExtensionsReady', status: 'False', reason: 'ExtensionsUnhealthy', message: NASTY },
          ],
        },
      };
      api.serve('/api/v1/nodes', [node]);
      // explain reads the one node by name (cli/node-read.ts).
      api.serveDocument('/api/v1/nodes/node-a', node);
      const lease = buildLease({
        node: { name: 'node-a', uid: 'uid-a' },
        extension: 'db',
        holderIdentity: 'agent',
        leaseDurationSeconds: 40,
        renewTime: new Date(),
        bootId: 'boot-1',
        record: { state: 'Unhealthy', reason: 'ConnectionRefused', message: 'x', since: '' },
      });
      // What a hostile agent writes, past buildLease's own escaping.
      lease.metadata.annotations = {
        ...lease.metadata.annotations,
        'nodecare.io/message': NASTY,
        'nodecare.io/reason': NASTY,
      };
      api.serve('/apis/coordination.k8s.io/v1/namespaces/nodecare-leases/leases', [lease]);
      api.serve('/api/v1/namespaces/default/events', [
        {
          metadata: { name: 'e1', namespace: 'default' },
          type: 'Warning',
          reason: 'ExtensionUnhealthy',
          message: NASTY,
          involvedObject: { kind: 'Node', name: 'node-a' },
          lastTimestamp: '2026-01-01T00:00:00Z',
          count: 1,
        },
      ]);
      const kubeconfig = join(dir, 'kubeconfig');
      await writeFile(kubeconfig, tokenKubeconfig(api.url, 't'));
      for (const output of [[], ['-o', 'wide'], ['-o', 'json'], ['-o', 'yaml']]) {
        const t = io();
        const code = await runCli(['explain', 'node-a', `--kubeconfig=${kubeconfig}`, ...output], t.io);
        const text = [...t.out, ...t.err].join('\n');
        expect(code, text).toBe(1);
        expect(text).toContain('owned');
        // eslint-disable-next-line no-control-regex -- looking for control characters is the point
        expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
      }
    } finally {
      await api.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
