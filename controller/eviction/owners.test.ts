// Never fight another owner (issue 54 item 2): the OWNERS table of owners.ts, one row per signal.

import { describe, expect, it } from 'vitest';
import { HoldReason, holdOf, podDoNotDisrupt, type OwnerFacts } from './owners.ts';

describe('holdOf (the OWNERS table)', () => {
  it.each<{ name: string; node: OwnerFacts; hold: HoldReason | undefined }>([
    { name: 'nothing on the node → nodecare may evict', node: {}, hold: undefined },
    {
      name: 'annotation karpenter.sh/do-not-disrupt "true" → DoNotDisrupt',
      node: { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } },
      hold: HoldReason.DoNotDisrupt,
    },
    {
      name: 'karpenter.sh/do-not-disrupt "false" → not held (Karpenter reads only "true")',
      node: { annotations: { 'karpenter.sh/do-not-disrupt': 'false' } },
      hold: undefined,
    },
    {
      name: 'taint karpenter.sh/disrupted:NoSchedule → KarpenterDisruption',
      node: { taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }] },
      hold: HoldReason.KarpenterDisruption,
    },
    {
      name: "self-node-remediation's taint medik8s.io/remediation=self-node-remediation:NoExecute → Medik8sRemediation",
      node: {
        taints: [{ key: 'medik8s.io/remediation', value: 'self-node-remediation', effect: 'NoExecute' }],
      },
      hold: HoldReason.Medik8sRemediation,
    },
    {
      name: "fence-agents-remediation's taint medik8s.io/fence-agents-remediation → Medik8sRemediation",
      node: { taints: [{ key: 'medik8s.io/fence-agents-remediation', effect: 'NoExecute' }] },
      hold: HoldReason.Medik8sRemediation,
    },
    {
      name: 'taint node.kubernetes.io/out-of-service → OutOfService',
      node: {
        taints: [{ key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' }],
      },
      hold: HoldReason.OutOfService,
    },
    {
      name: 'cordoned (spec.unschedulable) → Maintenance',
      node: { unschedulable: true },
      hold: HoldReason.Maintenance,
    },
    {
      name: 'being deleted → Maintenance',
      node: { deletionTimestamp: '2026-12-02T10:00:00Z' },
      hold: HoldReason.Maintenance,
    },
    {
      name: 'KEP-5683 DrainInProgress True → Maintenance',
      node: { conditions: [{ type: 'DrainInProgress', status: 'True' }] },
      hold: HoldReason.Maintenance,
    },
    {
      name: 'MaintenancePlanned True only → not held (planned is shown, never acted on)',
      node: { conditions: [{ type: 'MaintenancePlanned', status: 'True' }] },
      hold: undefined,
    },
    {
      name: "nodecare's own runtime taint and another owner's unrelated taint → not held",
      node: {
        taints: [
          { key: 'status-taint.cluster-autoscaler.kubernetes.io/meta-readiness', effect: 'NoSchedule' },
          { key: 'example.com/dedicated', effect: 'NoSchedule' },
        ],
      },
      hold: undefined,
    },
    {
      name: 'do-not-disrupt and a cordon → DoNotDisrupt (first row first)',
      node: { annotations: { 'karpenter.sh/do-not-disrupt': 'true' }, unschedulable: true },
      hold: HoldReason.DoNotDisrupt,
    },
  ])('$name', ({ node, hold }) => {
    expect(holdOf(node)).toBe(hold);
  });
});

describe('podDoNotDisrupt', () => {
  it.each<{ name: string; annotations: Record<string, string> | undefined; skip: boolean }>([
    { name: 'no annotations → evictable', annotations: undefined, skip: false },
    { name: '"true" → never evicted', annotations: { 'karpenter.sh/do-not-disrupt': 'true' }, skip: true },
    { name: '"false" → evictable', annotations: { 'karpenter.sh/do-not-disrupt': 'false' }, skip: false },
  ])('$name', ({ annotations, skip }) => {
    expect(podDoNotDisrupt(annotations)).toBe(skip);
  });
});
