// Writes the roll-up (docs/rollup.md): ClusterHealth `cluster` and each SystemExtension's counts, from the
// reconciler's per-node verdicts. Only the leader writes, only within its term, and only what changed:
//
// - Coalesced: a change marks the roll-up dirty; one evaluation runs at most every `minIntervalMs`, so a burst of
//   node changes (a rollout across 5,000 nodes) costs one write, not one per node. Nothing is written on a
//   heartbeat: an evaluation that changes nothing writes nothing.
// - Deadlines: a condition in its threshold (Progressing on a failure) is re-evaluated when the threshold runs out.
// - Optimistic: status is replaced with the resourceVersion it was computed on; a 409 (another writer, an old
//   leader's last write) re-reads the object and evaluates again. SystemExtension counts likewise: each patch
//   carries the resourceVersion it was computed against, and a SystemExtension's watch event makes the writer
//   list them again, so an old leader's late write is either refused or noticed and overwritten. The previous conditions come from the object
//   itself, so a new leader continues the old one's timestamps: a hand-over moves no lastTransitionTime.
// - Failures back off exponentially and retry; a write refused because the term ended is dropped silently.
// - Refused as invalid (422): the evaluation bounds every input-derived string and list to the CRD's schema, so
//   a 422 is a bug, not a transient failure. It is reported once (a RollupRejected Warning event regarding
//   ClusterHealth, an error log; nodecare_controller_rollup_writes_total{result="invalid"} counts every one)
//   and not retried: the writer goes on to write what it can (the SystemExtension counts) and tries again only
//   when the roll-up's inputs change.

import type { PublishedPolicy } from '../../api/index.ts';
import { EventReason } from '../../api/reasons.ts';
import type { Clock, Timer } from '../../lib/clock.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { ClusterEventRecorder } from '../writes/index.ts';
import type { ControllerMetrics } from '../metrics.ts';
import { eventNotRecorded, NotLeaderError, type Fence } from '../writes/index.ts';
import {
  clusterHealthChange,
  clusterHealthStatus,
  errorText,
  isRereadError,
  ownedTypesOf,
  type ClusterHealthChange,
} from './cluster-health.ts';
import { SystemExtensionCountsWriter } from './extension-counts.ts';
import { evaluateRollup, type RollupResult } from './evaluate.ts';
import { NO_SHOOT, shootFromCluster, type ShootFacts } from './gardener.ts';
import type { RollupTally } from './tally.ts';
import {
  MAX_CONFLICT_RETRIES,
  type RollupSource,
  type ClusterHealthObject,
  type ClusterHealthStatus,
  type RollupApi,
} from './store.ts';

/** At most one evaluation this often (a burst of node changes is one write). */
export const ROLLUP_MIN_INTERVAL_MS = 1_000;
/**
 * An evaluation that held the event loop for c ms (evaluating the conditions on the tally) is followed
 * by none sooner than this × c: however large the fleet, the roll-up takes at most a tenth of the loop while
 * changes come, and the node decisions the rest (docs/adr/0009). Below 100 ms an evaluation, the interval
 * stays ROLLUP_MIN_INTERVAL_MS.
 */
export const ROLLUP_COST_FACTOR = 10;
/** How often the Gardener Cluster object is read again, by default (--gardener-resync-seconds). */
export const GARDENER_RESYNC_MS = 30_000;
const MAX_BACKOFF_MS = 30_000;

export interface RollupWriterDeps {
  api: RollupApi;
  source: RollupSource;
  clock: Clock;
  log: Logger;
  metrics: ControllerMetrics;
  /** Checked just before every write: throws NotLeaderError when this replica no longer leads. */
  fence: Fence;
  /** Where a refused (422) write is reported, regarding ClusterHealth `cluster`. */
  events?: ClusterEventRecorder;
  thresholdsMs: Readonly<Record<string, number>>;
  /**
   * The controller's effective policy, published in status.policy (api/policy.ts) so that `kubectl nodecare`
   * judges nodes as this controller does; a status that says otherwise (another leader's flags) is rewritten.
   */
  policy?: PublishedPolicy;
  /**
   * The evictor's guards, published in status.eviction (controller/eviction/published.ts); undefined while no
   * evictor runs here. Call markDirty when it changes.
   */
  eviction?: () => object | undefined;
  /** Name of the Gardener Cluster object to read; undefined: not a Gardener shoot. */
  gardenerCluster: string | undefined;
  /** How often the Gardener Cluster object is read again (hibernation and wake-up are noticed this fast). */
  gardenerResyncMs?: number;
  minIntervalMs?: number;
  /** A monotonic ms clock the loop time an evaluation holds is measured on (default performance.now). */
  elapsedMs?: () => number;
}

export class RollupWriter {
  private readonly deps: RollupWriterDeps;
  private readonly minIntervalMs: number;
  private readonly elapsedMs: () => number;
  private readonly resyncMs: number;
  private active = false;
  /** The ClusterHealth object as last read or written; null: it does not exist; undefined: read it first. */
  private current: ClusterHealthObject | null | undefined;
  /** Each SystemExtension's counts and resourceVersion as last read or written; undefined: list them first. */
  private readonly extensionCounts: SystemExtensionCountsWriter;
  private shoot: ShootFacts = NO_SHOOT;
  private shootReadMs = -Infinity;
  private dirty = false;
  private lastRunMs = -Infinity;
  /** The event-loop time the last evaluation held: what spaces the next one (ROLLUP_COST_FACTOR). */
  private costMs = 0;
  private failures = 0;
  private timer: Timer | undefined;
  private deadlineTimer: Timer | undefined;
  /** When deadlineTimer fires. */
  private deadlineAtMs: number | undefined;
  private running: Promise<void> | undefined;
  /** A refused (422) write was reported and no ClusterHealth write succeeded since: report no other. */
  private invalidReported = false;
  /** The condition types and extension rows last left out for room (reported when they change). */
  private droppedReported = '';

  constructor(deps: RollupWriterDeps) {
    this.deps = deps;
    this.minIntervalMs = deps.minIntervalMs ?? ROLLUP_MIN_INTERVAL_MS;
    this.elapsedMs = deps.elapsedMs ?? (() => performance.now());
    this.resyncMs = deps.gardenerResyncMs ?? GARDENER_RESYNC_MS;
    this.extensionCounts = new SystemExtensionCountsWriter({
      ...deps,
      invalid: (name, err) => this.reportInvalid('systemextension', name, err),
    });
  }

  /** Starts a leadership term: everything is read afresh (another replica may have written meanwhile). */
  start(): void {
    this.active = true;
    this.current = undefined;
    this.extensionCounts.forget();
    this.shootReadMs = -Infinity;
    this.failures = 0;
    this.lastRunMs = -Infinity;
    this.costMs = 0;
    this.invalidReported = false;
    this.droppedReported = '';
    this.markDirty();
  }

  /** Ends the term: no evaluation starts any more; the one in flight is awaited. */
  async stop(): Promise<void> {
    this.active = false;
    this.dirty = false;
    this.timer?.cancel();
    this.timer = undefined;
    this.deadlineTimer?.cancel();
    this.deadlineTimer = undefined;
    this.deadlineAtMs = undefined;
    await this.running;
  }

  /** Something the roll-up reads changed: evaluate soon (coalesced). */
  markDirty(): void {
    if (!this.active) return;
    this.dirty = true;
    if (!this.running) this.schedule(0);
  }

  private schedule(extraDelayMs: number): void {
    if (this.timer || !this.active) return;
    const { clock } = this.deps;
    const spacingMs = Math.max(this.minIntervalMs, ROLLUP_COST_FACTOR * this.costMs);
    const delay = Math.max(extraDelayMs, this.lastRunMs + spacingMs - clock.monotonic(), 0);
    this.timer = clock.setTimer(delay, () => {
      this.timer = undefined;
      this.run();
    });
  }

  private run(): void {
    if (!this.active || this.running || !this.dirty) return;
    this.dirty = false;
    this.lastRunMs = this.deps.clock.monotonic();
    this.running = this.evaluateAndWrite().finally(() => {
      this.running = undefined;
      if (this.dirty) this.schedule(0);
    });
  }

  private async evaluateAndWrite(): Promise<void> {
    const { log } = this.deps;
    try {
      await this.refreshShoot();
      // The tally is kept as nodes change: what an evaluation holds the loop for is its own cost (evaluate).
      this.costMs = 0;
      const tally = this.deps.source.tally();
      await this.writeClusterHealth(tally);
      const rolloutEndsMs = await this.extensionCounts.write(tally, this.deps.clock.now());
      // A Grace window ending changes a status by time alone: evaluate again then (+1 s: past its second).
      if (rolloutEndsMs !== undefined)
        this.deadlineAt(
          Math.min(this.fromWall(rolloutEndsMs + 1_000), this.deadlineAtMs ?? Number.POSITIVE_INFINITY),
        );
      this.failures = 0;
    } catch (err) {
      if (err instanceof NotLeaderError || !this.active) return;
      this.failures += 1;
      const retryInMs = Math.min(MAX_BACKOFF_MS, this.minIntervalMs * 2 ** this.failures);
      log.warn({ err, retryInMs }, 'Failed to write the roll-up; retrying');
      this.current = undefined;
      this.extensionCounts.forget();
      this.dirty = true;
      this.timer?.cancel();
      this.timer = undefined;
      this.schedule(retryInMs);
    }
  }

  private async refreshShoot(): Promise<void> {
    const { api, clock, gardenerCluster, log } = this.deps;
    if (gardenerCluster === undefined) return;
    const now = clock.monotonic();
    if (now - this.shootReadMs < this.resyncMs) return;
    const shoot = shootFromCluster(await api.getGardenerCluster(gardenerCluster));
    this.shootReadMs = now;
    if (shoot.hibernated !== this.shoot.hibernated || shoot.workerless !== this.shoot.workerless)
      log.info({ cluster: gardenerCluster, ...shoot }, 'Gardener shoot facts changed');
    this.shoot = shoot;
    // Read again after the resync period even when nothing else changes.
    this.deadlineAt(now + this.resyncMs);
  }

  /**
   * A wall deadline as a monotonic one. A threshold or window end is a wall time (from lastTransitionTime or a
   * persisted window start, which outlive this process), so a wall clock step moves it (docs/adr/0020).
   */
  private fromWall(wallMs: number): number {
    const { clock } = this.deps;
    return clock.monotonic() + (wallMs - clock.now());
  }

  /** Re-evaluates at `atMs` on the monotonic clock (the earliest of the pending deadlines wins). */
  private deadlineAt(atMs: number): void {
    const { clock } = this.deps;
    this.deadlineTimer?.cancel();
    this.deadlineAtMs = atMs;
    this.deadlineTimer = clock.setTimer(Math.max(0, atMs - clock.monotonic()), () => {
      this.deadlineTimer = undefined;
      this.deadlineAtMs = undefined;
      this.markDirty();
    });
  }

  private async writeClusterHealth(tally: RollupTally): Promise<void> {
    const { api, clock, metrics, policy, eviction } = this.deps;
    for (let attempt = 0; ; attempt++) {
      if (this.current === undefined) this.current = (await api.getClusterHealth()) ?? null;
      const object = this.current ?? undefined;
      const nowMs = clock.now();
      const result = this.evaluate(tally, object, nowMs);
      const change = clusterHealthChange(object, result, policy, eviction?.());
      if (!change.metadataChanged && !change.statusChanged) return;
      try {
        this.current = await this.putClusterHealth(object, change, () =>
          clusterHealthStatus(result, nowMs, policy, eviction?.()),
        );
        metrics.rollupWrites.inc({ kind: 'clusterhealth', result: 'ok' });
        this.invalidReported = false;
        return;
      } catch (err) {
        if (isKubeError(err, KubeErrorCode.Invalid)) {
          // Not retried: the next change of the roll-up's inputs evaluates (and tries) again.
          this.reportInvalid('clusterhealth', 'cluster', err);
          this.current = undefined;
          return;
        }
        if (!isRereadError(err) || attempt >= MAX_CONFLICT_RETRIES) {
          metrics.rollupWrites.inc({ kind: 'clusterhealth', result: 'error' });
          throw err;
        }
        // Someone else wrote (or deleted) it meanwhile: read it again and evaluate on what is there.
        metrics.rollupWrites.inc({ kind: 'clusterhealth', result: 'conflict' });
        this.current = undefined;
      }
    }
  }

  /** Evaluates the roll-up on `object`: measured, with its metrics, what was left out and its deadlines. */
  private evaluate(tally: RollupTally, object: ClusterHealthObject | undefined, nowMs: number): RollupResult {
    const { metrics, thresholdsMs } = this.deps;
    const started = this.elapsedMs();
    const result = evaluateRollup({
      pairs: tally,
      previous: object?.status?.conditions ?? [],
      ownedBefore: ownedTypesOf(object),
      thresholdsMs,
      hibernated: this.shoot.hibernated,
      workerless: this.shoot.workerless,
      nowMs,
    });
    const evaluatedMs = this.elapsedMs() - started;
    this.costMs += evaluatedMs;
    metrics.rollupDuration.observe(evaluatedMs / 1000);
    metrics.clusterHealthConditions.reset();
    for (const c of result.conditions)
      if (result.owned.includes(c.type))
        metrics.clusterHealthConditions.set({ type: c.type, status: c.status }, 1);
    this.reportDropped(result.droppedTypes, result.droppedExtensions);
    const pending = [
      result.nextDeadlineMs === undefined ? undefined : this.fromWall(result.nextDeadlineMs),
      this.deps.gardenerCluster ? this.shootReadMs + this.resyncMs : undefined,
    ].filter((t): t is number => t !== undefined);
    if (pending.length > 0) this.deadlineAt(Math.min(...pending));
    return result;
  }

  /** Creates ClusterHealth `cluster` or patches its metadata, then replaces its status, as `change` says. */
  private async putClusterHealth(
    object: ClusterHealthObject | undefined,
    change: ClusterHealthChange,
    status: () => ClusterHealthStatus,
  ): Promise<ClusterHealthObject> {
    const { api, fence, metrics } = this.deps;
    let written: ClusterHealthObject;
    if (object === undefined) {
      fence();
      written = await api.createClusterHealth({ name: 'cluster', ...change.metadata });
      metrics.rollupWrites.inc({ kind: 'clusterhealth', result: 'created' });
    } else if (change.metadataChanged) {
      fence();
      written = await api.patchClusterHealthMetadata(object.metadata.resourceVersion ?? '', change.metadata);
    } else written = object;
    if (change.statusChanged) {
      fence();
      written = await api.replaceClusterHealthStatus({ ...written, status: status() });
    }
    return written;
  }

  /**
   * A SystemExtension changed (its watch event): its status may no longer be what this writer last read or
   * wrote (a late write of an old leader): list them again before the next write and compare with that.
   */
  systemExtensionsChanged(): void {
    if (!this.active) return;
    this.extensionCounts.forget();
    this.markDirty();
  }

  /** A write the API server refused as invalid: counted always; logged and recorded once until a write succeeds. */
  private reportInvalid(kind: 'clusterhealth' | 'systemextension', name: string, err: unknown): void {
    const { events, log, metrics } = this.deps;
    metrics.rollupWrites.inc({ kind, result: 'invalid' });
    if (this.invalidReported) return;
    this.invalidReported = true;
    const detail = errorText(err);
    log.error(
      { kind, name, err: detail },
      'The API server refused the roll-up as invalid (a nodecare bug): not retrying; writing what can be written',
    );
    metrics.events.inc({ reason: EventReason.RollupRejected });
    events
      ?.clusterEvent({
        type: 'Warning',
        reason: EventReason.RollupRejected,
        message: `The API server refused the roll-up write of ${kind} ${name} as invalid (a nodecare bug; not retried until the roll-up changes): ${detail}`,
      })
      .catch((eventErr: unknown) => eventNotRecorded(log, eventErr, { reason: EventReason.RollupRejected }));
  }

  /** Logs when the condition types or extension rows left out for room change (normally none). */
  private reportDropped(types: readonly string[], extensions: number): void {
    const key = `${types.join(',')}/${extensions}`;
    if (key === this.droppedReported) return;
    this.droppedReported = key;
    if (types.length === 0 && extensions === 0) return;
    this.deps.log.warn(
      { droppedTypes: types.slice(0, 20), droppedTypeCount: types.length, droppedExtensions: extensions },
      'ClusterHealth is full: condition types or extension rows beyond its limits are left out',
    );
  }
}

export type { SourcedPair } from './pairs.ts';
export type { RollupSource } from './store.ts';
