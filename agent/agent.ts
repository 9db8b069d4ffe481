// nodecare-agent: learns which extensions its node requires (annotations, SystemExtensions, its config file),
// runs one ExtensionRunner per extension, keeps its own heartbeat Lease, and serves health and metrics.
// `runAgent(config, deps)` is the whole program, so a test can start it in-process.

import { uptime } from 'node:os';
import type { Registry } from 'prom-client';
import {
  DEFAULT_POLICY,
  extensionLeaseName,
  resolveRegistrations,
  withConfigFile,
  type ExtensionSpec,
  type Registration,
} from '../api/index.ts';
import type { Clock, Timer } from '../lib/clock.ts';
import { startHealthServer, type HealthServer } from '../lib/health.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import type { Logger } from '../lib/log.ts';
import { packageVersion } from '../lib/version.ts';
import type { AgentConfig } from './config.ts';
import { KubeLeaseStore, type LeaseStore } from './leases/store.ts';
import { LeaseWriter } from './leases/writer.ts';
import { AgentMetrics } from './metrics.ts';
import { runProbe } from './probes/index.ts';
import type { ProbeEnvironment } from './probes/types.ts';
import { ExtensionRunner, type LeaseTarget } from './runner.ts';
import { AgentWatches, type NodeSnapshot } from './watches.ts';

export interface AgentDeps {
  clock: Clock;
  log: Logger;
  registry: Registry;
  client: KubeClient;
  /** Defaults to the real Lease API through `client`. */
  leaseStore?: LeaseStore;
  random?: () => number;
  /** When the host booted (ms); defaults to now − os.uptime(). */
  bootTimeMs?: number;
}

export interface RunningAgent {
  healthPort: number;
  /** Extension name → published state, for tests and diagnostics. */
  states(): Map<string, string>;
  stop(): Promise<void>;
}

const HEARTBEAT_JITTER = 0.04;

function fromConfigFile(name: string, spec: ExtensionSpec): Registration {
  const { critical, conditionType, enforcement, startupGraceSeconds } = spec;
  return {
    name,
    source: 'config',
    valid: true,
    spec,
    policy: { ...DEFAULT_POLICY, critical, conditionType, enforcement, startupGraceSeconds },
  };
}

export async function runAgent(config: AgentConfig, deps: AgentDeps): Promise<RunningAgent> {
  const { clock, client, registry } = deps;
  const random = deps.random ?? Math.random;
  const log = deps.log.child({ node: config.nodeName });
  const metrics = new AgentMetrics(registry);
  const bootTimeMs = deps.bootTimeMs ?? clock.now() - uptime() * 1000;
  const store = deps.leaseStore ?? new KubeLeaseStore(client, config.requestTimeoutMs);
  const writer = new LeaseWriter({ store, clock, log, metrics, random });
  const runners = new Map<string, ExtensionRunner>();
  const startedMs = clock.now();
  let node: NodeSnapshot | undefined;
  let heartbeatTimer: Timer | undefined;
  let lastHeartbeatOkMs: number | undefined;
  let stopped = false;
  let reconcileQueued = false;
  /** When the Node last appeared (the heartbeat is expected from then on). */
  let nodeSeenMs = startedMs;
  let ignoredAnnotations = new Set<string>();
  let loggedConflicts = new Set<string>();
  const fileRegistrations = new Map(
    [...config.fileExtensions].map(([name, spec]) => [name, fromConfigFile(name, spec)]),
  );

  const target = (): LeaseTarget | undefined =>
    node
      ? { node: { name: node.name, uid: node.uid }, bootId: node.bootId, holderIdentity: config.identity }
      : undefined;

  const watches = new AgentWatches({
    client,
    clock,
    nodeName: config.nodeName,
    onChange: () => queueReconcile(),
    onError: (source, err) => {
      metrics.watchErrors.inc({ source });
      log.warn({ err, source }, 'Watch failed; retrying with backoff');
    },
    onSkipped: (source, key, err) =>
      log.error({ err, source, object: key }, 'Skipped an object that could not be handled'),
  });

  const env: ProbeEnvironment = {
    node: () => node,
    pods: (namespace, selector) => watches.podsMatching(namespace, selector),
  };

  const runnerDeps = {
    clock,
    writer,
    metrics,
    env,
    runProbe,
    target,
    renewIntervalMs: config.extensionRenewSeconds * 1000,
    random,
  };

  /** Registrations present when the agent starts get their grace from node boot; later ones from now. */
  let initialRegistrationsSeen = false;
  const graceStart = (): number => (initialRegistrationsSeen ? clock.now() : bootTimeMs);

  function queueReconcile(): void {
    if (reconcileQueued || stopped) return;
    reconcileQueued = true;
    queueMicrotask(() => {
      reconcileQueued = false;
      reconcile();
    });
  }

  function reconcile(): void {
    if (stopped) return;
    const current = watches.currentNode();
    if (!current) {
      if (watches.node.synced && runners.size > 0) {
        log.info('Node is gone; stopped probing (its leases are garbage-collected with it)');
        for (const runner of runners.values()) runner.stop();
        runners.clear();
      }
      node = undefined;
      return;
    }
    const previous = node;
    node = current;
    if (previous === undefined) nodeSeenMs = clock.now();
    if (!watches.systemExtensions.synced) return;
    const resolved = resolveRegistrations(current, watches.systemExtensions.store.values(), {
      nodeAddresses: current.addresses,
      allowedPathPrefixes: config.allowedPaths,
    });
    // Logged once per change: every Node update (status, heartbeats) re-resolves the same annotations.
    for (const key of resolved.badAnnotationKeys)
      if (!ignoredAnnotations.has(key))
        log.warn({ annotation: key }, 'Ignored annotation: the extension name is not a DNS label');
    ignoredAnnotations = new Set(resolved.badAnnotationKeys);
    const { wanted, notes, conflicts } = withConfigFile(resolved, fileRegistrations);
    // Logged once per change, like the ignored annotations.
    for (const conflict of conflicts)
      if (!loggedConflicts.has(conflict.message))
        log.warn({ extension: conflict.name }, `Registration conflict: ${conflict.message}`);
    loggedConflicts = new Set(conflicts.map((c) => c.message));

    const rebooted = previous !== undefined && previous.bootId !== current.bootId;
    const recreated = previous !== undefined && previous.uid !== current.uid;
    // A heartbeat of an earlier boot or Node object counts as absent: rewrite it now, not at its next turn.
    if ((rebooted || recreated) && heartbeatTimer) {
      heartbeatTimer.cancel();
      heartbeat();
    }
    for (const [name, runner] of runners) {
      if (!wanted.has(name)) {
        runner.stop();
        runners.delete(name);
        log.info({ extension: name }, 'Deregistered extension');
        void writer.remove(extensionLeaseName(current.name, name, current.uid));
      }
    }
    for (const [name, registration] of wanted) {
      const runner = runners.get(name);
      if (!runner) {
        const created = new ExtensionRunner(name, registration, graceStart(), {
          ...runnerDeps,
          log: log.child({ extension: name }),
        });
        runners.set(name, created);
        log.info(
          { extension: name, source: registration.source, valid: registration.valid },
          'Registered extension',
        );
        created.start();
      } else if (JSON.stringify(runner.current) !== JSON.stringify(registration) || rebooted) {
        log.info({ extension: name, rebooted }, 'Re-registered extension');
        runner.update(registration, rebooted ? clock.now() : graceStart());
      } else if (recreated || previous === undefined) {
        runner.republish();
      }
    }
    // A registration ignored in favour of another of the same name is reported on that extension's Lease.
    for (const [name, runner] of runners) runner.setNote(notes.get(name));
    watches.setPodWatch([...wanted.values()].some((r) => r.valid && r.spec.probe.kind === 'podReady'));
    metrics.extensions.set(wanted.size);
    metrics.invalidRegistrations.set([...wanted.values()].filter((r) => !r.valid).length);
    initialRegistrationsSeen = true;
    if (!heartbeatTimer) heartbeat();
  }

  function heartbeat(): void {
    if (stopped) return;
    const t = target();
    if (t) {
      void writer
        .write({
          node: t.node,
          extension: undefined,
          holderIdentity: t.holderIdentity,
          leaseDurationSeconds: config.heartbeatDurationSeconds,
          renewTime: new Date(clock.now()),
          bootId: t.bootId,
          record: undefined,
        })
        .then(() => {
          if (!stopped) lastHeartbeatOkMs = clock.now();
        });
    }
    const intervalMs = (config.heartbeatDurationSeconds * 1000) / 4;
    heartbeatTimer = clock.setTimer(
      intervalMs * (1 - HEARTBEAT_JITTER + 2 * HEARTBEAT_JITTER * random()),
      heartbeat,
    );
  }

  const health: HealthServer = await startHealthServer(
    config.healthPort,
    {
      // Alive while heartbeats land; an agent that cannot renew for two lease durations restarts. Waiting for
      // its Node to be created is not a fault (a restart would not help): alive, not ready.
      healthy: () => {
        const windowMs = 2 * config.heartbeatDurationSeconds * 1000;
        if (!node) return watches.node.synced || clock.now() - startedMs < windowMs + 60_000;
        return lastHeartbeatOkMs === undefined || lastHeartbeatOkMs < nodeSeenMs
          ? clock.now() - nodeSeenMs < windowMs + 60_000
          : clock.now() - lastHeartbeatOkMs < windowMs;
      },
      ready: () => watches.synced && node !== undefined && lastHeartbeatOkMs !== undefined,
    },
    registry,
    config.healthAddress,
  );
  log.info(
    { version: packageVersion(), address: config.healthAddress, port: health.port, api: client.server },
    'Started nodecare-agent',
  );
  watches.start();

  return {
    healthPort: health.port,
    states: () => new Map([...runners].map(([name, runner]) => [name, runner.record.state])),
    async stop() {
      // Stop probing and writing; extensions are not marked failed (the leases simply stop renewing).
      stopped = true;
      heartbeatTimer?.cancel();
      for (const runner of runners.values()) runner.stop();
      writer.stop();
      await Promise.all([watches.stop(), health.close()]);
      log.info('Stopped nodecare-agent');
    },
  };
}
