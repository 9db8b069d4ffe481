import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { buildLease, extensionLeaseName, LeaseAnnotation, type DesiredLease } from '../../api/index.ts';
import { FakeClock } from '../../lib/testing.ts';
import { KubeErrorCode } from '../../lib/kube/errors.ts';
import { LEASE_NAMESPACE } from '../../api/index.ts';
import { namespacedLeases } from '../../lib/kube/leases.ts';
import { FakeLeaseStore } from '../../lib/kube/testing.ts';
import { LeaseWriter } from './writer.ts';

const node = { name: 'node-a', uid: 'uid-a' };
const name = extensionLeaseName(node.name, 'gpu');

function desired(state: 'Healthy' | 'Unhealthy', renewMs: number): DesiredLease {
  return {
    node,
    extension: 'gpu',
    holderIdentity: 'agent-pod',
    leaseDurationSeconds: 360,
    renewTime: new Date(renewMs),
    bootId: 'boot-1',
    record: {
      state,
      reason: state === 'Healthy' ? 'ProbeSucceeded' : 'ProbeTimeout',
      message: '',
      since: new Date(renewMs).toISOString(),
    },
  };
}

function setup() {
  const store = new FakeLeaseStore();
  const clock = new FakeClock();
  const writer = new LeaseWriter({
    store: namespacedLeases(store, LEASE_NAMESPACE, 1_000),
    clock,
    log: pino({ level: 'silent' }),
    random: () => 0.5,
  });
  return { store, clock, writer };
}

describe('LeaseWriter', () => {
  it('creates the lease on first write, then updates from the last written object without reading', async () => {
    const { store, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    await writer.write(desired('Unhealthy', 2_000));
    expect(store.calls.map((c) => c.op)).toEqual(['create', 'replace']);
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Unhealthy');
  });

  it.each([
    {
      behaviour: 'conflict then success → re-read and renewed',
      fault: () => FakeLeaseStore.conflict(),
      ops: ['create', 'replace', 'get', 'replace'],
    },
    {
      behaviour: '404 on update (deleted behind our back) → created again',
      fault: () => FakeLeaseStore.error(KubeErrorCode.NotFound, 404),
      ops: ['create', 'replace', 'create'],
    },
  ])('$behaviour', async ({ fault, ops }) => {
    const { store, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    if (ops.at(-1) === 'create') store.leases.delete(name);
    store.failNext('replace', fault());
    await writer.write(desired('Unhealthy', 2_000));
    expect(store.calls.map((c) => c.op)).toEqual(ops);
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Unhealthy');
  });

  it('lease created by an earlier agent process → AlreadyExists, read, then updated', async () => {
    const { store, writer } = setup();
    await store.create(buildLease(desired('Unhealthy', 500)), { timeoutMs: 1_000 });
    store.calls.length = 0;
    await writer.write(desired('Healthy', 1_000));
    expect(store.calls.map((c) => c.op)).toEqual(['create', 'get', 'replace']);
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Healthy');
  });

  it.each([
    { behaviour: '500 → retried after backoff', status: 500, code: KubeErrorCode.ServerError },
    { behaviour: '429 → retried after Retry-After', status: 429, code: KubeErrorCode.TooManyRequests },
    { behaviour: 'timeout → retried after backoff', status: 0, code: KubeErrorCode.Timeout },
  ])('$behaviour', async ({ status, code }) => {
    const { store, clock, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    store.failNext('replace', FakeLeaseStore.error(code, status));
    let done = false;
    const write = writer.write(desired('Unhealthy', 2_000)).then(() => (done = true));
    await clock.advance(0);
    expect(done).toBe(false);
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Healthy');
    await clock.advance(7_000);
    await write;
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Unhealthy');
  });

  it('coalesces: while a write is failing, only the newest desired state is written', async () => {
    const { store, clock, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    store.failNext('replace', FakeLeaseStore.error(KubeErrorCode.ServerError, 500));
    const first = writer.write(desired('Unhealthy', 2_000));
    await clock.advance(0);
    const second = writer.write(desired('Healthy', 3_000));
    await clock.advance(7_000);
    await Promise.all([first, second]);
    const replaces = store.calls.filter((c) => c.op === 'replace').length;
    expect(replaces).toBe(2); // the failed one, then the newest; the intermediate state is never written
    expect(store.leases.get(name)?.spec?.renewTime).toBe('1970-01-01T00:00:03.000000Z');
  });

  it('a conflict storm backs off instead of spinning', async () => {
    const { store, clock, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    for (let i = 0; i < 6; i++) store.failNext('replace', FakeLeaseStore.conflict());
    const write = writer.write(desired('Unhealthy', 2_000));
    await clock.advance(0);
    // 5 immediate re-read-and-retry rounds after the first conflict, then the writer waits.
    expect(store.calls.filter((c) => c.op === 'replace').length).toBe(6);
    await clock.advance(7_000);
    await write;
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Unhealthy');
  });

  it('remove deletes the lease and treats a missing one as deleted', async () => {
    const { store, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    await writer.remove(name);
    expect(store.leases.has(name)).toBe(false);
    await writer.remove(name);
    expect(store.calls.filter((c) => c.op === 'delete').length).toBe(2);
  });

  it('a write made while remove() waits for an in-flight write lands after the delete and stays', async () => {
    const { store, clock, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    store.failNext('replace', FakeLeaseStore.error(KubeErrorCode.ServerError, 500));
    void writer.write(desired('Unhealthy', 2_000)); // fails, then waits for its backoff
    await clock.advance(0);
    const removed = writer.remove(name); // deregistered: waits for the in-flight write
    await clock.advance(0);
    const readded = writer.write(desired('Healthy', 3_000)); // registered again before the delete ran
    await clock.advance(7_000);
    await Promise.all([removed, readded]);
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Healthy');
    const ops = store.calls.map((c) => c.op);
    expect(ops.lastIndexOf('create')).toBeGreaterThan(ops.indexOf('delete'));
  });

  it('remove keeps deleting with backoff until the lease is gone (regression: gave up after 5 attempts)', async () => {
    const { store, clock, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    for (let i = 0; i < 20; i++)
      store.failNext('delete', FakeLeaseStore.error(KubeErrorCode.ServerError, 503));
    let done = false;
    const removed = writer.remove(name).then(() => (done = true));
    for (let i = 0; i < 20; i++) await clock.advance(7_000);
    await removed;
    expect(done).toBe(true);
    expect(store.leases.has(name)).toBe(false);
    expect(store.calls.filter((c) => c.op === 'delete').length).toBe(21);
  });

  it('a lease registered again while its delete is failing stops the retries and is written', async () => {
    const { store, clock, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    for (let i = 0; i < 100; i++)
      store.failNext('delete', FakeLeaseStore.error(KubeErrorCode.ServerError, 503));
    const removed = writer.remove(name);
    await clock.advance(0);
    const readded = writer.write(desired('Unhealthy', 2_000));
    await clock.advance(7_000);
    await Promise.all([removed, readded]);
    expect(store.leases.get(name)?.metadata.annotations?.[LeaseAnnotation.state]).toBe('Unhealthy');
    expect(store.calls.filter((c) => c.op === 'delete').length).toBe(1);
  });

  it('stop() ends the retries of a delete', async () => {
    const { store, clock, writer } = setup();
    await writer.write(desired('Healthy', 1_000));
    for (let i = 0; i < 100; i++)
      store.failNext('delete', FakeLeaseStore.error(KubeErrorCode.ServerError, 503));
    const removed = writer.remove(name);
    await clock.advance(0);
    writer.stop();
    await removed;
    expect(store.calls.filter((c) => c.op === 'delete').length).toBe(1);
  });
});
