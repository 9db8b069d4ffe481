// Leader election's timing: the defaults (shorter than client-go's, docs/adr/0005), their one validation
// (client-go's rules: leaseDuration > renewDeadline > 1.2 × retryPeriod), and the jitter and release values
// the elector (elector.ts) uses.

/**
 * Shorter than client-go's 15 s / 10 s / 2 s, whose crash fail-over takes 15-20 s (docs/adr/0005): a standby
 * takes over at most lease duration + 2 jittered retry periods after the leader's last renewal (≤ 13.6 s); a
 * leader that cannot renew stops writing within retry period + renew deadline (8.5 s) of its last renewal,
 * 1.5 s before a standby may take over; the leader sends one PUT and each standby one GET every 1.5 s.
 */
export const LEADER_ELECTION_DEFAULTS = {
  leaseDurationMs: 10_000,
  renewDeadlineMs: 7_000,
  retryPeriodMs: 1_500,
} as const;

/** client-go's JitterFactor: validation keeps renewDeadline above retryPeriod × this. */
const JITTER_FACTOR = 1.2;
/** Our acquire-retry jitter (see the header): retryPeriod × [1, 1 + ACQUIRE_JITTER). */
export const ACQUIRE_JITTER = 0.2;
/** leaseDurationSeconds written on release, as client-go does. */
export const RELEASED_LEASE_SECONDS = 1;

export interface LeaderElectionTiming {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** Every problem with the timing at once (empty when valid): leaseDuration > renewDeadline > 1.2 × retryPeriod. */
export function validateLeaderElectionTiming(timing: LeaderElectionTiming): string[] {
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = timing;
  const problems: string[] = [];
  for (const [name, value] of Object.entries(timing)) {
    if (!Number.isFinite(value) || value <= 0)
      problems.push(`${name} must be a positive number (got ${value})`);
  }
  if (!(leaseDurationMs > renewDeadlineMs)) {
    problems.push(
      `leaseDuration (${leaseDurationMs} ms) must be greater than renewDeadline (${renewDeadlineMs} ms)`,
    );
  }
  if (!(renewDeadlineMs > JITTER_FACTOR * retryPeriodMs)) {
    problems.push(
      `renewDeadline (${renewDeadlineMs} ms) must be greater than ${JITTER_FACTOR} × retryPeriod (${retryPeriodMs} ms)`,
    );
  }
  return problems;
}
