import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../testing.ts';
import { KubeError, KubeErrorCode } from '../kube/errors.ts';
import type { LeaseWatchHandlers } from '../kube/leases.ts';
import { FakeLeaseStore } from '../kube/testing.ts';
import {
  LEADER_ELECTION_DEFAULTS,
  LeaderElector,
  validateLeaderElectionTiming,
  type LeaderLease,
} from './elector.ts';

const NS = 'nodecare-system';
const NAME = 'nodecare-controller';
const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = LEADER_ELECTION_DEFAULTS;

interface Recorded {
  events: string[];
  signals: AbortSignal[];
}

function elector(store: FakeLeaseStore, clock: FakeClock, identity: string, random = () => 0) {
  return new LeaderElector({
    store,
    clock,
    log: pino({ level: 'silent' }),
    identity,
    name: NAME,
    namespace: NS,
    random,
  });
}

function startRecording(e: LeaderElector, onStopped?: () => Promise<void>): Recorded {
  const recorded: Recorded = { events: [], signals: [] };
  e.start({
    onStartedLeading: (signal) => {
      recorded.events.push('started');
      recorded.signals.push(signal);
    },
    onStoppedLeading: () => {
      recorded.events.push('stopped');
      return onStopped?.();
    },
    onNewLeader: (identity) => recorded.events.push(`leader:${identity}`),
  });
  return recorded;
}

function setup() {
  const store = new FakeLeaseStore();
  const clock = new FakeClock();
  return { store, clock };
}

function otherHolder(holderIdentity: string, renewTime: string, extra: Partial<LeaderLease['spec']> = {}) {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: NAME, namespace: NS },
    spec: {
      holderIdentity,
      leaseDurationSeconds: leaseDurationMs / 1000,
      renewTime,
      acquireTime: renewTime,
      ...extra,
    },
  } satisfies LeaderLease;
}

describe('validateLeaderElectionTiming', () => {
  it('accepts the defaults 10 s / 7 s / 1.5 s (docs/adr/0005)', () => {
    expect(validateLeaderElectionTiming(LEADER_ELECTION_DEFAULTS)).toEqual([]);
  });

  it.each([
    { name: 'leaseDuration equal to renewDeadline → rejected', timing: [10_000, 10_000, 2_000], problems: 1 },
    {
      name: 'renewDeadline not above 1.2 × retryPeriod → rejected',
      timing: [15_000, 2_400, 2_000],
      problems: 1,
    },
    { name: 'both wrong → both reported at once', timing: [5_000, 6_000, 5_000], problems: 2 },
    { name: 'zero retryPeriod → rejected', timing: [15_000, 10_000, 0], problems: 1 },
  ])('$name', ({ timing: [lease, renew, retry], problems }) => {
    const found = validateLeaderElectionTiming({
      leaseDurationMs: lease as number,
      renewDeadlineMs: renew as number,
      retryPeriodMs: retry as number,
    });
    expect(found).toHaveLength(problems);
    const { store, clock } = setup();
    expect(
      () =>
        new LeaderElector({
          store,
          clock,
          log: pino({ level: 'silent' }),
          identity: 'a',
          name: NAME,
          leaseDurationMs: lease,
          renewDeadlineMs: renew,
          retryPeriodMs: retry,
        }),
    ).toThrow(/invalid leader election config/);
  });
});

describe('LeaderElector', () => {
  it('missing lease → created, leading at once with leaseTransitions 0', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    const recorded = startRecording(a);
    await clock.advance(0);
    expect(a.isLeader).toBe(true);
    expect(recorded.events).toEqual(['leader:a', 'started']);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({
      holderIdentity: 'a',
      leaseDurationSeconds: leaseDurationMs / 1000,
      leaseTransitions: 0,
    });
    await a.stop();
  });

  it('free lease (empty holder) → acquired at once, leaseTransitions incremented', async () => {
    const { store, clock } = setup();
    store.put(otherHolder('', '2026-01-01T00:00:00.000000Z', { leaseTransitions: 3 }));
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    expect(a.isLeader).toBe(true);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 4 });
    await a.stop();
  });

  it('lease renewed by another holder → not acquired while the renewals go on', async () => {
    const { store, clock } = setup();
    const renew = () =>
      store.put({
        ...store.lease(NS, NAME)!,
        spec: otherHolder('b', new Date(clock.now()).toISOString()).spec,
      });
    store.put(otherHolder('b', new Date(clock.now()).toISOString()));
    const a = elector(store, clock, 'a');
    const recorded = startRecording(a);
    for (let t = 0; t < 60_000; t += retryPeriodMs) {
      await clock.advance(retryPeriodMs);
      renew();
    }
    expect(a.isLeader).toBe(false);
    expect(recorded.events).toEqual(['leader:b']);
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('b');
    await a.stop();
  });

  it.each([
    { name: 'renewTime far in the future', renewTime: '2100-01-01T00:00:00.000000Z' },
    { name: 'renewTime far in the past', renewTime: '2000-01-01T00:00:00.000000Z' },
  ])(
    'holder stopped renewing, $name → taken over once unchanged for leaseDuration by our own clock',
    async ({ renewTime }) => {
      const { store, clock } = setup();
      store.put(otherHolder('b', renewTime, { leaseTransitions: 7 }));
      const a = elector(store, clock, 'a');
      startRecording(a);
      await clock.advance(0);
      // First seen at t=0; tries every retryPeriod and once more when the lease expires by its clock, at
      // t=leaseDuration: that try takes it.
      await clock.advance(leaseDurationMs - 1);
      expect(a.isLeader).toBe(false);
      await clock.advance(1);
      expect(a.isLeader).toBe(true);
      expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 8 });
      await a.stop();
    },
  );

  it('leader renews every retryPeriod from the object it last wrote, without reading', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    store.calls.length = 0;
    await clock.advance(5 * retryPeriodMs);
    expect(store.calls.map((c) => c.op)).toEqual(['replace', 'replace', 'replace', 'replace', 'replace']);
    expect(store.lease(NS, NAME)?.spec?.renewTime).toBe(
      new Date(Date.parse('2026-01-01T00:00:00Z') + 5 * retryPeriodMs).toISOString().replace('Z', '000Z'),
    );
    expect(store.lease(NS, NAME)?.spec?.acquireTime).toBe('2026-01-01T00:00:00.000000Z');
    await a.stop();
  });

  it('renewals failing for renewDeadline → steps down; every request had a deadline within it', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    const recorded = startRecording(a);
    await clock.advance(0);
    store.failNext('replace', FakeLeaseStore.unavailable(), 100);
    store.failNext('get', new KubeError(KubeErrorCode.Timeout, 0, 'timed out'), 100);
    // The round starts one retryPeriod after the last renewal (t=2 s) and ends renewDeadline later (t=12 s).
    await clock.advance(retryPeriodMs + renewDeadlineMs - 1);
    expect(a.isLeader).toBe(true);
    await clock.advance(1);
    expect(a.isLeader).toBe(false);
    expect(recorded.events).toEqual(['leader:a', 'started', 'stopped']);
    expect(recorded.signals[0]?.aborted).toBe(true);
    expect(store.calls.every((c) => c.timeoutMs > 0 && c.timeoutMs <= renewDeadlineMs)).toBe(true);

    // The API comes back and nobody took over: it campaigns again and leads with a fresh signal.
    store.clearFaults();
    await clock.advance(retryPeriodMs * 1.2);
    expect(a.isLeader).toBe(true);
    expect(recorded.events).toEqual(['leader:a', 'started', 'stopped', 'started']);
    expect(recorded.signals[1]?.aborted).toBe(false);
    await a.stop();
  });

  it('another holder seen while renewing → steps down at once, not at the renew deadline', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    const recorded = startRecording(a);
    await clock.advance(0);
    store.put({ ...store.lease(NS, NAME)!, spec: otherHolder('b', '2026-01-01T00:00:00.500000Z').spec });
    await clock.advance(retryPeriodMs);
    expect(a.isLeader).toBe(false);
    expect(recorded.events).toEqual(['leader:a', 'started', 'leader:b', 'stopped']);
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('b');
    await a.stop();
  });

  it.each([
    {
      name: 'conflict on takeover → re-read, acquired on the next try',
      fault: { op: 'replace', error: FakeLeaseStore.conflict() },
      existing: true,
      ops: ['get', 'replace', 'get', 'replace'],
    },
    {
      name: 'AlreadyExists on create (lost the race) → read, acquired on the next try',
      fault: { op: 'create', error: new KubeError(KubeErrorCode.AlreadyExists, 409, 'exists') },
      existing: false,
      ops: ['get', 'create', 'get', 'create'],
    },
  ] as const)('$name', async ({ fault, existing, ops }) => {
    const { store, clock } = setup();
    // Without a watch: the free lease it reports would make the second try come at once.
    store.watchesDeliver = false;
    if (existing) store.put(otherHolder('', '2026-01-01T00:00:00.000000Z'));
    store.failNext(fault.op, fault.error);
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    expect(a.isLeader).toBe(false);
    await clock.advance(retryPeriodMs);
    expect(a.isLeader).toBe(true);
    expect(store.calls.map((c) => c.op)).toEqual(ops);
    await a.stop();
  });

  it('stop() releases (empty holder, 1 s) after onStoppedLeading settles; without a watch the standby acquires on its next try', async () => {
    const { store, clock } = setup();
    store.watchesDeliver = false;
    const a = elector(store, clock, 'a');
    const b = elector(store, clock, 'b', () => 0.99);
    let finishWork: () => void = () => undefined;
    const recordedA = startRecording(a, () => new Promise<void>((resolve) => (finishWork = resolve)));
    await clock.advance(0);
    const recordedB = startRecording(b);
    await clock.advance(10 * retryPeriodMs);
    expect([a.isLeader, b.isLeader]).toEqual([true, false]);

    const stopped = a.stop();
    await clock.advance(0);
    expect(recordedA.signals[0]?.aborted).toBe(true);
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('a');
    finishWork();
    await stopped;
    expect(store.lease(NS, NAME)?.spec).toMatchObject({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      leaseTransitions: 0,
    });

    // b's retries are jittered to at most 1.2 × retryPeriod.
    await clock.advance(retryPeriodMs * 1.2);
    expect(b.isLeader).toBe(true);
    expect(recordedB.events).toEqual(['leader:a', 'leader:b', 'started']);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.stop();
  });

  it('stop() with a watching standby: the standby takes the released lease at once, not at its next try', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    const b = elector(store, clock, 'b', () => 0.99);
    startRecording(a);
    await clock.advance(0);
    const recordedB = startRecording(b);
    await clock.advance(10 * retryPeriodMs + 700); // b is mid-wait between two tries
    await a.stop();
    await clock.advance(0);
    expect(b.isLeader).toBe(true);
    expect(recordedB.events).toEqual(['leader:a', 'leader:b', 'started']);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.stop();
  });

  it('the lease deleted while a standby waits → created at once', async () => {
    const { store, clock } = setup();
    store.put(otherHolder('b', '2026-01-01T00:00:00.000000Z'));
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(700);
    expect(a.isLeader).toBe(false);
    store.calls.length = 0;
    await store.delete(NS, NAME, { timeoutMs: 1 });
    store.calls.length = 0;
    await clock.advance(0);
    expect(a.isLeader).toBe(true);
    expect(store.calls.map((c) => c.op)).toEqual(['get', 'create']);
    await a.stop();
  });

  it.each([
    // The watch shows the last renewal when it is written (t=4.6 s): expired at 14.6 s by the standby's clock.
    { name: 'with the watch: leaseDuration after the last renewal', watch: true, takeoverAtMs: 14_600 },
    // Without it, the try at t=6 s is the first to see that renewal: expired at 16 s.
    { name: 'without it: leaseDuration after the try that saw it', watch: false, takeoverAtMs: 16_000 },
  ])('holder renews, then crashes: taken over $name', async ({ watch, takeoverAtMs }) => {
    const { store, clock } = setup();
    store.watchesDeliver = watch;
    const renew = () =>
      store.put({
        ...store.lease(NS, NAME)!,
        spec: otherHolder('b', new Date(clock.now()).toISOString()).spec,
      });
    store.put(otherHolder('b', new Date(clock.now()).toISOString()));
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    await clock.advance(100);
    for (let t = 100; t < 4_600; t += retryPeriodMs) {
      renew(); // at 0.1, 1.6, 3.1 and 4.6 s, between the standby's tries at 0, 1.5, 3, 4.5 and 6 s
      await clock.advance(0); // the watch event, when the watch delivers, at the time of the write
      await clock.advance(retryPeriodMs);
    }
    renew();
    await clock.advance(0);
    await clock.advance(takeoverAtMs - 4_600 - 1);
    expect(a.isLeader).toBe(false);
    await clock.advance(1);
    expect(a.isLeader).toBe(true);
    await a.stop();
  });

  it('a leader ignores a late watch event of an earlier holder: it neither steps down nor re-reads', async () => {
    const store = new (class extends FakeLeaseStore {
      handlers: LeaseWatchHandlers | undefined;
      override watch(ns: string, name: string, handlers: LeaseWatchHandlers, signal: AbortSignal) {
        this.handlers = handlers;
        return super.watch(ns, name, handlers, signal);
      }
    })();
    const clock = new FakeClock();
    const before = store.put(otherHolder('b', '2026-01-01T00:00:00.000000Z', { leaseTransitions: 2 }));
    store.put({ ...before, spec: otherHolder('', '2026-01-01T00:00:00.000000Z').spec });
    const a = elector(store, clock, 'a');
    const recorded = startRecording(a);
    await clock.advance(0);
    expect(a.isLeader).toBe(true);
    store.calls.length = 0;
    store.handlers?.changed(before); // the holder before the release, delivered late
    await clock.advance(retryPeriodMs);
    expect(a.isLeader).toBe(true);
    expect(recorded.events).toEqual(['leader:a', 'started']);
    expect(store.calls.map((c) => c.op)).toEqual(['replace']);
    await a.stop();
  });

  it('a watch that fails for good: the candidate still acquires by its tries', async () => {
    const store = new (class extends FakeLeaseStore {
      override watch(): Promise<void> {
        return Promise.reject(new KubeError(KubeErrorCode.Forbidden, 403, 'watch is forbidden'));
      }
    })();
    const clock = new FakeClock();
    store.put(otherHolder('b', '2026-01-01T00:00:00.000000Z'));
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    await clock.advance(leaseDurationMs - 1);
    expect(a.isLeader).toBe(false);
    await clock.advance(1);
    expect(a.isLeader).toBe(true);
    await a.stop();
  });

  it('stop({ release: false }) (a crash) leaves the lease held until it expires for the standby', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    const b = elector(store, clock, 'b');
    startRecording(a);
    await clock.advance(0);
    startRecording(b);
    await clock.advance(0);
    await a.stop({ release: false });
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('a');
    await clock.advance(leaseDurationMs - retryPeriodMs);
    expect(b.isLeader).toBe(false);
    await clock.advance(2 * retryPeriodMs);
    expect(b.isLeader).toBe(true);
    await b.stop();
  });

  it('stop() while the winning write is in flight → the lease is handed back, onStartedLeading never called', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    const recorded = startRecording(a);
    await a.stop();
    expect(recorded.events).toEqual(['leader:a']);
    expect(store.calls.map((c) => c.op)).toEqual(['get', 'create', 'replace']);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
  });

  it('stop() before ever leading writes nothing and calls no callback', async () => {
    const { store, clock } = setup();
    store.put(otherHolder('b', '2026-01-01T00:00:00.000000Z'));
    const a = elector(store, clock, 'a');
    const recorded = startRecording(a);
    await clock.advance(0);
    store.calls.length = 0;
    await a.stop();
    expect(store.calls).toEqual([]);
    expect(recorded.events).toEqual(['leader:b']);
  });
  it('stop({ deadlineMs }): the release request ends by the shutdown deadline, not a renewDeadline later (regression)', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    let finishWork: () => void = () => undefined;
    startRecording(a, () => new Promise<void>((resolve) => (finishWork = resolve)));
    await clock.advance(0);
    const deadlineMs = clock.now() + 5_000;
    const stopped = a.stop({ deadlineMs });
    await clock.advance(3_000); // the in-flight work takes 3 s of the 5 s budget
    finishWork();
    await stopped;
    const release = store.calls.at(-1);
    expect(release?.op).toBe('replace');
    expect(release?.timeoutMs).toBeLessThanOrEqual(2_000);
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('');
  });

  it('stop({ deadlineMs }) with the budget spent draining: no release is attempted, the lease expires', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    let finishWork: () => void = () => undefined;
    startRecording(a, () => new Promise<void>((resolve) => (finishWork = resolve)));
    await clock.advance(0);
    const stopped = a.stop({ deadlineMs: clock.now() + 1_000 });
    await clock.advance(1_000);
    finishWork();
    store.calls.length = 0;
    await stopped;
    expect(store.calls).toEqual([]);
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('a');
  });
});

describe('LeaderElector on a wall clock that steps (regression: issue 50 item 4)', () => {
  it('holder stopped renewing and our wall clock stepped back an hour → still taken over after leaseDuration', async () => {
    const { store, clock } = setup();
    store.put(otherHolder('b', new Date(clock.now()).toISOString()));
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    clock.stepWall(-3_600_000);
    await clock.advance(leaseDurationMs - 1);
    expect(a.isLeader).toBe(false);
    await clock.advance(1);
    expect(a.isLeader).toBe(true);
    await a.stop();
  });

  it('renewals failing and our wall clock stepped back an hour → the leader still steps down at renewDeadline', async () => {
    const { store, clock } = setup();
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    store.failNext('replace', FakeLeaseStore.unavailable(), 100);
    store.failNext('get', new KubeError(KubeErrorCode.Timeout, 0, 'timed out'), 100);
    await clock.advance(retryPeriodMs + 1);
    clock.stepWall(-3_600_000);
    await clock.advance(renewDeadlineMs);
    expect(a.isLeader).toBe(false);
    await a.stop();
  });
});

describe('LeaderElector: a replica that cannot do the work does not lead (regression: issue 50 item 5)', () => {
  function startGated(e: LeaderElector, canLead: () => boolean): Recorded {
    const recorded: Recorded = { events: [], signals: [] };
    e.start({
      onStartedLeading: (signal) => {
        recorded.events.push('started');
        recorded.signals.push(signal);
      },
      onStoppedLeading: () => void recorded.events.push('stopped'),
      canLead,
    });
    return recorded;
  }

  it('campaigns only while canLead(): a free lease is left alone, taken at once when canLeadChanged()', async () => {
    const { store, clock } = setup();
    let synced = false;
    const a = elector(store, clock, 'a');
    startGated(a, () => synced);
    await clock.advance(10 * retryPeriodMs);
    expect(a.isLeader).toBe(false);
    expect(store.lease(NS, NAME)).toBeUndefined();
    expect(store.calls).toEqual([]);
    synced = true;
    a.canLeadChanged();
    await clock.advance(0);
    expect(a.isLeader).toBe(true);
    await a.stop();
  });

  it('a replica that cannot sync never takes the lease from a standby that can, whoever starts first', async () => {
    const { store, clock } = setup();
    const stuck = elector(store, clock, 'stuck');
    const healthy = elector(store, clock, 'healthy', () => 0.5);
    startGated(stuck, () => false);
    await clock.advance(5 * retryPeriodMs);
    startGated(healthy, () => true);
    await clock.advance(60_000);
    expect([stuck.isLeader, healthy.isLeader]).toEqual([false, true]);
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('healthy');
    await Promise.all([stuck.stop(), healthy.stop()]);
  });

  it('stepDown(): the term ends, the lease is released, a watching standby takes it at once; no campaign until canLead()', async () => {
    const { store, clock } = setup();
    let aCanLead = true;
    const a = elector(store, clock, 'a');
    const b = elector(store, clock, 'b', () => 0.99);
    const recordedA = startGated(a, () => aCanLead);
    await clock.advance(0);
    startGated(b, () => true);
    await clock.advance(10 * retryPeriodMs + 700);
    expect([a.isLeader, b.isLeader]).toEqual([true, false]);
    aCanLead = false;
    a.stepDown();
    await clock.advance(0);
    expect(recordedA.events).toEqual(['started', 'stopped']);
    expect(recordedA.signals[0]?.aborted).toBe(true);
    expect([a.isLeader, b.isLeader]).toEqual([false, true]);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    // b stops for good: a, still unable, leaves the released lease alone; able again, it takes it.
    await b.stop();
    await clock.advance(10 * retryPeriodMs);
    expect(a.isLeader).toBe(false);
    aCanLead = true;
    a.canLeadChanged();
    await clock.advance(0);
    expect(a.isLeader).toBe(true);
    await a.stop();
  });
});

describe('LeaderElector: a candidate takes a lease its copy shows free or expired without reading it first', () => {
  function gated(store: FakeLeaseStore, clock: FakeClock, identity: string) {
    const state = { canLead: false };
    const e = elector(store, clock, identity);
    e.start({ onStartedLeading: () => {}, onStoppedLeading: () => {}, canLead: () => state.canLead });
    return {
      e,
      /** canLead() turns true, as when the controller's caches sync. */
      async turnAble() {
        store.calls.length = 0;
        state.canLead = true;
        e.canLeadChanged();
        await clock.advance(0);
      },
    };
  }

  /** A released Lease, and a candidate 'a' that cannot lead yet, once its watch has told it the Lease. */
  async function released(extra: Partial<LeaderLease['spec']> = {}) {
    const { store, clock } = setup();
    store.put(otherHolder('', '2026-01-01T00:00:00.000000Z', extra));
    const { e, turnAble } = gated(store, clock, 'a');
    await clock.advance(retryPeriodMs);
    return { store, clock, e, turnAble, ops: () => store.calls.map((c) => c.op) };
  }

  it('the watch showed the lease released → one write takes it, from that copy', async () => {
    const { store, e, turnAble, ops } = await released({ leaseTransitions: 2 });
    await turnAble();
    expect(e.isLeader).toBe(true);
    expect(ops()).toEqual(['replace']);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 3 });
    await e.stop();
  });

  it('the copy is stale (another took the lease, the watch silent) → refused, read in the same attempt, not taken', async () => {
    const { store, clock, e, turnAble, ops } = await released();
    store.watchesDeliver = false;
    store.put(otherHolder('b', new Date(clock.now()).toISOString()));
    await turnAble();
    expect(e.isLeader).toBe(false);
    expect(ops()).toEqual(['replace', 'get']);
    expect(e.leader).toBe('b');
    expect(store.lease(NS, NAME)?.spec?.holderIdentity).toBe('b');
    await e.stop();
  });

  it('a stale copy whose read then fails → the next try reads, it does not write from that copy again', async () => {
    const { store, clock, e, turnAble, ops } = await released();
    store.watchesDeliver = false;
    store.put(otherHolder('', '2026-01-01T00:00:01.000000Z'));
    store.failNext('get', FakeLeaseStore.unavailable());
    await turnAble();
    expect(e.isLeader).toBe(false);
    expect(ops()).toEqual(['replace', 'get']);
    await clock.advance(retryPeriodMs);
    expect(e.isLeader).toBe(true);
    expect(ops()).toEqual(['replace', 'get', 'get', 'replace']);
    await e.stop();
  });

  it('the copy’s lease was deleted (the watch silent) → not found, read, created in the same attempt', async () => {
    const { store, e, turnAble, ops } = await released();
    store.watchesDeliver = false;
    await store.delete(NS, NAME, { timeoutMs: 1 });
    await turnAble();
    expect(e.isLeader).toBe(true);
    expect(ops()).toEqual(['replace', 'get', 'create']);
    await e.stop();
  });

  it('a server error on that write → the attempt fails without a read; the next try takes the lease', async () => {
    const { store, clock, e, turnAble, ops } = await released();
    store.failNext('replace', FakeLeaseStore.unavailable());
    await turnAble();
    expect(e.isLeader).toBe(false);
    expect(ops()).toEqual(['replace']);
    await clock.advance(retryPeriodMs);
    expect(e.isLeader).toBe(true);
    expect(ops()).toEqual(['replace', 'replace']);
    await e.stop();
  });

  it('a holder that stopped renewing → every try reads until it expires by our clock; the takeover is one write', async () => {
    const { store, clock } = setup();
    store.put(otherHolder('b', new Date(clock.now()).toISOString(), { leaseTransitions: 7 }));
    const a = elector(store, clock, 'a');
    startRecording(a);
    await clock.advance(0);
    await clock.advance(leaseDurationMs - 1);
    expect(a.isLeader).toBe(false);
    const tries = store.calls.map((c) => c.op);
    expect(tries.length).toBeGreaterThan(1);
    expect(tries.every((op) => op === 'get')).toBe(true);
    store.calls.length = 0;
    await clock.advance(1);
    expect(a.isLeader).toBe(true);
    expect(store.calls.map((c) => c.op)).toEqual(['replace']);
    expect(store.lease(NS, NAME)?.spec).toMatchObject({ holderIdentity: 'a', leaseTransitions: 8 });
    await a.stop();
  });
});
