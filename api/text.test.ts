import { describe, expect, it } from 'vitest';
import {
  capInput,
  capUtf8,
  cutUtf8,
  escapeControls,
  escapeForTerminal,
  MAX_ECHOED_INPUT,
  quoteInput,
  utf8Length,
} from './text.ts';

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

describe('UTF-8 byte limits (issue 50 item 7: a cut by characters let non-ASCII notes over 1 KiB, and the API server refused the event)', () => {
  it.each([
    { name: 'ASCII', text: 'abc', bytes: 3 },
    { name: 'two-byte letters', text: 'Grüße', bytes: 7 },
    { name: 'three-byte CJK', text: '日本', bytes: 6 },
    { name: 'a surrogate pair (four bytes)', text: 'a😀b', bytes: 6 },
    { name: 'a lone surrogate (sent as U+FFFD)', text: '\ud800x', bytes: 4 },
  ])('utf8Length: $name', ({ text, bytes }) => {
    expect(utf8Length(text)).toBe(bytes);
    if (!text.includes('\ud800')) expect(utf8Length(text)).toBe(Buffer.byteLength(text, 'utf8'));
  });

  it.each([
    { name: 'keeps what fits', text: 'Grüße', max: 7, cut: 'Grüße' },
    { name: 'never half a two-byte letter', text: 'Grüße', max: 3, cut: 'Gr' },
    { name: 'never half a three-byte character', text: '日本語', max: 8, cut: '日本' },
    { name: 'never half a surrogate pair', text: 'a😀b', max: 4, cut: 'a' },
    { name: 'a surrogate pair whole when it fits', text: 'a😀b', max: 5, cut: 'a😀' },
    { name: 'zero bytes', text: 'abc', max: 0, cut: '' },
  ])('cutUtf8: $name', ({ text, max, cut }) => {
    expect(cutUtf8(text, max)).toBe(cut);
  });

  it('a long non-ASCII note is cut to at most 1 KiB of UTF-8 on a boundary, with the ellipsis', () => {
    for (const unit of ['ü', '日', '😀', 'a日😀']) {
      const note = unit.repeat(2000);
      const capped = capUtf8(note, 1024);
      expect(Buffer.byteLength(capped, 'utf8')).toBeLessThanOrEqual(1024);
      expect(Buffer.byteLength(capped, 'utf8')).toBeGreaterThan(1024 - 8);
      expect(capped.endsWith('…')).toBe(true);
      // Every code point whole: encoding and decoding gives the same text back.
      expect(Buffer.from(capped, 'utf8').toString('utf8')).toBe(capped);
    }
    expect(capUtf8('short', 1024)).toBe('short');
  });
});
