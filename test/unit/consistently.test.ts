// consistently (test/integration/helpers.ts): a condition shown to hold over a whole window, not at one instant.

import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../lib/testing.ts';
import { consistently } from '../integration/helpers.ts';

describe('consistently on a fake clock', () => {
  it('checks at the start, at every interval and at the end of the window, and passes when each holds', async () => {
    const clock = new FakeClock();
    const start = clock.monotonic();
    const seenAt: number[] = [];
    await consistently(() => void seenAt.push(clock.monotonic() - start), 1_000, { intervalMs: 300, clock });
    expect(seenAt).toEqual([0, 300, 600, 900, 1_000]);
  });

  it('fails at the first check after the condition breaks mid-window, and checks no more', async () => {
    const clock = new FakeClock();
    const start = clock.monotonic();
    let broken = false;
    clock.setTimer(450, () => (broken = true));
    let checks = 0;
    const run = consistently(
      () => {
        checks++;
        return !broken;
      },
      5_000,
      { intervalMs: 200, what: 'the node untouched', clock },
    );
    await expect(run).rejects.toThrow(
      'the node untouched stopped holding after 600 ms of 5000: the check returned false',
    );
    // Checks at 0, 200, 400 held; the one at 600 saw it broken: the rest of the window was never waited out.
    expect(checks).toBe(4);
    expect(clock.monotonic() - start).toBe(600);
  });

  it('catches a change that came and went, which one look after a sleep misses', async () => {
    const make = (): { clock: FakeClock; written: () => boolean } => {
      const clock = new FakeClock();
      let written = false;
      clock.setTimer(300, () => (written = true));
      clock.setTimer(500, () => (written = false));
      return { clock, written: () => written };
    };
    // The old shape: sleep the window, then look once. It passes.
    const slept = make();
    await slept.clock.advance(1_000);
    expect(slept.written()).toBe(false);
    // consistently sees the write at 400 ms.
    const polled = make();
    await expect(
      consistently(() => expect(polled.written()).toBe(false), 1_000, { clock: polled.clock }),
    ).rejects.toThrow(/stopped holding after 400 ms of 1000: expected true to be false/);
  });
});

describe('consistently on the real clock', () => {
  it('passes a check that holds (returning nothing counts as holding), looking more than once', async () => {
    let checks = 0;
    await consistently(() => void checks++, 300, { intervalMs: 50 });
    // At the start and again once the window is over, however late a loaded machine wakes the timer.
    expect(checks).toBeGreaterThanOrEqual(2);
  });

  it('fails with the failed expect as its cause when the condition breaks mid-window', async () => {
    let broken = false;
    setTimeout(() => (broken = true), 100);
    let checksAfter = 0;
    const failure = await consistently(
      async () => {
        if (broken) checksAfter++;
        expect(broken, 'the taint still on').toBe(false);
      },
      10_000,
      { intervalMs: 20, what: 'the taint' },
    ).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Error);
    expect((failure as Error).message).toMatch(
      /^the taint stopped holding after \d+ ms of 10000: the taint still on/,
    );
    expect((failure as Error).cause).toBeInstanceOf(Error);
    expect(checksAfter).toBe(1);
  });

  it.each([
    [-1, {}, 'consistently: forMs must be >= 0, got -1'],
    [Number.NaN, {}, 'consistently: forMs must be >= 0, got NaN'],
    [1_000, { intervalMs: 0 }, 'consistently: intervalMs must be > 0, got 0'],
  ])('refuses a window of %s ms with %o', async (forMs, options, message) => {
    let checks = 0;
    await expect(consistently(() => void checks++, forMs, options)).rejects.toThrow(message);
    expect(checks).toBe(0);
  });
});
