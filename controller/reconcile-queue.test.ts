// The controller's reconcile queue: each reconcile counted by outcome, a failure warned about and retried, a
// reconcile cut off by the end of leadership only noted.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../lib/log.ts';
import { FakeClock } from '../lib/testing.ts';
import { ControllerMetrics } from './metrics.ts';
import { reconcileQueue } from './reconcile-queue.ts';
import { NotLeaderError } from './writes/index.ts';

describe('reconcileQueue', () => {
  it('counts reconciles by outcome and warns only about real failures', async () => {
    const clock = new FakeClock();
    const metrics = new ControllerMetrics(new Registry());
    const lines: Array<{ level: string; msg: string }> = [];
    const log = createLogger(
      { level: 'debug', name: 'test' },
      {
        write: (line: string) => void lines.push(JSON.parse(line) as { level: string; msg: string }),
      },
    );
    const outcomes: Record<string, () => Promise<void>> = {
      ok: async () => undefined,
      broken: async () => Promise.reject(new Error('boom')),
      fenced: async () => Promise.reject(new NotLeaderError()),
    };
    const queue = reconcileQueue(
      { reconcile: (key) => outcomes[key]!() },
      { clock, log, metrics, config: { workers: 2 } },
    );
    queue.start();
    for (const key of Object.keys(outcomes)) queue.add(key);
    await queue.idle();
    const counts = Object.fromEntries(
      (await metrics.reconciles.get()).values.map((v) => [v.labels.result, v.value]),
    );
    expect(counts).toEqual({ ok: 1, error: 2 });
    expect(lines.filter((l) => l.msg === 'Reconcile failed; retrying')).toHaveLength(1);
    expect(lines.filter((l) => l.msg === 'Reconcile stopped: no longer leading')).toHaveLength(1);
    await queue.stop();
  });
});
