// The zsh and fish completion scripts in real shells, where they are installed (skipped where not: bash's test,
// cli/completion.test.ts, always runs). fish answers `complete -C <line>`; zsh is driven in a pseudo-terminal
// (zsh/zpty) with compadd wrapped to print what the completion system adds. A kubectl-nodecare on PATH stands in
// for the program: it answers __complete with two node names and records the words it was given.

import { execFile, execFileSync } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.ts';

const has = (shell: string): boolean => {
  try {
    execFileSync('sh', ['-c', `command -v ${shell}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

async function script(shell: string): Promise<string> {
  const out: string[] = [];
  const code = await runCli(['completion', shell], {
    out: (l) => out.push(l),
    err: () => {},
    env: {},
  });
  expect(code).toBe(0);
  return `${out.join('\n')}\n`;
}

let dir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nodecare-shells-'));
  await writeFile(
    join(dir, 'kubectl-nodecare'),
    `#!/bin/sh\nprintf '%s\\n' "$@" >"${dir}/args"\nprintf 'node-a\\nnode-b\\tdescribed\\n:4\\n'\n`,
  );
  await chmod(join(dir, 'kubectl-nodecare'), 0o755);
  env = { ...process.env, PATH: `${dir}:${process.env.PATH}`, HOME: dir };
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { env, timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${file}: ${err.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

const CASES = [
  { line: 'kubectl-nodecare st', expected: ['status'] },
  { line: 'kubectl-nodecare status --out', expected: ['--output'] },
  { line: 'kubectl-nodecare status -o ', expected: ['json', 'text', 'wide', 'yaml'] },
  { line: 'kubectl-nodecare explain --context prod no', expected: ['node-a', 'node-b'] },
  { line: 'kubectl-nodecare completion ', expected: ['bash', 'fish', 'zsh'] },
];

describe.skipIf(!has('fish'))(
  `the fish script in a real fish${has('fish') ? '' : ' (NOT RUN: fish is not installed; apt-get install fish)'}`,
  () => {
    let file: string;
    beforeAll(async () => {
      file = join(dir, 'kubectl-nodecare.fish');
      await writeFile(file, await script('fish'));
    });

    it.each(CASES)('$line → $expected', async ({ line, expected }) => {
      const stdout = await run('fish', ['--no-config', '-c', `source ${file}; complete -C '${line}'`]);
      const words = stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]);
      expect(words.sort()).toEqual(expected);
    });

    it('asks kubectl-nodecare __complete with the words typed', async () => {
      await run('fish', [
        '--no-config',
        '-c',
        `source ${file}; complete -C 'kubectl-nodecare explain --context prod no'`,
      ]);
      expect((await readFile(join(dir, 'args'), 'utf8')).trim().split('\n')).toEqual([
        '__complete',
        'explain',
        '--context',
        'prod',
        'no',
      ]);
    });
  },
);

describe.skipIf(!has('zsh'))(
  `the zsh script in a real zsh (compinit, in a pseudo-terminal)${has('zsh') ? '' : ' (NOT RUN: zsh is not installed; apt-get install zsh)'}`,
  () => {
    let capture: string;
    beforeAll(async () => {
      const file = join(dir, 'kubectl-nodecare.zsh');
      await writeFile(file, await script('zsh'));
      const init = join(dir, 'init.zsh');
      // An interactive zsh without a prompt, whose compadd prints each word it adds between two NUL lines.
      await writeFile(
        init,
        [
          'PROMPT=',
          'autoload -U compinit',
          `compinit -u -d ${dir}/zcompdump`,
          "bindkey '^I' complete-word",
          "null-line() { echo -E - $'\\0' }",
          'compprefuncs=( null-line )',
          'comppostfuncs=( null-line exit )',
          'compadd() {',
          '  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd "$@"; return $?; fi',
          '  typeset -a hits',
          '  builtin compadd -A hits "$@"',
          '  local hit',
          '  for hit in $hits; do echo -E - "HIT:$IPREFIX$hit"; done',
          '}',
          `source ${file}`,
        ].join('\n'),
      );
      capture = join(dir, 'capture.zsh');
      await writeFile(
        capture,
        [
          'zmodload zsh/zpty',
          'zpty z zsh -f -i',
          `zpty -w z "source ${init}"`,
          `zpty -w z "$1"$'\\t'`,
          'integer seen=0',
          'while zpty -r z; do :; done | while IFS= read -r line; do',
          "  if [[ $line == *$'\\0\\r' ]]; then (( seen++ )) && return 0 || continue; fi",
          '  (( seen )) && echo -E - "$line"',
          'done',
        ].join('\n'),
      );
    });

    it.each(CASES)('$line → $expected', async ({ line, expected }) => {
      const stdout = await run('zsh', ['-f', capture, line]);
      const words = [
        ...new Set(
          stdout
            .split('\n')
            .filter((l) => l.startsWith('HIT:'))
            .map((l) => l.slice(4).replace(/\r$/, ''))
            .filter(Boolean),
        ),
      ];
      expect(words.filter((w) => w !== '--output=').sort()).toEqual(expected);
    });
  },
);
