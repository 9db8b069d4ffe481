import { describe, expect, it } from 'vitest';
import { capInput, MAX_ECHOED_INPUT, quoteInput } from './text.ts';

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
