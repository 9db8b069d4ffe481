// The caches' sync bounds (term.ts): how long the controller's caches may be out of sync before its leader
// steps down (lib/leader/elector.ts stepDown) or its liveness fails. The controller's, not leader election's.

/** How long a replica's caches may be out of sync before it gives up leading, or is restarted (term.ts). */
export interface SyncBounds {
  /** A leader whose caches stay out of sync this long steps down (--leader-unsynced-step-down-seconds). */
  leaderUnsyncedMs: number;
  /** The caches must first sync within this long of the start, or liveness fails (--startup-sync-timeout-seconds). */
  firstSyncMs: number;
}

/**
 * The caches of 5,000 nodes × 5 extensions synced in 3-7 s in the benchmark (docs/benchmark.md): a minute out of
 * sync is no relist but a replica that cannot list (a poisoned page, an MTU blackhole, memory starvation), and
 * five minutes without a first sync is one that a restart may cure.
 */
export const SYNC_BOUND_DEFAULTS = {
  leaderUnsyncedMs: 60_000,
  firstSyncMs: 300_000,
} as const satisfies SyncBounds;
