// The real clock's timers (issue 20 item 4): setTimeout runs a delay over 2^31-1 ms after 1 ms, which made
// a far deadline (a lease duration of 25 days) a hot loop. vitest's fake timers reproduce that overflow.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deadlineSignal, MAX_TIMER_DELAY_MS, systemClock, timeoutSignal } from './clock.ts';
import { consistently } from '../test/integration/helpers.ts';

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

describe('timeoutSignal', () => {
  // AbortSignal.timeout(3999.9) throws a RangeError; a deadline on the monotonic clock minus performance.now()
  // is such a number, and every leader-election request threw it (the controller never led).
  beforeEach(() => {
    vi.useRealTimers();
  });

  it.each([
    { name: 'a fractional delay', delayMs: 20.4 },
    { name: '0.07 s times 1000 (70.00000000000001)', delayMs: 0.07 * 1000 },
  ])('$name gives a signal that aborts when due, never sooner', async ({ delayMs }) => {
    const started = performance.now();
    const signal = timeoutSignal(delayMs);
    expect(signal.aborted).toBe(false);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    // Not sooner than the whole milliseconds asked, within the 1 ms of libuv's timer clock: it counts from the
    // loop's cached time, which can be up to 1 ms behind performance.now() when the timer is set (a full run
    // on a loaded machine saw 69.46 ms for 70).
    expect(performance.now() - started).toBeGreaterThanOrEqual(Math.floor(delayMs) - 1);
    expect((signal.reason as Error).name).toBe('TimeoutError');
  });

  it.each([
    { name: 'a negative delay', delayMs: -5 },
    { name: 'NaN', delayMs: NaN },
  ])('$name aborts at once', async ({ delayMs }) => {
    const signal = timeoutSignal(delayMs);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    expect(signal.aborted).toBe(true);
  });

  it('a delay of days, or Infinity, does not abort soon (a timer over 2^31-1 ms fires after 1 ms)', async () => {
    const signals = [timeoutSignal(30 * DAY_MS), timeoutSignal(2 ** 32 - 1), timeoutSignal(Infinity)];
    await consistently(() => expect(signals.map((s) => s.aborted)).toEqual([false, false, false]), 50, {
      intervalMs: 5,
      what: 'no signal aborted',
    });
  });

  it('a delay beyond what AbortSignal.timeout takes waits the maximum, without throwing', () => {
    expect(() => timeoutSignal(Infinity)).not.toThrow();
    expect(timeoutSignal(2 ** 40).aborted).toBe(false);
  });
});

describe('deadlineSignal', () => {
  beforeEach(() => {
    vi.useRealTimers();
  });

  it('aborts with a TimeoutError when due', async () => {
    const { signal } = deadlineSignal(20.4);
    expect(signal.aborted).toBe(false);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    expect((signal.reason as Error).name).toBe('TimeoutError');
  });

  it("aborts with the caller's reason when the caller's signal aborts first, or had already", () => {
    const caller = new AbortController();
    const { signal } = deadlineSignal(60_000, caller.signal);
    const reason = new Error('stopping');
    caller.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(deadlineSignal(60_000, caller.signal).signal.reason).toBe(reason);
  });

  it('done() retires it: the deadline passes and the caller aborts, and it stays unaborted', async () => {
    const caller = new AbortController();
    const deadline = deadlineSignal(10, caller.signal);
    deadline.done();
    caller.abort(new Error('later'));
    await consistently(() => expect(deadline.signal.aborted).toBe(false), 50, {
      intervalMs: 5,
      what: 'the retired signal stayed unaborted',
    });
  });

  it('NaN and negative delays abort at once; Infinity does not abort soon', async () => {
    const soon = [deadlineSignal(NaN).signal, deadlineSignal(-5).signal];
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(soon.map((s) => s.aborted)).toEqual([true, true]);
    const never = deadlineSignal(Infinity);
    await consistently(() => expect(never.signal.aborted).toBe(false), 50, {
      intervalMs: 5,
      what: 'no abort',
    });
    never.done();
  });
});
