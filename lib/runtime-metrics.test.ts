import { Registry as FullRegistry, collectDefaultMetrics } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Registry } from './prom.ts';
import { MISNAMED_GAUGES, collectRuntimeMetrics } from './runtime-metrics.ts';

const names = async (registry: { getMetricsAsJSON(): Promise<Array<{ name: string }>> }): Promise<string[]> =>
  (await registry.getMetricsAsJSON()).map((m) => m.name).sort();

describe('collectRuntimeMetrics', () => {
  it("serves every metric of prom-client's collectDefaultMetrics, under the same names, but its gauges named _total", async () => {
    const ours = new Registry();
    collectRuntimeMetrics(ours, { eventLoopMonitoringPrecision: 1000 });
    const theirs = new FullRegistry();
    collectDefaultMetrics({ register: theirs, eventLoopMonitoringPrecision: 1000 });
    const misnamed = new Set<string>(MISNAMED_GAUGES);
    expect(await names(ours)).toEqual((await names(theirs)).filter((n) => !misnamed.has(n)));
    for (const name of MISNAMED_GAUGES) expect(await names(theirs)).toContain(name);
    expect(await names(ours)).toContain('process_resident_memory_bytes');
  });

  it('counts CPU time: user + system = total, and it only grows', async () => {
    const registry = new Registry();
    collectRuntimeMetrics(registry, { eventLoopMonitoringPrecision: 1000 });
    const read = async (): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const m of await registry.getMetricsAsJSON())
        if (m.name.startsWith('process_cpu_')) out[m.name] = Number(m.values[0]?.value);
      return out;
    };
    const first = await read();
    for (let spin = performance.now(); performance.now() - spin < 30;);
    const second = await read();
    expect(second.process_cpu_seconds_total).toBeCloseTo(
      (second.process_cpu_user_seconds_total ?? 0) + (second.process_cpu_system_seconds_total ?? 0),
      6,
    );
    expect(second.process_cpu_seconds_total).toBeGreaterThan(first.process_cpu_seconds_total ?? Infinity);
  });
});
