// The fleet simulator as the benchmark drives it: the nodes split between several processes of bench/fleet.ts
// (forked, one IPC channel each). One process of simulated agents is CPU-bound at about 5,000 nodes (every
// lease write is a TLS request and a JSON body); split, the simulator uses every core the API server leaves
// idle, and a process that falls behind delays only its own share of the heartbeats.

import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { FleetCommand, FleetEvent, FleetInit, SimState } from './fleet.ts';

/** Nodes per simulator process when --fleet-processes is not given. */
export const NODES_PER_FLEET_PROCESS = 1000;
/** How often the fleet start says how far it got. */
const FLEET_PROGRESS_MS = 30_000;
/**
 * Fewer than this fraction of the leases created in FLEET_STALL_MS: the fleet start has stalled (the renewals of
 * the agents already started take all the API server gives).
 */
const FLEET_STALL_MS = 120_000;
const FLEET_STALL_FRACTION = 0.01;
/** API connections of the whole simulator, shared out between its processes (at least 8 each). */
const FLEET_CONNECTIONS = 64;

export function defaultFleetProcesses(nodes: number): number {
  return Math.max(1, Math.ceil(nodes / NODES_PER_FLEET_PROCESS));
}

class FleetProcess {
  private readonly child: ChildProcess;
  private readonly listeners: Array<(e: FleetEvent) => void> = [];
  private readonly label: string;
  private stopping = false;

  constructor(label: string, say: (line: string) => void) {
    this.label = label;
    this.child = fork(join(import.meta.dirname, 'fleet.ts'), [], {
      execPath: process.execPath,
      // A bounded heap makes V8 collect as it goes rather than grow the simulator's heap towards 4 GB and then
      // take the CPU the API server needs to collect it.
      execArgv: ['--max-old-space-size=2048', '--max-semi-space-size=16'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child.on('error', (err) => say(`${label}: ${err.message}`));
    this.child.on('exit', (code, signal) => {
      if (code !== 0 && !this.stopping) say(`${label} exited (${signal ?? `code ${code}`})`);
    });
    this.child.on('message', (e: FleetEvent) => {
      if (e.evt === 'error') say(`${label} error: ${e.message}`);
      for (const l of [...this.listeners]) l(e);
    });
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  send(cmd: FleetCommand): void {
    if (!this.child.connected) {
      const how = this.child.signalCode ?? `code ${this.child.exitCode}`;
      throw new Error(`${this.label} exited (${how}; SIGKILL: see the kernel log for the OOM killer)`);
    }
    this.child.send(cmd);
  }

  next<E extends FleetEvent['evt']>(evt: E, timeoutMs: number): Promise<Extract<FleetEvent, { evt: E }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.label}: no ${evt} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const listener = (e: FleetEvent): void => {
        if (e.evt !== evt) return;
        this.listeners.splice(this.listeners.indexOf(listener), 1);
        clearTimeout(timer);
        resolve(e as Extract<FleetEvent, { evt: E }>);
      };
      this.listeners.push(listener);
    });
  }

  async stop(): Promise<void> {
    if (!this.child.connected) return;
    const stopped = this.next('stopped', 10_000).catch(() => undefined);
    this.send({ cmd: 'stop' });
    await stopped;
    this.stopping = true;
    this.child.kill('SIGKILL');
  }
}

/** What the whole simulator is given: FleetInit without the per-process parts. */
export type SimulatorInit = Omit<FleetInit, 'cmd' | 'connections'>;

export class Simulator {
  private readonly processes: FleetProcess[];
  /** Node name → the process simulating it. */
  private readonly owner = new Map<string, FleetProcess>();

  private readonly say: (line: string) => void;

  constructor(count: number, say: (line: string) => void) {
    this.say = say;
    this.processes = Array.from(
      { length: count },
      (_, i) => new FleetProcess(`fleet simulator ${i + 1}/${count}`, say),
    );
  }

  get pids(): number[] {
    return this.processes.map((p) => p.pid);
  }

  /**
   * Deals the nodes out round-robin (so each process gets as many of the bootstrapping cohort as of the
   * rest) and resolves once every process has written all its leases: the lease count and the slowest
   * process's time. Says how far it got every FLEET_PROGRESS_MS, and fails when fewer than
   * FLEET_STALL_FRACTION of the leases were created in FLEET_STALL_MS: the API server then takes no more than
   * the renewals of the agents already started, and waiting longer changes nothing.
   */
  async start(init: SimulatorInit, timeoutMs: number): Promise<{ leases: number; elapsedMs: number }> {
    const expected = init.nodes.length * (init.extensions.length + 1);
    const t0 = performance.now();
    const seen: Array<{ atMs: number; created: number }> = [{ atMs: t0, created: 0 }];
    let lastWrites = 0;
    let watching: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      watching = setInterval(() => {
        void this.stats(10_000).then(
          (writes) => {
            const created = writes.create_ok ?? 0;
            const all = Object.values(writes).reduce((a, b) => a + b, 0);
            const failed = Object.entries(writes).filter(([k]) => !k.endsWith('_ok'));
            this.say(
              `fleet start: ${created} of ${expected} leases created, ${Math.round(((all - lastWrites) * 1000) / FLEET_PROGRESS_MS)} writes/s${failed.length ? `; failed: ${failed.map(([k, v]) => `${k} ${v}`).join(', ')}` : ''}`,
            );
            lastWrites = all;
            const now = performance.now();
            seen.push({ atMs: now, created });
            const before = seen.findLast((s) => now - s.atMs >= FLEET_STALL_MS);
            if (before && created - before.created < FLEET_STALL_FRACTION * expected)
              reject(
                new Error(
                  `the fleet start stalled: ${created} of ${expected} leases created, ${created - before.created} in the last ${Math.round((now - before.atMs) / 1000)} s. ` +
                    'The API server takes no more writes than the renewals of the agents already started: ' +
                    'this machine serves fewer nodes than --nodes (the control plane is the pinned version; ' +
                    'docs/benchmark.md says how to run another)',
                ),
              );
          },
          () => undefined,
        );
      }, FLEET_PROGRESS_MS);
    });
    try {
      return await Promise.race([this.startAll(init, timeoutMs), stalled]);
    } finally {
      clearInterval(watching);
    }
  }

  private async startAll(
    init: SimulatorInit,
    timeoutMs: number,
  ): Promise<{ leases: number; elapsedMs: number }> {
    const P = this.processes.length;
    const shares = this.processes.map((): SimulatorInit['nodes'] => []);
    for (const [i, node] of init.nodes.entries()) {
      shares[i % P]?.push(node);
      this.owner.set(node.name, this.processes[i % P] as FleetProcess);
    }
    const started = await Promise.all(
      this.processes.map((p, i) => {
        const done = p.next('started', timeoutMs);
        p.send({
          ...init,
          cmd: 'init',
          nodes: shares[i] ?? [],
          startConcurrency: Math.max(1, Math.ceil(init.startConcurrency / P)),
          connections: Math.max(8, Math.ceil(FLEET_CONNECTIONS / P)),
        });
        return done;
      }),
    );
    return {
      leases: started.reduce((sum, s) => sum + s.leases, 0),
      elapsedMs: Math.max(...started.map((s) => s.elapsedMs)),
    };
  }

  set(node: string, extension: number, state: SimState): void {
    const p = this.owner.get(node);
    if (!p) throw new Error(`fleet: no simulated agent for node ${node}`);
    p.send({ cmd: 'set', node, extension, state });
  }

  /** Write attempts by operation and result, summed over the processes. */
  async stats(timeoutMs: number): Promise<Record<string, number>> {
    const all = await Promise.all(
      this.processes.map((p) => {
        const stats = p.next('stats', timeoutMs);
        p.send({ cmd: 'stats' });
        return stats;
      }),
    );
    const writes: Record<string, number> = {};
    for (const s of all) for (const [k, v] of Object.entries(s.writes)) writes[k] = (writes[k] ?? 0) + v;
    return writes;
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop()));
  }
}
