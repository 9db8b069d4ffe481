// The agent's per-extension series (issue 20 item 8): bounded whatever a node's annotations register, and gone
// with the extension.

import { describe, expect, it } from 'vitest';
import { MAX_UNDECLARED_EXTENSION_SERIES, OTHER_EXTENSION_LABEL } from '../lib/metric-labels.ts';
import { Registry } from '../lib/prom.ts';
import { AgentMetrics } from './metrics.ts';

async function series(metrics: AgentMetrics): Promise<Map<string, number>> {
  const values = (await metrics.extensionState.get()).values;
  return new Map(values.map((v) => [`${v.labels.extension}/${v.labels.state}`, v.value]));
}

describe('nodecare_agent_extension_state', () => {
  it('1 for the current state of each extension, 0 for the others; none once deregistered', async () => {
    const metrics = new AgentMetrics(new Registry());
    metrics.setState('gpu', 'Unhealthy', true);
    const gpu = await series(metrics);
    expect(gpu.get('gpu/Unhealthy')).toBe(1);
    expect(gpu.get('gpu/Healthy')).toBe(0);
    metrics.setState('gpu', undefined, true);
    expect((await series(metrics)).size).toBe(0);
  });

  it('annotation-registered names beyond the bound fold into one series (regression: one per name)', async () => {
    const metrics = new AgentMetrics(new Registry());
    metrics.setState('gpu', 'Healthy', true);
    for (let i = 0; i < 200; i++) metrics.setState(`junk-${i}`, 'Unknown', false);
    const all = await series(metrics);
    const names = new Set([...all.keys()].map((k) => k.split('/')[0]));
    expect(names.size).toBe(1 + MAX_UNDECLARED_EXTENSION_SERIES + 1);
    expect(all.get('gpu/Healthy')).toBe(1);
    expect(all.get(`${OTHER_EXTENSION_LABEL}/Unknown`)).toBe(200 - MAX_UNDECLARED_EXTENSION_SERIES);
    for (let i = 0; i < 200; i++) metrics.setState(`junk-${i}`, undefined, false);
    expect([...(await series(metrics)).keys()].every((k) => k.startsWith('gpu/'))).toBe(true);
  });
});

describe('runtime metrics (issue 51 item 6)', () => {
  const families = async (registry: Registry): Promise<string[]> =>
    (await registry.getMetricsAsJSON()).map((m) => m.name);

  it('are off by default: no process_* or nodejs_* family; --runtime-metrics turns them on', async () => {
    const off = new Registry();
    new AgentMetrics(off);
    expect((await families(off)).filter((n) => /^(process|nodejs)_/.test(n))).toEqual([]);
    const on = new Registry();
    new AgentMetrics(on, { runtimeMetrics: true });
    expect(await families(on)).toEqual(
      expect.arrayContaining(['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']),
    );
  });
});
