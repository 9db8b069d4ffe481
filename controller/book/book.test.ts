// The node book: one record per node (memory, deadline parts, contribution, taint start) and the views derived
// from them. The state metrics follow each node's latest decision, the roll-up is told only when a node's
// contribution changed, the breaker trips and resets on the counts with one cluster event a trip, and a reset
// forgets everything.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { ControllerReason, EventReason, ProbeReason } from '../../api/reasons.ts';
import { createLogger } from '../../lib/log.ts';
import { FakeClock } from '../../lib/testing.ts';
import { NodeState, type NodeDecision, type NodeEvent } from '../decide/index.ts';
import { ControllerMetrics } from '../metrics.ts';
import type { ParsedSystemExtension } from '../../api/registration.ts';
import { RollupTally } from '../rollup/index.ts';
import { NodeBook } from './book.ts';

/** A decision on a node requiring one critical SystemExtension `gpu` in `state`. */
function decided(
  state: NodeState,
  gpu: ExtensionState,
  reason: string = ProbeReason.ProbeSucceeded,
): NodeDecision {
  return {
    state,
    condition: { status: state === NodeState.Ready ? 'True' : 'False', reason: 'x', message: '' },
    extensions: [
      {
        name: 'gpu',
        state: gpu,
        reason,
        conditionType: 'GpuReady',
        source: 'systemExtension',
        critical: true,
      },
    ],
  } as unknown as NodeDecision;
}

function setup() {
  const metrics = new ControllerMetrics(new Registry());
  const clusterEvents: NodeEvent[] = [];
  const clock = new FakeClock(0);
  const expiries = new Map<string, number>();
  const cache = { leaseExpiresAtMs: (lease: string) => expiries.get(lease), systemExtensionList: () => [] };
  const ledger = new NodeBook({
    ...{ clock, cache, metrics },
    log: createLogger({ level: 'silent', name: 'test' }),
    clusterEvents: { clusterEvent: async (e) => void clusterEvents.push(e) },
    maxUnhealthyFraction: 0.5,
  });
  const nodesIn = async (state: string): Promise<number> =>
    (await metrics.nodes.get()).values.find((v) => v.labels.state === state)?.value ?? 0;
  return { expiries, clock, ledger, metrics, clusterEvents, nodesIn };
}

describe('NodeBook', () => {
  it('counts each node once, in its latest state, and forgets a node that is gone', async () => {
    const { ledger, nodesIn } = setup();
    ledger.record('a', decided(NodeState.Ready, ExtensionState.Healthy));
    ledger.record('b', decided(NodeState.Ready, ExtensionState.Healthy));
    ledger.record('a', decided(NodeState.Degraded, ExtensionState.Unhealthy));
    expect([await nodesIn(NodeState.Ready), await nodesIn(NodeState.Degraded)]).toEqual([1, 1]);
    ledger.record('b', undefined);
    expect([await nodesIn(NodeState.Ready), await nodesIn(NodeState.Degraded)]).toEqual([0, 1]);
    expect(ledger.nodeStates()).toEqual(new Map([['a', NodeState.Degraded]]));
    expect(ledger.state('b')).toBeUndefined();
  });

  it('counts nodes with a release override by verdict, following each node to its latest one', async () => {
    const { ledger, metrics } = setup();
    const released = (verdict: 'active' | 'expired' | 'invalid'): NodeDecision => ({
      ...decided(NodeState.Degraded, ExtensionState.Unhealthy),
      release: { verdict, until: '2026-12-02T18:00:00Z', reason: '', lifted: [] },
    });
    const counts = async () =>
      Object.fromEntries((await metrics.releasedNodes.get()).values.map((v) => [v.labels.verdict, v.value]));
    ledger.record('a', released('active'));
    ledger.record('b', released('active'));
    ledger.record('c', released('invalid'));
    expect(await counts()).toMatchObject({ active: 2, invalid: 1 });
    ledger.record('a', released('expired'));
    ledger.record('b', decided(NodeState.Degraded, ExtensionState.Unhealthy));
    expect(await counts()).toMatchObject({ active: 0, expired: 1, invalid: 1 });
  });

  it('says the roll-up changed only when a node contributes something new', () => {
    const { ledger } = setup();
    expect(ledger.record('a', decided(NodeState.Ready, ExtensionState.Healthy))).toBe(true);
    expect(ledger.record('a', decided(NodeState.Ready, ExtensionState.Healthy))).toBe(false);
    expect(ledger.record('a', decided(NodeState.Degraded, ExtensionState.Unhealthy))).toBe(true);
    expect(ledger.record('a', undefined)).toBe(true);
    expect(ledger.record('a', undefined)).toBe(false);
  });

  it('keeps the roll-up tally equal to the pairs it lists, through changes, removals and a reset', () => {
    const { ledger } = setup();
    const sx = [] as ParsedSystemExtension[];
    const same = () => expect(ledger.tally.sorted()).toEqual(RollupTally.of(ledger.rollupPairs()).sorted());
    ledger.record('a', decided(NodeState.Ready, ExtensionState.Healthy));
    ledger.record('b', decided(NodeState.Degraded, ExtensionState.Unhealthy));
    ledger.record('a', decided(NodeState.Degraded, ExtensionState.Unknown, ControllerReason.LeaseExpired));
    same();
    expect(ledger.tally.sorted().counts.get('gpu')).toMatchObject({ healthy: 0, unhealthy: 1, unknown: 1 });
    ledger.record('b', undefined);
    same();
    expect(ledger.tally.sorted().counts.get('gpu')).toMatchObject({ unhealthy: 0, unknown: 1 });
    ledger.reset(sx);
    expect(ledger.tally.sorted().counts.size).toBe(0);
  });

  it('lists the roll-up pairs with the agent-not-reporting fact only on the pairs it explains', () => {
    const { ledger } = setup();
    const silent = decided(NodeState.Degraded, ExtensionState.Unknown, ControllerReason.AgentNotReporting);
    ledger.record('a', { ...silent, agentNotReporting: { since: '2026-01-01T00:00:00Z' } } as NodeDecision);
    expect([...ledger.rollupPairs()]).toEqual([
      {
        node: 'a',
        extension: 'gpu',
        conditionType: 'GpuReady',
        state: ExtensionState.Unknown,
        reason: ControllerReason.AgentNotReporting,
        source: 'systemExtension',
        agentNotReporting: { since: '2026-01-01T00:00:00Z' },
      },
    ]);
  });

  it('trips the breaker when most nodes fail one extension at once, with one cluster event, and resets it', async () => {
    const { ledger, metrics, clusterEvents } = setup();
    for (const n of ['a', 'b', 'c', 'd']) ledger.record(n, decided(NodeState.Ready, ExtensionState.Healthy));
    expect(ledger.evaluateBreaker()).toBe(false);
    for (const n of ['a', 'b', 'c']) ledger.record(n, decided(NodeState.Degraded, ExtensionState.Unhealthy));
    expect(ledger.evaluateBreaker()).toBe(true);
    expect(ledger.tripped).toEqual(new Set(['gpu']));
    expect(ledger.evaluateBreaker()).toBe(false);
    expect(clusterEvents.map((e) => [e.reason, e.message])).toEqual([
      [EventReason.CorrelatedFailure, expect.stringContaining('fails on 3 of 4 nodes')],
    ]);
    expect((await metrics.breakerTripped.get()).values).toHaveLength(1);
    for (const n of ['a', 'b']) ledger.record(n, decided(NodeState.Ready, ExtensionState.Healthy));
    expect(ledger.evaluateBreaker()).toBe(true);
    expect(ledger.tripped.size).toBe(0);
    expect((await metrics.breakerTripped.get()).values).toHaveLength(0);
  });

  it('reset forgets every node, the breaker and the metrics they fed', async () => {
    const { ledger, nodesIn } = setup();
    for (const n of ['a', 'b', 'c']) ledger.record(n, decided(NodeState.Degraded, ExtensionState.Unhealthy));
    ledger.evaluateBreaker();
    ledger.settle('a', settled(60_000));
    ledger.reset([]);
    expect(ledger.tripped.size).toBe(0);
    expect(ledger.nodeStates().size).toBe(0);
    expect(await nodesIn(NodeState.Degraded)).toBe(0);
    expect(ledger.memory('a')).toBeUndefined();
    expect(ledger.rearm('a')).toBeUndefined();
  });

  it('keeps one record per node: its contribution outlives being decided again, its deadline does not', () => {
    const { ledger } = setup();
    ledger.record('a', decided(NodeState.Ready, ExtensionState.Healthy));
    ledger.settle('a', settled(60_000));
    expect(ledger.memory('a')).toEqual(settled(60_000).memory);
    expect(ledger.rearm('a')).toBe(60_000);
    ledger.unsettle('a');
    expect(ledger.rearm('a')).toBeUndefined();
    expect(ledger.memory('a')).toEqual(settled(60_000).memory);
    expect(ledger.state('a')).toBe(NodeState.Ready);
    ledger.unsettle('a', 'forget');
    expect(ledger.memory('a')).toBeUndefined();
    expect(ledger.state('a')).toBe(NodeState.Ready);
    // Gone: the whole record with it.
    ledger.settle('a', settled(60_000));
    ledger.record('a', undefined);
    expect([ledger.memory('a'), ledger.rearm('a'), ledger.state('a')]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('re-arms at the earliest of the fixed deadline and the renewed leases, never past one that came', () => {
    const { expiries, clock, ledger } = setup();
    expiries.set('lease-a', 30_000);
    ledger.settle('a', { ...settled(60_000), deadlines: { leases: ['lease-a'], fixedMs: 60_000 } });
    expect(ledger.rearm('a')).toBe(30_000);
    expiries.set('lease-a', 90_000);
    expect(ledger.rearm('a')).toBe(60_000);
    clock.advance(60_000);
    expect(ledger.rearm('a')).toBeUndefined();
  });
});

/** A decision carried out with `fixedMs` as its only deadline. */
function settled(fixedMs: number): NodeDecision {
  return {
    ...decided(NodeState.Ready, ExtensionState.Healthy),
    memory: { bootstrapStartedMs: 1 },
    nextDeadlineMs: fixedMs,
    deadlines: { leases: [], fixedMs },
  } as unknown as NodeDecision;
}

describe('NodeBook.requirementsChanged', () => {
  const sx = (name: string, generation: number) =>
    ({ name, uid: `uid-${name}`, generation, createdMs: 1000 }) as unknown as ParsedSystemExtension;

  it('is true once for another spec, and false for the same objects or a status-only copy', () => {
    const { ledger } = setup();
    const gpu = sx('gpu', 1);
    const csi = sx('csi', 1);
    ledger.reset([gpu]);
    expect(ledger.requirementsChanged([gpu])).toBe(false);
    expect(ledger.requirementsChanged([gpu, csi])).toBe(true);
    expect(ledger.requirementsChanged([gpu, csi])).toBe(false);
    // A status write: a new object of the same generation.
    expect(ledger.requirementsChanged([sx('gpu', 1), csi])).toBe(false);
    expect(ledger.requirementsChanged([csi, sx('gpu', 1)])).toBe(false);
    expect(ledger.requirementsChanged([sx('gpu', 2), csi])).toBe(true);
    expect(ledger.requirementsChanged([csi])).toBe(true);
  });
});
