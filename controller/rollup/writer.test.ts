import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ExtensionState, NODE_STATUS_LABEL, type PublishedPolicy } from '../../api/index.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { FakeClock } from '../../lib/testing.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { createLogger } from '../../lib/log.ts';
import { ControllerMetrics } from '../metrics.ts';
import { parseRollupThresholds } from '../config.ts';
import type { NodeEvent } from '../decide/index.ts';
import { NotLeaderError } from '../writes/index.ts';
import { RollupReason, RollupStatus, type RollupCondition } from './condition.ts';
import { ERR_CONFIGURATION_PROBLEM, HIBERNATED_MESSAGE, SUCCESS_MESSAGE } from './evaluate.ts';
import { OWNED_TYPES_ANNOTATION } from './store.ts';
import { RollupTally } from './tally.ts';
import { FakeRollupApi } from './testing.ts';
import {
  GARDENER_RESYNC_MS,
  ROLLUP_COST_FACTOR,
  ROLLUP_MIN_INTERVAL_MS,
  RollupWriter,
  type SourcedPair,
} from './writer.ts';

const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);

function pair(node: string, extension: string, state: ExtensionState, extra: Partial<SourcedPair> = {}) {
  return {
    node,
    extension,
    conditionType: 'EveryNodeReady',
    state,
    reason: state === ExtensionState.Healthy ? ProbeReason.ProbeSucceeded : ProbeReason.ProbeTimeout,
    source: 'systemExtension' as const,
    ...extra,
  };
}

function setup(
  options: {
    gardenerCluster?: string;
    thresholdsMs?: Record<string, number>;
    elapsedMs?: () => number;
    policy?: PublishedPolicy;
  } = {},
) {
  const clock = new FakeClock(T0);
  const api = new FakeRollupApi();
  const world = {
    pairs: [pair('node-a', 'gpu', ExtensionState.Healthy), pair('node-b', 'gpu', ExtensionState.Healthy)],
    sx: ['gpu'],
    leading: true,
  };
  api.systemExtensions.set('gpu', undefined);
  const metrics = new ControllerMetrics(new Registry());
  const events: NodeEvent[] = [];
  const make = (policy = options.policy) =>
    new RollupWriter({
      api,
      source: { tally: () => RollupTally.of(world.pairs), systemExtensionNames: () => world.sx },
      clock,
      log: createLogger({ level: 'silent', name: 'test' }),
      metrics,
      fence: () => {
        if (!world.leading) throw new NotLeaderError();
      },
      events: {
        clusterEvent: async (event) => {
          events.push(event);
        },
      },
      thresholdsMs: options.thresholdsMs ?? { EveryNodeReady: 10_000 },
      gardenerCluster: options.gardenerCluster,
      ...(options.elapsedMs ? { elapsedMs: options.elapsedMs } : {}),
      ...(policy ? { policy } : {}),
    });
  const writer = make();
  const condition = (type = 'EveryNodeReady'): RollupCondition | undefined =>
    api.object?.status?.conditions?.find((c) => c.type === type);
  /** Lets the writer run everything due within `ms`. */
  const step = (ms = ROLLUP_MIN_INTERVAL_MS) => clock.advance(ms);
  const written = async (kind: string, result: string): Promise<number> =>
    (await metrics.rollupWrites.get()).values.find(
      (v) => v.labels.kind === kind && v.labels.result === result,
    )?.value ?? 0;
  return { clock, api, world, writer, make, condition, step, metrics, events, written };
}

describe('--rollup-threshold', () => {
  it('takes <ConditionType>=<seconds> per type, the last one winning', () => {
    const problems: string[] = [];
    expect(
      parseRollupThresholds(['EveryNodeReady=120', 'MyGpuHealthy=0.5', 'EveryNodeReady=90'], problems),
    ).toEqual({ EveryNodeReady: 90_000, MyGpuHealthy: 500 });
    expect(problems).toEqual([]);
  });
});

describe('RollupWriter', () => {
  it('creates ClusterHealth with its label, owned types and status on the first evaluation of a term', async () => {
    const { api, writer, condition, step } = setup();
    writer.start();
    await step(0);
    expect(api.writes).toEqual([
      'createClusterHealth',
      'replaceClusterHealthStatus',
      'patchSystemExtensionStatus',
    ]);
    expect(api.object?.metadata.labels).toEqual({ [NODE_STATUS_LABEL]: 'healthy' });
    expect(api.object?.metadata.annotations).toEqual({ [OWNED_TYPES_ANNOTATION]: 'EveryNodeReady' });
    expect(condition()).toMatchObject({
      status: RollupStatus.True,
      reason: RollupReason.HealthCheckSuccessful,
      message: SUCCESS_MESSAGE,
    });
    expect(api.object?.status?.extensions).toEqual([
      { name: 'gpu', conditionType: 'EveryNodeReady', healthy: 2, progressing: 0, unhealthy: 0, unknown: 0 },
    ]);
    expect(api.systemExtensions.get('gpu')).toEqual({
      nodes: 2,
      healthy: 2,
      progressing: 0,
      unhealthy: 0,
      unknown: 0,
      failing: 0,
    });
  });

  it("publishes the controller's policy in status.policy, and rewrites a status another leader's flags wrote (issue 51 item 5)", async () => {
    const policy: PublishedPolicy = {
      bootstrapTaintKey: 'example.com/not-ready',
      runtimeTaintKey: 'example.com/unhealthy',
      bootstrapTimeoutSeconds: 600,
      missingLeaseGraceSeconds: 30,
      maxUnhealthyFraction: 0.25,
      annotationConditionTypes: ['MyGpuHealthy'],
      suspend: false,
      dryRun: false,
      nodeSelector: 'kubernetes.io/os=linux',
    };
    const first = setup({ policy });
    first.writer.start();
    await first.step(0);
    expect(first.api.object?.status?.policy).toEqual(policy);
    // The same flags: nothing to write (no heartbeat writes).
    const writes = first.api.writes.length;
    first.writer.markDirty();
    await first.step(1_000);
    expect(first.api.writes.length).toBe(writes);
    // A new leader with another runtime taint key, over the status the first one wrote: rewritten at once,
    // though no node changed.
    await first.writer.stop();
    const other = { ...policy, runtimeTaintKey: 'example.com/degraded' };
    first.make(other).start();
    await first.step(0);
    expect(first.api.writes.slice(writes)).toEqual(['replaceClusterHealthStatus']);
    expect(first.api.object?.status?.policy).toEqual(other);
  });

  it('writes nothing when an evaluation changes nothing (no heartbeat writes)', async () => {
    const { api, writer, step } = setup();
    writer.start();
    await step(0);
    const version = api.object?.metadata.resourceVersion;
    const writes = api.writes.length;
    for (let i = 0; i < 30; i++) {
      writer.markDirty();
      await step(1_000);
    }
    expect(api.writes.length).toBe(writes);
    expect(api.object?.metadata.resourceVersion).toBe(version);
  });

  it('coalesces a burst of changes into one write', async () => {
    const { api, world, writer, step } = setup();
    writer.start();
    await step(0);
    const writes = api.writes.length;
    for (let i = 0; i < 50; i++) {
      world.pairs = [...world.pairs, pair(`node-${i}`, 'gpu', ExtensionState.Healthy)];
      writer.markDirty();
    }
    await step(ROLLUP_MIN_INTERVAL_MS);
    expect(api.writes.slice(writes)).toEqual(['replaceClusterHealthStatus', 'patchSystemExtensionStatus']);
    expect(api.object?.status?.extensions?.[0]?.healthy).toBe(52);
  });

  it('spaces evaluations by the loop time they hold: one that took 300 ms is followed by none for 3 s (ADR 0009)', async () => {
    // Each reading of the loop clock is 300 ms after the last: an evaluation (read around it) takes 300 ms.
    let loopMs = 0;
    const { api, world, writer, step } = setup({ elapsedMs: () => (loopMs += 300) });
    writer.start();
    await step(0);
    const writes = api.writes.length;
    world.pairs = [...world.pairs, pair('node-c', 'gpu', ExtensionState.Healthy)];
    writer.markDirty();
    await step(ROLLUP_MIN_INTERVAL_MS);
    await step(ROLLUP_COST_FACTOR * 300 - ROLLUP_MIN_INTERVAL_MS - 1);
    expect(api.writes.length).toBe(writes);
    await step(1);
    expect(api.writes.slice(writes)).toEqual(['replaceClusterHealthStatus', 'patchSystemExtensionStatus']);
    expect(api.object?.status?.extensions?.[0]?.healthy).toBe(3);
  });

  it('turns a failure Progressing at once, then False when the threshold runs out without another change', async () => {
    const { world, writer, condition, step, metrics } = setup({ thresholdsMs: { EveryNodeReady: 10_000 } });
    // nodecare_controller_clusterhealth_condition: the one series of each type, its status as written.
    const gauge = async () =>
      (await metrics.clusterHealthConditions.get()).values.map(
        (v) => `${v.labels.type}=${v.labels.status} ${v.value}`,
      );
    writer.start();
    await step(0);
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy), world.pairs[1]!];
    writer.markDirty();
    await step();
    expect(condition()).toMatchObject({
      status: RollupStatus.Progressing,
      reason: RollupReason.HealthCheckUnsuccessful,
      message: 'node-a: gpu Unhealthy (ProbeTimeout).',
    });
    const progressingSince = condition()!.lastTransitionTime;
    await step(12_000); // the deadline fires by itself
    expect(condition()).toMatchObject({
      status: RollupStatus.False,
      reason: RollupReason.HealthCheckUnsuccessful,
    });
    expect(condition()!.lastTransitionTime).not.toBe(progressingSince);
    expect(await gauge()).toEqual(['EveryNodeReady=False 1']);
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Healthy), world.pairs[1]!];
    writer.markDirty();
    await step();
    expect(condition()).toMatchObject({ status: RollupStatus.True, message: SUCCESS_MESSAGE });
    expect(await gauge()).toEqual(['EveryNodeReady=True 1']);
  });

  it('marks invalid registrations with ERR_CONFIGURATION_PROBLEM', async () => {
    const { world, writer, condition, step } = setup();
    world.pairs = [
      pair('node-a', 'gpu', ExtensionState.Unknown, { reason: ProbeReason.InvalidRegistration }),
    ];
    writer.start();
    await step(0);
    expect(condition()).toMatchObject({ status: RollupStatus.False, codes: [ERR_CONFIGURATION_PROBLEM] });
  });

  it('on a 409 re-reads the object and evaluates on what another writer put there', async () => {
    const { api, world, writer, condition, step } = setup();
    writer.start();
    await step(0);
    const foreign: RollupCondition = {
      type: 'APIServerAvailable',
      status: RollupStatus.True,
      lastTransitionTime: '2026-01-01T00:00:00Z',
      lastUpdateTime: '2026-01-01T00:00:00Z',
      reason: 'OK',
      message: 'fine',
      codes: [],
    };
    // Someone else adds a condition of a type nodecare does not own, just before our write.
    api.beforeNext('replaceClusterHealthStatus', () => {
      const current = api.object!;
      api.put({
        ...current,
        status: { ...current.status, conditions: [...(current.status?.conditions ?? []), foreign] },
      });
    });
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy)];
    writer.markDirty();
    await step();
    expect(api.calls.filter((op) => op === 'getClusterHealth')).toHaveLength(2);
    expect(condition()?.status).toBe(RollupStatus.Progressing);
    expect(condition('APIServerAvailable')).toEqual(foreign);
  });

  it('backs off and retries after a server error, losing nothing', async () => {
    const { api, world, writer, condition, step, metrics } = setup();
    writer.start();
    await step(0);
    api.failNext('replaceClusterHealthStatus', new KubeError(KubeErrorCode.ServerError, 500, 'boom'));
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy)];
    writer.markDirty();
    await step();
    expect(condition()?.status).toBe(RollupStatus.True);
    await step(2 * ROLLUP_MIN_INTERVAL_MS);
    expect(condition()?.status).toBe(RollupStatus.Progressing);
    const errors = (await metrics.rollupWrites.get()).values.find(
      (v) => v.labels.kind === 'clusterhealth' && v.labels.result === 'error',
    );
    expect(errors?.value).toBe(1);
  });

  it('a 422 is a bug: reported once (event, log, metric), never retried, and the SystemExtension counts still land', async () => {
    const { api, world, writer, step, events, written } = setup();
    writer.start();
    await step(0);
    const invalid = () => new KubeError(KubeErrorCode.Invalid, 422, 'status.conditions: Too many: 65');
    api.failNext('replaceClusterHealthStatus', invalid());
    world.pairs = [
      pair('node-a', 'gpu', ExtensionState.Progressing),
      pair('node-b', 'gpu', ExtensionState.Healthy),
    ];
    writer.markDirty();
    await step();
    // Written what could be written: the SystemExtension's counts.
    expect(api.systemExtensions.get('gpu')).toMatchObject({
      nodes: 2,
      healthy: 1,
      progressing: 1,
      failing: 0,
    });
    const writes = api.writes.length;
    await step(10 * 60_000); // no retry loop: nothing changed, nothing is tried again
    expect(api.writes.length).toBe(writes);
    expect(await written('clusterhealth', 'invalid')).toBe(1);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: 'RollupRejected',
        message: expect.stringContaining('status.conditions: Too many: 65'),
      }),
    ]);
    // The next change tries again; refused again, it is counted but not reported a second time.
    api.failNext('replaceClusterHealthStatus', invalid());
    world.pairs = [
      pair('node-a', 'gpu', ExtensionState.Unhealthy),
      pair('node-b', 'gpu', ExtensionState.Unhealthy),
    ];
    writer.markDirty();
    await step();
    expect(await written('clusterhealth', 'invalid')).toBe(2);
    expect(events).toHaveLength(1);
    expect(api.systemExtensions.get('gpu')).toMatchObject({ unhealthy: 2, failing: 2 });
    // A later change that can be written is.
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Healthy)];
    writer.markDirty();
    await step();
    expect(api.object?.status?.extensions?.[0]).toMatchObject({ healthy: 1, unhealthy: 0 });
  });

  it('a 422 on one SystemExtension does not stop the others', async () => {
    const { api, world, writer, step, events, written } = setup();
    api.systemExtensions.set('logs', undefined);
    world.sx = ['gpu', 'logs'];
    api.failNext(
      'patchSystemExtensionStatus',
      new KubeError(KubeErrorCode.Invalid, 422, 'status.nodes: Invalid'),
    );
    writer.start();
    await step(0);
    expect(api.systemExtensions.get('logs')).toMatchObject({ nodes: 0 });
    expect(await written('systemextension', 'invalid')).toBe(1);
    expect(events.map((e) => e.reason)).toEqual(['RollupRejected']);
    const writes = api.writes.length;
    await step(10 * 60_000);
    expect(api.writes.length).toBe(writes);
  });

  it("an old leader's late SystemExtension write is refused by the resourceVersion precondition", async () => {
    const { api, world, writer, step, written } = setup();
    writer.start();
    await step(0);
    expect(api.systemExtensions.get('gpu')).toMatchObject({ nodes: 2, healthy: 2 });
    // This replica computes new counts; just before its patch lands, the new leader has written its own
    // (and this replica's term has ended).
    const newLeaders = { nodes: 3, healthy: 3, progressing: 0, unhealthy: 0, unknown: 0, failing: 0 };
    api.beforeNext('patchSystemExtensionStatus', () => {
      api.putSystemExtensionStatus('gpu', newLeaders);
      world.leading = false;
    });
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy)];
    writer.markDirty();
    await step(60_000);
    expect(api.systemExtensions.get('gpu')).toEqual(newLeaders);
    expect(await written('systemextension', 'conflict')).toBe(1);
    expect(await written('systemextension', 'ok')).toBe(1);
    expect(await written('systemextension', 'error')).toBe(0);
  });

  it('on a 409 lists the SystemExtensions again and writes on what is there', async () => {
    const { api, world, writer, step, written } = setup();
    writer.start();
    await step(0);
    api.beforeNext('patchSystemExtensionStatus', () =>
      api.putSystemExtensionStatus('gpu', {
        nodes: 9,
        healthy: 9,
        progressing: 0,
        unhealthy: 0,
        unknown: 0,
        failing: 0,
      }),
    );
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy)];
    writer.markDirty();
    await step();
    expect(api.systemExtensions.get('gpu')).toEqual({
      nodes: 1,
      healthy: 0,
      progressing: 0,
      unhealthy: 1,
      unknown: 0,
      failing: 1,
    });
    expect(await written('systemextension', 'conflict')).toBe(1);
  });

  it("a stale write landing after this leader's is noticed through the watch and overwritten", async () => {
    const { api, writer, step } = setup();
    writer.start();
    await step(0);
    const right = api.systemExtensions.get('gpu');
    api.putSystemExtensionStatus('gpu', { ...right!, healthy: 0, unknown: 2, failing: 2 });
    writer.systemExtensionsChanged(); // the SystemExtension's watch event
    await step();
    expect(api.systemExtensions.get('gpu')).toEqual(right);
  });

  it('writes nothing once the term ended (fenced), and does not retry', async () => {
    const { api, world, writer, step } = setup();
    writer.start();
    await step(0);
    const writes = api.writes.length;
    world.leading = false;
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy)];
    writer.markDirty();
    await step(60_000);
    expect(api.writes.length).toBe(writes);
    await writer.stop();
    writer.markDirty();
    await step(60_000);
    expect(api.writes.length).toBe(writes);
  });

  it('a new leader continues the old one: no write, no timestamp moved', async () => {
    const { api, world, writer, make, condition, step } = setup();
    writer.start();
    await step(0);
    world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy)];
    writer.markDirty();
    await step();
    const before = structuredClone(condition());
    const version = api.object?.metadata.resourceVersion;
    await writer.stop();
    await step(3_000);
    const successor = make();
    successor.start();
    await step(0);
    expect(condition()).toEqual(before);
    expect(api.object?.metadata.resourceVersion).toBe(version);
    await step(20_000); // the threshold runs out on the successor's watch: one write, False
    expect(condition()?.status).toBe(RollupStatus.False);
    expect(condition()?.lastUpdateTime).toBe(before?.lastUpdateTime); // status-only change
  });

  it('removes a condition type it owned once nothing uses it, keeping foreign types', async () => {
    const { api, world, writer, condition, step } = setup();
    world.pairs = [
      ...world.pairs,
      pair('node-a', 'fluent-bit', ExtensionState.Healthy, {
        conditionType: 'ObservabilityComponentsHealthy',
      }),
    ];
    writer.start();
    await step(0);
    expect(api.object?.metadata.annotations?.[OWNED_TYPES_ANNOTATION]).toBe(
      'EveryNodeReady,ObservabilityComponentsHealthy',
    );
    world.pairs = world.pairs.slice(0, 2);
    writer.markDirty();
    await step();
    expect(condition('ObservabilityComponentsHealthy')).toBeUndefined();
    expect(api.object?.metadata.annotations?.[OWNED_TYPES_ANNOTATION]).toBe('EveryNodeReady');
  });

  it('keeps SystemExtension counts current and tolerates one deleted meanwhile', async () => {
    const { api, world, writer, step } = setup();
    api.systemExtensions.set('csi', undefined);
    world.sx = ['csi', 'gpu', 'dns'];
    world.pairs = [...world.pairs, pair('node-a', 'csi', ExtensionState.Unknown)];
    writer.start();
    await step(0);
    expect(api.systemExtensions.get('csi')).toMatchObject({ nodes: 1, unknown: 1, failing: 1 });
    // `dns` is still in the cache but already deleted on the server: its 404 does not stop the others.
    expect(api.systemExtensions.get('gpu')).toMatchObject({ nodes: 2, healthy: 2 });
    expect(api.systemExtensions.has('dns')).toBe(false);
    world.sx = ['csi', 'gpu']; // the cache caught up
    // Annotation-registered pairs do not count for a SystemExtension of the same name.
    world.pairs = [...world.pairs, pair('node-c', 'csi', ExtensionState.Healthy, { source: 'annotation' })];
    const writes = api.writes.length;
    writer.markDirty();
    await step();
    expect(api.writes.slice(writes)).toEqual(['replaceClusterHealthStatus']); // ClusterHealth counts only
  });

  describe('Gardener awareness', () => {
    const shoot = (spec: object) => ({ spec: { shoot: { spec } } });

    it('a hibernated shoot reports every condition True / Shoot is hibernated', async () => {
      const { api, world, writer, condition, step } = setup({ gardenerCluster: 'shoot--dev--a' });
      api.gardenerCluster = shoot({ hibernation: { enabled: true }, provider: { workers: [{ name: 'w' }] } });
      world.pairs = [pair('node-a', 'gpu', ExtensionState.Unhealthy)];
      writer.start();
      await step(0);
      expect(condition()).toMatchObject({
        status: RollupStatus.True,
        reason: RollupReason.HealthCheckSuccessful,
        message: HIBERNATED_MESSAGE,
      });
      // Woken up: noticed at the next resync of the Cluster object.
      api.gardenerCluster = shoot({
        hibernation: { enabled: false },
        provider: { workers: [{ name: 'w' }] },
      });
      await step(GARDENER_RESYNC_MS + ROLLUP_MIN_INTERVAL_MS);
      expect(condition()?.status).toBe(RollupStatus.Progressing);
    });

    it('a workerless shoot has no EveryNodeReady', async () => {
      const { api, world, writer, condition, step } = setup({ gardenerCluster: 'shoot--dev--a' });
      api.gardenerCluster = shoot({ provider: { workers: [] } });
      world.pairs = [
        ...world.pairs,
        pair('node-a', 'logs', ExtensionState.Healthy, { conditionType: 'SystemComponentsHealthy' }),
      ];
      writer.start();
      await step(0);
      expect(condition()).toBeUndefined();
      expect(condition('SystemComponentsHealthy')?.status).toBe(RollupStatus.True);
    });

    it('a missing Cluster object is tolerated: evaluation as on any cluster', async () => {
      const { api, writer, condition, step } = setup({ gardenerCluster: 'shoot--dev--a' });
      api.gardenerCluster = undefined;
      writer.start();
      await step(0);
      expect(condition()?.status).toBe(RollupStatus.True);
    });
  });
});
