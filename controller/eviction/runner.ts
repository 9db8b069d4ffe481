// Runs safe eviction (docs/design.md section 5) beside the reconciler: off unless --evict-after-seconds > 0. Each pass
// plans over every node's current state (controller/eviction/plan.ts: per-zone rate, zone and breaker stops,
// group budgets, the cluster's cap, storm cooldowns), reads each chosen Node again and leaves it alone when another
// owner acts on it (owners.ts), evicts the chosen nodes' pods through the Eviction API (PDBs respected), records
// PodEvicted and EvictionSkipped events, and sleeps until the plan's next deadline.

import { EventReason } from '../../api/reasons.ts';
import type { Timer } from '../../lib/clock.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { NodeState } from '../decide/index.ts';
import { evictionComplete, SkipReason, type PodEvictionResult } from './evict.ts';
import { HOLD_DESCRIPTIONS, HoldReason } from './owners.ts';
import { publishEviction, type PublishedEviction } from './published.ts';
import {
  BlockReason,
  BudgetReason,
  EVICTION_DEFAULTS,
  NO_STORM,
  planEvictions,
  type EvictionNode,
  type EvictionPlan,
  type StormMemory,
} from './plan.ts';
import { eventNotRecorded } from '../writes/index.ts';

/** What grants eviction its rights (docs/install.md, "RBAC opt-ins: Pod read"). */
export const EVICTION_RBAC_REMEDY =
  'add the kustomize component controller-eviction (list pods, create pods/eviction); the Helm chart grants them when eviction.evictAfterSeconds is above 0';

const MAX_IDLE_MS = 5_000;
/**
 * A node the fresh read found held by an annotation (the cache does not keep another owner's annotations) is read
 * again after this long, when the plan picks it again: at most one GET per held node per 30 s.
 */
export const HOLD_RECHECK_MS = 30_000;

import type { EvictorDeps, Spell } from './deps.ts';

export type { EvictorDeps } from './deps.ts';
export { evictionNodeView, type EvictionNodeSource, type EvictionNodeView } from './view.ts';
export type { EvictionSettings } from './policy.ts';

export class Evictor {
  private readonly deps: EvictorDeps;
  private readonly spells = new Map<string, Spell>();
  private limiter = new Map<string, number>();
  private storm: StormMemory = NO_STORM;
  /** What the guards say now (published.ts), and the skips of this term per `subject/reason`. */
  private publication: PublishedEviction | undefined;
  private publicationText = '';
  private readonly skipped = new Map<string, number>();
  /** Wall time minus monotonic time at the term's start: deadlines become timestamps that never jitter. */
  private wallOffsetMs = 0;
  private timer: Timer | undefined;
  private running = false;
  /** The pass in flight, if any. */
  private current: Promise<void> | undefined;

  constructor(deps: EvictorDeps) {
    this.deps = deps;
  }

  get enabled(): boolean {
    return this.deps.config.eviction.evictAfterSeconds > 0;
  }

  /**
   * Starts a leadership term from nothing, as the breaker does: spells (Degraded since, evictions made and
   * completed), the rate limiter and the storm memory of an earlier term are forgotten, so a node is evicted
   * only once this term has itself seen it Degraded for --evict-after-seconds, never on a "Degraded since" that
   * another replica's term may have ended meanwhile.
   */
  start(): void {
    if (!this.enabled || this.running) return;
    this.spells.clear();
    this.limiter = new Map();
    this.storm = NO_STORM;
    this.skipped.clear();
    this.publication = undefined;
    this.publicationText = '';
    this.wallOffsetMs = this.deps.clock.now() - this.deps.clock.monotonic();
    this.running = true;
    this.schedule(0);
  }

  /** Stops scheduling passes; resolves once a pass in flight has ended (its evictions are fenced). */
  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    await this.current;
    this.publication = undefined;
    // This replica no longer evicts: its view of who waits is not the cluster's any more.
    const { metrics } = this.deps;
    metrics.evictionHeldNodes.reset();
    metrics.evictionBlockedZones.reset();
    metrics.evictionEvictingNodes.set(0);
  }

  /** The guards' state for ClusterHealth status.eviction while this replica evicts; undefined otherwise. */
  eviction(): PublishedEviction | undefined {
    return this.running ? this.publication : undefined;
  }

  private publish(plan: EvictionPlan): void {
    const { eviction, dryRun } = this.deps.config;
    // Held: as last reported, so a node whose hold is read again (every HOLD_RECHECK_MS) stays shown held.
    const held = [...this.spells]
      .filter(([, spell]) => spell.reportedHold !== undefined)
      .map(([name, spell]) => ({ name, reason: spell.reportedHold as HoldReason }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const publication = publishEviction({
      plan: { ...plan, held },
      settings: {
        ...{ evictAfterSeconds: eviction.evictAfterSeconds, dryRun: dryRun || eviction.dryRun },
        ...{ groupLabel: eviction.groupLabel, groupBudgetPercent: eviction.groupBudgetPercent },
        ...{ maxParallelNodes: eviction.maxParallelNodes, maxParallelPercent: eviction.maxParallelPercent },
        stormCooldownSeconds: eviction.stormCooldownSeconds,
      },
      skipped: this.skipped,
      wall: (ms) => new Date(Math.round((ms + this.wallOffsetMs) / 1000) * 1000).toISOString(),
    });
    const text = JSON.stringify(publication);
    if (text === this.publicationText) return;
    this.publication = publication;
    this.publicationText = text;
    this.deps.published?.();
  }

  private countSkip(subject: 'node' | 'pod', reason: string): void {
    const key = `${subject}/${reason}`;
    this.skipped.set(key, (this.skipped.get(key) ?? 0) + 1);
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    this.timer?.cancel();
    this.timer = this.deps.clock.setTimer(Math.min(Math.max(delayMs, 0), MAX_IDLE_MS), () => {
      if (this.current) return;
      this.current = this.pass().finally(() => (this.current = undefined));
    });
  }

  private nodes(now: number): EvictionNode[] {
    const states = this.deps.states();
    for (const name of this.spells.keys())
      if (states.get(name) !== NodeState.Degraded) this.spells.delete(name);
    const nodes: EvictionNode[] = [];
    for (const [name, state] of states) {
      let spell = this.spells.get(name);
      if (state === NodeState.Degraded && !spell) {
        spell = { degradedSinceMs: now };
        this.spells.set(name, spell);
      }
      const node = this.deps.node(name);
      const suspended = this.deps.suspended?.(name) === true;
      const fresh = spell?.freshHold && spell.freshHold.untilMs > now ? spell.freshHold.reason : undefined;
      const heldBy = spell ? (node?.hold ?? fresh) : undefined;
      if (spell && node?.hold) this.reportHold(name, spell, node.hold);
      const { freshHold: _fresh, reportedHold: _reported, reportedPods: _pods, ...progress } = spell ?? {};
      nodes.push({
        name,
        state,
        zone: node?.zone ?? '',
        ...(node?.group !== undefined ? { group: node.group } : {}),
        ...progress,
        ...(suspended ? { suspended } : {}),
        ...(heldBy ? { heldBy } : {}),
      });
    }
    return nodes;
  }

  /** Logs, counts and records a node's hold once per change (nodecare_controller_eviction_skipped_total). */
  private reportHold(name: string, spell: Spell, reason: HoldReason): void {
    if (spell.reportedHold === reason) return;
    spell.reportedHold = reason;
    const { log, metrics } = this.deps;
    metrics.evictionSkipped.inc({ subject: 'node', reason });
    this.countSkip('node', reason);
    log.info({ node: name, reason }, 'Skipped eviction of a node another owner acts on');
    this.event(
      name,
      reason === HoldReason.NodeUnreadable
        ? `Did not evict pods yet: node ${HOLD_DESCRIPTIONS[reason]}; nodecare reads it again in ${HOLD_RECHECK_MS / 1000} s.`
        : `Did not evict pods: node ${HOLD_DESCRIPTIONS[reason]}; nodecare leaves it to that owner.`,
    );
  }

  private event(name: string, message: string): void {
    const { log, metrics, events } = this.deps;
    const node = this.deps.node(name);
    if (!node) return;
    metrics.events.inc({ reason: EventReason.EvictionSkipped });
    events
      .nodeEvent(node, { type: 'Normal', reason: EventReason.EvictionSkipped, message })
      .catch((err: unknown) => eventNotRecorded(log, err));
  }

  /** The plan's holds and stops as gauges, and a log line when a storm cooldown starts. */
  private observe(plan: EvictionPlan, previous: StormMemory): void {
    const { log, metrics } = this.deps;
    metrics.evictionHeldNodes.reset();
    const held = new Map<string, number>();
    for (const { reason } of [...plan.waiting, ...plan.held]) held.set(reason, (held.get(reason) ?? 0) + 1);
    for (const reason of [...Object.values(BudgetReason), ...Object.keys(HOLD_DESCRIPTIONS)])
      metrics.evictionHeldNodes.set({ reason }, held.get(reason) ?? 0);
    for (const reason of Object.values(BlockReason))
      metrics.evictionBlockedZones.set(
        { reason },
        plan.blockedZones.filter((z) => z.reason === reason).length,
      );
    metrics.evictionEvictingNodes.set(plan.evicting.length);
    for (const zone of plan.blockedZones) log.debug({ ...zone }, 'Eviction held back in zone');
    for (const wait of plan.waiting)
      log.debug({ node: wait.name, ...wait }, 'Eviction held back by a budget');
    const { clusterCooldownUntilMs } = plan.storm;
    const now = this.deps.clock.monotonic();
    if (clusterCooldownUntilMs !== undefined && clusterCooldownUntilMs !== previous.clusterCooldownUntilMs)
      log.info(
        { seconds: Math.round((clusterCooldownUntilMs - now) / 1000) },
        'Eviction cooling down in every zone: the breaker stopped tripping',
      );
    for (const [zone, untilMs] of plan.storm.zoneCooldownUntilMs)
      if (previous.zoneCooldownUntilMs.get(zone) !== untilMs)
        log.info(
          { zone, seconds: Math.round((untilMs - now) / 1000) },
          'Eviction cooling down in zone: its disruption ended',
        );
  }

  /** Plans over every node's state now, and keeps the plan's limiter and storm memory for the next one. */
  private plan(): { plan: EvictionPlan; previousLimiter: ReadonlyMap<string, number> } {
    const { clock, config } = this.deps;
    const now = clock.monotonic();
    const plan = planEvictions({
      nodes: this.nodes(now),
      policy: {
        evictAfterSeconds: config.eviction.evictAfterSeconds,
        ratePerSecond: config.eviction.ratePerSecond,
        unhealthyZoneThreshold: config.eviction.unhealthyZoneThreshold,
        minZoneNodes: EVICTION_DEFAULTS.minZoneNodes,
        groupBudgetPercent: config.eviction.groupBudgetPercent,
        maxParallelNodes: config.eviction.maxParallelNodes,
        maxParallelPercent: config.eviction.maxParallelPercent,
        stormCooldownSeconds: config.eviction.stormCooldownSeconds,
        breakerTripped: this.deps.breakerTripped(),
      },
      limiter: this.limiter,
      storm: this.storm,
      nowMs: now,
    });
    const previousLimiter = this.limiter;
    const previousStorm = this.storm;
    this.limiter = plan.limiter;
    this.storm = plan.storm;
    this.observe(plan, previousStorm);
    return { plan, previousLimiter };
  }

  private async pass(): Promise<void> {
    if (!this.running) return;
    const { clock, log } = this.deps;
    try {
      const { plan, previousLimiter } = this.plan();
      // A node found held by the fresh read did not start: plan again at once without it.
      let replan = false;
      for (const name of plan.evict) {
        if (!this.running) return;
        const outcome = await this.passNode(name, previousLimiter);
        if (outcome === 'stopped') return;
        // A node done frees its place in the budgets: a node waiting on them may start now.
        if (outcome === 'held' || (outcome === 'complete' && plan.waiting.length > 0)) replan = true;
      }
      // Published from a plan the pass kept: one a fresh read changed is planned again at once, then published.
      if (!replan) this.publish(plan);
      this.schedule(
        replan
          ? 0
          : plan.nextDeadlineMs === undefined
            ? MAX_IDLE_MS
            : plan.nextDeadlineMs - clock.monotonic(),
      );
    } catch (err) {
      if (!this.running) return;
      if (isKubeError(err, KubeErrorCode.Forbidden))
        // The default install grants no Pod right (eviction is off there): say which opt-in grants it.
        log.error(
          { err, remedy: EVICTION_RBAC_REMEDY },
          'Eviction pass refused: the controller may not list or evict pods; retrying',
        );
      else log.warn({ err }, 'Eviction pass failed; retrying');
      this.schedule(MAX_IDLE_MS);
    }
  }

  /** One node of a plan: read it fresh, and evict from it unless another owner acts on it. */
  private async passNode(
    name: string,
    previousLimiter: ReadonlyMap<string, number>,
  ): Promise<'stopped' | 'held' | 'complete' | 'partial'> {
    const { clock, config } = this.deps;
    const spell = this.spells.get(name);
    const hold = await this.freshHold(name);
    if (!this.running) return 'stopped';
    if (hold) {
      if (spell) {
        spell.freshHold = { reason: hold, untilMs: clock.monotonic() + HOLD_RECHECK_MS };
        this.reportHold(name, spell, hold);
      }
      // Its zone's token goes back: nothing was evicted.
      const zone = this.deps.node(name)?.zone ?? '';
      const last = previousLimiter.get(zone);
      if (last === undefined) this.limiter.delete(zone);
      else this.limiter.set(zone, last);
      return 'held';
    }
    if (spell && this.deps.hold) spell.reportedHold = undefined;
    if (spell) spell.lastEvictionMs = clock.monotonic();
    const results = await this.deps.evict(name, config.dryRun || config.eviction.dryRun);
    if (spell) spell.evictionComplete = evictionComplete(results);
    this.reportResults(name, spell, results);
    return spell?.evictionComplete ? 'complete' : 'partial';
  }

  /**
   * The fresh read's verdict. A read that fails (429, 5xx, a timeout) holds this node like a hold, for the
   * recheck interval, its zone's token given back: the plan's other nodes go on in the same pass, rather than
   * the whole pass ending with its tokens spent and nothing published.
   */
  private async freshHold(name: string): Promise<HoldReason | undefined> {
    try {
      return await this.deps.hold?.(name);
    } catch (err) {
      if (!this.running) return undefined;
      this.deps.log.warn(
        { err, node: name },
        'Eviction: the fresh read of the node failed; read again later',
      );
      return HoldReason.NodeUnreadable;
    }
  }

  /** Counts a pass's outcomes; records PodEvicted events and do-not-disrupt skips (once per pod a spell). */
  private reportResults(name: string, spell: Spell | undefined, results: PodEvictionResult[]): void {
    const { config, log, metrics, events } = this.deps;
    const node = this.deps.node(name);
    for (const result of results) {
      metrics.evictions.inc({ outcome: result.outcome });
      if (
        result.outcome === 'skipped' &&
        result.reason === SkipReason.DoNotDisrupt &&
        spell &&
        !spell.reportedPods?.has(result.pod)
      ) {
        (spell.reportedPods ??= new Set()).add(result.pod);
        metrics.evictionSkipped.inc({ subject: 'pod', reason: SkipReason.DoNotDisrupt });
        this.countSkip('pod', SkipReason.DoNotDisrupt);
        this.event(name, `Did not evict pod ${result.pod}: annotated karpenter.sh/do-not-disrupt=true.`);
      }
      if (result.outcome === 'evicted' && node) {
        metrics.events.inc({ reason: EventReason.PodEvicted });
        events
          .nodeEvent(node, {
            type: 'Warning',
            reason: EventReason.PodEvicted,
            message: `Evicted pod ${result.pod}: node Degraded for over ${config.eviction.evictAfterSeconds}s`,
          })
          .catch((err: unknown) => eventNotRecorded(log, err));
      }
    }
  }
}
