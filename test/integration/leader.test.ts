// Leader election (lib/leader/elector.ts) between two candidates against the real API server, with the real
// clock and the default timing (15 s / 10 s / 2 s): one leader at a time, a graceful hand-off through the
// released lease (no waiting for it to expire), and takeover after a crash only once the lease went
// unrenewed for its duration. Order and outcome are asserted; how fast is the benchmark's business (P7).

import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { COMPONENT_NAMESPACE } from '../../api/names.ts';
import { LEADER_ELECTION_DEFAULTS, LeaderElector, type LeaderLease } from '../../lib/leader/elector.ts';
import {
  KubeLeaseStore,
  type LeaseCallOptions,
  type LeaseStore,
  type LeaseWatchHandlers,
} from '../../lib/kube/leases.ts';
import { isKubeError } from '../../lib/kube/errors.ts';
import { systemClock } from '../../lib/clock.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { adminKubeConfig, eventually, uniqueName } from './helpers.ts';
import { applyBaseManifests } from './setup.ts';

const coordination = adminKubeConfig().makeApiClient(CoordinationV1Api);
const { leaseDurationMs, retryPeriodMs } = LEADER_ELECTION_DEFAULTS;

interface Candidate {
  identity: string;
  elector: LeaderElector;
  /** Date.now() at each onStartedLeading. */
  startedAt: number[];
  client: KubeClient;
}

const running: Candidate[] = [];

beforeAll(async () => {
  await applyBaseManifests();
});

afterEach(async () => {
  await Promise.all(running.map((c) => c.elector.stop()));
  await Promise.all(running.map((c) => c.client.close()));
  running.length = 0;
});

/**
 * A candidate as a separate replica would run it: its own client (connections), the system clock. `store`
 * wraps its Lease port; `canLead` gates its campaign as the controller's synced caches do.
 */
async function candidate(
  lease: string,
  identity: string,
  gate: { store?: (real: LeaseStore) => LeaseStore; canLead?: () => boolean } = {},
): Promise<Candidate> {
  const client = new KubeClient(await loadConnection(inject('kubeconfig')));
  const real = new KubeLeaseStore(client);
  const elector = new LeaderElector({
    store: gate.store?.(real) ?? real,
    clock: systemClock,
    log: pino({ level: 'silent' }),
    identity,
    name: lease,
    namespace: COMPONENT_NAMESPACE,
  });
  const c: Candidate = { identity, elector, startedAt: [], client };
  elector.start({
    onStartedLeading: () => c.startedAt.push(Date.now()),
    onStoppedLeading: () => undefined,
    ...(gate.canLead ? { canLead: gate.canLead } : {}),
  });
  running.push(c);
  return c;
}

async function twoCandidates(): Promise<{ lease: string; leader: Candidate; standby: Candidate }> {
  const lease = uniqueName('leader');
  const a = await candidate(lease, uniqueName('replica-a'));
  const b = await candidate(lease, uniqueName('replica-b'));
  const leader = await eventually(() => [a, b].find((c) => c.elector.isLeader), {
    timeoutMs: 10_000,
    what: 'a leader',
  });
  return { lease, leader, standby: leader === a ? b : a };
}

async function readLease(name: string) {
  return coordination.readNamespacedLease({ name, namespace: COMPONENT_NAMESPACE });
}

describe('KubeLeaseStore.watch against the real API server', () => {
  it('tells the Lease as it is, then each change of it, and nothing of another Lease', async () => {
    const client = new KubeClient(await loadConnection(inject('kubeconfig')));
    const store = new KubeLeaseStore(client);
    const name = uniqueName('watched');
    const other = uniqueName('other');
    const lease = (leaseName: string, holderIdentity: string): LeaderLease => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: leaseName, namespace: COMPONENT_NAMESPACE },
      spec: { holderIdentity },
    });
    const options = { timeoutMs: 10_000 };
    const first = await store.create(lease(name, 'a'), options);
    const seen: Array<string | undefined> = [];
    const stop = new AbortController();
    const errors: unknown[] = [];
    const watching = store.watch(
      COMPONENT_NAMESPACE,
      name,
      {
        changed: (l) => seen.push(l === undefined ? undefined : (l.spec?.holderIdentity ?? '')),
        error: (err) => errors.push(err),
      },
      stop.signal,
    );
    try {
      await eventually(() => seen.length === 1 || undefined, { what: 'the Lease as it is' });
      await store.create(lease(other, 'x'), options);
      await store.replace({ ...first, spec: { holderIdentity: 'b' } }, options);
      await store.delete(COMPONENT_NAMESPACE, name, options);
      await eventually(() => seen.length === 3 || undefined, { what: 'the update and the delete' });
      expect(seen).toEqual(['a', 'b', undefined]);
      expect(errors).toEqual([]);
    } finally {
      stop.abort();
      await watching;
      await store.delete(COMPONENT_NAMESPACE, other, options).catch(() => undefined);
      await client.close();
    }
  });
});

describe('leader election against the real API server', () => {
  it('exactly one of two candidates leads, and the Lease names it', async () => {
    const { lease, leader, standby } = await twoCandidates();
    const until = Date.now() + 3 * retryPeriodMs;
    while (Date.now() < until) {
      expect([leader.elector.isLeader, standby.elector.isLeader]).toEqual([true, false]);
      await new Promise((r) => setTimeout(r, 100));
    }
    const spec = (await readLease(lease)).spec;
    expect(spec?.holderIdentity).toBe(leader.identity);
    expect(spec?.leaseDurationSeconds).toBe(leaseDurationMs / 1000);
    expect(leader.startedAt).toHaveLength(1);
    expect(standby.startedAt).toHaveLength(0);
  });

  it('stopping the leader releases the lease, then the standby takes it over', async () => {
    const { lease, leader, standby } = await twoCandidates();
    const before = (await readLease(lease)).spec?.leaseTransitions ?? 0;
    await leader.elector.stop();
    expect(leader.elector.isLeader).toBe(false);
    // Released before stop() resolved: no holder (or already the standby), not the stopped leader.
    expect((await readLease(lease)).spec?.holderIdentity).not.toBe(leader.identity);
    await eventually(() => standby.startedAt[0], {
      timeoutMs: 30_000,
      intervalMs: 20,
      what: 'the standby to lead',
    });
    const spec = (await readLease(lease)).spec;
    expect(spec?.holderIdentity).toBe(standby.identity);
    expect(spec?.leaseTransitions).toBe(before + 1);
  });

  it('a leader that stops renewing without releasing (a crash) is replaced once the lease expires', async () => {
    const { lease, leader, standby } = await twoCandidates();
    const crashedAt = Date.now();
    await leader.elector.stop({ release: false });
    expect((await readLease(lease)).spec?.holderIdentity).toBe(leader.identity);

    await eventually(() => standby.startedAt[0], {
      timeoutMs: 3 * leaseDurationMs + 30_000,
      intervalMs: 50,
      what: 'the standby to take over',
    });
    const takeoverMs = (standby.startedAt[0] as number) - crashedAt;
    // Order, not speed: the standby must not take a lease that could still be valid. The last renewal came
    // at most one retryPeriod before the crash, so the lease cannot expire for the standby sooner than
    // leaseDuration − retryPeriod after it.
    expect(takeoverMs).toBeGreaterThanOrEqual(leaseDurationMs - retryPeriodMs - 500);
    expect((await readLease(lease)).spec?.holderIdentity).toBe(standby.identity);
  });
});

/**
 * The real Lease port with each request's op and outcome recorded (its status code, or 'ok'), and a watch that
 * can be muted: what a replica's copy of the Lease is once the watch stops telling it changes.
 */
class RecordingLeaseStore implements LeaseStore {
  readonly calls: string[] = [];
  watchTold = 0;
  muted = false;
  private readonly store: LeaseStore;

  constructor(store: LeaseStore) {
    this.store = store;
  }

  private async record<T>(op: string, call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      this.calls.push(`${op} ok`);
      return result;
    } catch (err) {
      this.calls.push(`${op} ${isKubeError(err) ? err.status : 'error'}`);
      throw err;
    }
  }

  get(namespace: string, name: string, options: LeaseCallOptions): Promise<LeaderLease> {
    return this.record('get', () => this.store.get(namespace, name, options));
  }
  create(lease: LeaderLease, options: LeaseCallOptions): Promise<LeaderLease> {
    return this.record('create', () => this.store.create(lease, options));
  }
  replace(lease: LeaderLease, options: LeaseCallOptions): Promise<LeaderLease> {
    return this.record('replace', () => this.store.replace(lease, options));
  }
  delete(namespace: string, name: string, options: LeaseCallOptions): Promise<void> {
    return this.record('delete', () => this.store.delete(namespace, name, options));
  }
  watch(namespace: string, name: string, handlers: LeaseWatchHandlers, signal: AbortSignal): Promise<void> {
    return this.store.watch(
      namespace,
      name,
      {
        changed: (lease) => {
          if (this.muted) return;
          this.watchTold++;
          handlers.changed(lease);
        },
        error: handlers.error,
      },
      signal,
    );
  }
}

describe('a candidate takes a released Lease from the copy its watch told it (against the real API server)', () => {
  /** A released Lease, and a candidate that watches it and may not lead until `able()`. */
  async function releasedAndWatched() {
    const name = uniqueName('copy');
    await coordination.createNamespacedLease({
      namespace: COMPONENT_NAMESPACE,
      body: {
        metadata: { name, namespace: COMPONENT_NAMESPACE },
        spec: { holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 4 },
      },
    });
    let store: RecordingLeaseStore | undefined;
    let canLead = false;
    const c = await candidate(name, uniqueName('replica'), {
      store: (real) => (store = new RecordingLeaseStore(real)),
      canLead: () => canLead,
    });
    const recorded = store as RecordingLeaseStore;
    await eventually(() => recorded.watchTold > 0 || undefined, { what: 'the watch to tell the Lease' });
    return {
      name,
      store: recorded,
      c,
      able: () => {
        canLead = true;
        c.elector.canLeadChanged();
      },
    };
  }

  it('the copy is current → one write takes it, and the Lease names the candidate', async () => {
    const { name, store, c, able } = await releasedAndWatched();
    expect(store.calls).toEqual([]);
    able();
    await eventually(() => c.startedAt[0], {
      timeoutMs: 10_000,
      intervalMs: 20,
      what: 'the candidate to lead',
    });
    expect(store.calls).toEqual(['replace ok']);
    const spec = (await readLease(name)).spec;
    expect(spec?.holderIdentity).toBe(c.identity);
    expect(spec?.leaseTransitions).toBe(5);
  });

  it('the copy is stale (another replica took the Lease, the watch silent) → the API server refuses it; read, not taken', async () => {
    const { name, store, c, able } = await releasedAndWatched();
    store.muted = true;
    const current = await readLease(name);
    await coordination.replaceNamespacedLease({
      name,
      namespace: COMPONENT_NAMESPACE,
      body: {
        ...current,
        spec: {
          holderIdentity: 'another-replica',
          leaseDurationSeconds: leaseDurationMs / 1000,
          renewTime: new V1MicroTime(),
          leaseTransitions: 5,
        },
      },
    });
    able();
    await eventually(() => store.calls.includes('get ok') || undefined, {
      what: 'the read after the refusal',
    });
    expect(store.calls.slice(0, 2)).toEqual(['replace 409', 'get ok']);
    expect(c.elector.isLeader).toBe(false);
    expect(c.elector.leader).toBe('another-replica');
    expect((await readLease(name)).spec?.holderIdentity).toBe('another-replica');
  });
});
