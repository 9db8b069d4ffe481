import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { ControllerReason, ProbeReason } from '../../api/reasons.ts';
import { BREAKER_DEFAULTS, BreakerState, trippedOver, trips, type BreakerInput } from './breaker.ts';
import { NodeState } from './node-state.ts';
import type { ExtensionVerdict } from './types.ts';

describe('trips', () => {
  it.each([
    { name: '3 of 4 failing → tripped', requiring: 4, failing: 3, tripped: true },
    { name: '3 of 5 failing → tripped', requiring: 5, failing: 3, tripped: true },
    {
      name: 'exactly half failing → not tripped (more than half is needed)',
      requiring: 6,
      failing: 3,
      tripped: false,
    },
    {
      name: '2 of 2 failing → not tripped (fewer than 3 nodes fail)',
      requiring: 2,
      failing: 2,
      tripped: false,
    },
    { name: '1 of 1 failing → not tripped', requiring: 1, failing: 1, tripped: false },
    { name: '100 of 1000 failing → not tripped', requiring: 1000, failing: 100, tripped: false },
    { name: '501 of 1000 failing → tripped', requiring: 1000, failing: 501, tripped: true },
    { name: 'nothing failing → not tripped', requiring: 10, failing: 0, tripped: false },
  ])('$name', ({ requiring, failing, tripped }) => {
    expect(trips({ requiring, failing }, BREAKER_DEFAULTS)).toBe(tripped);
  });

  it('uses the thresholds given', () => {
    const count = { requiring: 10, failing: 4 };
    expect(trips(count, BREAKER_DEFAULTS)).toBe(false);
    expect(trips(count, { maxUnhealthyFraction: 0.3, minFailing: 3 })).toBe(true);
    expect(trips(count, { maxUnhealthyFraction: 0.3, minFailing: 5 })).toBe(false);
  });
});

/**
 * A critical SystemExtension registration. Unknown means "the lease expired" (a confirmed fault) unless a
 * reason says otherwise.
 */
const verdict = (name: string, state: ExtensionState, reason = ''): ExtensionVerdict => ({
  name,
  state,
  reason: reason || (state === ExtensionState.Unknown ? ControllerReason.LeaseExpired : ''),
  message: '',
  critical: true,
  blocking: true,
  conditionType: 'EveryNodeReady',
  source: 'systemExtension',
});
const decision = (state: NodeState, ...extensions: ExtensionVerdict[]): BreakerInput => ({
  state,
  extensions,
});
const ready = (gpu: ExtensionState): BreakerInput => decision(NodeState.Ready, verdict('gpu', gpu));

describe('BreakerState counts', () => {
  it('counts post-bootstrap nodes only; Unhealthy and an expired lease fail, Progressing does not', () => {
    const breaker = new BreakerState(BREAKER_DEFAULTS);
    breaker.apply(
      'a',
      decision(
        NodeState.Ready,
        verdict('gpu', ExtensionState.Healthy),
        verdict('csi', ExtensionState.Progressing),
      ),
    );
    breaker.apply(
      'b',
      decision(
        NodeState.Degraded,
        verdict('gpu', ExtensionState.Unhealthy),
        verdict('csi', ExtensionState.Unknown),
      ),
    );
    breaker.apply('c', decision(NodeState.Ready, verdict('gpu', ExtensionState.Unknown)));
    breaker.apply('d', decision(NodeState.Bootstrapping, verdict('gpu', ExtensionState.Unhealthy)));
    breaker.apply('e', decision(NodeState.BootstrapTimeout, verdict('gpu', ExtensionState.Unknown)));
    expect(breaker.count('gpu')).toEqual({ requiring: 3, failing: 2 });
    expect(breaker.count('csi')).toEqual({ requiring: 2, failing: 1 });
    expect(breaker.count('dns')).toEqual({ requiring: 0, failing: 0 });
  });

  it.each([
    { name: 'Unhealthy', state: ExtensionState.Unhealthy, reason: ProbeReason.ConnectionRefused, failing: 1 },
    {
      name: 'lease expired',
      state: ExtensionState.Unknown,
      reason: ControllerReason.LeaseExpired,
      failing: 1,
    },
    {
      name: 'agent not reporting',
      state: ExtensionState.Unknown,
      reason: ControllerReason.AgentNotReporting,
      failing: 1,
    },
    {
      name: "the agent's ProbeError",
      state: ExtensionState.Unknown,
      reason: ProbeReason.ProbeError,
      failing: 0,
    },
    {
      name: "the agent's PermissionDenied",
      state: ExtensionState.Unknown,
      reason: ProbeReason.PermissionDenied,
      failing: 0,
    },
    {
      name: 'an invalid registration',
      state: ExtensionState.Unknown,
      reason: ControllerReason.InvalidRegistration,
      failing: 0,
    },
    {
      name: 'a missing lease',
      state: ExtensionState.Unknown,
      reason: ControllerReason.LeaseMissing,
      failing: 0,
    },
  ])(
    '$name counts as failing: $failing (only confirmed faults, as for the taint)',
    ({ state, reason, failing }) => {
      const breaker = new BreakerState(BREAKER_DEFAULTS);
      breaker.apply('a', decision(NodeState.Ready, verdict('gpu', state, reason)));
      expect(breaker.count('gpu')).toEqual({ requiring: 1, failing });
    },
  );

  it("a node's new decision replaces its old one; a gone node counts no more", () => {
    const breaker = new BreakerState(BREAKER_DEFAULTS);
    breaker.apply('a', ready(ExtensionState.Unhealthy));
    breaker.apply('b', ready(ExtensionState.Healthy));
    breaker.apply('a', ready(ExtensionState.Unhealthy));
    expect(breaker.count('gpu')).toEqual({ requiring: 2, failing: 1 });
    breaker.apply('a', ready(ExtensionState.Healthy));
    expect(breaker.count('gpu')).toEqual({ requiring: 2, failing: 0 });
    breaker.apply('a', decision(NodeState.Bootstrapping, verdict('gpu', ExtensionState.Unhealthy)));
    expect(breaker.count('gpu')).toEqual({ requiring: 1, failing: 0 });
    breaker.apply('b', undefined);
    expect(breaker.count('gpu')).toEqual({ requiring: 0, failing: 0 });
  });

  it('a NotReady node (the kubelet is not Ready) counts neither as requiring nor as failing', () => {
    const breaker = new BreakerState(BREAKER_DEFAULTS);
    for (const n of ['a', 'b', 'c']) breaker.apply(n, ready(ExtensionState.Unhealthy));
    breaker.apply('d', ready(ExtensionState.Healthy));
    expect(breaker.count('gpu')).toEqual({ requiring: 4, failing: 3 });
    expect(breaker.evaluate().tripped.has('gpu')).toBe(true);
    // Their kubelets stop posting: what the decision says of them then (every extension Unknown / NodeNotReady).
    const notReady = decision(
      NodeState.NotReady,
      verdict('gpu', ExtensionState.Unknown, ControllerReason.NodeNotReady),
    );
    for (const n of ['a', 'b']) breaker.apply(n, notReady);
    expect(breaker.count('gpu')).toEqual({ requiring: 2, failing: 1 });
    expect(breaker.evaluate().tripped.has('gpu')).toBe(false);
    // A node whose lease expired while its kubelet is NotReady is no fault either: it does not count at all.
    breaker.apply('d', decision(NodeState.NotReady, verdict('gpu', ExtensionState.Unknown)));
    expect(breaker.count('gpu')).toEqual({ requiring: 1, failing: 1 });
  });
});

describe('BreakerState counts only what an admin declared (regression: annotations tripped it)', () => {
  it.each([
    {
      name: 'an annotation (critical: false) naming the extension',
      differs: { source: 'annotation', critical: false, blocking: false },
    },
    { name: 'an annotation (critical: true) naming the extension', differs: { source: 'annotation' } },
    { name: "the agent's config file", differs: { source: 'config' } },
    { name: 'no known source', differs: { source: undefined } },
    {
      name: 'a non-critical SystemExtension registration',
      differs: { critical: false, blocking: false },
    },
  ] as const)('$name neither requires nor fails', ({ differs }) => {
    const breaker = new BreakerState(BREAKER_DEFAULTS);
    // The case: one node where the admin's gpu is truly broken, two healthy ones it selects, and
    // two nodes it does not select that fail a registration of the same name.
    breaker.apply('broken', ready(ExtensionState.Unhealthy));
    breaker.apply('fine-1', ready(ExtensionState.Healthy));
    breaker.apply('fine-2', ready(ExtensionState.Healthy));
    for (const node of ['other-1', 'other-2']) {
      breaker.apply(
        node,
        decision(NodeState.Degraded, { ...verdict('gpu', ExtensionState.Unhealthy), ...differs }),
      );
    }
    expect(breaker.count('gpu')).toEqual({ requiring: 3, failing: 1 });
    expect(breaker.evaluate()).toEqual({ tripped: new Set(), transitions: [] });
  });
});

describe('BreakerState.evaluate', () => {
  it('reports each change of the tripped set once, with the counts that made it', () => {
    const breaker = new BreakerState(BREAKER_DEFAULTS);
    for (const node of ['a', 'b', 'c']) breaker.apply(node, ready(ExtensionState.Unhealthy));
    breaker.apply('d', ready(ExtensionState.Healthy));
    expect(breaker.evaluate()).toEqual({
      tripped: new Set(['gpu']),
      transitions: [{ extension: 'gpu', tripped: true, count: { requiring: 4, failing: 3 } }],
    });
    breaker.apply('e', ready(ExtensionState.Healthy));
    expect(breaker.evaluate()).toEqual({ tripped: new Set(['gpu']), transitions: [] });
    breaker.apply('f', ready(ExtensionState.Healthy));
    expect(breaker.evaluate()).toEqual({
      tripped: new Set(),
      transitions: [{ extension: 'gpu', tripped: false, count: { requiring: 6, failing: 3 } }],
    });
    expect(breaker.evaluate().transitions).toEqual([]);
  });

  it('judges each extension by its own counts', () => {
    const breaker = new BreakerState({ maxUnhealthyFraction: 0.3, minFailing: 3 });
    for (let i = 0; i < 10; i++) {
      breaker.apply(
        `n${i}`,
        decision(
          NodeState.Ready,
          verdict('gpu', i < 4 ? ExtensionState.Unhealthy : ExtensionState.Healthy),
          verdict('csi', i < 8 ? ExtensionState.Unknown : ExtensionState.Healthy),
          verdict('cni', i < 2 ? ExtensionState.Unhealthy : ExtensionState.Healthy),
        ),
      );
    }
    expect(breaker.evaluate().tripped).toEqual(new Set(['csi', 'gpu']));
  });

  it('a tripped extension keeps being counted (its verdicts do not depend on the breaker)', () => {
    const breaker = new BreakerState(BREAKER_DEFAULTS);
    for (const node of ['a', 'b', 'c', 'd']) {
      breaker.apply(
        node,
        decision(NodeState.Ready, { ...verdict('gpu', ExtensionState.Unhealthy), blocking: false }),
      );
    }
    expect(breaker.evaluate().tripped).toEqual(new Set(['gpu']));
  });

  it('the answer does not depend on the order nodes are applied in, only on when it is evaluated', () => {
    const nodes = Array.from(
      { length: 10 },
      (_, i) => [`n${i}`, ready(i < 3 ? ExtensionState.Unhealthy : ExtensionState.Healthy)] as const,
    );
    for (const order of [nodes, [...nodes].reverse()]) {
      const breaker = new BreakerState(BREAKER_DEFAULTS);
      for (const [node, d] of order) breaker.apply(node, d);
      expect(breaker.evaluate()).toEqual({ tripped: new Set(), transitions: [] });
    }
  });

  it('reset forgets every node, count and tripped extension', () => {
    const breaker = new BreakerState(BREAKER_DEFAULTS);
    for (const node of ['a', 'b', 'c']) breaker.apply(node, ready(ExtensionState.Unhealthy));
    expect(breaker.evaluate().tripped).toEqual(new Set(['gpu']));
    breaker.reset();
    expect(breaker.tripped).toEqual(new Set());
    expect(breaker.count('gpu')).toEqual({ requiring: 0, failing: 0 });
    breaker.apply('d', ready(ExtensionState.Healthy));
    breaker.apply('a', ready(ExtensionState.Healthy));
    expect(breaker.evaluate()).toEqual({ tripped: new Set(), transitions: [] });
    expect(breaker.count('gpu')).toEqual({ requiring: 2, failing: 0 });
  });
});

describe("trippedOver (kubectl nodecare's one pass)", () => {
  const nodes = (failing: number, healthy: number): Array<[string, BreakerInput]> => [
    ...Array.from({ length: failing }, (_, i): [string, BreakerInput] => [
      `f${i}`,
      ready(ExtensionState.Unhealthy),
    ]),
    ...Array.from({ length: healthy }, (_, i): [string, BreakerInput] => [
      `h${i}`,
      ready(ExtensionState.Healthy),
    ]),
  ];

  it.each([
    { name: '3 of 4 failing → gpu tripped', failing: 3, healthy: 1, tripped: ['gpu'] },
    { name: '3 of 6 failing → nothing tripped', failing: 3, healthy: 3, tripped: [] },
    { name: '2 of 2 failing → nothing tripped (fewer than 3)', failing: 2, healthy: 0, tripped: [] },
  ])('$name', ({ failing, healthy, tripped }) => {
    expect(trippedOver(nodes(failing, healthy), BREAKER_DEFAULTS, 0)).toEqual(new Set(tripped));
  });

  it('uses the thresholds given', () => {
    expect(trippedOver(nodes(3, 3), { maxUnhealthyFraction: 0.4, minFailing: 3 }, 0)).toEqual(
      new Set(['gpu']),
    );
  });
});
