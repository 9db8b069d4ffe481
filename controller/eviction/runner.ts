// Runs safe eviction (docs/design.md section 5) beside the reconciler: off unless --evict-after-seconds > 0. Each pass
// plans over every node's current state (controller/eviction/plan.ts: per-zone rate, zone and breaker stops),
// evicts the chosen nodes' pods through the Eviction API (PDBs respected), records PodEvicted events, and
// sleeps until the plan's next deadline.

import { EventReason } from '../../api/reasons.ts';
import type { Clock, Timer } from '../../lib/clock.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { NodeState } from '../decide/index.ts';
import { evictionComplete, type PodEvictionResult } from './evict.ts';
import { EVICTION_DEFAULTS, planEvictions, type EvictionNode } from './plan.ts';
import type { ControllerMetrics } from '../metrics.ts';
import { eventNotRecorded, type EventRecorder } from '../writes/index.ts';

/** What grants eviction its rights (docs/install.md, "RBAC opt-ins: Pod read"). */
export const EVICTION_RBAC_REMEDY =
  'add the kustomize component controller-eviction (list pods, create pods/eviction); the Helm chart grants them when eviction.evictAfterSeconds is above 0';

const MAX_IDLE_MS = 5_000;

/** The settings of safe eviction (--evict-after-seconds, --eviction-rate, --unhealthy-zone-threshold, --eviction-dry-run). */
export interface EvictionSettings {
  evictAfterSeconds: number;
  ratePerSecond: number;
  unhealthyZoneThreshold: number;
  dryRun: boolean;
}

export interface EvictorDeps {
  /**
   * Evicts the evictable pods of a node (evictNodePods through the API, with the leadership fence before
   * every eviction, in production; a fake in unit tests). Rejects when the pass must end.
   */
  evict(nodeName: string, dryRun: boolean): Promise<PodEvictionResult[]>;
  clock: Clock;
  log: Logger;
  metrics: ControllerMetrics;
  events: EventRecorder;
  /** The controller's eviction settings (ControllerConfig's own shape) and its --dry-run. */
  config: { dryRun: boolean; eviction: EvictionSettings };
  /** The node's zone ('' when unknown) and the node to record events on (undefined when it is gone). */
  node(name: string): { name: string; uid: string; zone: string } | undefined;
  /** Each node's latest decided state. */
  states(): ReadonlyMap<string, NodeState>;
  /** Whether a suspension holds the node (nothing is evicted from it). */
  suspended?(name: string): boolean;
  breakerTripped(): boolean;
}

interface Spell {
  degradedSinceMs: number;
  lastEvictionMs?: number;
  evictionComplete?: boolean;
}

export class Evictor {
  private readonly deps: EvictorDeps;
  private readonly spells = new Map<string, Spell>();
  private limiter = new Map<string, number>();
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
   * completed) and the rate limiter of an earlier term are forgotten, so a node is evicted only once this
   * term has itself seen it Degraded for --evict-after-seconds, never on a "Degraded since" that another
   * replica's term may have ended meanwhile.
   */
  start(): void {
    if (!this.enabled || this.running) return;
    this.spells.clear();
    this.limiter = new Map();
    this.running = true;
    this.schedule(0);
  }

  /** Stops scheduling passes; resolves once a pass in flight has ended (its evictions are fenced). */
  async stop(): Promise<void> {
    this.running = false;
    this.timer?.cancel();
    await this.current;
  }

  private schedule(delayMs: number): void {
    if (!this.running) return;
    this.timer?.cancel();
    this.timer = this.deps.clock.setTimer(Math.min(Math.max(delayMs, 0), MAX_IDLE_MS), () => {
      if (this.current) return;
      this.current = this.pass().finally(() => (this.current = undefined));
    });
  }

  private nodes(): EvictionNode[] {
    const { clock } = this.deps;
    const now = clock.monotonic();
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
      const suspended = this.deps.suspended?.(name) === true;
      nodes.push({
        name,
        state,
        zone: this.deps.node(name)?.zone ?? '',
        ...spell,
        ...(suspended ? { suspended } : {}),
      });
    }
    return nodes;
  }

  private async pass(): Promise<void> {
    if (!this.running) return;
    const { clock, config, log, metrics, events } = this.deps;
    try {
      const plan = planEvictions({
        nodes: this.nodes(),
        policy: {
          evictAfterSeconds: config.eviction.evictAfterSeconds,
          ratePerSecond: config.eviction.ratePerSecond,
          unhealthyZoneThreshold: config.eviction.unhealthyZoneThreshold,
          minZoneNodes: EVICTION_DEFAULTS.minZoneNodes,
          breakerTripped: this.deps.breakerTripped(),
        },
        limiter: this.limiter,
        nowMs: clock.monotonic(),
      });
      this.limiter = plan.limiter;
      for (const zone of plan.blockedZones) log.debug({ ...zone }, 'Eviction held back in zone');
      for (const name of plan.evict) {
        if (!this.running) return;
        const spell = this.spells.get(name);
        if (spell) spell.lastEvictionMs = clock.monotonic();
        const results = await this.deps.evict(name, config.dryRun || config.eviction.dryRun);
        if (spell) spell.evictionComplete = evictionComplete(results);
        const node = this.deps.node(name);
        for (const result of results) {
          metrics.evictions.inc({ outcome: result.outcome });
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
      this.schedule(
        plan.nextDeadlineMs === undefined ? MAX_IDLE_MS : plan.nextDeadlineMs - clock.monotonic(),
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
}
