// `kubectl nodecare explain` on a new node held for the labels a SystemExtension selects on (spec.labelWait,
// docs/adr/0019): the plugin decides with the controller's core, so it shows the wait, why, and when it ends.

import { describe, expect, it } from 'vitest';
import { DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP, buildLease } from '../../api/index.ts';
import { analyze, CLI_POLICY_DEFAULTS, type NodeObject } from '../model.ts';
import { nextAction } from '../next-action.ts';
import { explainView, renderExplainText } from './explain.ts';

const T0 = Date.parse('2026-11-24T14:00:00Z');
const NOW = T0 + 30_000;
const NODE = 'gpu-new';

const node: NodeObject = {
  metadata: { name: NODE, uid: 'uid-g', creationTimestamp: new Date(T0).toISOString(), labels: {} },
  spec: { taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] },
  status: { nodeInfo: { bootID: 'boot-1' } },
};

const heartbeat = buildLease({
  node: { name: NODE, uid: 'uid-g' },
  extension: undefined,
  holderIdentity: 'nodecare-agent-abcde',
  leaseDurationSeconds: 40,
  renewTime: new Date(NOW - 2_000),
  bootId: 'boot-1',
  record: undefined,
});

function report(enforcement: 'Enforce' | 'DryRun') {
  const analysis = analyze(
    {
      nodes: [node],
      leases: [heartbeat],
      systemExtensions: [
        {
          metadata: { name: 'gpu-plugin' },
          spec: {
            nodeSelector: { matchLabels: { 'nvidia.com/gpu.present': 'true' } },
            probe: { nodeResource: { resource: 'nvidia.com/gpu' } },
            enforcement,
            labelWait: { waitSeconds: 120 },
          },
        },
      ],
      clusterHealth: undefined,
    },
    CLI_POLICY_DEFAULTS,
    NOW,
  );
  return analysis.nodes[0]!;
}

describe('explain: a new node waiting for labels', () => {
  it('names the wait, its end and what ends it; the next action is the release at the end', () => {
    const r = report('Enforce');
    const text = renderExplainText(explainView(r, new Set(), [], 10, NOW), NOW);
    expect(text).toContain(
      'gpu-plugin does not select this node yet: it waits until 2026-11-24T14:02:00.000Z for node label nvidia.com/gpu.present (SystemExtension spec.labelWait). The node stays held until it arrives and gpu-plugin is Healthy, or until then.',
    );
    expect(text).toContain(
      '  gpu-plugin waiting until 2026-11-24T14:02:00.000Z for node label nvidia.com/gpu.present (SystemExtension spec.labelWait)',
    );
    expect(nextAction(r)).toMatchObject({
      atMs: T0 + 120_000,
      to: 'Ready',
      changes: expect.arrayContaining([expect.stringMatching(/^remove the bootstrap taint/)]),
    });
  });

  it('a DryRun wait says it holds nothing', () => {
    const text = renderExplainText(explainView(report('DryRun'), new Set(), [], 10, NOW), NOW);
    expect(text.join('\n')).toContain('Enforcement DryRun: the wait does not hold the node.');
  });
});
