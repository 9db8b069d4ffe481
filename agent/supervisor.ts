// Keeps one ExtensionRunner per extension the node requires: on every change of the Node or the
// SystemExtensions it resolves the registrations (annotations, SystemExtensions, the config file), starts,
// updates and stops runners, and restarts graces on a reboot. What it ignores is logged once per change.

import {
  DEFAULT_POLICY,
  extensionLeaseName,
  resolveRegistrations,
  watchesFor,
  withConfigFile,
  type ExtensionSpec,
  type Registration,
} from '../api/index.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/log.ts';
import type { AgentConfig } from './config.ts';
import type { Heartbeat } from './heartbeat.ts';
import type { LeaseWriter } from './leases/writer.ts';
import type { AgentMetrics } from './metrics.ts';
import { ExtensionRunner, type LeaseTarget, type RunnerDeps } from './runner.ts';
import type { NodeSnapshot } from './watched.ts';
import type { AgentWatches } from './watches.ts';

/** A registration from the agent's config file. */
export function fromConfigFile(name: string, spec: ExtensionSpec): Registration {
  const { critical, conditionType, enforcement, startupGraceSeconds } = spec;
  return {
    name,
    source: 'config',
    valid: true,
    spec,
    policy: { ...DEFAULT_POLICY, critical, conditionType, enforcement, startupGraceSeconds },
  };
}

export interface SupervisorDeps {
  clock: Clock;
  log: Logger;
  metrics: AgentMetrics;
  writer: Pick<LeaseWriter, 'remove'>;
  heartbeat: Pick<Heartbeat, 'now' | 'started'>;
  watches: Pick<AgentWatches, 'currentNode' | 'node' | 'systemExtensions' | 'setWatches'>;
  config: Pick<AgentConfig, 'identity' | 'allowedPaths' | 'fileExtensions'>;
  /** When the host booted, on the monotonic clock: registrations present at start get their grace from then. */
  bootTimeMs: number;
  /** What every runner shares (its log is the supervisor's, per extension). */
  runners: Omit<RunnerDeps, 'log' | 'target'>;
}

export class Supervisor {
  private readonly deps: SupervisorDeps;
  private readonly runners = new Map<string, ExtensionRunner>();
  private readonly fileRegistrations: Map<string, Registration>;
  private snapshot: NodeSnapshot | undefined;
  private seenMs: number;
  private initialRegistrationsSeen = false;
  private ignoredAnnotations = new Set<string>();
  private loggedConflicts = new Set<string>();
  private stopped = false;
  private reconcileQueued = false;

  constructor(deps: SupervisorDeps) {
    this.deps = deps;
    this.seenMs = deps.clock.monotonic();
    this.fileRegistrations = new Map(
      [...deps.config.fileExtensions].map(([name, spec]) => [name, fromConfigFile(name, spec)]),
    );
  }

  /** The Node as last seen (undefined while it does not exist). */
  get node(): NodeSnapshot | undefined {
    return this.snapshot;
  }

  /** When the Node last appeared (the heartbeat is expected from then on). */
  get nodeSeenMs(): number {
    return this.seenMs;
  }

  /** Whose Leases this agent writes: its Node's, of this boot. */
  target(): LeaseTarget | undefined {
    const node = this.snapshot;
    return node
      ? {
          node: { name: node.name, uid: node.uid },
          bootId: node.bootId,
          holderIdentity: this.deps.config.identity,
        }
      : undefined;
  }

  /** Extension name → published state. */
  states(): Map<string, string> {
    return new Map([...this.runners].map(([name, runner]) => [name, runner.record.state]));
  }

  stop(): void {
    this.stopped = true;
    for (const runner of this.runners.values()) runner.stop();
  }

  /** Reconciles once after the current burst of watch events (they come many at a time). */
  queueReconcile(): void {
    if (this.reconcileQueued || this.stopped) return;
    this.reconcileQueued = true;
    queueMicrotask(() => {
      this.reconcileQueued = false;
      this.reconcile();
    });
  }

  reconcile(): void {
    if (this.stopped) return;
    const { clock, log, watches, heartbeat } = this.deps;
    const current = watches.currentNode();
    if (!current) {
      if (watches.node.synced && this.runners.size > 0) {
        log.info('Node is gone; stopped probing (its leases are garbage-collected with it)');
        for (const runner of this.runners.values()) runner.stop();
        this.runners.clear();
      }
      this.snapshot = undefined;
      return;
    }
    const previous = this.snapshot;
    this.snapshot = current;
    if (previous === undefined) this.seenMs = clock.monotonic();
    if (!watches.systemExtensions.synced) return;
    const { wanted, notes } = this.wanted(current);
    const rebooted = previous !== undefined && previous.bootId !== current.bootId;
    const recreated = previous !== undefined && previous.uid !== current.uid;
    // A heartbeat of an earlier boot or Node object counts as absent: rewrite it now, not at its next turn.
    if ((rebooted || recreated) && heartbeat.started) heartbeat.now();
    this.apply(current, wanted, { previous, rebooted, recreated });
    // A registration ignored in favour of another of the same name is reported on that extension's Lease.
    for (const [name, runner] of this.runners) runner.setNote(notes.get(name));
    const kinds = new Set([...wanted.values()].flatMap((r) => (r.valid ? [r.spec.probe.kind] : [])));
    watches.setWatches(watchesFor(kinds));
    this.deps.metrics.extensions.set(wanted.size);
    this.deps.metrics.invalidRegistrations.set([...wanted.values()].filter((r) => !r.valid).length);
    this.initialRegistrationsSeen = true;
    if (!heartbeat.started) heartbeat.now();
  }

  /** The registrations the node requires and the notes for their Leases; what was ignored is logged once. */
  private wanted(current: NodeSnapshot): Pick<ReturnType<typeof withConfigFile>, 'wanted' | 'notes'> {
    const { log, watches, config } = this.deps;
    const resolved = resolveRegistrations(current, watches.systemExtensions.store.values(), {
      nodeAddresses: current.addresses,
      allowedPathPrefixes: config.allowedPaths,
    });
    // Logged once per change: every Node update (status, heartbeats) re-resolves the same annotations.
    for (const key of resolved.badAnnotationKeys)
      if (!this.ignoredAnnotations.has(key))
        log.warn({ annotation: key }, 'Ignored annotation: the extension name is not a DNS label');
    this.ignoredAnnotations = new Set(resolved.badAnnotationKeys);
    const { wanted, notes, conflicts } = withConfigFile(resolved, this.fileRegistrations);
    for (const conflict of conflicts)
      if (!this.loggedConflicts.has(conflict.message))
        log.warn({ extension: conflict.name }, `Registration conflict: ${conflict.message}`);
    this.loggedConflicts = new Set(conflicts.map((c) => c.message));
    return { wanted, notes };
  }

  private apply(
    current: NodeSnapshot,
    wanted: Map<string, Registration>,
    change: { previous: NodeSnapshot | undefined; rebooted: boolean; recreated: boolean },
  ): void {
    const { clock, log, writer } = this.deps;
    const { previous, rebooted, recreated } = change;
    // Registrations present when the agent starts get their grace from node boot; later ones from now.
    const graceStart = (): number =>
      this.initialRegistrationsSeen ? clock.monotonic() : this.deps.bootTimeMs;
    for (const [name, runner] of this.runners) {
      if (!wanted.has(name)) {
        runner.stop();
        this.runners.delete(name);
        log.info({ extension: name }, 'Deregistered extension');
        void writer.remove(extensionLeaseName(current.name, name, current.uid));
      }
    }
    for (const [name, registration] of wanted) {
      const runner = this.runners.get(name);
      if (!runner) {
        const created = new ExtensionRunner(name, registration, graceStart(), {
          ...this.deps.runners,
          target: () => this.target(),
          log: log.child({ extension: name }),
        });
        this.runners.set(name, created);
        const { source, valid } = registration;
        log.info({ extension: name, source, valid }, 'Registered extension');
        created.start();
      } else if (JSON.stringify(runner.current) !== JSON.stringify(registration) || rebooted) {
        log.info({ extension: name, rebooted }, 'Re-registered extension');
        runner.update(registration, rebooted ? clock.monotonic() : graceStart());
      } else if (recreated || previous === undefined) {
        runner.republish();
      }
    }
  }
}
