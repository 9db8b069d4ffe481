import { describe, expect, it } from 'vitest';
import { extensionLeaseName } from '../../api/lease.ts';
import { ExtensionState } from '../../api/names.ts';
import { parseSystemExtension } from '../../api/registration.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { BreakerState } from './breaker.ts';
import { decideNode } from './decide.ts';
import { NodeState } from './node-state.ts';
import { rolloutStatus } from '../rollup/extension-counts.ts';
import { extensionRollout, RolloutWindows } from './rollout.ts';
import {
  agent,
  BOOTSTRAP_TAINT,
  bootstrappedNode,
  ext,
  input,
  leases,
  MINUTE,
  NODE,
  node,
  RUNTIME_TAINT,
  SECOND,
  T0,
} from './testing.ts';
import type { DecisionInput, ExtensionRollout } from './types.ts';

const NOW = T0 + 30 * SECOND;
const FRESH = NOW - 10 * SECOND;
const unhealthy = { state: ExtensionState.Unhealthy, reason: ProbeReason.ProbeTimeout };
const GRACE: ExtensionRollout = { mode: 'Grace', endsMs: NOW + 5 * MINUTE };

function rolledOut(rollout: ExtensionRollout, over: Partial<DecisionInput> = {}): DecisionInput {
  return input({
    node: bootstrappedNode(),
    required: [{ ...ext('gpu'), source: 'systemExtension', rollout }],
    agent: agent(FRESH),
    leases: leases(FRESH, { gpu: unhealthy }),
    now: NOW,
    ...over,
  });
}

describe('a SystemExtension rolling out on existing nodes (spec.rollout)', () => {
  it('Grace: failing on an existing node is reported, not enforced, until the window ends; then it taints', () => {
    const during = decideNode(rolledOut(GRACE));
    expect(during.desiredTaints.runtime).toBe(false);
    expect(during.state).toBe(NodeState.Ready);
    expect(during.extensions[0]).toMatchObject({ blocking: false, rollout: GRACE });
    expect(during.extensions[0]?.message).toContain('rollout grace until');
    expect(during.nextDeadlineMs).toBeLessThanOrEqual(GRACE.endsMs);
    // The window's end is a deadline no lease renewal moves: the work queue must not re-arm past it.
    expect(during.deadlines.fixedMs).toBe(GRACE.endsMs);
    expect(during.deadlines.leases).toContain(extensionLeaseName(NODE, 'gpu'));
    const after = decideNode(rolledOut(GRACE, { now: GRACE.endsMs }));
    expect(after.desiredTaints.runtime).toBe(true);
    expect(after.extensions[0]?.rollout).toBeUndefined();
  });

  it('Observe: never enforced on an existing node', () => {
    const d = decideNode(rolledOut({ mode: 'Observe' }, { now: NOW + 1000 * MINUTE }));
    expect(d.desiredTaints.runtime).toBe(false);
    expect(d.extensions[0]?.rollout).toEqual({ mode: 'Observe' });
  });

  it('a new node is held by bootstrap as usual, and a node already tainted stays held', () => {
    const booting = decideNode(rolledOut(GRACE, { node: node({ taints: [BOOTSTRAP_TAINT] }) }));
    expect(booting.desiredTaints.bootstrap).toBe(true);
    expect(booting.extensions[0]?.rollout).toBeUndefined();
    const held = decideNode(rolledOut(GRACE, { node: bootstrappedNode({ taints: [RUNTIME_TAINT] }) }));
    expect(held.desiredTaints.runtime).toBe(true);
  });

  it('the breaker: not tripped by the first minutes of a rollout; tripped by a bad one the moment its window ends, before any node is decided as enforced', () => {
    const breaker = new BreakerState({ maxUnhealthyFraction: 0.5, minFailing: 3 });
    for (const name of ['n1', 'n2', 'n3', 'n4'])
      breaker.apply(name, decideNode(rolledOut(GRACE, { node: bootstrappedNode({ name }) })));
    expect([...breaker.evaluate(NOW).tripped]).toEqual([]);
    expect(breaker.count('gpu', NOW)).toEqual({ requiring: 0, failing: 0 });
    // Only time passes: the decisions still say 'in rollout', the window's end counts them.
    const atEnd = breaker.evaluate(GRACE.endsMs);
    expect([...atEnd.tripped]).toEqual(['gpu']);
    expect(atEnd.transitions).toEqual([
      { extension: 'gpu', tripped: true, count: { requiring: 4, failing: 4 } },
    ]);
    // A legitimate rollout whose nodes came up meanwhile: one left failing at the end gets its taint.
    const legit = new BreakerState({ maxUnhealthyFraction: 0.5, minFailing: 3 });
    for (const name of ['n1', 'n2', 'n3'])
      legit.apply(
        name,
        decideNode(
          rolledOut(GRACE, {
            node: bootstrappedNode({ name }),
            leases: leases(FRESH, {
              gpu: { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded },
            }),
          }),
        ),
      );
    legit.apply('n4', decideNode(rolledOut(GRACE, { node: bootstrappedNode({ name: 'n4' }) })));
    expect([...legit.evaluate(GRACE.endsMs).tripped]).toEqual([]);
    const n4 = decideNode(rolledOut(GRACE, { node: bootstrappedNode({ name: 'n4' }), now: GRACE.endsMs }));
    expect(n4.desiredTaints.runtime).toBe(true);
  });

  it('Observe pairs are never counted', () => {
    const breaker = new BreakerState({ maxUnhealthyFraction: 0.5, minFailing: 3 });
    for (const name of ['n1', 'n2', 'n3'])
      breaker.apply(name, decideNode(rolledOut({ mode: 'Observe' }, { node: bootstrappedNode({ name }) })));
    expect([...breaker.evaluate(NOW + 1000 * MINUTE).tripped]).toEqual([]);
  });
});

describe('RolloutWindows and extensionRollout', () => {
  const sx = (generation: number, status?: unknown) =>
    parseSystemExtension({
      metadata: { name: 'gpu', generation, creationTimestamp: new Date(T0).toISOString() },
      spec: { probe: { tcp: { port: 1 } }, rollout: { existingNodes: 'Grace', gracePeriodSeconds: 60 } },
      status,
    });

  it('generation 1 starts at creation; a recorded window is kept; a new generation starts when first seen', () => {
    const windows = new RolloutWindows();
    expect(windows.startMs(sx(1), NOW)).toBe(T0);
    const recorded = { rollout: { observedGeneration: 2, startedAt: new Date(T0 + MINUTE).toISOString() } };
    expect(windows.startMs(sx(2, recorded), NOW)).toBe(T0 + MINUTE);
    expect(windows.startMs(sx(3, recorded), NOW)).toBe(NOW);
    expect(windows.startMs(sx(3, recorded), NOW + MINUTE)).toBe(NOW);
  });

  describe('a window opens only for a new requirement (regression: suspend or a cosmetic edit reopened Grace; windows keyed by name, never pruned, restarted by a new leader)', () => {
    const GPU_NODES = { matchLabels: { 'nvidia.com/gpu.present': 'true' } };
    const GPU_SPEC = {
      probe: { tcp: { port: 1 } },
      rollout: { existingNodes: 'Grace', gracePeriodSeconds: 60 },
    };
    const object = (generation: number, spec: Record<string, unknown>, uid = 'uid-1', status?: unknown) =>
      parseSystemExtension({
        metadata: { name: 'gpu', uid, generation, creationTimestamp: new Date(T0).toISOString() },
        spec: { ...GPU_SPEC, ...spec },
        status,
      });
    /** status.rollout as the roll-up writes it for `sx` with the window `startedMs`. */
    const persisted = (sx: ReturnType<typeof object>, startedMs: number) => ({
      rollout: rolloutStatus(
        { policy: sx.rollout, generation: sx.generation, requirement: sx.requirement, startedMs },
        { nodes: 3, healthy: 1 },
        startedMs,
      ),
    });

    it.each([
      { name: 'suspend lifted', spec: { suspend: false }, before: { suspend: true } },
      {
        name: 'the grace period changed',
        spec: { rollout: { existingNodes: 'Grace', gracePeriodSeconds: 120 } },
      },
      { name: 'a default written out', spec: { periodSeconds: 10, critical: true } },
      {
        name: 'labelWait added',
        before: { nodeSelector: GPU_NODES },
        spec: { nodeSelector: GPU_NODES, labelWait: { waitSeconds: 60 } },
      },
    ])('$name: the window goes on, also for a new leader', ({ spec, before = {} }) => {
      const first = object(2, before);
      const windows = new RolloutWindows();
      expect(windows.startMs(first, NOW)).toBe(NOW);
      // The same controller, and a new leader that knows only the persisted status, after the edit.
      const edited = object(3, spec, 'uid-1', persisted(first, NOW));
      expect(windows.startMs(edited, NOW + MINUTE)).toBe(NOW);
      expect(new RolloutWindows().startMs(edited, NOW + 2 * MINUTE)).toBe(NOW);
    });

    it.each([
      { name: 'the probe', spec: { probe: { tcp: { port: 2 } } } },
      { name: 'the nodeSelector', spec: { nodeSelector: { matchLabels: { pool: 'gpu' } } } },
      { name: 'critical', spec: { critical: false } },
      { name: 'enforcement', spec: { enforcement: 'DryRun' } },
      { name: 'a threshold', spec: { failureThreshold: 5 } },
    ])('$name changed: a new window, kept by a new leader once persisted', ({ spec }) => {
      const first = object(2, {});
      const windows = new RolloutWindows();
      expect(windows.startMs(first, NOW)).toBe(NOW);
      const changed = object(3, spec, 'uid-1', persisted(first, NOW));
      expect(windows.startMs(changed, NOW + MINUTE)).toBe(NOW + MINUTE);
      const recorded = object(3, spec, 'uid-1', persisted(changed, NOW + MINUTE));
      expect(new RolloutWindows().startMs(recorded, NOW + 5 * MINUTE)).toBe(NOW + MINUTE);
    });

    it('keyed by UID: an object deleted and created again under the same name gets its own window', () => {
      const windows = new RolloutWindows();
      expect(windows.startMs(object(2, {}, 'uid-1'), NOW)).toBe(NOW);
      expect(windows.startMs(object(2, {}, 'uid-2'), NOW + MINUTE)).toBe(NOW + MINUTE);
    });

    it('a window of an object that is gone is forgotten (retain by UID)', () => {
      const windows = new RolloutWindows();
      const sx = object(2, {}, 'uid-1');
      expect(windows.startMs(sx, NOW)).toBe(NOW);
      windows.retain([object(2, {}, 'uid-2')]);
      expect(windows.startMs(sx, NOW + MINUTE)).toBe(NOW + MINUTE);
    });
  });

  it('maps the policy: Enforce → none, Grace → its end, Observe', () => {
    expect(extensionRollout({ existingNodes: 'Enforce', gracePeriodSeconds: 60 }, T0)).toBeUndefined();
    expect(extensionRollout({ existingNodes: 'Grace', gracePeriodSeconds: 60 }, T0)).toEqual({
      mode: 'Grace',
      endsMs: T0 + MINUTE,
    });
    expect(extensionRollout({ existingNodes: 'Observe', gracePeriodSeconds: 60 }, T0)).toEqual({
      mode: 'Observe',
    });
  });

  it('spec.rollout is validated: every problem named, the default (Enforce) kept', () => {
    const bad = parseSystemExtension({
      metadata: { name: 'gpu' },
      spec: {
        probe: { tcp: { port: 1 } },
        rollout: { existingNodes: 'Later', gracePeriodSeconds: -1, x: 1 },
      },
    });
    expect(bad.rollout).toEqual({ existingNodes: 'Enforce', gracePeriodSeconds: 600 });
    expect(bad.parse.result).toEqual({
      ok: false,
      problems: [
        'rollout.x: unknown field',
        'rollout.existingNodes: expected Enforce, Grace or Observe, got "Later"',
        'rollout.gracePeriodSeconds: expected an integer from 0 to 604800, got -1',
      ],
    });
  });
});
