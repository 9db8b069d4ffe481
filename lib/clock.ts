// Time is a dependency (docs/conventions.md 2). Code takes a Clock; only main.ts constructs the real one, and tests
// step a FakeClock forward.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` after `delayMs`; cancel() is a no-op once it ran. */
  setTimer(delayMs: number, fn: () => void): Timer;
  /** Resolves after `delayMs`, or rejects with the signal's reason when it aborts first. */
  sleep(delayMs: number, signal?: AbortSignal): Promise<void>;
}

export function sleepWith(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimer(delayMs, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The longest delay setTimeout honours: it runs anything longer (and NaN) after 1 ms. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => Date.now(),
  /**
   * Negative and NaN delays run at once; a delay beyond MAX_TIMER_DELAY_MS (a lease duration of 25 days, a
   * deadline far in the future, Infinity) is waited out in steps of at most that, so it never becomes 1 ms.
   */
  setTimer(delayMs, fn) {
    let handle: ReturnType<typeof setTimeout>;
    const arm = (remainingMs: number): void => {
      const stepMs = Math.min(remainingMs, MAX_TIMER_DELAY_MS);
      handle = setTimeout(() => (remainingMs > stepMs ? arm(remainingMs - stepMs) : fn()), stepMs);
    };
    arm(delayMs > 0 ? delayMs : 0);
    return { cancel: () => clearTimeout(handle) };
  },
  sleep(delayMs, signal) {
    return sleepWith(systemClock, delayMs, signal);
  },
};
