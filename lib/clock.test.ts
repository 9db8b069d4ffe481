// The real clock's timers (issue 20 item 4): setTimeout runs a delay over 2^31-1 ms after 1 ms, which made
// a far deadline (a lease duration of 25 days) a hot loop. vitest's fake timers reproduce that overflow.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_DELAY_MS, systemClock } from './clock.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('systemClock.setTimer', () => {
  it.each([
    { name: 'just over 2^31-1 ms', delayMs: MAX_TIMER_DELAY_MS + 1 },
    { name: 'a 25-day lease duration', delayMs: 2_147_484 * 1000 },
    { name: 'ten times the maximum', delayMs: MAX_TIMER_DELAY_MS * 10 },
  ])('$name fires when due, not after 1 ms', ({ delayMs }) => {
    const fn = vi.fn();
    systemClock.setTimer(delayMs, fn);
    vi.advanceTimersByTime(1000);
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(delayMs - 1001);
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(MAX_TIMER_DELAY_MS * 2);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('Infinity never fires', () => {
    const fn = vi.fn();
    systemClock.setTimer(Infinity, fn);
    vi.advanceTimersByTime(100 * 365 * DAY_MS);
    expect(fn).not.toHaveBeenCalled();
  });

  it.each([
    { name: 'negative', delayMs: -5 },
    { name: 'NaN', delayMs: NaN },
    { name: 'zero', delayMs: 0 },
  ])('$name runs at once', ({ delayMs }) => {
    const fn = vi.fn();
    systemClock.setTimer(delayMs, fn);
    vi.advanceTimersByTime(0);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('cancel works after the first step of a long delay', () => {
    const fn = vi.fn();
    const timer = systemClock.setTimer(MAX_TIMER_DELAY_MS * 3, fn);
    vi.advanceTimersByTime(MAX_TIMER_DELAY_MS + 10);
    timer.cancel();
    vi.advanceTimersByTime(MAX_TIMER_DELAY_MS * 5);
    expect(fn).not.toHaveBeenCalled();
  });

  it('sleep over 2^31-1 ms does not resolve early', async () => {
    let resolved = false;
    void systemClock.sleep(30 * DAY_MS).then(() => (resolved = true));
    await vi.advanceTimersByTimeAsync(DAY_MS);
    expect(resolved).toBe(false);
    await vi.advanceTimersByTimeAsync(29 * DAY_MS);
    expect(resolved).toBe(true);
  });
});
