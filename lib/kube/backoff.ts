// Capped exponential backoff with full jitter, as client-go's wait.Backoff (200 ms → 7 s for leases,
// 0.8 s → 30 s for watches).

export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  factor?: number;
}

export const LEASE_BACKOFF: BackoffPolicy = { initialMs: 200, maxMs: 7_000 };
export const WATCH_BACKOFF: BackoffPolicy = { initialMs: 800, maxMs: 30_000 };

export class Backoff {
  private readonly policy: BackoffPolicy;
  private readonly random: () => number;
  private attempt = 0;

  constructor(policy: BackoffPolicy, random: () => number = Math.random) {
    this.policy = policy;
    this.random = random;
  }

  /** The next delay: grows by `factor` up to `maxMs`, jittered to between half and all of it. */
  next(): number {
    const { initialMs, maxMs, factor = 2 } = this.policy;
    const ceiling = Math.min(maxMs, initialMs * factor ** this.attempt);
    this.attempt++;
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  reset(): void {
    this.attempt = 0;
  }
}
