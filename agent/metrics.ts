// nodecare-agent metrics (docs/conventions.md 12): nodecare_agent_ prefix, base units, _total only on counters, bounded
// labels, no node-name label (the scraper adds it), one registry passed in.

import { EXTENSION_STATES } from '../api/index.ts';
import {
  MAX_UNDECLARED_EXTENSION_SERIES,
  OTHER_EXTENSION_LABEL,
  extensionSeries,
} from '../lib/metric-labels.ts';
import { Counter, Gauge, Histogram, type Registry } from '../lib/prom.ts';
import { collectRuntimeMetrics } from '../lib/runtime-metrics.ts';
import { packageVersion } from '../lib/version.ts';
import type { LeaseWriterMetrics } from './leases/writer.ts';

export class AgentMetrics implements LeaseWriterMetrics {
  readonly probeDuration: Histogram<'kind'>;
  readonly probeResults: Counter<'kind' | 'outcome'>;
  readonly extensionState: Gauge<'extension' | 'state'>;
  readonly leaseWrites: Counter<'operation' | 'result'>;
  readonly watchErrors: Counter<'source'>;
  readonly podSource: Gauge<'source'>;
  readonly featureAvailable: Gauge<'feature'>;
  readonly apiRequests: Counter<'verb' | 'resource'>;
  readonly apiWatchEvents: Counter<'resource'>;
  readonly extensions: Gauge;
  readonly invalidRegistrations: Gauge;
  readonly buildInfo: Gauge<'version' | 'nodejs_version'>;
  /** Each registered extension's last published state. */
  private readonly published = new Map<string, { state: string; declared: boolean }>();

  /**
   * `runtimeMetrics` (--runtime-metrics, off by default): also the process_* and nodejs_* runtime metrics,
   * most of an agent's series when on, and at fleet scale most of what nodecare costs Prometheus; the
   * kubelet's container metrics already say what the agent uses (docs/agent.md, "Metrics").
   */
  constructor(registry: Registry, { runtimeMetrics = false }: { runtimeMetrics?: boolean } = {}) {
    // The runtime metrics keep their standard names (process_*, nodejs_*) so stock dashboards work. The event
    // loop delay is sampled once a second rather than every 10 ms: prom-client's default wakes the process 100
    // times a second, ~5 millicores of an agent's 5-millicore budget (docs/design.md P6, docs/adr/0006).
    if (runtimeMetrics) collectRuntimeMetrics(registry, { eventLoopMonitoringPrecision: 1000 });
    this.probeDuration = new Histogram({
      name: 'nodecare_agent_probe_duration_seconds',
      help: 'Duration of probe attempts by probe kind.',
      labelNames: ['kind'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.probeResults = new Counter({
      name: 'nodecare_agent_probe_results_total',
      help: 'Probe attempts by probe kind and outcome.',
      labelNames: ['kind', 'outcome'],
      registers: [registry],
    });
    this.extensionState = this.extensionStateGauge(registry);
    this.leaseWrites = new Counter({
      name: 'nodecare_agent_lease_writes_total',
      help: 'Lease write attempts by operation and result.',
      labelNames: ['operation', 'result'],
      registers: [registry],
    });
    this.watchErrors = new Counter({
      name: 'nodecare_agent_watch_errors_total',
      help: 'List or watch failures by source; each is retried with backoff.',
      labelNames: ['source'],
      registers: [registry],
    });
    this.podSource = new Gauge({
      name: 'nodecare_agent_pod_source',
      help: "1 for where podReady probes read this node's pods: kubelet (its Pods API socket), apiserver (a watch of the node's pods), or none (no Pods API socket and the API server refused the pod list: the agent may not list pods); absent while no podReady probe is registered.",
      labelNames: ['source'],
      registers: [registry],
    });
    this.featureAvailable = new Gauge({
      name: 'nodecare_agent_feature_available',
      help: 'Whether the API server serves an optional API this agent uses (1) or not (0), as checked at start.',
      labelNames: ['feature'],
      registers: [registry],
    });
    // The agent's whole cost to the API server, by kind (bounded: the few resources the agent reads and writes).
    this.apiRequests = new Counter({
      name: 'nodecare_agent_api_requests_total',
      help: 'Requests this agent sent to the API server, by verb and resource; a watch counts once, however long it streams.',
      labelNames: ['verb', 'resource'],
      registers: [registry],
    });
    this.apiWatchEvents = new Counter({
      name: 'nodecare_agent_api_watch_events_total',
      help: "Events this agent's watches received from the API server, by resource.",
      labelNames: ['resource'],
      registers: [registry],
    });
    this.extensions = new Gauge({
      name: 'nodecare_agent_extensions',
      help: 'Extensions this node requires.',
      registers: [registry],
    });
    this.invalidRegistrations = new Gauge({
      name: 'nodecare_agent_invalid_registrations',
      help: 'Extensions whose registration does not parse or validate.',
      registers: [registry],
    });
    this.buildInfo = new Gauge({
      name: 'nodecare_agent_build_info',
      help: 'Always 1; the labels say which nodecare version and Node.js runtime this agent runs.',
      labelNames: ['version', 'nodejs_version'],
      registers: [registry],
    });
    this.buildInfo.set({ version: packageVersion(), nodejs_version: process.version }, 1);
  }

  /** nodecare_agent_extension_state, computed on each scrape from the extensions now registered. */
  private extensionStateGauge(registry: Registry): Gauge<'extension' | 'state'> {
    const extensionState: Gauge<'extension' | 'state'> = new Gauge({
      name: 'nodecare_agent_extension_state',
      help: `Published state of each extension on this node (1 for the current state); extensions registered by annotation beyond ${MAX_UNDECLARED_EXTENSION_SERIES} are counted together as extension="${OTHER_EXTENSION_LABEL}".`,
      labelNames: ['extension', 'state'],
      registers: [registry],
      // Computed on each scrape from the extensions now registered, so a deregistered one has no series.
      collect: () => {
        extensionState.reset();
        const pairs = [...this.published].map(([extension, { state }]) => ({ extension, state }));
        const declared = new Set(
          [...this.published].filter(([, p]) => p.declared).map(([extension]) => extension),
        );
        const series = extensionSeries(pairs, declared);
        for (const extension of new Set(series.map((s) => s.extension)))
          for (const state of EXTENSION_STATES) extensionState.set({ extension, state }, 0);
        for (const { extension, state, nodes } of series) extensionState.set({ extension, state }, nodes);
      },
    });
    return extensionState;
  }

  write(operation: 'create' | 'update' | 'delete', result: 'ok' | 'conflict' | 'error'): void {
    this.leaseWrites.inc({ operation, result });
  }

  /**
   * Records the state an extension published (undefined: deregistered). `declared`: registered by a
   * SystemExtension or the config file, not by a node annotation (whose names are bounded in the metric).
   */
  setState(extension: string, state: string | undefined, declared: boolean): void {
    if (state === undefined) this.published.delete(extension);
    else this.published.set(extension, { state, declared });
  }
}
