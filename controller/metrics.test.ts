import { describe, expect, it } from 'vitest';
import { Registry } from '../lib/prom.ts';
import { ControllerMetrics } from './metrics.ts';

describe('ControllerMetrics', () => {
  it('serves the standard process_* and nodejs_* runtime metrics beside its own', async () => {
    const registry = new Registry();
    new ControllerMetrics(registry);
    const names = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
      'nodecare_controller_build_info',
      'nodecare_controller_reconciles_total',
    ])
      expect(names, name).toContain(name);
  });
});
