// The standard runtime metrics (process_*, nodejs_*) under their usual names, so stock dashboards work, as
// prom-client's collectDefaultMetrics registers them, without loading @opentelemetry/api (lib/prom.ts): each
// of prom-client's default metric modules is loaded directly, except the CPU counters, which are the few
// lines below (prom-client's version reads the trace context for exemplars). Three of prom-client's gauges
// are left out: nodejs_active_{handles,requests,resources}_total, a gauge named like a counter, which
// `promtool check metrics` refuses ("non-counter metrics should not have _total suffix"); each is the sum of
// the same name without _total (sum(nodejs_active_handles)).

import { createRequire } from 'node:module';
import { Counter, type Registry } from './prom.ts';

const require = createRequire(import.meta.url);

/** prom-client's default metrics but process_cpu_*, in its order (lib/defaultMetrics.js). */
const PROM_CLIENT_METRICS = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processResources',
  'processHandles',
  'processRequests',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
] as const;

/** prom-client's gauges named like counters, removed after registration (above). */
export const MISNAMED_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
] as const;

type DefaultMetric = (registry: Registry, config: { eventLoopMonitoringPrecision: number }) => void;

export interface RuntimeMetricsOptions {
  /** How often the event-loop delay is sampled, in ms (prom-client's default is 10). */
  eventLoopMonitoringPrecision: number;
}

export function collectRuntimeMetrics(registry: Registry, options: RuntimeMetricsOptions): void {
  let last = process.cpuUsage();
  const user = new Counter({
    name: 'process_cpu_user_seconds_total',
    help: 'Total user CPU time spent in seconds.',
    registers: [registry],
    // One collect sets all three, as prom-client does: the registry collects them in this order.
    collect() {
      const now = process.cpuUsage();
      user.inc((now.user - last.user) / 1e6);
      system.inc((now.system - last.system) / 1e6);
      total.inc((now.user - last.user + now.system - last.system) / 1e6);
      last = now;
    },
  });
  const system = new Counter({
    name: 'process_cpu_system_seconds_total',
    help: 'Total system CPU time spent in seconds.',
    registers: [registry],
  });
  const total = new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds.',
    registers: [registry],
  });
  for (const name of PROM_CLIENT_METRICS)
    (require(`prom-client/lib/metrics/${name}.js`) as DefaultMetric)(registry, options);
  for (const name of MISNAMED_GAUGES) registry.removeSingleMetric(name);
}
