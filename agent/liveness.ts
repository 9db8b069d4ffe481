// When the agent is alive and ready (its /healthz and /readyz). Alive while heartbeats land: an agent that
// cannot renew for two lease durations restarts. Waiting for its Node to be created is not a fault (a restart
// would not help): alive, not ready. Pure: the times come in, all on the monotonic clock (docs/adr/0020).

export interface AgentVitals {
  now: number;
  /** When the agent started. */
  startedMs: number;
  heartbeatDurationSeconds: number;
  /** The Node's watch has listed. */
  nodeSynced: boolean;
  /** The Node exists, and since when it was seen. */
  nodeKnown: boolean;
  nodeSeenMs: number;
  /** When a heartbeat write last succeeded. */
  lastHeartbeatOkMs: number | undefined;
}

/** A start-up or a Node that just appeared gets this much more than the window to write its first heartbeat. */
const FIRST_HEARTBEAT_SLACK_MS = 60_000;

export function agentAlive(v: AgentVitals): boolean {
  const windowMs = 2 * v.heartbeatDurationSeconds * 1000;
  if (!v.nodeKnown) return v.nodeSynced || v.now - v.startedMs < windowMs + FIRST_HEARTBEAT_SLACK_MS;
  return v.lastHeartbeatOkMs === undefined || v.lastHeartbeatOkMs < v.nodeSeenMs
    ? v.now - v.nodeSeenMs < windowMs + FIRST_HEARTBEAT_SLACK_MS
    : v.now - v.lastHeartbeatOkMs < windowMs;
}
