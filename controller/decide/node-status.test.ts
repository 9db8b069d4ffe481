import { describe, expect, it } from 'vitest';
import { ExtensionState, type NodeStatusLabelValue } from '../../api/names.ts';
import { ConditionReason, ProbeReason } from '../../api/reasons.ts';
import { hasTaint, decideNode } from './decide.ts';
import { MaintenanceCause } from './maintenance.ts';
import { NodeState } from './node-state.ts';
import { CONDITION_REASONS, nodeStatus, STATE_REASONS, stateOnNode, stateText } from './node-status.ts';
import {
  agent,
  applied,
  BOOTSTRAP_TAINT,
  bootstrappedNode,
  ext,
  input,
  leases,
  memory,
  node,
  POLICY,
  RUNTIME_TAINT,
  SECOND,
  T0,
} from './testing.ts';
import type { ConditionStatus, DecisionInput } from './types.ts';

const NOW = T0 + 30 * SECOND;
const FRESH = NOW - 10 * SECOND;
/** Observed 50 s ago: the 40 s lease has expired. */
const EXPIRED = NOW - 50 * SECOND;
const healthy = { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded };
const unhealthy = { state: ExtensionState.Unhealthy, reason: ProbeReason.ProbeTimeout };
const progressing = { state: ExtensionState.Progressing, reason: ProbeReason.StartupGrace };
const undetermined = { state: ExtensionState.Unknown, reason: ProbeReason.PermissionDenied };
const booting = node({ taints: [BOOTSTRAP_TAINT] });
const ready = bootstrappedNode();
const degraded = bootstrappedNode({ taints: [RUNTIME_TAINT] });

interface Row {
  name: string;
  input: DecisionInput;
  state: NodeState;
  condition: ConditionStatus;
  reason: ConditionReason;
  label: NodeStatusLabelValue;
  text: string;
}

/** Every (state, reason) pair the controller gives, from the inputs that give it: the table of docs/design.md section 5. */
const ROWS: Row[] = [
  {
    name: 'new node, gpu starting → Bootstrapping (ExtensionsProgressing)',
    input: input({
      node: booting,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: progressing }),
      now: NOW,
    }),
    state: NodeState.Bootstrapping,
    condition: 'False',
    reason: ConditionReason.ExtensionsProgressing,
    label: 'progressing',
    text: 'Bootstrapping (ExtensionsProgressing)',
  },
  {
    name: 'new node, gpu Unhealthy → Bootstrapping (ExtensionsUnhealthy)',
    input: input({
      node: booting,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthy }),
      now: NOW,
    }),
    state: NodeState.Bootstrapping,
    condition: 'False',
    reason: ConditionReason.ExtensionsUnhealthy,
    label: 'unhealthy',
    text: 'Bootstrapping (ExtensionsUnhealthy)',
  },
  {
    name: 'new node, gpu could not be determined → Bootstrapping (ExtensionsUnknown)',
    input: input({
      node: booting,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: undetermined }),
      now: NOW,
    }),
    state: NodeState.Bootstrapping,
    condition: 'Unknown',
    reason: ConditionReason.ExtensionsUnknown,
    label: 'unknown',
    text: 'Bootstrapping (ExtensionsUnknown)',
  },
  {
    name: 'new node, no agent past its grace → Bootstrapping (AgentNotReporting)',
    input: input({ node: booting, required: [ext('gpu')], previous: memory({}), now: NOW }),
    state: NodeState.Bootstrapping,
    condition: 'Unknown',
    reason: ConditionReason.AgentNotReporting,
    label: 'unknown',
    text: 'Bootstrapping (AgentNotReporting)',
  },
  {
    name: 'new node held past bootstrapTimeoutSeconds → BootstrapTimeout',
    input: input({
      node: booting,
      required: [ext('gpu')],
      agent: agent(T0 + 900 * SECOND),
      leases: leases(T0 + 900 * SECOND, { gpu: unhealthy }),
      now: T0 + 901 * SECOND,
    }),
    state: NodeState.BootstrapTimeout,
    condition: 'False',
    reason: ConditionReason.BootstrapTimeout,
    label: 'unhealthy',
    text: 'BootstrapTimeout',
  },
  {
    name: 'new node, agent reported, gpu Healthy → Ready',
    input: input({
      node: booting,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: healthy }),
      now: NOW,
    }),
    state: NodeState.Ready,
    condition: 'True',
    reason: ConditionReason.AllExtensionsHealthy,
    label: 'healthy',
    text: 'Ready',
  },
  {
    name: 'Ready, a non-critical extension Unhealthy → Ready (ExtensionsUnhealthy)',
    input: input({
      node: ready,
      required: [ext('gpu'), ext('logs', { critical: false })],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: healthy, logs: unhealthy }),
      now: NOW,
    }),
    state: NodeState.Ready,
    condition: 'False',
    reason: ConditionReason.ExtensionsUnhealthy,
    label: 'unhealthy',
    text: 'Ready (ExtensionsUnhealthy)',
  },
  {
    name: 'Ready, gpu restarting within its grace → Ready (ExtensionsProgressing): only a fault degrades',
    input: input({
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: progressing }),
      now: NOW,
    }),
    state: NodeState.Ready,
    condition: 'False',
    reason: ConditionReason.ExtensionsProgressing,
    label: 'progressing',
    text: 'Ready (ExtensionsProgressing)',
  },
  {
    name: 'Ready, gpu could not be determined → Ready (ExtensionsUnknown): no fault set',
    input: input({
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: undetermined }),
      now: NOW,
    }),
    state: NodeState.Ready,
    condition: 'Unknown',
    reason: ConditionReason.ExtensionsUnknown,
    label: 'unknown',
    text: 'Ready (ExtensionsUnknown)',
  },
  {
    name: 'Ready, only non-critical extensions, agent stopped → Ready (AgentNotReporting)',
    input: input({
      node: ready,
      required: [ext('logs', { critical: false })],
      agent: agent(EXPIRED),
      leases: leases(EXPIRED, { logs: healthy }),
      now: NOW,
    }),
    state: NodeState.Ready,
    condition: 'Unknown',
    reason: ConditionReason.AgentNotReporting,
    label: 'unknown',
    text: 'Ready (AgentNotReporting)',
  },
  {
    name: 'Ready, gpu Unhealthy → Degraded (ExtensionsUnhealthy)',
    input: input({
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthy }),
      now: NOW,
    }),
    state: NodeState.Degraded,
    condition: 'False',
    reason: ConditionReason.ExtensionsUnhealthy,
    label: 'unhealthy',
    text: 'Degraded (ExtensionsUnhealthy)',
  },
  {
    name: 'Ready, agent paused (its heartbeat expired) → Degraded (AgentNotReporting)',
    input: input({
      node: ready,
      required: [ext('gpu')],
      agent: agent(EXPIRED),
      leases: leases(EXPIRED, { gpu: healthy }),
      now: NOW,
    }),
    state: NodeState.Degraded,
    condition: 'Unknown',
    reason: ConditionReason.AgentNotReporting,
    label: 'unknown',
    text: 'Degraded (AgentNotReporting)',
  },
  {
    name: 'Degraded, gpu could not be determined → Degraded (ExtensionsUnknown): no fault cleared',
    input: input({
      node: degraded,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: undetermined }),
      now: NOW,
    }),
    state: NodeState.Degraded,
    condition: 'Unknown',
    reason: ConditionReason.ExtensionsUnknown,
    label: 'unknown',
    text: 'Degraded (ExtensionsUnknown)',
  },
  {
    name: 'Degraded, gpu restarting → Degraded (ExtensionsProgressing): recovers only when Healthy',
    input: input({
      node: degraded,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: progressing }),
      now: NOW,
    }),
    state: NodeState.Degraded,
    condition: 'False',
    reason: ConditionReason.ExtensionsProgressing,
    label: 'progressing',
    text: 'Degraded (ExtensionsProgressing)',
  },
  {
    name: "the kubelet's Ready is Unknown → NotReady",
    input: input({
      node: bootstrappedNode({
        kubeletNotReady: { status: 'Unknown', reason: 'NodeStatusUnknown', message: '', since: '' },
      }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: healthy }),
      now: NOW,
    }),
    state: NodeState.NotReady,
    condition: 'Unknown',
    reason: ConditionReason.NodeNotReady,
    label: 'unknown',
    text: 'NotReady',
  },
  {
    name: 'cordoned, gpu failing → Maintenance (InMaintenance)',
    input: input({
      node: cordonedDegraded(),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthy }),
      now: NOW,
    }),
    state: NodeState.Maintenance,
    condition: 'False',
    reason: ConditionReason.InMaintenance,
    label: 'maintenance',
    text: 'Maintenance',
  },
  {
    name: 'draining, every extension Healthy → Maintenance (AllExtensionsHealthy)',
    input: input({
      node: bootstrappedNode({
        maintenance: { cause: MaintenanceCause.DrainInProgress, since: '', detail: '' },
      }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: healthy }),
      now: NOW,
    }),
    state: NodeState.Maintenance,
    condition: 'True',
    reason: ConditionReason.AllExtensionsHealthy,
    label: 'healthy',
    text: 'Maintenance (AllExtensionsHealthy)',
  },
];

function cordonedDegraded() {
  return bootstrappedNode({
    taints: [RUNTIME_TAINT],
    maintenance: { cause: MaintenanceCause.Cordoned, since: '', detail: 'spec.unschedulable' },
  });
}

describe('one name for a node state: decideNode → state, condition, reason, label', () => {
  it.each(ROWS)('$name', (row) => {
    const d = decideNode(row.input);
    expect([d.state, d.condition.status, d.condition.reason, d.label]).toEqual([
      row.state,
      row.condition,
      row.reason,
      row.label,
    ]);
    expect(nodeStatus(d.state, d.condition.reason)).toEqual({
      state: row.state,
      reason: row.reason,
      condition: row.condition,
      label: row.label,
      text: row.text,
    });
    expect(STATE_REASONS[d.state] as readonly string[]).toContain(d.condition.reason);
  });

  it('the rows cover every (state, reason) pair STATE_REASONS allows', () => {
    const covered = new Set(ROWS.map((r) => `${r.state}/${r.reason}`));
    const allowed = Object.entries(STATE_REASONS).flatMap(([s, reasons]) => reasons.map((r) => `${s}/${r}`));
    expect([...covered].sort()).toEqual(allowed.sort());
  });

  it('every condition reason has a status and a label', () => {
    expect(Object.keys(CONDITION_REASONS).sort()).toEqual(Object.values(ConditionReason).sort());
  });

  it.each(ROWS)('read back from the node the decision was written to: $name', (row) => {
    const d = decideNode(row.input);
    const written = applied(row.input.node, d);
    expect(
      stateOnNode({
        bootstrapTainted: hasTaint(written.taints, POLICY.bootstrapTaintKey),
        runtimeTainted: hasTaint(written.taints, POLICY.runtimeTaintKey),
        conditionReason: written.extensionsReadyCondition?.reason,
        maintained: written.maintenance !== undefined,
      }),
    ).toBe(d.state);
  });

  it('a node the controller has not decided yet has no state', () => {
    expect(
      stateOnNode({ bootstrapTainted: true, runtimeTainted: false, conditionReason: undefined }),
    ).toBeUndefined();
  });
});

describe('stateText', () => {
  it.each([
    { state: NodeState.Degraded, reason: 'AgentNotReporting', text: 'Degraded (AgentNotReporting)' },
    { state: NodeState.Ready, reason: 'AllExtensionsHealthy', text: 'Ready' },
    { state: NodeState.Ready, reason: undefined, text: 'Ready' },
    {
      state: NodeState.Bootstrapping,
      reason: 'ExtensionsProgressing',
      text: 'Bootstrapping (ExtensionsProgressing)',
    },
  ])('$state + $reason → $text', ({ state, reason, text }) => {
    expect(stateText(state, reason)).toBe(text);
  });
});
