// Leadership terms with a fake clock and a recorded work: a term starts only while leading on synced caches,
// the fence opens and closes with it, a lost lease cuts the work off at once, and stop() drains until the
// deadline less the time kept for releasing the lease.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/log.ts';
import { FakeClock } from '../lib/testing.ts';
import { ControllerMetrics } from './metrics.ts';
import { LeadershipTerms, RELEASE_RESERVE_MS, type TermElector, type TermWork } from './term.ts';
import { NotLeaderError } from './writes/index.ts';

function setup(options: ConstructorParameters<typeof LeadershipTerms>[3] = {}) {
  const clock = new FakeClock();
  const terms = new LeadershipTerms(
    clock,
    createLogger({ level: 'silent', name: 'test' }),
    new ControllerMetrics(new Registry()),
    options,
  );
  const seen: string[] = [];
  let synced = false;
  let looked = 0;
  /** The work in flight: stop() resolves when `finish` is called. */
  let finish: () => void = () => undefined;
  const work: TermWork = {
    synced: () => {
      looked++;
      return synced;
    },
    nodeCount: () => 0,
    start: () => void seen.push('start'),
    stop: () => {
      seen.push('stop');
      return new Promise((resolve) => (finish = resolve));
    },
  };
  const fenceOpen = (): boolean => {
    try {
      terms.fence();
      return true;
    } catch (err) {
      expect(err).toBeInstanceOf(NotLeaderError);
      return false;
    }
  };
  return {
    clock,
    terms,
    work,
    seen,
    fenceOpen,
    sync: (on: boolean) => (synced = on),
    /** How often the term looked at the caches' sync. */
    looked: () => looked,
    finish: () => finish(),
  };
}

describe('LeadershipTerms', () => {
  it('starts the work once, when this replica leads and the caches say they are in sync, in either order', async () => {
    const { clock, terms, work, seen, fenceOpen, sync, looked } = setup();
    terms.run(work);
    terms.elected.onStartedLeading();
    expect(seen).toEqual([]);
    expect(fenceOpen()).toBe(false);
    // Nothing polls the caches: in sync but not told so, no term starts.
    sync(true);
    const before = looked();
    await clock.advance(60_000);
    expect(seen).toEqual([]);
    expect(looked()).toBe(before);
    // Told three times in one turn (three caches listed): one look, on the next turn, not inside the call.
    terms.syncChanged();
    terms.syncChanged();
    terms.syncChanged();
    expect(seen).toEqual([]);
    await clock.advance(0);
    expect(seen).toEqual(['start']);
    expect(looked()).toBe(before + 2); // the check, and maybeStart's own
    expect(fenceOpen()).toBe(true);
    expect(terms.leading).toBe(true);
    terms.syncChanged();
    await clock.advance(0);
    expect(seen).toEqual(['start']);

    // The other order: synced first, leading later.
    const other = setup();
    other.terms.run(other.work);
    other.sync(true);
    other.terms.syncChanged();
    await other.clock.advance(0);
    expect(other.seen).toEqual([]);
    other.terms.elected.onStartedLeading();
    expect(other.seen).toEqual(['start']);
  });

  it('a lost lease closes the fence and aborts the requests in flight at once, then awaits the work', async () => {
    const { terms, work, seen, fenceOpen, sync, finish } = setup();
    sync(true);
    terms.run(work);
    terms.elected.onStartedLeading();
    const signal = terms.signal!;
    const lost = terms.elected.onStoppedLeading();
    expect(signal.aborted).toBe(true);
    expect(fenceOpen()).toBe(false);
    expect(seen).toEqual(['start', 'stop']);
    let ended = false;
    void lost.then(() => (ended = true));
    await Promise.resolve();
    expect(ended).toBe(false);
    finish();
    await lost;
    expect(terms.leading).toBe(false);
  });

  it('stop() lets the work drain until the deadline less the release reserve, then cuts it off and releases', async () => {
    const { clock, terms, work, seen, sync, finish } = setup();
    sync(true);
    terms.run(work);
    terms.elected.onStartedLeading();
    const signal = terms.signal!;
    const deadline = clock.now() + 10_000;
    const released: number[] = [];
    const stopping = terms.stop(deadline, async (by) => {
      released.push(by);
      await terms.elected.onStoppedLeading();
    });
    await clock.advance(10_000 - RELEASE_RESERVE_MS - 1);
    expect(signal.aborted).toBe(false);
    await clock.advance(1);
    expect(signal.aborted).toBe(true);
    finish();
    await stopping;
    expect(released).toEqual([deadline]);
    expect(seen).toEqual(['start', 'stop']);
    // Stopped for good: leading again starts nothing.
    terms.elected.onStartedLeading();
    expect(seen).toEqual(['start', 'stop']);
  });
});

describe('LeadershipTerms: a replica that cannot sync (regression: issue 50 item 5)', () => {
  const bounds = { leaderUnsyncedMs: 60_000, firstSyncMs: 300_000 };
  function gated() {
    const calls: string[] = [];
    const elector: TermElector = {
      stepDown: () => void calls.push('stepDown'),
      canLeadChanged: () => void calls.push('canLeadChanged'),
    };
    return { ...setup({ bounds, elector }), calls };
  }

  it('may campaign only on synced caches, and tells the elector when that turns', async () => {
    const { clock, terms, work, sync, calls } = gated();
    terms.run(work);
    expect(terms.elected.canLead()).toBe(false);
    sync(true);
    terms.syncChanged();
    await clock.advance(0);
    expect(terms.elected.canLead()).toBe(true);
    expect(calls).toEqual(['canLeadChanged']);
    sync(false);
    terms.syncChanged();
    await clock.advance(0);
    expect(terms.elected.canLead()).toBe(false);
    expect(calls).toEqual(['canLeadChanged', 'canLeadChanged']);
  });

  it('a leader out of sync for leaderUnsyncedMs steps down; back in sync before that, it does not', async () => {
    const { clock, terms, work, sync, calls } = gated();
    sync(true);
    terms.run(work);
    terms.elected.onStartedLeading();
    sync(false);
    terms.syncChanged();
    await clock.advance(59_000);
    sync(true);
    terms.syncChanged();
    await clock.advance(0);
    await clock.advance(120_000);
    expect(calls).not.toContain('stepDown');
    sync(false);
    terms.syncChanged();
    await clock.advance(60_000 - 1);
    expect(calls).not.toContain('stepDown');
    await clock.advance(1);
    expect(calls.filter((c) => c === 'stepDown')).toHaveLength(1);
  });

  it('liveness: overdue once firstSyncMs passed without a first sync; never after one, even out of sync later', async () => {
    const stuck = gated();
    stuck.terms.run(stuck.work);
    await stuck.clock.advance(300_000 - 1);
    expect(stuck.terms.syncOverdue()).toBe(false);
    await stuck.clock.advance(1);
    expect(stuck.terms.syncOverdue()).toBe(true);

    const { clock, terms, work, sync } = gated();
    terms.run(work);
    await clock.advance(10_000);
    sync(true);
    terms.syncChanged();
    await clock.advance(0);
    sync(false);
    terms.syncChanged();
    await clock.advance(3_600_000);
    expect(terms.syncOverdue()).toBe(false);
  });
});
