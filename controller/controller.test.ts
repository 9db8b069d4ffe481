// The whole controller (runController) over a hand-written API client whose node writes hang until they are
// aborted, with the real LeaderElector on a FakeLeaseStore: a term's in-flight work is cut off and
// awaited before the lease is released, nothing is written once leadership is lost, and stop() releases
// the lease within its budget even while a request hangs (issue 7 items 8 and 17).

import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { buildLease } from '../api/lease.ts';
import { EXTENSION_ANNOTATION_PREFIX, ExtensionState, LEASE_NAMESPACE } from '../api/names.ts';
import { ProbeReason } from '../api/reasons.ts';
import { systemClock, type Clock } from '../lib/clock.ts';
import { FakeClock } from '../lib/testing.ts';
import type { KubeClient, RequestOptions } from '../lib/kube/client.ts';
import { KubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { createLogger } from '../lib/log.ts';
import { loadControllerConfig } from './config.ts';
import { runController, type RunningController } from './controller.ts';
import { LeaderElector } from '../lib/leader/elector.ts';
import { FakeLeaseStore } from '../lib/kube/testing.ts';
import { consistently } from '../test/integration/helpers.ts';

const NODE = 'node-a';
const UID = 'uid-a';
const BOOT = 'boot-1';

/** Lists one node that needs writing and its live leases; watches stay open; every write hangs until aborted. */
class HangingClient {
  readonly server = 'https://fake';
  readonly writes: Array<{ method: string; path: string; aborted: boolean }> = [];
  /** While down, every list fails as in an API outage. */
  down = false;
  private readonly openWatches = new Set<() => void>();

  /** Ends every open watch (the server went away). */
  endWatches(): void {
    for (const end of this.openWatches) end();
  }

  async get(path: string): Promise<unknown> {
    if (this.down) throw new KubeError(KubeErrorCode.Network, 0, `GET ${path}: connection refused`);
    const items = path.endsWith('/nodes')
      ? [
          {
            metadata: {
              name: NODE,
              uid: UID,
              resourceVersion: '1',
              creationTimestamp: new Date(Date.now() - 60_000).toISOString(),
              annotations: { [`${EXTENSION_ANNOTATION_PREFIX}web`]: 'http://127.0.0.1:8080/' },
            },
            status: { nodeInfo: { bootID: BOOT } },
          },
        ]
      : path.endsWith(`/namespaces/${LEASE_NAMESPACE}/leases`)
        ? [undefined, 'web'].map((extension) =>
            buildLease({
              node: { name: NODE, uid: UID },
              extension,
              holderIdentity: 'agent',
              leaseDurationSeconds: 600,
              renewTime: new Date(),
              bootId: BOOT,
              record: extension
                ? {
                    state: ExtensionState.Healthy,
                    reason: ProbeReason.ProbeSucceeded,
                    message: '',
                    since: '',
                  }
                : undefined,
            }),
          )
        : [];
    return { metadata: { resourceVersion: '1' }, items };
  }

  async watch(_path: string, _query: unknown, _onEvent: unknown, signal: AbortSignal): Promise<void> {
    if (this.down) throw new KubeError(KubeErrorCode.Network, 0, 'WATCH: connection refused');
    await new Promise<void>((resolve) => {
      const end = (): void => {
        this.openWatches.delete(end);
        resolve();
      };
      this.openWatches.add(end);
      signal.addEventListener('abort', end, { once: true });
    });
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<unknown> {
    if (method === 'GET') return this.get(path);
    const write = { method, path, aborted: false };
    this.writes.push(write);
    if (this.down) throw new KubeError(KubeErrorCode.Network, 0, `${method} ${path}: connection refused`);
    await new Promise<void>((_resolve, reject) => {
      const abort = (): void => {
        write.aborted = true;
        reject(new KubeError(KubeErrorCode.Timeout, 0, `${method} ${path}: aborted`));
      };
      if (options.signal?.aborted) abort();
      options.signal?.addEventListener('abort', abort, { once: true });
    });
    return {};
  }
}

const running: RunningController[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((c) => c.stop(1_000)));
});

async function start(clock: Clock = systemClock, options: { down?: boolean } = {}) {
  const loaded = loadControllerConfig(['--health-port=0', '--health-address=127.0.0.1', '--identity=me'], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  const client = new HangingClient();
  client.down = options.down ?? false;
  const store = new FakeLeaseStore();
  const elector = new LeaderElector({
    store,
    clock,
    log: createLogger({ level: 'silent', name: 'test' }),
    identity: 'me',
    name: 'nodecare-controller',
    leaseDurationMs: 3_000,
    renewDeadlineMs: 2_000,
    retryPeriodMs: 200,
  });
  const synced = { calls: 0 };
  const controller = await runController(loaded.config, {
    clock,
    log: createLogger({ level: 'silent', name: 'test' }),
    registry: new Registry(),
    client: client as unknown as KubeClient,
    elector,
    settled: () => synced.calls++,
  });
  running.push(controller);
  return { client, store, controller, synced };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

describe('runController leadership terms', () => {
  it('stop() with a write hanging: the write is cut off and awaited, then the lease is released within the budget', async () => {
    const { client, store, controller } = await start();
    await until(() => client.writes.length > 0, 'the first write to go out and hang');
    await controller.stop(2_000);
    running.length = 0;
    expect(client.writes.every((w) => w.aborted)).toBe(true);
    const release = store.calls.at(-1);
    expect(release?.op).toBe('replace');
    expect(release?.timeoutMs).toBeLessThanOrEqual(2_000);
    expect(store.lease('nodecare-system', 'nodecare-controller')?.spec?.holderIdentity).toBe('');
  });

  it('leadership lost (renewals fail) mid-write: the write is cut off and nothing more is written', async () => {
    const { client, store, controller } = await start();
    await until(() => client.writes.length > 0, 'the first write to go out and hang');
    store.failNext('replace', FakeLeaseStore.unavailable(), 1_000);
    await until(() => !controller.isLeader(), 'leadership to be lost');
    await until(() => client.writes.every((w) => w.aborted), 'the in-flight write to be cut off');
    const written = client.writes.length;
    await consistently(() => expect(client.writes).toHaveLength(written), 500, {
      intervalMs: 25,
      what: 'no write after leadership was lost',
    });
  });

  it('after an API outage a replica that leads again writes only once its caches have relisted', async () => {
    const { client, store, controller, synced } = await start();
    await until(() => client.writes.length > 0, 'the first write to go out and hang');
    // The program's steady-state settings (settled: controller/settled.ts) wait for the first term's first
    // pass to drain, and a write of it hangs.
    expect(synced.calls).toBe(0);
    // The outage: watches end, lists fail, renewals fail until leadership is lost.
    client.down = true;
    client.endWatches();
    store.failNext('replace', FakeLeaseStore.unavailable(), 1_000);
    await until(() => !controller.isLeader(), 'leadership to be lost');
    // The term ended, its queue with it: that was the first settle.
    await until(() => synced.calls === 1, 'the first settle, once the term stopped');
    // The election answers again before the lists do: on caches not in sync this replica does not even
    // campaign (issue 50 item 5), so it neither leads nor writes.
    store.clearFaults();
    const written = client.writes.length;
    await consistently(
      () => {
        expect(controller.isLeader()).toBe(false);
        expect(client.writes).toHaveLength(written);
      },
      1_000,
      { intervalMs: 25, what: 'neither leading nor writing on unsynced caches' },
    );
    // The lists answer: the caches relist, and only then it leads and the work (and its writes) starts again.
    client.down = false;
    await until(() => controller.isLeader(), 'leadership regained');
    await until(() => client.writes.length > written, 'a write after the relist');
    // Once only: not again for the relist or the second term.
    expect(synced.calls).toBe(1);
  });

  it('/healthz fails once a reconcile has hung beyond the liveness limit (fake clock)', async () => {
    const clock = new FakeClock(Date.now());
    const { client, controller } = await start(clock);
    for (let i = 0; i < 100 && client.writes.length === 0; i++) await clock.advance(100);
    expect(client.writes.length).toBeGreaterThan(0);
    const healthz = async (): Promise<number> =>
      (await fetch(`http://127.0.0.1:${controller.healthPort}/healthz`)).status;
    expect(await healthz()).toBe(200);
    // 30 request timeouts (10 s each): no reconcile takes that long unless it is wedged.
    for (let ms = 0; ms < 290_000; ms += 1_000) await clock.advance(1_000);
    expect(await healthz()).toBe(200);
    for (let ms = 0; ms < 11_000; ms += 1_000) await clock.advance(1_000);
    expect(await healthz()).toBe(503);
    // Stop on the fake clock: the drain waits on it.
    running.length = 0;
    let stopped = false;
    const stopping = controller.stop(1_000).then(() => (stopped = true));
    for (let i = 0; i < 100 && !stopped; i++) await clock.advance(100);
    await stopping;
  });

  it('caches that never sync (every list fails): the lease is never taken, /healthz fails after --startup-sync-timeout-seconds (fake clock)', async () => {
    const clock = new FakeClock(Date.now());
    const { store, controller } = await start(clock, { down: true });
    const healthz = async (): Promise<number> =>
      (await fetch(`http://127.0.0.1:${controller.healthPort}/healthz`)).status;
    for (let ms = 0; ms < 299_000; ms += 1_000) await clock.advance(1_000);
    expect(await healthz()).toBe(200);
    expect(controller.isLeader()).toBe(false);
    expect(store.lease('nodecare-system', 'nodecare-controller')).toBeUndefined();
    for (let ms = 0; ms < 1_000; ms += 1_000) await clock.advance(1_000);
    expect(await healthz()).toBe(503);
    running.length = 0;
    let stopped = false;
    const stopping = controller.stop(1_000).then(() => (stopped = true));
    for (let i = 0; i < 100 && !stopped; i++) await clock.advance(100);
    await stopping;
  });
});
