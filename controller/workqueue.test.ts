import { describe, expect, it, vi } from 'vitest';
import { systemClock } from '../lib/clock.ts';
import { FakeClock } from '../lib/testing.ts';
import { WorkQueue, type ReconcileResult } from './workqueue.ts';

function setup(reconcile: (key: string) => Promise<ReconcileResult | void>, concurrency = 2) {
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
