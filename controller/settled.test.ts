// When a replica first settles (controller/settled.ts), on a fake clock: a leader once its first term's queue
// drained, a standby STANDBY_SETTLE_MS after its caches synced, and each once.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../lib/testing.ts';
import { firstSettle, STANDBY_SETTLE_MS } from './settled.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function setUp() {
  const clock = new FakeClock();
  const calls = { count: 0 };
  const settle = firstSettle(() => calls.count++, clock);
  return { clock, calls, settle };
}

describe('firstSettle', () => {
  it('a leader settles when its first term drained, not at the sync and not at the standby delay', async () => {
    const { clock, calls, settle } = setUp();
    settle.synced();
    const drained = deferred();
    settle.termStarted(drained.promise);
    await clock.advance(STANDBY_SETTLE_MS * 4);
    expect(calls.count).toBe(0);
    drained.resolve();
    await clock.advance(0);
    expect(calls.count).toBe(1);
    // A second term, another sync: not again.
    settle.synced();
    settle.termStarted(Promise.resolve());
    await clock.advance(STANDBY_SETTLE_MS * 2);
    expect(calls.count).toBe(1);
    expect(clock.pending).toBe(0);
  });

  it('a standby settles STANDBY_SETTLE_MS after its first sync, once, and a later term changes nothing', async () => {
    const { clock, calls, settle } = setUp();
    settle.synced();
    await clock.advance(STANDBY_SETTLE_MS - 1);
    settle.synced();
    expect(calls.count).toBe(0);
    await clock.advance(1);
    expect(calls.count).toBe(1);
    settle.termStarted(Promise.resolve());
    await clock.advance(0);
    expect(calls.count).toBe(1);
  });

  it('a replica that leads before the standby delay ends waits for its queue', async () => {
    const { clock, calls, settle } = setUp();
    settle.synced();
    await clock.advance(STANDBY_SETTLE_MS / 2);
    const drained = deferred();
    settle.termStarted(drained.promise);
    await clock.advance(STANDBY_SETTLE_MS);
    expect(calls.count).toBe(0);
    expect(clock.pending).toBe(0);
    drained.resolve();
    await clock.advance(0);
    expect(calls.count).toBe(1);
  });

  it('nothing is called once stopped, and no timer is left', async () => {
    const { clock, calls, settle } = setUp();
    settle.synced();
    settle.stop();
    expect(clock.pending).toBe(0);
    await clock.advance(STANDBY_SETTLE_MS * 2);
    const stopping = setUp();
    const drained = deferred();
    stopping.settle.termStarted(drained.promise);
    stopping.settle.stop();
    drained.resolve();
    await stopping.clock.advance(0);
    expect(calls.count + stopping.calls.count).toBe(0);
  });

  it('without a callback it does nothing and arms nothing', async () => {
    const clock = new FakeClock();
    const settle = firstSettle(undefined, clock);
    settle.synced();
    settle.termStarted(Promise.resolve());
    expect(clock.pending).toBe(0);
  });
});
