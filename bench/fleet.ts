// The benchmark's fleet simulator: many simulated agents in one process (bench/simulator.ts forks several), each
// writing its heartbeat Lease and one Lease per extension through the agent's real lease code
// (agent/leases/writer.ts LeaseWriter over lib/kube/leases.ts, api/lease.ts buildLease) at the agent's default
// cadence: heartbeat every third of --heartbeat-duration-seconds (±4 %), unchanged extension leases every
// --extension-renew-seconds, state changes at once. The parent tells it which extension changes state.

import { pino } from 'pino';
import { LEASE_NAMESPACE, type NodeRef, type ProbeStateRecord } from '../api/index.ts';
import { KubeLeaseStore, namespacedLeases } from '../lib/kube/leases.ts';
import { HEARTBEAT_RENEWALS_PER_DURATION } from '../agent/heartbeat.ts';
import { LeaseWriter } from '../agent/leases/writer.ts';
import { systemClock, type Timer } from '../lib/clock.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { loadConnection } from '../lib/kube/config.ts';

export type SimState = 'Healthy' | 'Unhealthy' | 'Progressing';

export interface FleetInit {
  cmd: 'init';
  kubeconfig: string;
  nodes: Array<{ name: string; uid: string; bootId: string; states: SimState[] }>;
  extensions: string[];
  heartbeatDurationSeconds: number;
  extensionRenewSeconds: number;
  requestTimeoutMs: number;
  /** Agents starting at once (each writes its heartbeat and every extension lease). */
  startConcurrency: number;
  /** API connections of this process. */
  connections: number;
}

export type FleetCommand =
  | FleetInit
  | { cmd: 'set'; node: string; extension: number; state: SimState }
  | { cmd: 'stats' }
  | { cmd: 'stop' };

export type FleetEvent =
  | { evt: 'started'; leases: number; elapsedMs: number }
  | { evt: 'stats'; writes: Record<string, number>; rssBytes: number }
  | { evt: 'stopped' }
  | { evt: 'error'; message: string };

const HEARTBEAT_JITTER = 0.04;

const REASON: Record<SimState, string> = {
  Healthy: 'ProbeSucceeded',
  Unhealthy: 'ConnectionRefused',
  Progressing: 'AwaitingFirstProbe',
};

class SimAgent {
  private readonly node: NodeRef;
  private readonly bootId: string;
  private readonly fleet: Fleet;
  private readonly records: ProbeStateRecord[];
  private readonly renewTimers: Array<Timer | undefined> = [];
  private heartbeatTimer: Timer | undefined;
  private stopped = false;

  constructor(fleet: Fleet, node: NodeRef, bootId: string, states: SimState[]) {
    this.fleet = fleet;
    this.node = node;
    this.bootId = bootId;
    const since = new Date(systemClock.now()).toISOString();
    this.records = states.map((state) => ({ state, reason: REASON[state], message: 'simulated', since }));
  }

  /**
   * First writes: the heartbeat, then every extension (as the agent does after its first probes). The first
   * renewal comes at a random point of the interval: agents of a running fleet started at different times,
   * so their renewals are spread evenly; the simulator starts thousands within seconds, and without this
   * their renewals would all fall due together every interval.
   */
  start(): Promise<unknown> {
    const first = [this.heartbeat()];
    for (let i = 0; i < this.records.length; i++)
      first.push(this.writeExtension(i, Math.random() * this.fleet.init.extensionRenewSeconds * 1000));
    return Promise.all(first);
  }

  set(index: number, state: SimState): void {
    const now = new Date(systemClock.now()).toISOString();
    this.records[index] = { state, reason: REASON[state], message: 'simulated', since: now };
    void this.writeExtension(index);
  }

  stop(): void {
    this.stopped = true;
    this.heartbeatTimer?.cancel();
    for (const t of this.renewTimers) t?.cancel();
  }

  private heartbeat(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const { heartbeatDurationSeconds } = this.fleet.init;
    const done = this.fleet.writer.write({
      node: this.node,
      extension: undefined,
      holderIdentity: `bench-agent-${this.node.name}`,
      leaseDurationSeconds: heartbeatDurationSeconds,
      renewTime: new Date(systemClock.now()),
      bootId: this.bootId,
      record: undefined,
    });
    const intervalMs = (heartbeatDurationSeconds * 1000) / HEARTBEAT_RENEWALS_PER_DURATION;
    this.heartbeatTimer = systemClock.setTimer(
      intervalMs * (1 - HEARTBEAT_JITTER + 2 * HEARTBEAT_JITTER * Math.random()),
      () => void this.heartbeat(),
    );
    return done;
  }

  /** Writes extension `index` now and schedules its renewal one interval later (ExtensionRunner's rule). */
  private writeExtension(index: number, nextInMs?: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const renewMs = this.fleet.init.extensionRenewSeconds * 1000;
    this.renewTimers[index]?.cancel();
    this.renewTimers[index] = systemClock.setTimer(
      nextInMs ?? renewMs,
      () => void this.writeExtension(index),
    );
    return this.fleet.writer.write({
      node: this.node,
      extension: this.fleet.init.extensions[index],
      holderIdentity: `bench-agent-${this.node.name}`,
      leaseDurationSeconds: Math.ceil((renewMs * 3) / 1000),
      renewTime: new Date(systemClock.now()),
      bootId: this.bootId,
      record: this.records[index],
    });
  }
}

class Fleet {
  readonly init: FleetInit;
  readonly writer: LeaseWriter;
  readonly client: KubeClient;
  readonly agents = new Map<string, SimAgent>();
  readonly writes: Record<string, number> = {};

  constructor(init: FleetInit, client: KubeClient) {
    this.init = init;
    this.client = client;
    // Failed writes are counted (stats) and retried by the writer; only errors are logged.
    const log = pino({ level: 'error', base: {} }, pino.destination({ fd: 2, sync: false }));
    this.writer = new LeaseWriter({
      store: namespacedLeases(new KubeLeaseStore(client), LEASE_NAMESPACE, init.requestTimeoutMs),
      clock: systemClock,
      log,
      metrics: {
        write: (operation, result) => {
          const key = `${operation}_${result}`;
          this.writes[key] = (this.writes[key] ?? 0) + 1;
        },
      },
    });
  }

  /**
   * Starts the agents, at most `startConcurrency` at a time: the next starts once one has written all its
   * leases, so the start paces itself to what the API server takes (agents on a real fleet start spread out).
   */
  async start(): Promise<number> {
    const { nodes, startConcurrency } = this.init;
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(startConcurrency, nodes.length) }, async () => {
        while (next < nodes.length) {
          const n = nodes[next++];
          if (!n) break;
          const agent = new SimAgent(this, { name: n.name, uid: n.uid }, n.bootId, n.states);
          this.agents.set(n.name, agent);
          await agent.start();
        }
      }),
    );
    return nodes.length * (this.init.extensions.length + 1);
  }

  stop(): void {
    for (const agent of this.agents.values()) agent.stop();
    this.writer.stop();
  }
}

function send(event: FleetEvent): void {
  process.send?.(event);
}

let fleet: Fleet | undefined;

process.on('message', (message: FleetCommand) => {
  void (async () => {
    switch (message.cmd) {
      case 'init': {
        const client = new KubeClient(await loadConnection(message.kubeconfig), {
          userAgent: 'nodecare-bench-fleet',
          connections: message.connections,
        });
        fleet = new Fleet(message, client);
        const t0 = performance.now();
        const leases = await fleet.start();
        send({ evt: 'started', leases, elapsedMs: performance.now() - t0 });
        return;
      }
      case 'set':
        fleet?.agents.get(message.node)?.set(message.extension, message.state);
        return;
      case 'stats':
        send({ evt: 'stats', writes: { ...fleet?.writes }, rssBytes: process.memoryUsage().rss });
        return;
      case 'stop':
        fleet?.stop();
        await fleet?.client.close();
        send({ evt: 'stopped' });
        process.disconnect?.();
        return;
      default: {
        const unreachable: never = message;
        throw new Error(`unknown command ${JSON.stringify(unreachable)}`);
      }
    }
  })().catch((err: unknown) => {
    send({ evt: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  });
});
