import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_POLICY,
  LeaseAnnotation,
  parseExtensionSpec,
  type LeaseObject,
  type Registration,
} from '../api/index.ts';
import { LEASE_NAMESPACE } from '../api/names.ts';
import { ProbeReason } from '../api/reasons.ts';
import { FakeClock } from '../lib/testing.ts';
import { AGENT_OPTIONS } from './config.ts';
import { namespacedLeases, type LeaseCallOptions } from '../lib/kube/leases.ts';
import { FakeLeaseStore } from '../lib/kube/testing.ts';
import { LeaseWriter } from './leases/writer.ts';
import { AgentMetrics } from './metrics.ts';
import type { ProbeContext, ProbeResult } from './probes/types.ts';
import { HEARTBEAT_RENEWALS_PER_DURATION } from './heartbeat.ts';
import { ExtensionRunner, MESSAGE_REFRESH_MS, type RunnerDeps } from './runner.ts';

const NODE = { name: 'node-a', uid: 'uid-a' };
const DEFAULT_RENEW_MS = AGENT_OPTIONS['extension-renew-seconds'].default * 1000;

const OK: ProbeResult = { outcome: 'Healthy', reason: ProbeReason.ProbeSucceeded, message: 'HTTP 200' };
const REFUSED: ProbeResult = {
  outcome: 'Unhealthy',
  reason: ProbeReason.ConnectionRefused,
  message: 'connection refused (127.0.0.1:8080)',
};

interface Write {
  atMs: number;
  op: 'create' | 'replace';
  state: string | undefined;
  reason: string | undefined;
  message: string | undefined;
  bootId: string | undefined;
}

/** The fake store, recording when (by the fake clock) each write landed and what it carried. */
class RecordingStore extends FakeLeaseStore {
  readonly writes: Write[] = [];
  private readonly clock: FakeClock;

  constructor(clock: FakeClock) {
    super();
    this.clock = clock;
  }

  private record(op: Write['op'], atMs: number, lease: LeaseObject): void {
    const annotations = lease.metadata.annotations ?? {};
    this.writes.push({
      atMs,
      op,
      state: annotations[LeaseAnnotation.state],
      reason: annotations[LeaseAnnotation.reason],
      message: annotations[LeaseAnnotation.message],
      bootId: annotations[LeaseAnnotation.bootId],
    });
  }

  override async create(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject> {
    const atMs = this.clock.now();
    const created = await super.create(lease, options);
    this.record('create', atMs, created);
    return created;
  }

  override async replace(lease: LeaseObject, options: LeaseCallOptions): Promise<LeaseObject> {
    const atMs = this.clock.now();
    const replaced = await super.replace(lease, options);
    this.record('replace', atMs, replaced);
    return replaced;
  }
}

function registration(spec: Record<string, unknown>): Registration {
  const { result } = parseExtensionSpec(spec);
  if (!result.ok) throw new Error(result.problems.join('; '));
  return { name: 'web', source: 'annotation', valid: true, spec: result.value, policy: DEFAULT_POLICY };
}

/** The default period (10 s) and failureThreshold (3), made explicit; no startup grace. */
const WEB = registration({
  probe: { http: { url: 'http://127.0.0.1:8080/healthz' } },
  periodSeconds: 10,
  failureThreshold: 3,
  startupGraceSeconds: 0,
});

type FakeProbe = (ctx: ProbeContext) => Promise<ProbeResult>;

interface Harness {
  clock: FakeClock;
  store: RecordingStore;
  writer: LeaseWriter;
  probes: number;
  /** The node's boot ID as the runner's target reports it; a test changes it to simulate a reboot. */
  bootId: string;
  runner(name: string, reg: Registration): ExtensionRunner;
}

/**
 * One LeaseWriter and store shared by every runner, as in the agent. `random` is 0.5 unless given, which
 * makes the first probe come 500 ms after start and every later one exactly one period after the last.
 */
function harness(probe: FakeProbe, options: { random?: () => number } = {}): Harness {
  const clock = new FakeClock();
  const store = new RecordingStore(clock);
  const log = pino({ level: 'silent' });
  const random = options.random ?? (() => 0.5);
  const metrics = new AgentMetrics(new Registry());
  const leases = namespacedLeases(store, LEASE_NAMESPACE, 1_000);
  const writer = new LeaseWriter({ store: leases, clock, log, metrics, random });
  const h: Harness = {
    clock,
    store,
    writer,
    probes: 0,
    bootId: 'boot-1',
    runner(name, reg) {
      const deps: RunnerDeps = {
        clock,
        log,
        writer,
        metrics,
        env: { node: () => undefined, pods: async () => [], resourceSlices: async () => [] },
        runProbe: (_spec, ctx) => {
          h.probes++;
          return probe(ctx);
        },
        target: () => ({ node: NODE, bootId: h.bootId, holderIdentity: 'nodecare-agent-node-a' }),
        renewIntervalMs: DEFAULT_RENEW_MS,
        random,
      };
      // The grace started an hour ago, so it is over for every registration here: failures count at once.
      const runner = new ExtensionRunner(name, { ...reg, name }, clock.now() - 3_600_000, deps);
      runner.start();
      return runner;
    },
  };
  return h;
}

/** Write times in seconds since the harness clock started. */
function writeTimes(h: Harness, startMs: number): number[] {
  return h.store.writes.map((w) => (w.atMs - startMs) / 1000);
}

describe('ExtensionRunner', () => {
  it('writes a failure at once: the state flips on the failureThreshold-th failure, not at the next renewal', async () => {
    let result = OK;
    const h = harness(async () => result);
    const t0 = h.clock.now();
    h.runner('web', WEB);
    await h.clock.advance(30_000); // probes at 0.5, 10.5, 20.5 s
    // Nothing is published before the first probe result (no AwaitingFirstProbe flap on agent restarts).
    expect(h.store.writes.map((w) => w.state)).toEqual(['Healthy']);

    result = REFUSED; // probes at 30.5, 40.5 and 50.5 s fail; the third one flips the state
    await h.clock.advance(20_400);
    expect(h.store.writes).toHaveLength(1);
    await h.clock.advance(100);
    expect(writeTimes(h, t0)).toEqual([0.5, 50.5]);
    expect(h.store.writes[1]).toMatchObject({
      state: 'Unhealthy',
      reason: 'ConnectionRefused',
      message: 'connection refused (127.0.0.1:8080)',
    });
    // The renewal (due a renewal interval after the last write) would have come much later.
    expect(h.store.writes[1]!.atMs - h.store.writes[0]!.atMs).toBeLessThan(DEFAULT_RENEW_MS);

    result = OK; // recovery is a state change too, written by the probe that sees it (60.5 s)
    await h.clock.advance(10_000);
    expect(writeTimes(h, t0)).toEqual([0.5, 50.5, 60.5]);
    expect(h.store.writes[2]?.state).toBe('Healthy');
  });

  it('renews an unchanged state only every renewal interval, never on each probe', async () => {
    const h = harness(async () => OK);
    const t0 = h.clock.now();
    h.runner('web', WEB);
    await h.clock.advance(3_600_000);
    expect(h.probes).toBeGreaterThanOrEqual(360);
    const times = writeTimes(h, t0);
    // Created Healthy by the first probe, then one renewal per interval.
    const renewS = DEFAULT_RENEW_MS / 1000;
    expect(times.slice(0, 2)).toEqual([0.5, 0.5 + renewS]);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    for (const gap of gaps) expect(gap).toBe(renewS);
    expect(times).toHaveLength(1 + Math.floor((3_600 - 0.5) / renewS));
    expect(h.store.writes.every((w) => w.state === 'Healthy')).toBe(true);
  });

  it('renews on its own timer when the probe period is longer than the renewal interval', async () => {
    const h = harness(async () => OK);
    const t0 = h.clock.now();
    const slow = registration({
      probe: { tcp: { port: 8080 } },
      periodSeconds: 3600,
      startupGraceSeconds: 0,
    });
    expect(slow.valid && slow.spec.periodSeconds * 1000).toBeGreaterThan(DEFAULT_RENEW_MS);
    h.runner('slow', slow);
    await h.clock.advance(10_800_000);
    const times = writeTimes(h, t0);
    expect(times[0]).toBe(0.5);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    // Every renewal comes one interval after the previous write: the lease (3 intervals long) never runs
    // on less than two intervals of margin.
    for (const gap of gaps) expect(gap).toBe(DEFAULT_RENEW_MS / 1000);
    expect(times).toHaveLength(1 + Math.floor((10_800 - 0.5) / (DEFAULT_RENEW_MS / 1000)));
  });

  it('writes a change of message alone MESSAGE_REFRESH_MS after the last write, with the newest message', async () => {
    let n = 0;
    let chatty = true;
    const h = harness(async () => ({ ...OK, message: `HTTP 200 in ${chatty ? ++n : n} ms` }));
    const t0 = h.clock.now();
    h.runner('web', WEB);
    expect(MESSAGE_REFRESH_MS).toBeLessThan(DEFAULT_RENEW_MS);
    await h.clock.advance(119_000); // 12 probes, each with a new message
    expect(h.probes).toBe(12);
    expect(writeTimes(h, t0)).toEqual([0.5]);
    expect(h.store.writes[0]?.message).toBe('HTTP 200 in 1 ms');

    await h.clock.advance(2_000); // the probe at 120.5 s is the first one after the refresh fell due
    expect(writeTimes(h, t0)).toEqual([0.5, 120.5]);
    expect(h.store.writes[1]?.message).toBe('HTTP 200 in 13 ms');

    // The message stays as written: nothing more until the renewal, a whole interval after that write.
    chatty = false;
    await h.clock.advance(DEFAULT_RENEW_MS);
    expect(writeTimes(h, t0)).toEqual([0.5, 120.5, 120.5 + DEFAULT_RENEW_MS / 1000]);
    expect(h.store.writes[2]?.message).toBe('HTTP 200 in 13 ms');
  });

  it('publishes an invalid registration as Unknown / InvalidRegistration at once, never probes it, and keeps renewing it', async () => {
    const h = harness(async () => OK);
    const t0 = h.clock.now();
    const invalid: Registration = {
      name: 'broken',
      source: 'annotation',
      valid: false,
      problems: ['probe.tcp.port: required', 'periodSeconds: expected an integer from 1 to 3600, got 0'],
      policy: DEFAULT_POLICY,
    };
    const runner = h.runner('broken', invalid);
    await h.clock.advance(0);
    expect(h.store.writes[0]).toMatchObject({
      op: 'create',
      state: 'Unknown',
      reason: 'InvalidRegistration',
      message: 'probe.tcp.port: required; periodSeconds: expected an integer from 1 to 3600, got 0',
    });
    expect(runner.record.state).toBe('Unknown');

    await h.clock.advance(3 * DEFAULT_RENEW_MS);
    expect(h.probes).toBe(0);
    const renewS = DEFAULT_RENEW_MS / 1000;
    expect(writeTimes(h, t0)).toEqual([0, renewS, 2 * renewS, 3 * renewS]);
    expect(h.store.writes.every((w) => w.reason === 'InvalidRegistration')).toBe(true);
  });

  it('publishes nothing when stopped while a probe is running, and stops renewing', async () => {
    // The probe answers only when its signal aborts, as runProbe does at its deadline (ProbeTimeout).
    const h = harness(
      (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () =>
            resolve({
              outcome: 'Unhealthy',
              reason: ProbeReason.ProbeTimeout,
              message: 'no answer within 3s',
            }),
          );
        }),
    );
    const failFast = registration({
      probe: { tcp: { port: 8080 } },
      periodSeconds: 10,
      failureThreshold: 1,
      startupGraceSeconds: 0,
    });
    const runner = h.runner('web', failFast);
    await h.clock.advance(500);
    expect(h.probes).toBe(1);
    expect(h.store.writes).toEqual([]); // nothing before the first result

    runner.stop(); // aborts the running probe: its (failing) answer must not be published
    await h.clock.advance(3_600_000);
    expect(h.store.writes).toEqual([]);
    expect(h.probes).toBe(1);
    expect(h.clock.pending).toBe(0);
  });

  it('keeps probing after a re-registration that arrives while a probe is running', async () => {
    const answers: Array<(r: ProbeResult) => void> = [];
    const h = harness(() => new Promise((resolve) => answers.push(resolve)));
    const runner = h.runner('web', WEB);
    await h.clock.advance(500); // the first probe of the first registration starts and hangs
    expect(answers).toHaveLength(1);

    const changed = registration({
      probe: { http: { url: 'http://127.0.0.1:8081/' } },
      startupGraceSeconds: 0,
    });
    runner.update({ ...changed, name: 'web' }, h.clock.now());
    await h.clock.advance(1_000); // the new registration's first probe falls due while the old one runs
    answers[0]?.(REFUSED); // the old registration's answer arrives late and is dropped...
    await h.clock.advance(0);
    await h.clock.advance(1_000); // ...and the new registration is probed right after it
    expect(answers.length).toBeGreaterThanOrEqual(2);
    answers.at(-1)?.(OK);
    await h.clock.advance(0);
    expect(runner.record.state).toBe('Healthy');
    // It goes on probing every period.
    const before = answers.length;
    for (let i = 0; i < 3; i++) {
      await h.clock.advance(10_000);
      answers.at(-1)?.(OK);
      await h.clock.advance(0);
    }
    expect(answers.length).toBe(before + 3);
    expect(h.store.writes.map((w) => w.state)).not.toContain('Unhealthy');
  });

  it('keeps the write budget (docs/design.md P4): 5 healthy extensions plus the heartbeat stay at or under 0.2 writes/s', async () => {
    // A small deterministic PRNG, so that the jitter differs between extensions and probes.
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const h = harness(async () => OK, { random });
    for (const name of ['gpu-plugin', 'csi-node', 'cni', 'kube-proxy', 'log-agent']) {
      h.runner(name, registration({ probe: { tcp: { port: 8080 } }, periodSeconds: 10 }));
    }
    await h.clock.advance(300_000); // start-up: creates and first results
    const startUpWrites = h.store.writes.length;
    const hourMs = 3_600_000;
    await h.clock.advance(hourMs);
    const extensionWrites = h.store.writes.length - startUpWrites;
    expect(
      h.store.writes.slice(startUpWrites).every((w) => w.op === 'replace' && w.state === 'Healthy'),
    ).toBe(true);
    // The heartbeat is not part of the runner: runAgent renews it every third of its duration (±4 % jitter),
    // i.e. 60 s / 3 = every 20 s by default, one write each.
    const heartbeatIntervalSeconds =
      AGENT_OPTIONS['heartbeat-duration-seconds'].default / HEARTBEAT_RENEWALS_PER_DURATION;
    const heartbeatPerSecond = 1 / heartbeatIntervalSeconds;
    const extensionPerSecond = extensionWrites / (hourMs / 1000);
    const total = extensionPerSecond + heartbeatPerSecond;
    expect(
      total,
      `extension leases ${extensionWrites} writes/h = ${extensionPerSecond.toFixed(3)}/s + heartbeat 1 per ${heartbeatIntervalSeconds} s = ${heartbeatPerSecond.toFixed(3)}/s`,
    ).toBeLessThanOrEqual(0.2);
    // 5 leases × one renewal per interval (give or take one renewal each at the edges of the hour).
    expect(Math.abs(extensionWrites - 5 * (hourMs / DEFAULT_RENEW_MS))).toBeLessThanOrEqual(5);
    expect(h.probes).toBeGreaterThanOrEqual(5 * 390 - 10);
  });

  it('rewrites the lease with the new boot ID right after a reboot, though the result equals the last write', async () => {
    const h = harness(async () => OK);
    const runner = h.runner('web', WEB);
    await h.clock.advance(30_000);
    expect(h.store.writes.map((w) => [w.state, w.bootId])).toEqual([['Healthy', 'boot-1']]);

    // The agent sees the node's new boot ID and re-registers the extension (grace from now).
    h.bootId = 'boot-2';
    runner.update(WEB, h.clock.now());
    await h.clock.advance(2_000); // the first probe after re-registration comes within a second
    expect(h.store.writes.map((w) => [w.state, w.bootId])).toEqual([
      ['Healthy', 'boot-1'],
      ['Healthy', 'boot-2'],
    ]);
  });

  it('republish() writes at once when only the target changed (the Node was re-created), and not otherwise', async () => {
    const h = harness(async () => OK);
    const runner = h.runner('web', WEB);
    await h.clock.advance(30_000);
    runner.republish();
    await h.clock.advance(0);
    expect(h.store.writes).toHaveLength(1);
    h.bootId = 'boot-2';
    runner.republish();
    await h.clock.advance(0);
    expect(h.store.writes.map((w) => w.bootId)).toEqual(['boot-1', 'boot-2']);
  });

  it('a probe that throws leaves the runner probing on schedule, not stuck with a stale Healthy', async () => {
    let mode: 'ok' | 'throw' | 'refused' = 'ok';
    const h = harness(async () => {
      if (mode === 'throw') throw new Error('probe bug');
      return mode === 'ok' ? OK : REFUSED;
    });
    const runner = h.runner('web', WEB);
    await h.clock.advance(30_000);
    expect(runner.record.state).toBe('Healthy');

    mode = 'throw'; // the next probe (30.5 s) throws: it counts as a failure to determine, not a hang
    await h.clock.advance(10_000);
    mode = 'refused';
    await h.clock.advance(30_000);
    expect(runner.record.state).toBe('Unhealthy');
    expect(h.store.writes.at(-1)?.state).toBe('Unhealthy');
  });
});

// Regression, issue 7 item 2 (agent side): an annotation ignored in favour of a SystemExtension is reported on
// that extension's Lease, without restarting its state machine.
describe('ExtensionRunner notes', () => {
  it('appends a note to the Lease message at once, keeps the state, and drops it at once', async () => {
    const h = harness(async () => OK);
    const runner = h.runner('web', WEB);
    await h.clock.advance(1_000);
    runner.setNote('annotation ignored');
    await h.clock.advance(1_000);
    runner.setNote('annotation ignored'); // unchanged: no write
    runner.setNote(undefined);
    await h.clock.advance(1_000);
    expect(h.store.writes.map((w) => [w.state, w.message])).toEqual([
      ['Healthy', 'HTTP 200'],
      ['Healthy', 'HTTP 200 [annotation ignored]'],
      ['Healthy', 'HTTP 200'],
    ]);
    expect(runner.record.state).toBe('Healthy');
  });

  it('a note set before the first probe waits for it (no AwaitingFirstProbe write)', async () => {
    const h = harness(async () => OK);
    const runner = h.runner('web', WEB);
    runner.setNote('annotation ignored');
    await h.clock.advance(1_000);
    expect(h.store.writes.map((w) => w.message)).toEqual(['HTTP 200 [annotation ignored]']);
  });
});
