// Taint durations from the taint changes writes made: the bootstrap from its remembered start or the node's
// creation on a first boot, the runtime taint only when this leader added it.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { NodeAnnotation } from '../../api/names.ts';
import { EventReason } from '../../api/reasons.ts';
import type { CachedNode } from '../cache/index.ts';
import type { NodeEvent } from '../decide/index.ts';
import { ControllerMetrics } from '../metrics.ts';
import { observeTaintDurations, type TaintTimes } from './taint-durations.ts';

const T0 = Date.UTC(2026, 0, 1);
const event = (reason: EventReason): NodeEvent => ({ type: 'Normal', reason, message: '' });
/** Both clocks at `ms`, or the monotonic one `wallStepMs` behind a wall clock that stepped. */
const at = (ms: number, wallStepMs = 0) => ({ wallMs: ms + wallStepMs, monotonicMs: ms });

function node(bootstrapped: boolean): CachedNode {
  return {
    name: 'n',
    creationTimestampMs: T0,
    annotations: bootstrapped ? { [NodeAnnotation.bootstrappedBootId]: 'boot-1' } : {},
  } as unknown as CachedNode;
}

function setup() {
  const metrics = new ControllerMetrics(new Registry());
  let times: TaintTimes = {};
  const durations = {
    observe: (
      n: CachedNode,
      events: NodeEvent[],
      when: ReturnType<typeof at>,
      startedMs: number | undefined,
    ) => {
      times.memory = { bootstrapStartedMs: startedMs };
      observeTaintDurations(metrics, times, n, events, when);
    },
    /** A new leadership term: the node book's records start empty. */
    reset: () => void (times = {}),
  };
  const sums = async () => ({
    bootstrap: (await metrics.bootstrapDuration.get()).values.find((v) => v.metricName?.endsWith('_sum'))
      ?.value,
    runtime: (await metrics.runtimeTaintDuration.get()).values.find((v) => v.metricName?.endsWith('_sum'))
      ?.value,
  });
  return { durations, sums };
}

describe('TaintDurations', () => {
  it('a first boot bootstraps from the node creation; a later boot only from its remembered start', async () => {
    const { durations, sums } = setup();
    durations.observe(node(false), [event(EventReason.BootstrapTaintRemoved)], at(T0 + 30_000), undefined);
    expect((await sums()).bootstrap).toBe(30);
    durations.observe(node(true), [event(EventReason.BootstrapTaintRemoved)], at(T0 + 90_000), undefined);
    expect((await sums()).bootstrap).toBe(30);
    durations.observe(node(true), [event(EventReason.BootstrapTaintRemoved)], at(T0 + 90_000), T0 + 80_000);
    expect((await sums()).bootstrap).toBe(40);
  });

  it('a runtime taint is timed from when this leader added it, and not after a reset', async () => {
    const { durations, sums } = setup();
    durations.observe(node(true), [event(EventReason.RuntimeTaintAdded)], at(T0), undefined);
    durations.observe(node(true), [event(EventReason.RuntimeTaintRemoved)], at(T0 + 12_000), undefined);
    expect((await sums()).runtime).toBe(12);
    durations.observe(node(true), [event(EventReason.RuntimeTaintAdded)], at(T0), undefined);
    durations.reset();
    durations.observe(node(true), [event(EventReason.RuntimeTaintRemoved)], at(T0 + 50_000), undefined);
    expect((await sums()).runtime).toBe(12);
  });

  it('a runtime taint held 12 s across a 45 s forward wall clock step is timed 12 s', async () => {
    const { durations, sums } = setup();
    durations.observe(node(true), [event(EventReason.RuntimeTaintAdded)], at(T0), undefined);
    durations.observe(
      node(true),
      [event(EventReason.RuntimeTaintRemoved)],
      at(T0 + 12_000, 45_000),
      undefined,
    );
    expect((await sums()).runtime).toBe(12);
  });
});
