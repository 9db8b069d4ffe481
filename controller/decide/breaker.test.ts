import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { countFailures, evaluateBreaker } from './breaker.ts';
import { NodeState } from './node-state.ts';
import type { ExtensionVerdict, NodeDecision } from './types.ts';

describe('evaluateBreaker', () => {
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
    expect(evaluateBreaker(new Map([['gpu', { requiring, failing }]]))).toEqual(
      new Set(tripped ? ['gpu'] : []),
    );
  });

  it('judges each extension by its own counts, with the thresholds given', () => {
    const counts = new Map([
      ['gpu', { requiring: 10, failing: 4 }],
      ['csi', { requiring: 10, failing: 8 }],
      ['cni', { requiring: 10, failing: 2 }],
    ]);
    expect(evaluateBreaker(counts)).toEqual(new Set(['csi']));
    expect(evaluateBreaker(counts, 0.3, 3)).toEqual(new Set(['gpu', 'csi']));
    expect(evaluateBreaker(counts, 0.1, 1)).toEqual(new Set(['gpu', 'csi', 'cni']));
  });
});

describe('countFailures', () => {
  const verdict = (name: string, state: ExtensionState): ExtensionVerdict => ({
    name,
    state,
    reason: '',
    message: '',
    critical: true,
    blocking: true,
    conditionType: 'EveryNodeReady',
  });
  const decision = (
    state: NodeState,
    ...extensions: ExtensionVerdict[]
  ): Pick<NodeDecision, 'state' | 'extensions'> => ({
    state,
    extensions,
  });

  it('counts post-bootstrap nodes only; Unhealthy and Unknown fail, Progressing does not', () => {
    const counts = countFailures([
      decision(
        NodeState.Ready,
        verdict('gpu', ExtensionState.Healthy),
        verdict('csi', ExtensionState.Progressing),
      ),
      decision(
        NodeState.Degraded,
        verdict('gpu', ExtensionState.Unhealthy),
        verdict('csi', ExtensionState.Unknown),
      ),
      decision(NodeState.Ready, verdict('gpu', ExtensionState.Unknown)),
      decision(NodeState.Bootstrapping, verdict('gpu', ExtensionState.Unhealthy)),
      decision(NodeState.BootstrapTimeout, verdict('gpu', ExtensionState.Unknown)),
    ]);
    expect(counts).toEqual(
      new Map([
        ['gpu', { requiring: 3, failing: 2 }],
        ['csi', { requiring: 2, failing: 1 }],
      ]),
    );
  });

  it('a tripped extension keeps being counted (its verdicts do not depend on the breaker)', () => {
    const nodes = [1, 2, 3, 4].map(() =>
      decision(NodeState.Ready, { ...verdict('gpu', ExtensionState.Unhealthy), blocking: false }),
    );
    expect(evaluateBreaker(countFailures(nodes))).toEqual(new Set(['gpu']));
  });
});
