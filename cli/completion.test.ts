// Shell completion: the scripts of `completion bash|zsh|fish` name every verb and every flag of every option
// table (read from the tables here, so a flag added without completion fails), `__complete` answers as cobra's
// does (partial verbs, flags, -o values, node names from a real loopback API server, silence on failure), the
// bash script registers and completes in a real bash, and kubectl_complete-nodecare is `__complete`.

import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeApiServer, tokenKubeconfig } from '../lib/kube/testing.ts';
import { runCli, usage, VERBS } from './cli.ts';
import { complete, completionSpec, Directive } from './completion.ts';
import { SHELLS } from './completion-scripts.ts';
import type { Verb } from './verb.ts';
import { collectOptions } from '../lib/options.ts';
import { CONNECTION_OPTIONS } from './verbs/common.ts';
import {
  COMPLETION_TIMEOUT_MS,
  completionDeadlineMs,
  completionVerbs,
  type NodeNames,
} from './verbs/completion.ts';
import { explainVerb } from './verbs/explain.ts';
import { statusVerb } from './verbs/status.ts';

const ROOT = join(import.meta.dirname, '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const SHOWN = Object.entries(VERBS as Record<string, Verb>).filter(([, verb]) => !verb.hidden);

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l), env: {} } };
}

async function script(shell: string): Promise<string> {
  const t = io();
  expect(await runCli(['completion', shell], t.io)).toBe(0);
  return t.out.join('\n');
}

/** `__complete <words>` through runCli: the candidates without descriptions, and the directive line. */
async function completeWords(...words: string[]): Promise<{ words: string[]; directive: string }> {
  const t = io();
  expect(await runCli(['__complete', ...words], t.io)).toBe(0);
  const directive = t.out.at(-1) as string;
  return { words: t.out.slice(0, -1).map((l) => l.split('\t')[0] as string), directive };
}

function run(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('kubectl nodecare completion', () => {
  it.each(SHELLS)('the %s script names every verb and every flag of its option table', async (shell) => {
    const text = await script(shell);
    for (const [name, verb] of SHOWN) {
      expect(text, name).toContain(name);
      // The part of the script about this verb: its case in bash and zsh, its lines in fish.
      const part =
        shell === 'fish'
          ? text
              .split('\n')
              .filter((l) => l.includes(`__fish_seen_subcommand_from ${name}'`))
              .join('\n')
          : shell === 'bash'
            ? (new RegExp(`^    ${name}\\) echo '([^']*)' ;;$`, 'm').exec(text)?.[1] ?? '')
            : (new RegExp(`^    ${name}\\)\\n([\\s\\S]*?)\\n      ;;$`, 'm').exec(text)?.[1] ?? '');
      for (const flag of [...Object.keys(verb.options), 'help']) {
        if (shell === 'fish') expect(part, `${name} --${flag}`).toMatch(new RegExp(` -l ${flag} `));
        else expect(part, `${name} --${flag}`).toMatch(new RegExp(`--${flag}(?![\\w-])`));
      }
    }
  });

  it.each(SHELLS)(
    'the %s script offers the -o values and completes node names through __complete',
    async (shell) => {
      const text = await script(shell);
      expect(text).toContain('text wide json yaml');
      expect(text).toContain('__complete');
    },
  );

  it('needs a shell: none or another is an error, exit 2', async () => {
    const none = io();
    expect(await runCli(['completion'], none.io)).toBe(2);
    expect(none.err.join('\n')).toContain('name a shell: kubectl nodecare completion bash|zsh|fish');
    const other = io();
    expect(await runCli(['completion', 'tcsh'], other.io)).toBe(2);
    expect(other.err.join('\n')).toContain('expected one of bash, zsh, fish');
  });

  it('__complete is hidden: not in the usage, not among the verbs completed', async () => {
    expect(usage()).not.toContain('__complete');
    expect(usage()).toContain('  completion ');
    expect((await completeWords('')).words).toEqual(SHOWN.map(([name]) => name));
  });
});

describe('__complete (cobra protocol: candidates, then :<directive>)', () => {
  it.each([
    { typed: ['st'], expected: ['status'] },
    { typed: ['e'], expected: ['explain', 'extensions'] },
    { typed: ['-'], expected: ['--help', '--version'] },
    { typed: ['nope', ''], expected: [] },
    { typed: ['status', '--out'], expected: ['--output'] },
    { typed: ['status', '-o'], expected: ['-o'] },
    { typed: ['uninstall', '--y'], expected: ['--yes'] },
    { typed: ['uninstall', '-'], expected: expect.arrayContaining(['-n', '--namespace', '-s', '--yes']) },
    { typed: ['status', '-o', ''], expected: ['text', 'wide', 'json', 'yaml'] },
    { typed: ['status', '--output', 'j'], expected: ['json'] },
    { typed: ['status', '--output=y'], expected: ['--output=yaml'] },
    { typed: ['status', '-o', 'json', ''], expected: [] },
    { typed: ['status', '--context', ''], expected: [] },
    { typed: ['status', '-l', 'a=b,c=d', '--o'], expected: ['--output'] },
    { typed: ['completion', ''], expected: ['bash', 'zsh', 'fish'] },
    { typed: ['completion', 'z'], expected: ['zsh'] },
    { typed: ['completion', 'bash', ''], expected: [] },
  ])('$typed → $expected', async ({ typed, expected }) => {
    const got = await completeWords(...typed);
    expect(got.words).toEqual(expected);
    expect(got.directive).toBe(`:${Directive.NoFileComp}`);
  });

  it('candidates carry a description after a tab (zsh and fish show it)', async () => {
    const t = io();
    await runCli(['__complete', 'status', '--outp'], t.io);
    expect(t.out).toEqual(['--output\tOutput format', ':4']);
  });

  it('a --kubeconfig value is a file: no candidates, directive 0 (the shell completes paths)', async () => {
    expect(await completeWords('status', '--kubeconfig', '')).toEqual({ words: [], directive: ':0' });
  });

  it('explain <node>: names with the prefix, not after the node is given; --node and --node= too', () => {
    const spec = completionSpec(VERBS);
    expect(complete(spec, ['explain', 'no']).nodes).toEqual({ prefix: 'no', before: '' });
    expect(complete(spec, ['explain', '--node', 'x']).nodes).toEqual({ prefix: 'x', before: '' });
    expect(complete(spec, ['explain', '--node=x']).nodes).toEqual({ prefix: 'x', before: '--node=' });
    expect(complete(spec, ['explain', '-o', 'json', '']).nodes).toEqual({ prefix: '', before: '' });
    expect(complete(spec, ['explain', 'node-a', '']).nodes).toBeUndefined();
    expect(complete(spec, ['explain', '--node=node-a', '']).nodes).toBeUndefined();
    expect(complete(spec, ['status', '']).nodes).toBeUndefined();
  });

  it('node names come from the nodeNames given, with the connection flags typed; a failure is silent', async () => {
    const seen: unknown[] = [];
    const names: NodeNames = async (values) => {
      seen.push(values.context);
      return ['node-a', 'node-b', 'other'];
    };
    const verbs = completionVerbs({ status: statusVerb, explain: explainVerb }, names);
    const t = io();
    await verbs.__complete.run({ arg: ['wexplain', 'w--context', 'wprod', 'wnode-'] }, t.io);
    expect(t.out).toEqual(['node-a', 'node-b', ':4']);
    expect(seen).toEqual(['prod']);
    const failing = completionVerbs({ explain: explainVerb }, async () => {
      throw new Error('no cluster');
    });
    const f = io();
    await failing.__complete.run({ arg: ['wexplain', 'w'] }, f.io);
    expect(f.out).toEqual([':4']);
    expect(f.err).toEqual([]);
  });
});

describe('__complete lists node names from the API server', () => {
  let api: FakeApiServer;
  let dir: string;
  let kubeconfig: string;
  beforeAll(async () => {
    api = await FakeApiServer.start();
    api.serve(
      '/api/v1/nodes',
      ['worker-1', 'worker-2', 'gpu-1'].map((name) => ({ metadata: { name } })),
    );
    dir = await mkdtemp(join(tmpdir(), 'nodecare-complete-'));
    kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, tokenKubeconfig(api.url, 't'));
  });
  afterAll(async () => {
    await api.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the cluster the typed --kubeconfig names, filtered by the prefix', async () => {
    expect(await completeWords('explain', `--kubeconfig=${kubeconfig}`, 'work')).toEqual({
      words: ['worker-1', 'worker-2'],
      directive: ':4',
    });
    expect(await completeWords('explain', '--kubeconfig', kubeconfig, '--node=g')).toEqual({
      words: ['--node=gpu-1'],
      directive: ':4',
    });
    expect(api.listRequests('/api/v1/nodes').length).toBeGreaterThanOrEqual(2);
  });

  it('an API server that refuses the connection: nothing, silently', async () => {
    const refused = join(dir, 'refused');
    await writeFile(refused, tokenKubeconfig('http://127.0.0.1:1', 't'));
    const t = io();
    await runCli(['__complete', 'explain', `--kubeconfig=${refused}`, ''], t.io);
    expect(t.out).toEqual([':4']);
    expect(t.err).toEqual([]);
  });

  // The deadline itself is the next test's; this one shows what a TAB gets when it runs out. Were the 10 s
  // default in force, the test's own timeout (8 s) would end it first.
  it(`an API server that never answers: nothing, silently, once the deadline ends the listing`, async () => {
    const silent = createNetServer(() => {}).listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const hanging = join(dir, 'hanging');
    await writeFile(
      hanging,
      tokenKubeconfig(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, 't'),
    );
    try {
      const t = io();
      await runCli(['__complete', 'explain', `--kubeconfig=${hanging}`, ''], t.io);
      expect(t.out).toEqual([':4']);
      expect(t.err).toEqual([]);
    } finally {
      silent.close();
    }
  }, 8000);

  it(`the listing's deadline: ${COMPLETION_TIMEOUT_MS / 1000}s, or the --request-timeout typed among the words`, () => {
    const deadline = (args: string[]) =>
      completionDeadlineMs(collectOptions(CONNECTION_OPTIONS, args, {}).values);
    expect(deadline([])).toBe(COMPLETION_TIMEOUT_MS);
    expect(deadline(['--request-timeout=5s'])).toBe(5000);
    expect(deadline(['--request-timeout', '750ms'])).toBe(750);
    // 0 means "no timeout" to kubectl; a TAB still must not hang.
    expect(deadline(['--request-timeout=0'])).toBe(COMPLETION_TIMEOUT_MS);
  });
});

describe('the bash script in a real bash', () => {
  let dir: string;
  let file: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'nodecare-bash-'));
    file = join(dir, 'kubectl-nodecare.bash');
    await writeFile(file, await script('bash'));
    // A kubectl-nodecare on PATH that answers __complete as the real one does, and records the words it got.
    await writeFile(
      join(dir, 'kubectl-nodecare'),
      `#!/bin/sh\nprintf '%s\\n' "$@" >"${dir}/args"\nprintf 'node-a\\nnode-b\\tdescribed\\n:4\\n'\n`,
    );
    await chmod(join(dir, 'kubectl-nodecare'), 0o755);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** What bash completes for the line (the cursor at its end), as bash's programmable completion calls it. */
  async function bashComplete(line: string, words: string[]): Promise<string[]> {
    const program = [
      `source ${file}`,
      'COMP_LINE=$1; COMP_POINT=${#COMP_LINE}; shift',
      'COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))',
      '_kubectl_nodecare',
      'printf "%s\\n" "${COMPREPLY[@]}"',
    ].join('\n');
    const env = { ...process.env, PATH: `${dir}:${process.env.PATH}` };
    const result = await run('bash', ['-c', program, 'bash', line, ...words], env);
    expect(result.stderr).toBe('');
    return result.stdout.split('\n').filter(Boolean);
  }

  it('registers itself for kubectl-nodecare (complete -p)', async () => {
    const result = await run('bash', ['-c', `source ${file} && complete -p kubectl-nodecare`]);
    expect(result.stdout.trim()).toBe('complete -F _kubectl_nodecare kubectl-nodecare');
  });

  it('completes a verb, a flag and the -o values', async () => {
    expect(await bashComplete('kubectl-nodecare st', ['kubectl-nodecare', 'st'])).toEqual(['status']);
    expect(
      await bashComplete('kubectl-nodecare status --out', ['kubectl-nodecare', 'status', '--out']),
    ).toEqual(['--output']);
    expect(
      await bashComplete('kubectl-nodecare status -o ', ['kubectl-nodecare', 'status', '-o', '']),
    ).toEqual(['text', 'wide', 'json', 'yaml']);
    // bash splits --output=j at the '=' (COMP_WORDBREAKS).
    expect(
      await bashComplete('kubectl-nodecare status --output=j', [
        'kubectl-nodecare',
        'status',
        '--output',
        '=',
        'j',
      ]),
    ).toEqual(['json']);
  });

  it('completes node names by calling kubectl-nodecare __complete with the words typed', async () => {
    const line = 'kubectl-nodecare explain --context prod ';
    expect(await bashComplete(line, ['kubectl-nodecare', 'explain', '--context', 'prod', ''])).toEqual([
      'node-a',
      'node-b',
    ]);
    expect((await readFile(join(dir, 'args'), 'utf8')).split('\n')).toEqual([
      '__complete',
      'explain',
      '--context',
      'prod',
      '',
      '',
    ]);
    // Not once the node is given.
    expect(
      await bashComplete('kubectl-nodecare explain node-a ', ['kubectl-nodecare', 'explain', 'node-a', '']),
    ).toEqual([]);
  });
});

describe('kubectl_complete-nodecare (kubectl 1.26+ runs it for `kubectl nodecare <TAB>`)', () => {
  it('is __complete: the words after nodecare in, candidates and :4 out', async () => {
    const result = await run(NODE, [join(ROOT, 'cli', 'complete-main.ts'), 'status', '-o', 'y']);
    expect(result).toMatchObject({ code: 0, stdout: 'yaml\n:4\n' });
  });
});
