import { describe, expect, it } from 'vitest';
import { parseOptions } from '../lib/options.ts';
import { runCli, VERBS } from './cli.ts';
import { EXAMPLES, helpWidth, wrapHelp } from './help.ts';
import type { Verb } from './verb.ts';

const words = (text: string): string[] => text.split(/\s+/).filter(Boolean);

function helpOf(argv: string[], columns?: number, env: Record<string, string> = {}): Promise<string> {
  const out: string[] = [];
  const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l), env, columns };
  return runCli(argv, io).then(() => out.join('\n'));
}

describe('--help examples', () => {
  const shown = Object.entries(VERBS as Record<string, Verb>).filter(([, verb]) => !verb.hidden);

  it('every command has examples, and its --help shows them', async () => {
    for (const [name] of shown) {
      expect(EXAMPLES[name]?.length, name).toBeGreaterThan(0);
      const help = await helpOf([name, '--help']);
      expect(help).toMatch(/\n\nExamples:\n {2}# /);
      for (const [what, line] of EXAMPLES[name]!) expect(help).toContain(`  # ${what}\n  ${line}`);
    }
  });

  it("every example is a command line its command's parser accepts", () => {
    for (const [name, examples] of Object.entries(EXAMPLES)) {
      const verb = (VERBS as Record<string, Verb>)[name]!;
      for (const [, line] of examples) {
        const command = /kubectl nodecare ([^)>]*)/.exec(line)?.[1]?.trim();
        expect(command, line).toBeDefined();
        const [verbName, ...args] = words(command!);
        expect(verbName, line).toBe(name);
        const argv = verb.normalizeArgs ? verb.normalizeArgs(args) : args;
        expect(() => parseOptions(verb.options, argv, {}), line).not.toThrow();
      }
    }
  });
});

describe('wrapHelp', () => {
  it('wraps to the width at spaces, keeping every word, continuations indented under the text', () => {
    const text = [
      'Commands:',
      '  status      Every node worst first (state, taints, failing extensions, age) and the conditions.',
      '  --kubeconfig <string>',
      '      Path to a kubeconfig (else the files in $KUBECONFIG, merged as kubectl merges them).',
    ].join('\n');
    const wrapped = wrapHelp(text, 50);
    expect(words(wrapped)).toEqual(words(text));
    const lines = wrapped.split('\n');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(50);
    expect(lines[1]).toBe('  status      Every node worst first (state,');
    expect(lines[2]).toBe('              taints, failing extensions, age) and');
    expect(lines.filter((l) => l.startsWith('      ') && !l.startsWith('       '))).toHaveLength(
      lines.filter((l) => /^ {6}\S/.test(l)).length,
    );
    expect(lines.at(-1)).toMatch(/^ {6}\S/);
  });

  it('leaves short lines, example command lines and a word longer than the width whole', () => {
    const long = `      ${'x'.repeat(70)} tail`;
    expect(wrapHelp('short line', 40)).toBe('short line');
    const example = '  kubectl nodecare status -l nvidia.com/gpu.present=true -o wide --selector=a';
    expect(wrapHelp(example, 40)).toBe(example);
    expect(wrapHelp(long, 40).split('\n')).toEqual([`      ${'x'.repeat(70)}`, '      tail']);
  });

  it('takes the terminal width, else $COLUMNS, else 80, and never under 40', () => {
    expect(helpWidth(120, { COLUMNS: '60' })).toBe(120);
    expect(helpWidth(undefined, { COLUMNS: '60' })).toBe(60);
    expect(helpWidth(undefined, { COLUMNS: 'wide' })).toBe(80);
    expect(helpWidth(undefined, {})).toBe(80);
    expect(helpWidth(20, {})).toBe(40);
  });

  it("the plugin's help fits the terminal it is given, for every command", async () => {
    for (const argv of [['--help'], ...Object.keys(EXAMPLES).map((name) => [name, '--help'])]) {
      for (const columns of [60, 100]) {
        const help = await helpOf(argv, columns);
        const unwrapped = await helpOf(argv, 10_000);
        expect(words(help)).toEqual(words(unwrapped));
        for (const line of help.split('\n'))
          if (!/^ {2}(kubectl|source) /.test(line) && words(line).length > 1)
            expect(line.length, `${argv.join(' ')} at ${columns}: ${line}`).toBeLessThanOrEqual(columns);
      }
      expect(await helpOf(argv, undefined, { COLUMNS: '60' })).toBe(await helpOf(argv, 60));
    }
  });
});
