import { describe, expect, it } from 'vitest';
import type { OptionsError } from './options.ts';
import { parseOptions, renderHelp, type OptionTable } from './options.ts';

const table = {
  'dry-run': { type: 'boolean', description: 'Write nothing.', default: false },
  'leader-elect': { type: 'boolean', description: 'Elect a leader.', default: true },
  port: { type: 'integer', description: 'Port.', default: 80, min: 0, max: 65535 },
  level: { type: 'string', description: 'Level.', default: 'info', choices: ['info', 'debug'] },
  path: { type: 'list', description: 'Paths.', default: [] },
  node: { type: 'string', description: 'Node.', env: 'NODE_NAME', required: true },
} satisfies OptionTable;

function problems(argv: string[], env: Record<string, string> = { NODE_NAME: 'n' }): string[] {
  try {
    parseOptions(table, argv, env);
    return [];
  } catch (err) {
    return (err as OptionsError).problems;
  }
}

describe('parseOptions', () => {
  it.each([
    { argv: ['--leader-elect=false'], expected: { 'leader-elect': false, 'dry-run': false } },
    { argv: ['--no-leader-elect', '--dry-run'], expected: { 'leader-elect': false, 'dry-run': true } },
    { argv: ['--dry-run=true', '--leader-elect=true'], expected: { 'leader-elect': true, 'dry-run': true } },
    { argv: [], expected: { 'leader-elect': true, 'dry-run': false } },
  ])('booleans accept Kubernetes style $argv', ({ argv, expected }) => {
    expect(parseOptions(table, argv, { NODE_NAME: 'n' }).values).toMatchObject(expected);
  });

  it('reads the environment when a flag is absent, the flag wins when present', () => {
    expect(parseOptions(table, [], { NODE_NAME: 'from-env' }).values.node).toBe('from-env');
    expect(parseOptions(table, ['--node=flag'], { NODE_NAME: 'from-env' }).values.node).toBe('flag');
  });

  it('splits repeated and comma-separated list values', () => {
    expect(parseOptions(table, ['--path=/a,/b', '--path=/c'], { NODE_NAME: 'n' }).values.path).toEqual([
      '/a',
      '/b',
      '/c',
    ]);
  });

  it('reports every problem at once', () => {
    const found = problems(['--port=http', '--level=loud', '--bogus', '--other'], {});
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/--port: expected an integer, got "http"/),
        expect.stringMatching(/--level: expected one of info, debug, got "loud"/),
        expect.stringMatching(/bogus/),
        expect.stringMatching(/other/),
        expect.stringMatching(/--node is required \(or set NODE_NAME\)/),
      ]),
    );
  });

  it('rejects out-of-range numbers', () => {
    expect(problems(['--port=70000'])).toEqual([expect.stringMatching(/70000 is out of range \[0, 65535\]/)]);
  });

  it('--help wins over everything and renders every option', () => {
    expect(parseOptions(table, ['--help', '--bogus'], {}).help).toBe(true);
    const help = renderHelp('prog', 'Does things.', table);
    for (const name of Object.keys(table)) expect(help).toContain(`--${name}`);
  });

  it.each([
    {
      argv: ['--leader-elect=maybe'],
      problem:
        '--leader-elect: expected true or false (--leader-elect, --leader-elect=true, --leader-elect=false), got "maybe"',
    },
    {
      argv: ['--dry-run=yes'],
      problem: '--dry-run: expected true or false (--dry-run, --dry-run=true, --dry-run=false), got "yes"',
    },
  ])('a boolean with another value says which values it takes: $argv', ({ argv, problem }) => {
    expect(problems(argv)).toEqual([problem]);
  });

  it('help lists --help and --version', () => {
    const help = renderHelp('prog', 'Does things.', table);
    expect(help).toContain('--version');
    expect(help).toContain('Print the version and exit.');
  });
});
