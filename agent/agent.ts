// nodecare-agent: learns which extensions its node requires (annotations, SystemExtensions, its config file),
// runs one ExtensionRunner per extension (supervisor.ts), keeps its own heartbeat Lease (heartbeat.ts), and
// serves health (liveness.ts) and metrics. `runAgent(config, deps)` wires them, so a test can start it in-process.

import { API_FEATURES, recordFeatures, reportFeatures } from '../lib/kube/features.ts';
import { uptime } from 'node:os';
import type { Registry } from 'prom-client';
import type { Clock } from '../lib/clock.ts';
import { startHealthServer } from '../lib/health.ts';
import { LEASE_NAMESPACE } from '../api/index.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { KubeLeaseStore, namespacedLeases, type LeaseStore } from '../lib/kube/leases.ts';
import type { Logger } from '../lib/log.ts';
import { packageVersion } from '../lib/version.ts';
import type { AgentConfig } from './config.ts';
import { Heartbeat } from './heartbeat.ts';
import { LeaseWriter } from './leases/writer.ts';
import { agentAlive } from './liveness.ts';
import { AgentMetrics } from './metrics.ts';
import { runProbe } from './probes/index.ts';
import type { ProbeEnvironment } from './probes/index.ts';
import { Supervisor } from './supervisor.ts';
import {
  AgentWatches,
  podsDeniedMessage,
  podSourceAtStart,
  watchReports,
  type WatchDeps,
} from './watches.ts';

export interface AgentDeps {
  clock: Clock;
  log: Logger;
  registry: Registry;
  client: KubeClient;
  /** Defaults to the real Lease API through `client`. */
  leaseStore?: LeaseStore;
  random?: () => number;
  /** When the host booted (ms on clock.monotonic()); defaults to monotonic now − os.uptime(). */
  bootTimeMs?: number;
}

export interface RunningAgent {
  healthPort: number;
  /** Extension name → published state, for tests and diagnostics. */
  states(): Map<string, string>;
  stop(): Promise<void>;
}

/** How the watches' choice of podReady's pod source is logged and shown in nodecare_agent_pod_source. */
function podSourceReports(
  socket: string,
  log: Logger,
  metrics: AgentMetrics,
): Pick<WatchDeps, 'onPodSource' | 'onPodsDenied'> {
  return {
    onPodSource: (source) => {
      metrics.podSource.reset();
      metrics.podSource.set({ source }, 1);
      log.info({ source, socket }, 'podReady pod source chosen');
    },
    // Neither source: the probes say so in their Leases (Unknown), and nodecare_agent_pod_source{source="none"}.
    onPodsDenied: (denied, err) => {
      metrics.podSource.reset();
      metrics.podSource.set({ source: denied ? 'none' : 'apiserver' }, 1);
      if (denied)
        log.error(
          { err, socket, problem: podsDeniedMessage(socket) },
          'podReady has no pod source: the API server refused the pod list',
        );
      else log.info({ source: 'apiserver' }, 'podReady pod source chosen');
    },
  };
}

export async function runAgent(config: AgentConfig, deps: AgentDeps): Promise<RunningAgent> {
  const { clock, client, registry } = deps;
  const random = deps.random ?? Math.random;
  const log = deps.log.child({ node: config.nodeName });
  const metrics = new AgentMetrics(registry, { runtimeMetrics: config.runtimeMetrics });
  client.listen({
    request: (kind) => metrics.apiRequests.inc(kind),
    watchEvent: (resource) => metrics.apiWatchEvents.inc({ resource }),
  });
  const leases = namespacedLeases(
    deps.leaseStore ?? new KubeLeaseStore(client),
    LEASE_NAMESPACE,
    config.requestTimeoutMs,
  );
  const writer = new LeaseWriter({ store: leases, clock, log, metrics, random });
  const startedMs = clock.monotonic();
  const watches = new AgentWatches({
    ...{ client, clock, nodeName: config.nodeName, ...watchReports(log, metrics) },
    kubeletPodsSocket: config.kubeletPodsSocket,
    ...podSourceReports(config.kubeletPodsSocket, log, metrics),
    onChange: () => supervisor.queueReconcile(),
  });
  const [target, durationSeconds] = [() => supervisor.target(), config.heartbeatDurationSeconds];
  const heartbeat = new Heartbeat({ clock, writer, random, durationSeconds, target });
  const env: ProbeEnvironment = {
    node: () => supervisor.node,
    pods: (namespace, selector) => watches.podsMatching(namespace, selector),
    resourceSlices: () => watches.resourceSlices(),
  };
  const renewIntervalMs = config.extensionRenewSeconds * 1000;
  const supervisor: Supervisor = new Supervisor({
    ...{ clock, log, metrics, writer, heartbeat, watches, config },
    // On the monotonic clock, as the startup grace measured from it (os.uptime counts since boot, no step).
    bootTimeMs: deps.bootTimeMs ?? clock.monotonic() - uptime() * 1000,
    runners: { clock, writer, metrics, env, runProbe, renewIntervalMs, random },
  });
  const alive = (): boolean =>
    agentAlive({
      ...{ now: clock.monotonic(), startedMs, heartbeatDurationSeconds: durationSeconds },
      ...{ nodeSynced: watches.node.synced, nodeKnown: supervisor.node !== undefined },
      ...{ nodeSeenMs: supervisor.nodeSeenMs, lastHeartbeatOkMs: heartbeat.lastOkMs },
    });
  const ready = (): boolean =>
    watches.synced && supervisor.node !== undefined && heartbeat.lastOkMs !== undefined;
  const health = await startHealthServer(
    config.healthPort,
    { healthy: alive, ready },
    registry,
    config.healthAddress,
  );
  const started = { version: packageVersion(), address: config.healthAddress, port: health.port };
  log.info({ ...started, api: client.server }, 'Started nodecare-agent');
  // Said at start, whether or not a podReady probe is registered yet (docs/agent.md, "podReady").
  const podSource = podSourceAtStart(config.kubeletPodsSocket);
  log.info({ ...podSource, socket: config.kubeletPodsSocket }, 'Checked where podReady reads pods');
  void reportFeatures(client, [API_FEATURES.resourceSlices], log).then((reports) =>
    recordFeatures(reports, metrics.featureAvailable),
  );
  watches.start();
  return {
    healthPort: health.port,
    states: () => supervisor.states(),
    async stop() {
      // Stop probing and writing; extensions are not marked failed (the leases simply stop renewing).
      heartbeat.stop();
      supervisor.stop();
      writer.stop();
      await Promise.all([watches.stop(), health.close()]);
      log.info('Stopped nodecare-agent');
    },
  };
}
