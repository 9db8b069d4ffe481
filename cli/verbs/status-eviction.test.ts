// kubectl nodecare status: the eviction guards the leading controller publishes (ClusterHealth status.eviction).

import { describe, expect, it } from 'vitest';
import type { PublishedEviction } from '../../api/eviction.ts';
import type { ClusterHealthObject } from '../model.ts';
import { evictionOf, renderEviction } from './status.ts';

const NOW = Date.parse('2026-12-02T21:00:00Z');
const BASE: PublishedEviction = {
  evictAfterSeconds: 600,
  dryRun: false,
  groupLabel: 'karpenter.sh/nodepool',
  groupBudgetPercent: 10,
  maxParallelNodes: 2,
  maxParallelPercent: 100,
  stormCooldownSeconds: 300,
  parallel: { evicting: 1, allowed: 2 },
  groups: [],
  stoppedZones: [],
  waiting: [],
  held: [],
  skipped: [],
};

describe('renderEviction', () => {
  it.each<{ name: string; eviction: PublishedEviction | undefined; lines: string[] }>([
    {
      name: 'nothing published → off',
      eviction: undefined,
      lines: ['Eviction: off (no guard state published in ClusterHealth).'],
    },
    {
      name: 'settings and the parallel cap in use',
      eviction: BASE,
      lines: [
        'Eviction: after 600s Degraded; 1 node being evicted, parallel cap 2; group budget 10% by karpenter.sh/nodepool; storm cooldown 300s.',
      ],
    },
    {
      name: 'no cap, dry run, groups by zone',
      eviction: { ...BASE, dryRun: true, groupLabel: '', parallel: { evicting: 0 } },
      lines: [
        'Eviction: after 600s Degraded (dry run); 0 nodes being evicted, no parallel cap; group budget 10% by zone; storm cooldown 300s.',
      ],
    },
    {
      name: 'a storm cooldown, a budget in use, a node waiting, one held, skips',
      eviction: {
        ...BASE,
        cooldownUntil: '2026-12-02T21:04:00.000Z',
        groups: [{ group: 'karpenter.sh/nodepool=gpu', nodes: 10, allowed: 1, evicting: 1 }],
        stoppedZones: [{ zone: 'a', reason: 'StormCooldown', until: '2026-12-02T21:04:00.000Z' }],
        waiting: [{ node: 'gpu-2', group: 'karpenter.sh/nodepool=gpu', reason: 'GroupBudget' }],
        held: [{ node: 'gpu-3', reason: 'NodeHealthCheck' }],
        skipped: [
          { subject: 'node', reason: 'NodeHealthCheck', count: 1 },
          { subject: 'pod', reason: 'DoNotDisrupt', count: 2 },
        ],
        omitted: 3,
      },
      lines: [
        'Eviction: after 600s Degraded; 1 node being evicted, parallel cap 2; group budget 10% by karpenter.sh/nodepool; storm cooldown 300s.',
        '  Storm cooldown in every zone until 2026-12-02T21:04:00.000Z (in 4m): the breaker stopped tripping.',
        expect.stringMatching(/^ {2}GROUP +NODES +ALLOWED +EVICTING$/),
        expect.stringMatching(/^ {2}karpenter.sh\/nodepool=gpu +10 +1 +1$/),
        "  Zone 'a' stopped: StormCooldown until 2026-12-02T21:04:00.000Z (in 4m).",
        '  Waiting: gpu-2 (GroupBudget, karpenter.sh/nodepool=gpu).',
        '  Held: gpu-3 (NodeHealthCheck).',
        '  ... and 3 more nodes waiting or held.',
        '  Skipped this term: 1 node NodeHealthCheck, 2 pod DoNotDisrupt.',
      ],
    },
  ])('$name', ({ eviction, lines }) => {
    expect(renderEviction(eviction, NOW)).toEqual(lines);
  });

  it('evictionOf reads ClusterHealth status.eviction; a ClusterHealth without it has none', () => {
    const ch = (status: object): ClusterHealthObject => ({ metadata: { name: 'cluster' }, status });
    expect(evictionOf(ch({ eviction: BASE }))).toEqual(BASE);
    expect(evictionOf(ch({}))).toBeUndefined();
    expect(evictionOf(undefined)).toBeUndefined();
  });
});
