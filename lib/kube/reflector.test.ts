import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../testing.ts';
import type { KubeClient } from './client.ts';
import { isKubeError, KubeErrorCode } from './errors.ts';
import { listContinueToken } from './list.ts';
import { Reflector } from './reflector.ts';
import { FakeApiServer } from './testing.ts';

const PATH = '/api/v1/things';

interface Thing {
  metadata: { name: string; resourceVersion?: string };
  poison?: boolean;
  absorb?: boolean;
}

let api: FakeApiServer | undefined;
let client: KubeClient | undefined;
let reflector: Reflector<Thing, string> | undefined;

afterEach(async () => {
  await reflector?.stop();
  await client?.close();
  await api?.close();
  reflector = undefined;
  client = undefined;
  api = undefined;
});

/** Real time: lets the loopback round trips happen while the fake clock stands still. */
function realDelay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await realDelay(10);
  }
}

interface Setup {
  api: FakeApiServer;
  clock: FakeClock;
  reflector: Reflector<Thing, string>;
  errors: unknown[];
  skipped: Array<{ key: string; err: unknown }>;
}

/** A reflector over a loopback API server whose transform throws on objects marked `poison`. */
async function setup(
  items: Thing[] = [],
  clientOptions = {},
  options: { pageSize?: number; pageMaxBytes?: number; maxObjectBytes?: number } = {},
): Promise<Setup> {
  api = await FakeApiServer.start();
  api.serve(PATH, items);
  client = api.client(clientOptions);
  const clock = new FakeClock();
  const errors: unknown[] = [];
  const skipped: Array<{ key: string; err: unknown }> = [];
  reflector = new Reflector<Thing, string>({
    client,
    clock,
    path: PATH,
    transform: (raw) => {
      if (raw.poison) throw new TypeError(`cannot read ${raw.metadata.name}`);
      return raw.metadata.name;
    },
    handlers: {
      error: (err) => errors.push(err),
      skipped: (err, key) => skipped.push({ err, key }),
    },
    random: () => 0.5,
    ...options,
  });
  return { api, clock, reflector, errors, skipped };
}

describe('Reflector', () => {
  it('backs off when the server ends every watch at once, instead of reopening it in a tight loop', async () => {
    const { api, clock, reflector } = await setup([{ metadata: { name: 'a' } }]);
    api.watchBehaviour = 'end-at-once';
    reflector.start();
    await until(() => api.watchRequests(PATH).length >= 1, 'the first watch');
    // The fake clock stands still: a reflector that backs off waits; one that does not reopens hundreds of times.
    await realDelay(300);
    expect(api.watchRequests(PATH)).toHaveLength(1);
    expect(clock.pending).toBeGreaterThanOrEqual(1);

    await clock.advance(1_000); // the first backoff (0.8 s with this jitter) has passed: one more attempt
    await until(() => api.watchRequests(PATH).length >= 2, 'the second watch');
    await realDelay(100);
    expect(api.watchRequests(PATH)).toHaveLength(2);
  });

  it('reopens a watch that delivered events at once, from the last resourceVersion', async () => {
    const { api, reflector } = await setup([{ metadata: { name: 'a' } }]);
    reflector.start();
    await until(() => api.watchRequests(PATH).length === 1, 'the first watch');
    api.emit(PATH, 'ADDED', { metadata: { name: 'b' } });
    await until(() => reflector.store.has('b'), 'b');
    const rv = reflector.lastResourceVersion;
    api.endWatches(PATH);
    await until(() => api.watchRequests(PATH).length === 2, 'the watch to be reopened without waiting');
    expect(api.watchRequests(PATH)[1]?.query.get('resourceVersion')).toBe(rv);
  });

  it('skips a poison event (a transform that throws) and goes on from the next one, without restarting the watch', async () => {
    const { api, reflector, errors, skipped } = await setup([{ metadata: { name: 'a' } }]);
    reflector.start();
    await until(() => api.watchRequests(PATH).length === 1, 'the first watch');
    api.emit(PATH, 'ADDED', { metadata: { name: 'bad' }, poison: true });
    api.emit(PATH, 'ADDED', { metadata: { name: 'b' } });
    await until(() => reflector.store.has('b'), 'the event after the poison one');
    expect(skipped.map((s) => s.key)).toEqual(['bad']);
    expect(String(skipped[0]?.err)).toMatch(/cannot read bad/);
    expect(reflector.store.has('bad')).toBe(false);
    expect(errors).toEqual([]);
    expect(api.watchRequests(PATH)).toHaveLength(1);
  });

  it('asks for each next LIST page before it decodes the page in hand, and keeps every page', async () => {
    api = await FakeApiServer.start();
    api.serve(
      PATH,
      Array.from({ length: 7 }, (_, i) => ({ metadata: { name: `t${i}` } })),
    );
    const real = api.client();
    client = real;
    let gets = 0;
    const counting = Object.create(real, {
      get: { value: (...args: Parameters<KubeClient['get']>) => (gets++, real.get(...args)) },
    }) as KubeClient;
    const asked: Record<string, number> = {};
    reflector = new Reflector<Thing, string>({
      client: counting,
      clock: new FakeClock(),
      path: PATH,
      pageSize: 3,
      transform: (raw) => {
        asked[raw.metadata.name] = gets; // the pages asked for when this object is decoded
        return raw.metadata.name;
      },
      handlers: {},
    });
    reflector.start();
    await until(() => reflector!.synced, 'the first sync');
    expect([...reflector.store.keys()]).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6']);
    // Page 1 (t0-t2) is decoded with page 2 already asked for, page 2 with page 3; page 3 names no next one.
    expect(asked).toEqual({ t0: 2, t1: 2, t2: 2, t3: 3, t4: 3, t5: 3, t6: 3 });
    expect(api.listRequests(PATH).map((r) => r.query.get('continue'))).toEqual([null, 'Mw', 'Ng']);
  });

  it.each([
    [
      'the API server names one',
      '{"kind":"LeaseList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"eyJ2Ijo"},"items":[',
      'eyJ2Ijo',
    ],
    [
      'the last page names none',
      '{"kind":"LeaseList","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"continue":"x"}}]}',
      undefined,
    ],
    [
      'the items come first',
      '{"items":[{"metadata":{"continue":"x"}}],"metadata":{"continue":"y"}}',
      undefined,
    ],
    ['the token has an escape', '{"metadata":{"continue":"a\\u0022b"},"items":[]}', undefined],
    ['an empty token', '{"metadata":{"continue":""},"items":[]}', undefined],
  ])("reads a LIST page's continue token from its text when %s", (_, text, token) => {
    expect(listContinueToken(text)).toBe(token);
  });

  it('skips a poison object in a LIST and still syncs', async () => {
    const { api, reflector, skipped } = await setup([
      { metadata: { name: 'a' } },
      { metadata: { name: 'bad' }, poison: true },
    ]);
    reflector.start();
    await until(() => reflector.synced, 'the first sync');
    expect([...reflector.store.keys()]).toEqual(['a']);
    expect(skipped.map((s) => s.key)).toEqual(['bad']);
    expect(api.listRequests(PATH)).toHaveLength(1);
  });

  it('treats a watch line over the limit as an error that relists', async () => {
    const { api, clock, reflector, errors } = await setup([{ metadata: { name: 'a' } }], {
      maxWatchLineBytes: 1024,
    });
    reflector.start();
    await until(() => api.watchRequests(PATH).length === 1, 'the first watch');
    api.emitRaw(PATH, `{"type":"ADDED","object":{"metadata":{"name":"${'x'.repeat(2048)}`);
    await until(() => errors.length === 1, 'the watch to fail');
    expect(isKubeError(errors[0], KubeErrorCode.Malformed)).toBe(true);
    await clock.advance(1_000);
    await until(() => api.listRequests(PATH).length === 2, 'a relist');
  });
});

describe('Reflector: one object never fails its page or its watch, nor makes it hold more (issue 50)', () => {
  it('skips a watch event over maxObjectBytes, named from its first bytes: its stored object goes, the watch goes on', async () => {
    const { api, reflector, errors, skipped } = await setup(
      [{ metadata: { name: 'a' } }, { metadata: { name: 'big' } }],
      {},
      { maxObjectBytes: 1024 },
    );
    reflector.start();
    await until(() => api.watchRequests(PATH).length === 1, 'the first watch');
    expect([...reflector.store.keys()]).toEqual(['a', 'big']);
    api.emit(PATH, 'MODIFIED', { metadata: { name: 'big' }, pad: 'x'.repeat(4096) });
    api.emit(PATH, 'ADDED', { metadata: { name: 'after' } });
    await until(() => reflector.store.has('after'), 'the event after it');
    expect([...reflector.store.keys()]).toEqual(['a', 'after']);
    expect(skipped.map((s) => s.key)).toEqual(['big']);
    expect(String(skipped[0]?.err)).toMatch(/longer than 1024 bytes/);
    expect(errors).toEqual([]);
    expect(api.listRequests(PATH)).toHaveLength(1);
    expect(api.watchRequests(PATH)).toHaveLength(1);
  });

  it('reports the objects a LIST decoder could not read as skipped, drops what it held for them, and syncs', async () => {
    api = await FakeApiServer.start();
    api.serve(PATH, [{ metadata: { name: 'a' } }]);
    const real = api.client();
    client = real;
    const decoded = Object.create(real, {
      get: {
        value: async (...args: Parameters<KubeClient['get']>) => ({
          ...(await real.get<object>(...args)),
          skipped: [{ key: 'unreadable', err: new Error('a time out of range') }],
        }),
      },
    }) as KubeClient;
    const skipped: string[] = [];
    reflector = new Reflector<Thing, string>({
      client: decoded,
      clock: new FakeClock(),
      path: PATH,
      transform: (raw) => raw.metadata.name,
      handlers: { skipped: (_, key) => skipped.push(key) },
    });
    reflector.start();
    await until(() => reflector!.synced, 'the first sync');
    expect([...reflector.store.keys()]).toEqual(['a']);
    expect(skipped).toEqual(['unreadable']);
  });

  it('asks for a LIST page over pageMaxBytes again with a quarter of the items, and lets the pages grow back after', async () => {
    const items: Thing[] = Array.from({ length: 40 }, (_, i) => ({
      metadata: { name: `t${String(i).padStart(2, '0')}` },
      ...(i >= 8 && i < 12 ? { pad: 'x'.repeat(3000) } : {}),
    }));
    const { api, reflector, skipped } = await setup(items, {}, { pageSize: 16, pageMaxBytes: 8192 });
    reflector.start();
    await until(() => reflector.synced, 'the first sync');
    expect(reflector.store.size).toBe(40);
    expect(skipped).toEqual([]);
    const asked = api.listRequests(PATH).map((r) => [r.query.get('continue'), Number(r.query.get('limit'))]);
    // 16 with the four large ones is over 8 KiB: 4 again, then fewer while they last, then 16 again.
    expect(asked[0]).toEqual([null, 16]);
    expect(asked[1]).toEqual([null, 4]);
    const limits = api.listRequests(PATH).map((r) => Number(r.query.get('limit')));
    expect(Math.min(...limits)).toBeLessThan(4);
    expect(limits.at(-1)).toBe(16);
  });
});

describe('Reflector updates a handler absorbs', () => {
  it('keeps the object the updated handler returns instead of the new one, and the new one when it returns nothing', async () => {
    api = await FakeApiServer.start();
    api.serve(PATH, [{ metadata: { name: 'a' } }]);
    client = api.client();
    type Kept = { rv: string; absorb: boolean };
    const absorbing = new Reflector<Thing, Kept>({
      client,
      clock: new FakeClock(),
      path: PATH,
      transform: (raw) => ({ rv: raw.metadata.resourceVersion ?? '', absorb: raw.absorb === true }),
      handlers: {
        updated: (obj, old) => {
          if (!obj.absorb) return;
          old.rv = obj.rv;
          return old;
        },
      },
      random: () => 0.5,
    });
    try {
      absorbing.start();
      await until(() => absorbing.synced, 'the first sync');
      // An event emitted before the watch is open would be lost.
      await until(() => api!.watchRequests(PATH).length === 1, 'the watch');
      const first = absorbing.store.get('a');
      const listed = first?.rv;
      api.emit(PATH, 'MODIFIED', { metadata: { name: 'a' }, absorb: true });
      await until(() => first?.rv !== listed, 'the absorbed update');
      expect(absorbing.store.get('a')).toBe(first);
      api.emit(PATH, 'MODIFIED', { metadata: { name: 'a' } });
      await until(() => absorbing.store.get('a') !== first, 'the kept update');
      expect(absorbing.store.get('a')?.absorb).toBe(false);
      expect(first?.absorb).toBe(false);
    } finally {
      await absorbing.stop();
    }
  });
});
