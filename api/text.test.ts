import { describe, expect, it } from 'vitest';
import { capInput, escapeControls, escapeForTerminal, MAX_ECHOED_INPUT, quoteInput } from './text.ts';

describe('capInput', () => {
  it('keeps a short value as it is', () => {
    expect(capInput('http://127.0.0.1:8080/healthz')).toBe('http://127.0.0.1:8080/healthz');
  });

  it('cuts a 256 KiB value to the cap and says how much was left out', () => {
    const huge = 'x'.repeat(256 * 1024);
    const capped = capInput(huge);
    expect(capped.length).toBeLessThan(MAX_ECHOED_INPUT + 40);
    expect(capped).toMatch(/… \(262016 more characters\)$/);
  });

  it('quotes after capping, escaping control characters', () => {
    expect(quoteInput('a\nb', 10)).toBe('"a\\nb"');
    expect(quoteInput('abcdef', 3)).toBe('"abc… (3 more characters)"');
  });
});

describe('control characters (regression: ESC, CSI and bidi overrides reached messages and terminals)', () => {
  it.each([
    { name: 'ESC (a CSI sequence)', input: 'a\u001b[2Jb', output: 'a\\u001b[2Jb' },
    { name: 'BEL, BS, CR', input: '\u0007\u0008\r', output: '\\u0007\\u0008\\u000d' },
    { name: 'newline and tab', input: 'a\nb\tc', output: 'a\\u000ab\\u0009c' },
    { name: 'DEL', input: '\u007f', output: '\\u007f' },
    { name: 'C1 CSI and OSC', input: '\u009b31m\u009d', output: '\\u009b31m\\u009d' },
    { name: 'right-to-left override', input: 'gnp\u202e.exe', output: 'gnp\\u202e.exe' },
    {
      name: 'line separator, zero width space, BOM',
      input: '\u2028\u200b\ufeff',
      output: '\\u2028\\u200b\\ufeff',
    },
    { name: 'plain text and non-ASCII letters', input: 'Grüße 日本 €', output: 'Grüße 日本 €' },
  ])('escapeControls: $name', ({ input, output }) => {
    expect(escapeControls(input)).toBe(output);
  });

  it('escapeForTerminal keeps newlines and tabs (the layout) and escapes the rest', () => {
    expect(escapeForTerminal('a\tb\n\u001b[31mc\r')).toBe('a\tb\n\\u001b[31mc\\u000d');
  });

  it('capInput escapes, also an ESC right at the cut', () => {
    const value = `${'x'.repeat(MAX_ECHOED_INPUT - 1)}\u001b[2J`;
    const capped = capInput(value);
    expect(capped).not.toContain('\u001b');
    expect(capped.startsWith(`${'x'.repeat(MAX_ECHOED_INPUT - 1)}\\u001b`)).toBe(true);
  });

  it('quoteInput escapes what JSON leaves raw (DEL, C1, formatting marks)', () => {
    expect(quoteInput('a\u009bb\u202ec\u007f')).toBe('"a\\u009bb\\u202ec\\u007f"');
    expect(JSON.parse(quoteInput('a\u009bb'))).toBe('a\u009bb');
  });
});
