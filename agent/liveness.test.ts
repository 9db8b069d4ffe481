// The agent's liveness: alive while heartbeats land within two lease durations; before its Node exists or its
// first heartbeat, alive for the window plus a minute; a Node that never appears is no reason to restart.

import { describe, expect, it } from 'vitest';
import { agentAlive, type AgentVitals } from './liveness.ts';

const T0 = Date.UTC(2026, 0, 1);
const base: AgentVitals = {
  now: T0,
  startedMs: T0,
  heartbeatDurationSeconds: 40,
  nodeSynced: true,
  nodeKnown: true,
  nodeSeenMs: T0,
  lastHeartbeatOkMs: T0,
};

describe('agentAlive', () => {
  it.each<[string, Partial<AgentVitals>, boolean]>([
    ['a heartbeat 79 s ago (two durations are 80 s)', { now: T0 + 79_000 }, true],
    ['a heartbeat 80 s ago', { now: T0 + 80_000 }, false],
    [
      'no heartbeat yet, the Node seen 139 s ago (80 s + a minute)',
      { lastHeartbeatOkMs: undefined, now: T0 + 139_000 },
      true,
    ],
    ['no heartbeat yet, the Node seen 140 s ago', { lastHeartbeatOkMs: undefined, now: T0 + 140_000 }, false],
    [
      'the last heartbeat is older than the Node (recreated): timed from the Node',
      { lastHeartbeatOkMs: T0 - 1, now: T0 + 100_000 },
      true,
    ],
    [
      'no Node, its watch listed: waiting for it is not a fault',
      { nodeKnown: false, now: T0 + 3_600_000 },
      true,
    ],
    [
      'no Node, its watch not listed after 140 s',
      { nodeKnown: false, nodeSynced: false, now: T0 + 140_000 },
      false,
    ],
    [
      'no Node, its watch not listed after 139 s',
      { nodeKnown: false, nodeSynced: false, now: T0 + 139_000 },
      true,
    ],
  ])('%s → %s', (_, vitals, alive) => {
    expect(agentAlive({ ...base, ...vitals })).toBe(alive);
  });
});
