// Time is a dependency (docs/conventions.md 2). Code takes a Clock; only main.ts constructs the real one, and tests
// step a FakeClock forward.
//
// Two readings (docs/adr/0020): `now()` is wall time, for timestamps written to objects and for comparing with
// timestamps read from them; `monotonic()` never steps, and every duration the process measures itself (a
// lease's age since it was seen renewed, a deadline, a backoff, a timeout) is taken on it. Timers run on it too.
// An NTP step (`makestep`, a VM time sync) moves the first and not the second.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Wall time, milliseconds since the epoch: for timestamps written to objects, never for a duration. */
  now(): number;
  /**
   * Milliseconds on a clock that never steps (from an arbitrary origin): every duration measured by this
   * process, and every deadline, is a difference of two of these.
   */
  monotonic(): number;
  /** Runs `fn` after `delayMs` of monotonic time; cancel() is a no-op once it ran. */
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
  // performance.now() is process.hrtime (CLOCK_MONOTONIC) since the process started; setTimeout runs on the same
  // kind of clock (libuv's loop time), so timers and monotonic() agree.
  monotonic: () => performance.now(),
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

/**
 * A signal that aborts after `delayMs`: AbortSignal.timeout for any duration this code computes. Node's own
 * throws a RangeError unless the delay is a whole number from 0 to 2^32-1, and durations on the monotonic
 * clock are fractional (a deadline minus performance.now()), as is a timeout of 0.3 s times 1000: every
 * request the leader elector made with its remaining deadline threw, so no controller ever led. Rounded up,
 * so the wait is never shorter than asked; negative and NaN abort at once, beyond the maximum waits the
 * maximum (49 days).
 */
export function timeoutSignal(delayMs: number): AbortSignal {
  return AbortSignal.timeout(wholeTimeoutMs(delayMs));
}

/** `delayMs` as timeoutSignal and deadlineSignal wait it: whole ms, rounded up, from 0 to MAX_ABORT_TIMEOUT_MS. */
function wholeTimeoutMs(delayMs: number): number {
  return Number.isNaN(delayMs) ? 0 : Math.min(Math.max(Math.ceil(delayMs), 0), MAX_ABORT_TIMEOUT_MS);
}

/** A signal for one piece of work with a deadline (deadlineSignal); `done()` once the work has ended. */
export interface Deadline {
  signal: AbortSignal;
  /** The work ended: its timer and its link to the caller's signal go, so nothing fires or stays behind. */
  done(): void;
}

/**
 * A signal that aborts after `delayMs` (rounded as timeoutSignal rounds it, with the same TimeoutError) or when
 * `parent` aborts (with its reason), whichever comes first, and that `done()` retires. For a request: an
 * AbortSignal.timeout cannot be cancelled, so each one made a timer that fired a request timeout later and
 * built a DOMException with its stack, and joining it to the caller's signal took an AbortSignal.any, whose
 * followers the runtime tracks apart; at 50,000 nodes their share of a controller's first convergence was
 * about 2 s of 38 (docs/adr/0009, addendum 2026-12-07).
 */
export function deadlineSignal(delayMs: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
    wholeTimeoutMs(delayMs),
  );
  timer.unref();
  const onAbort = (): void => controller.abort(parent?.reason);
  if (parent?.aborted) onAbort();
  else parent?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    done() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * The largest delay AbortSignal.timeout keeps: it takes up to 2^32-1 without throwing, but its timer, like
 * setTimeout, fires after 1 ms for a delay over 2^31-1 (TimeoutOverflowWarning), so a larger "wait forever"
 * deadline would abort at once.
 */
const MAX_ABORT_TIMEOUT_MS = MAX_TIMER_DELAY_MS;
