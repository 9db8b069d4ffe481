import { describe, expect, it, vi } from 'vitest';
import { systemClock } from '../clock.ts';
import { FakeClock } from '../testing.ts';
import { WorkQueue, type ReconcileCause, type ReconcileFn, type ReconcileResult } from './workqueue.ts';

function setup(reconcile: ReconcileFn, concurrency = 2) {
  const clock = new FakeClock();
  const errors: Array<{ key: string; retryInMs: number }> = [];
  const queue = new WorkQueue(reconcile, {
    clock,
    concurrency,
    onError: (key, _err, retryInMs) => errors.push({ key, retryInMs }),
  });
  queue.start();
  return { clock, queue, errors };
}

describe('WorkQueue', () => {
  it('collapses repeated adds of a queued key into one reconcile', async () => {
    const seen: string[] = [];
    const { queue } = setup(async (key) => void seen.push(key), 1);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const blocking = setup(async (key) => {
      seen.push(key);
      await gate;
    }, 1).queue;
    blocking.add('busy');
    blocking.add('a');
    blocking.add('a');
    blocking.add('a');
    release();
    await blocking.idle();
    expect(seen).toEqual(['busy', 'a']);
    await queue.idle();
  });

  it('never processes one key twice at once; an add during processing runs it once more afterwards', async () => {
    let concurrent = 0;
    let maxConcurrent = 0;
    let runs = 0;
    let release!: () => void;
    let gate = new Promise<void>((r) => (release = r));
    const { queue } = setup(async () => {
      runs++;
      concurrent++;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      await gate;
      concurrent--;
    }, 4);
    queue.add('node-a');
    await new Promise((r) => setImmediate(r));
    queue.add('node-a');
    queue.add('node-a');
    const first = release;
    gate = Promise.resolve();
    first();
    await queue.idle();
    expect(maxConcurrent).toBe(1);
    expect(runs).toBe(2);
  });

  it('requeues at the returned deadline, keeping the earliest one', async () => {
    const seen: number[] = [];
    const { clock, queue } = setup(async () => {
      seen.push(clock.now());
      return seen.length === 1 ? { requeueAfterMs: 5_000 } : undefined;
    });
    const start = clock.now();
    queue.add('n');
    await queue.idle();
    queue.addAfter('n', 9_000); // later than the pending 5 s deadline: ignored
    await clock.advance(4_999);
    expect(seen.length).toBe(1);
    await clock.advance(1);
    await queue.idle();
    expect(seen).toEqual([start, start + 5_000]);
  });

  it('retries a failing key with capped exponential backoff', async () => {
    let calls = 0;
    const { clock, queue, errors } = setup(async () => {
      calls++;
      if (calls <= 3) throw new Error('boom');
    });
    queue.add('n');
    await queue.idle();
    await clock.advance(50);
    await queue.idle();
    await clock.advance(100);
    await queue.idle();
    await clock.advance(200);
    await queue.idle();
    expect(errors.map((e) => e.retryInMs)).toEqual([50, 100, 200]);
    expect(calls).toBe(4);
  });
  it('arms no timer after stop: a reconcile finishing after stop() neither requeues nor backs off (regression)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let fail = false;
    const { clock, queue } = setup(async () => {
      await gate;
      if (fail) throw new Error('boom');
      return { requeueAfterMs: 5_000 };
    });
    queue.add('a');
    queue.addAfter('b', 1_000);
    const stopped = queue.stop();
    release();
    await stopped;
    queue.addAfter('c', 1_000);
    expect(clock.pending).toBe(0);

    fail = true;
    queue.start();
    queue.add('d');
    const again = queue.stop();
    await again;
    expect(clock.pending).toBe(0);
  });

  it('stuckForMs: how long the oldest reconcile in flight has run; 0 when none runs (liveness)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { clock, queue } = setup(async (key) => {
      if (key === 'hung') await gate;
    });
    expect(queue.stuckForMs()).toBe(0);
    queue.add('hung');
    await clock.advance(60_000);
    queue.add('quick');
    await clock.advance(1_000);
    expect(queue.stuckForMs()).toBe(61_000);
    release();
    await queue.idle();
    expect(queue.stuckForMs()).toBe(0);
  });
});

describe('WorkQueue sweeps: every node behind the keys added one by one (P7: a change during the first sweep of a term)', () => {
  /** A queue of concurrency 1 held by `busy` until release(), so the order of what was queued shows. */
  function held() {
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { queue } = setup(async (key) => {
      seen.push(key);
      if (key === 'busy') await gate;
    }, 1);
    queue.add('busy');
    return { queue, seen, release };
  }

  it('runs a key added during a sweep before the sweep, and the sweep in its order', async () => {
    const { queue, seen, release } = held();
    for (const key of ['s1', 's2', 's3', 's4']) queue.addSweep(key);
    queue.add('changed');
    expect(queue.depth).toBe(5);
    release();
    await queue.idle();
    expect(seen).toEqual(['busy', 'changed', 's1', 's2', 's3', 's4']);
  });

  it('add() of a swept key moves it ahead, and it runs once', async () => {
    const { queue, seen, release } = held();
    for (const key of ['s1', 's2', 's3']) queue.addSweep(key);
    queue.add('s3');
    queue.add('s3');
    queue.addSweep('s3');
    expect(queue.depth).toBe(3);
    release();
    await queue.idle();
    expect(seen).toEqual(['busy', 's3', 's1', 's2']);
  });

  it('a key swept again after it ran runs again; a sweep of a running key runs it once more afterwards', async () => {
    const { queue, seen, release } = held();
    queue.addSweep('busy'); // running: marked dirty
    queue.addSweep('s1');
    release();
    await queue.idle();
    queue.addSweep('s1');
    await queue.idle();
    expect(seen.filter((k) => k === 'busy')).toHaveLength(2);
    expect(seen.filter((k) => k === 's1')).toHaveLength(2);
  });

  it('stop() drops the sweep with the rest', async () => {
    const { queue, seen, release } = held();
    for (const key of ['s1', 's2']) queue.addSweep(key);
    queue.add('a');
    const stopped = queue.stop();
    expect(queue.depth).toBe(0);
    release();
    await stopped;
    expect(seen).toEqual(['busy']);
  });

  it("takes no key while stopped: the caches' first list, before a term starts, runs nothing after start() (issue 24)", async () => {
    const seen: string[] = [];
    const queue = new WorkQueue(async (key) => void seen.push(key), {
      clock: new FakeClock(),
      concurrency: 4,
    });
    for (const key of ['listed-1', 'listed-2']) queue.add(key);
    queue.addSweep('swept');
    expect(queue.depth).toBe(0);
    queue.start();
    queue.add('pressing');
    await queue.idle();
    expect(seen).toEqual(['pressing']);
    await queue.stop();
    queue.add('after-stop');
    queue.start();
    await queue.idle();
    expect(seen).toEqual(['pressing']);
  });
});

describe('a requeue far in the future (regression: a 25-day lease reconciled its node ~900 times a second)', () => {
  it('the work queue on the real clock reconciles the key once, not in a loop', async () => {
    // vitest's fake timers run a delay over 2^31-1 ms after 1 ms, as setTimeout does.
    vi.useFakeTimers();
    try {
      let reconciles = 0;
      const queue = new WorkQueue(
        async () => {
          reconciles++;
          return { requeueAfterMs: 2_147_484 * 1000 };
        },
        { clock: systemClock, concurrency: 1 },
      );
      queue.start();
      queue.add('node-a');
      await vi.advanceTimersByTimeAsync(1000);
      expect(reconciles).toBe(1);
      await queue.stop();
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('WorkQueue cause: a deadline alone, or a change (docs/adr/0009)', () => {
  /** Records each run's cause; the first run of each key asks for `deadlineMs`, later runs as `next` says. */
  function recording(next: (run: number) => ReconcileResult | void | Promise<never>) {
    const runs: Array<{ key: string; cause: ReconcileCause; at: number }> = [];
    const t = setup(async (key, cause) => {
      runs.push({ key, cause, at: t.clock.now() });
      return next(runs.length);
    });
    return { ...t, runs };
  }

  it('a key that runs only because its own deadline came runs as a deadline', async () => {
    const { clock, queue, runs } = recording(() => ({ requeueAfterMs: 1_000 }));
    queue.add('n');
    await queue.idle();
    await clock.advance(1_000);
    await queue.idle();
    await clock.advance(1_000);
    await queue.idle();
    expect(runs.map((r) => r.cause)).toEqual(['change', 'deadline', 'deadline']);
  });

  it('an add while the deadline is pending, or after it came but before the run, makes the run a change', async () => {
    const { clock, queue, runs } = recording(() => ({ requeueAfterMs: 1_000 }));
    queue.add('n');
    await queue.idle();
    queue.add('n'); // a change before the deadline: runs now, as a change
    await queue.idle();
    await clock.advance(1_000);
    await queue.idle();
    expect(runs.map((r) => r.cause)).toEqual(['change', 'change', 'deadline']);
  });

  it('an add while the key runs makes the next run a change, even with its deadline already due', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const causes: ReconcileCause[] = [];
    const { queue } = setup(async (_key, cause) => {
      causes.push(cause);
      if (causes.length > 1) return undefined;
      await gate;
      return { requeueAfterMs: 0 };
    }, 1);
    queue.add('n');
    await new Promise((r) => setImmediate(r));
    queue.add('n');
    release();
    await queue.idle();
    await new Promise((r) => setImmediate(r));
    await queue.idle();
    expect(causes).toEqual(['change', 'change']);
  });

  it('a deadline already due when the run returns (requeueAfterMs 0) runs the key again as a deadline', async () => {
    const { queue, runs } = recording((run) => (run === 1 ? { requeueAfterMs: 0 } : undefined));
    queue.add('n');
    await queue.idle();
    await new Promise((r) => setImmediate(r));
    await queue.idle();
    expect(runs.map((r) => r.cause)).toEqual(['change', 'deadline']);
  });

  it('addDeadline runs the key at that time as a deadline; an add meanwhile makes it a change; not while stopped', async () => {
    const { clock, queue, runs } = recording(() => undefined);
    queue.addDeadline('a', 1_000);
    queue.addDeadline('b', 1_000);
    queue.addDeadline('c', 0); // already due: queued at once
    await queue.idle();
    expect(runs).toEqual([{ key: 'c', cause: 'deadline', at: clock.now() }]);
    queue.add('b');
    await queue.idle();
    await clock.advance(1_000);
    await queue.idle();
    expect(runs.slice(1).map((r) => [r.key, r.cause])).toEqual([
      ['b', 'change'],
      ['a', 'deadline'],
      ['b', 'deadline'],
    ]);
    await queue.stop();
    queue.addDeadline('d', 0);
    await clock.advance(1_000);
    expect(runs.map((r) => r.key)).not.toContain('d');
  });

  it("a failure's retry runs as a change, also when it merges with a deadline that was pending", async () => {
    const { clock, queue, runs } = recording((run) => {
      if (run === 2) return Promise.reject(new Error('boom'));
      return { requeueAfterMs: 10_000 };
    });
    queue.add('n');
    await queue.idle();
    queue.add('n'); // fails: retried after 50 ms, before the 10 s deadline still pending
    await queue.idle();
    await clock.advance(50);
    await queue.idle();
    expect(runs.map((r) => r.cause)).toEqual(['change', 'change', 'change']);
    // A deadline later than a pending change leaves that change a change.
    queue.addAfter('m', 100);
    queue.add('m'); // runs now and asks for its 10 s deadline
    await queue.idle();
    await clock.advance(100);
    await queue.idle();
    expect(runs.slice(-2)).toEqual([
      { key: 'm', cause: 'change', at: clock.now() - 100 },
      { key: 'm', cause: 'change', at: clock.now() },
    ]);
  });
});

describe('WorkQueue re-arm: a deadline that only moves (WorkQueueOptions.rearm, docs/adr/0015)', () => {
  function rearming(rearm: (key: string) => number | undefined) {
    const clock = new FakeClock();
    const runs: Array<{ key: string; cause: ReconcileCause; at: number }> = [];
    const asked: Array<{ key: string; at: number }> = [];
    const queue = new WorkQueue(
      async (key, cause) => {
        runs.push({ key, cause, at: clock.now() });
        return { requeueAfterMs: 1_000 };
      },
      {
        clock,
        concurrency: 2,
        rearm: (key) => {
          asked.push({ key, at: clock.now() });
          return rearm(key);
        },
      },
    );
    queue.start();
    return { clock, queue, runs, asked };
  }

  it('moves the deadline without a run while the owner gives a delay, and runs the key once it gives none', async () => {
    let moves = 2;
    const { clock, queue, runs, asked } = rearming(() => (moves-- > 0 ? 500 : undefined));
    queue.add('n');
    await queue.idle();
    await clock.advance(1_000); // re-armed for 500 ms
    await clock.advance(500); // re-armed again
    expect(runs.map((r) => r.cause)).toEqual(['change']);
    await clock.advance(500); // the owner gives no delay: the key runs, as a deadline
    await queue.idle();
    expect(runs.map((r) => r.cause)).toEqual(['change', 'deadline']);
    expect(asked.map((a) => a.at - runs[0]!.at)).toEqual([1_000, 1_500, 2_000]);
  });

  it('is not asked for a key added meanwhile, nor for a retry; a throw or a delay of 0 runs the key', async () => {
    const answers: Array<number | Error> = [new Error('boom'), 0];
    const { clock, queue, runs, asked } = rearming(() => {
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer;
    });
    queue.add('n');
    await queue.idle();
    queue.addAfter('n', 200); // a change scheduled before the 1 s deadline: merged, a change
    await clock.advance(200);
    await queue.idle();
    expect(asked).toEqual([]);
    await clock.advance(1_000); // the owner throws: the key runs
    await queue.idle();
    await clock.advance(1_000); // the owner says 0: the key runs
    await queue.idle();
    expect(runs.map((r) => r.cause)).toEqual(['change', 'change', 'deadline', 'deadline']);
    expect(asked).toHaveLength(2);
  });

  it('keeps one timer for every pending deadline, and none once stopped', async () => {
    const { clock, queue, runs } = rearming(() => undefined);
    for (let i = 0; i < 50; i++) queue.addDeadline(`n${i}`, 1_000 + 10 * ((i * 7) % 50));
    expect(clock.pending).toBe(1);
    queue.addDeadline('early', 100); // an earlier one replaces the timer
    expect(clock.pending).toBe(1);
    queue.forget('early');
    await clock.advance(1_000 + 10 * 49);
    await queue.idle();
    // Each ran at its own time, in order of time.
    const deadlineRuns = runs.filter((r) => r.cause === 'deadline');
    expect(deadlineRuns).toHaveLength(50);
    expect(deadlineRuns.map((r) => r.at)).toEqual([...deadlineRuns.map((r) => r.at)].sort((a, b) => a - b));
    expect(new Set(deadlineRuns.map((r) => r.at)).size).toBe(50);
    expect(runs.map((r) => r.key)).not.toContain('early');
    await queue.stop();
    expect(clock.pending).toBe(0);
  });
});

describe('WorkQueue deadline slots (WorkQueueOptions.deadlineTickMs, docs/adr/0016)', () => {
  it('runs deadlines on the next slot, never early, those of one slot on one firing; a retry keeps its backoff', async () => {
    // A clock that does not start on a slot, so rounding shows.
    const clock = new FakeClock(Date.UTC(2026, 0, 1) + 37);
    const runs: Array<{ key: string; cause: ReconcileCause; at: number }> = [];
    let fail = true;
    const queue = new WorkQueue(
      async (key, cause) => {
        runs.push({ key, cause, at: clock.now() });
        if (key === 'flaky' && fail) {
          fail = false;
          throw new Error('boom');
        }
      },
      { clock, concurrency: 2, deadlineTickMs: 100 },
    );
    queue.start();
    const asked = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      const delayMs = 1_000 + 13 * i;
      asked.set(`n${i}`, clock.now() + delayMs);
      queue.addDeadline(`n${i}`, delayMs);
    }
    expect(clock.pending).toBe(1);
    queue.add('flaky'); // fails at once: its retry comes 50 ms later, not on a slot
    await queue.idle();
    await clock.advance(50);
    await queue.idle();
    const flaky = runs.filter((r) => r.key === 'flaky');
    expect(flaky.map((r) => r.at - flaky[0]!.at)).toEqual([0, 50]);
    await clock.advance(1_600);
    await queue.idle();
    const deadlines = runs.filter((r) => r.cause === 'deadline');
    expect(deadlines).toHaveLength(40);
    for (const r of deadlines) {
      const exact = asked.get(r.key)!;
      expect(r.at).toBeGreaterThanOrEqual(exact);
      expect(r.at).toBeLessThan(exact + 100);
      expect(r.at % 100).toBe(0);
    }
    // 40 deadlines over 507 ms came on 6 slots.
    expect(new Set(deadlines.map((r) => r.at)).size).toBe(6);
    await queue.stop();
  });
});

describe('WorkQueue deadlines on a wall clock that steps (regression: issue 50 item 4)', () => {
  it.each([
    { name: 'a 1 h backward step does not delay', stepMs: -3_600_000 },
    { name: 'a 45 s forward step does not bring forward', stepMs: 45_000 },
  ])('$name a deadline: it comes after its delay of monotonic time', async ({ stepMs }) => {
    const runs: number[] = [];
    const { clock, queue } = setup(async (key) => {
      if (key !== 'n') return undefined;
      runs.push(clock.monotonic());
      return runs.length === 1 ? { requeueAfterMs: 10_000 } : undefined;
    });
    const start = clock.monotonic();
    queue.add('n');
    await queue.idle();
    clock.stepWall(stepMs);
    queue.add('other'); // any run after the step looks at the deadlines again
    await queue.idle();
    await clock.advance(9_999);
    expect(runs).toEqual([start]);
    await clock.advance(1);
    await queue.idle();
    expect(runs).toEqual([start, start + 10_000]);
  });
});
