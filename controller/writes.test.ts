import { describe, expect, it } from 'vitest';
import { NODE_STATUS_LABEL, NodeAnnotation } from '../api/index.ts';
import type { CachedNode } from './cache.ts';
import type { NodeDecision } from './decide/index.ts';
import { desiredTaintList, nodeChange } from './writes.ts';

const keys = { bootstrap: 'startup/meta', runtime: 'status/meta' };

function node(
  taints: CachedNode['taints'],
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
): CachedNode {
  return {
    name: 'n',
    uid: 'u',
    resourceVersion: '7',
    creationTimestampMs: 0,
    bootId: 'b',
    labels,
    annotations,
    taints,
    conditionTransitionTime: undefined,
  };
}

function decision(
  bootstrap: boolean,
  runtime: boolean,
  label: NodeDecision['label'] = 'healthy',
  bootId?: string,
): NodeDecision {
  return {
    desiredTaints: { bootstrap, runtime },
    label,
    desiredAnnotations: bootId ? { bootstrappedBootId: bootId } : {},
  } as NodeDecision;
}

describe('desiredTaintList', () => {
  it.each([
    {
      behaviour: 'adds ours after foreign taints and keeps them in place',
      current: [{ key: 'theirs', effect: 'NoExecute' }],
      want: [true, false],
      expected: ['theirs', 'startup/meta'],
    },
    {
      behaviour: 'removes only our taint, never a foreign one',
      current: [
        { key: 'a', effect: 'NoSchedule' },
        { key: 'status/meta', effect: 'NoSchedule' },
        { key: 'b', effect: 'PreferNoSchedule' },
      ],
      want: [false, false],
      expected: ['a', 'b'],
    },
    {
      behaviour: 'a taint with our key but another effect is not ours and stays',
      current: [{ key: 'status/meta', effect: 'NoExecute' }],
      want: [false, true],
      expected: ['status/meta', 'status/meta'],
    },
  ])('$behaviour', ({ current, want, expected }) => {
    const list = desiredTaintList(current, decision(want[0] as boolean, want[1] as boolean), keys);
    expect(list.map((t) => t.key)).toEqual(expected);
  });
});

describe('nodeChange', () => {
  it('is undefined when the node already matches (no write)', () => {
    const n = node([{ key: 'startup/meta', effect: 'NoSchedule' }], { [NODE_STATUS_LABEL]: 'progressing' });
    expect(nodeChange(n, decision(true, false, 'progressing'), keys, true)).toBeUndefined();
  });

  it('writes the label and the bootstrap annotation together with the taint change', () => {
    const n = node([{ key: 'startup/meta', effect: 'NoSchedule' }], { [NODE_STATUS_LABEL]: 'progressing' });
    const change = nodeChange(n, decision(false, false, 'healthy', 'b'), keys, true);
    expect(change).toEqual({
      taints: [],
      labels: { [NODE_STATUS_LABEL]: 'healthy' },
      annotations: { [NodeAnnotation.bootstrappedBootId]: 'b' },
      taintSummary: ['remove startup/meta:NoSchedule'],
    });
  });

  it('in dry run reports the taint change but leaves taints out of the patch', () => {
    const change = nodeChange(node([]), decision(false, true, 'unhealthy'), keys, false);
    expect(change?.taints).toBeUndefined();
    expect(change?.taintSummary).toEqual(['add status/meta:NoSchedule']);
    expect(change?.labels).toEqual({ [NODE_STATUS_LABEL]: 'unhealthy' });
  });
});
