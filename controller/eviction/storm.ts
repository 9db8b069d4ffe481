// The storm memory of the eviction plan (issue 54 item 1, plan.ts): when the breaker stops tripping, every zone
// waits stormCooldownSeconds; when a zone stops being disrupted, that zone waits as long (reason StormCooldown).
// The caller keeps the memory, one per leadership term, like the limiter.

/** The cooldown's length: the plan's policy field (seconds). */
export interface StormPolicy {
  stormCooldownSeconds: number;
  breakerTripped: boolean;
}

/** What the plan remembers of storms between calls (the caller keeps it, one per leadership term). */
export interface StormMemory {
  /** The breaker had tripped at the last call. */
  breakerTripped: boolean;
  /** Zones disrupted at the last call. */
  disruptedZones: ReadonlySet<string>;
  /** Every zone waits until then (the breaker's storm ended). */
  clusterCooldownUntilMs?: number;
  /** Per zone, it waits until then (its disruption ended). */
  zoneCooldownUntilMs: ReadonlyMap<string, number>;
}

export const NO_STORM: StormMemory = {
  breakerTripped: false,
  disruptedZones: new Set(),
  zoneCooldownUntilMs: new Map(),
};

/** The storm memory after this call, and the cooldowns that hold now. */
export function nextStorm(
  previous: StormMemory,
  policy: StormPolicy,
  disruptedZones: ReadonlySet<string>,
  nowMs: number,
): StormMemory {
  const cooldownMs = policy.stormCooldownSeconds * 1000;
  let clusterCooldownUntilMs = previous.clusterCooldownUntilMs;
  if (previous.breakerTripped && !policy.breakerTripped && cooldownMs > 0)
    clusterCooldownUntilMs = nowMs + cooldownMs;
  if (clusterCooldownUntilMs !== undefined && clusterCooldownUntilMs <= nowMs)
    clusterCooldownUntilMs = undefined;
  const zoneCooldownUntilMs = new Map(
    [...previous.zoneCooldownUntilMs].filter(
      ([zone, untilMs]) => untilMs > nowMs && !disruptedZones.has(zone),
    ),
  );
  if (cooldownMs > 0)
    for (const zone of previous.disruptedZones)
      if (!disruptedZones.has(zone)) zoneCooldownUntilMs.set(zone, nowMs + cooldownMs);
  return {
    breakerTripped: policy.breakerTripped,
    disruptedZones,
    ...(clusterCooldownUntilMs !== undefined ? { clusterCooldownUntilMs } : {}),
    zoneCooldownUntilMs,
  };
}
