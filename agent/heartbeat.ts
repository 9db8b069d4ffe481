// The agent's own heartbeat Lease: written a third of its duration apart, with jitter, so the controller can
// tell "the extension fails" from "the agent is gone". A heartbeat of an earlier boot or Node object counts as
// absent, so the supervisor has it rewritten at once (`now`).

import type { Clock, Timer } from '../lib/clock.ts';
import type { LeaseWriter } from './leases/writer.ts';
import type { LeaseTarget } from './runner.ts';

const HEARTBEAT_JITTER = 0.04;

/**
 * Heartbeat writes per lease duration: a write that fails (its deadline, then retries with backoff) still has
 * two more intervals before the lease expires. The kubelet writes its node lease four times per 40 s; three
 * per 60 s halves the writes for a third more time to notice a gone agent (docs/adr/0010).
 */
export const HEARTBEAT_RENEWALS_PER_DURATION = 3;

export interface HeartbeatDeps {
  clock: Clock;
  writer: Pick<LeaseWriter, 'write'>;
  random: () => number;
  durationSeconds: number;
  /** Whose heartbeat: undefined while the Node is not known (nothing is written then). */
  target(): LeaseTarget | undefined;
}

export class Heartbeat {
  private readonly deps: HeartbeatDeps;
  private timer: Timer | undefined;
  private stopped = false;
  private lastOk: number | undefined;

  constructor(deps: HeartbeatDeps) {
    this.deps = deps;
  }

  /** When a heartbeat write last succeeded (the controller's clock is not ours: only our liveness reads it). */
  get lastOkMs(): number | undefined {
    return this.lastOk;
  }

  get started(): boolean {
    return this.timer !== undefined;
  }

  /** Writes the heartbeat now and schedules the next one (replacing the one scheduled). */
  now(): void {
    if (this.stopped) return;
    this.timer?.cancel();
    const { clock, writer, random, durationSeconds } = this.deps;
    const t = this.deps.target();
    if (t) {
      void writer
        .write({
          node: t.node,
          extension: undefined,
          holderIdentity: t.holderIdentity,
          leaseDurationSeconds: durationSeconds,
          renewTime: new Date(clock.now()),
          bootId: t.bootId,
          record: undefined,
        })
        .then(() => {
          if (!this.stopped) this.lastOk = clock.monotonic();
        });
    }
    const intervalMs = (durationSeconds * 1000) / HEARTBEAT_RENEWALS_PER_DURATION;
    const jittered = intervalMs * (1 - HEARTBEAT_JITTER + 2 * HEARTBEAT_JITTER * random());
    this.timer = clock.setTimer(jittered, () => this.now());
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }
}
