// When a replica first settles: the moment the program's steady-state V8 settings go on (controller/runtime-
// flags.ts, optimizeForSize). A leader settles once its first term's first pass has drained the work queue:
// the convergence after a start allocates fast, and under `--optimize-for-size` every small growth step of
// the old generation ends in a full collection (at 50,000 nodes × 5 that was 42% of the convergence's
// time: docs/adr/0009, addendum 2026-12-03). A replica that synced and does not lead STANDBY_SETTLE_MS
// later settles then: a standby's caches only follow the watches from there on, and its memory is what
// matters.
import type { Clock, Timer } from '../lib/clock.ts';

/** How long a replica on synced caches that does not lead waits before it counts as settled. */
export const STANDBY_SETTLE_MS = 30_000;

export interface FirstSettle {
  /** The caches are in sync (any number of calls). */
  synced(): void;
  /** A term started; `idle` resolves once its queue has nothing queued or running. */
  termStarted(idle: Promise<void>): void;
  /** The controller stops: nothing is called any more. */
  stop(): void;
}

/** Calls `settled` once, at the first settle as above (never, if it stops first). */
export function firstSettle(settled: (() => void) | undefined, clock: Clock): FirstSettle {
  let pending = settled;
  let standby: Timer | undefined;
  let termStarted = false;
  const cancel = (): void => {
    standby?.cancel();
    standby = undefined;
  };
  const fire = (): void => {
    const call = pending;
    pending = undefined;
    call?.();
  };
  return {
    synced() {
      if (!pending || termStarted || standby) return;
      standby = clock.setTimer(STANDBY_SETTLE_MS, () => {
        standby = undefined;
        if (!termStarted) fire();
      });
    },
    termStarted(idle) {
      if (!pending || termStarted) return;
      termStarted = true;
      cancel();
      void idle.then(fire);
    },
    stop() {
      cancel();
      pending = undefined;
    },
  };
}
