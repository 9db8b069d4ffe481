import { describe, expect, it } from 'vitest';
import { agentLeaseName, extensionLeaseName } from '../../api/lease.ts';
import { ExtensionState, NodeAnnotation, type NodeStatusLabelValue } from '../../api/names.ts';
import { ConditionReason, ControllerReason, EventReason, ProbeReason } from '../../api/reasons.ts';
import { decideNode } from './decide.ts';
import { NodeState } from './node-state.ts';
import {
  agent,
  applied,
  BOOT,
  BOOTSTRAP_TAINT,
  bootstrappedNode,
  ext,
  input,
  lease,
  leases,
  memory,
  MINUTE,
  NODE,
  node,
  POLICY,
  RUNTIME_TAINT,
  SECOND,
  seen,
  T0,
  taint,
} from './testing.ts';
import type { ObservedLease } from '../../api/lease.ts';
import type { ConditionStatus, DecisionInput, NodeDecision, NodeMemory } from './types.ts';

type ObservedLeaseState = Pick<ObservedLease, 'state' | 'reason' | 'message'>;

const NOW = T0 + 30 * SECOND;
/** Observed 10 s ago: live for another 30 s. */
const FRESH = NOW - 10 * SECOND;
const GPU_LEASE = extensionLeaseName(NODE, 'gpu');
const AGENT_LEASE = agentLeaseName(NODE);
const unhealthyGpu = {
  state: ExtensionState.Unhealthy,
  reason: ProbeReason.ProbeTimeout,
  message: 'connect timed out',
};

interface Expected {
  state: NodeState;
  taints: { bootstrap: boolean; runtime: boolean };
  condition: [ConditionStatus, ConditionReason];
  label?: NodeStatusLabelValue;
  events: EventReason[];
  /** The bootstrapped-boot-id the decision wants on the node; undefined = leave it. */
  annotation?: string;
  message?: string | RegExp;
  staleLeases?: string[];
  extensions?: Record<string, [ExtensionState, string]>;
}

interface Case {
  name: string;
  input: DecisionInput;
  expected: Expected;
}

function check(d: NodeDecision, e: Expected): void {
  expect(d.state).toBe(e.state);
  expect(d.desiredTaints).toEqual(e.taints);
  expect([d.condition.status, d.condition.reason]).toEqual(e.condition);
  expect(d.condition.type).toBe('ExtensionsReady');
  if (e.label) expect(d.label).toBe(e.label);
  expect(d.events.map((ev) => ev.reason)).toEqual(e.events);
  expect(d.desiredAnnotations.bootstrappedBootId).toBe(e.annotation);
  if (e.message !== undefined) expect(d.condition.message).toMatch(e.message);
  expect(d.staleLeases).toEqual(e.staleLeases ?? []);
  for (const [name, [state, reason]] of Object.entries(e.extensions ?? {})) {
    const verdict = d.extensions.find((v) => v.name === name);
    expect(verdict && [verdict.state, verdict.reason]).toEqual([state, reason]);
  }
}

const bootstrapCases: Case[] = [
  {
    name: 'new node, leases missing → Bootstrapping with bootstrap taint',
    input: input({ now: NOW, required: [ext('gpu')] }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      label: 'progressing',
      events: [EventReason.BootstrapTaintAdded],
      extensions: { gpu: [ExtensionState.Progressing, ControllerReason.AwaitingAgent] },
    },
  },
  {
    name: 'new node tainted at admission → Bootstrapping, no taint event',
    input: input({ now: NOW, node: node({ taints: [BOOTSTRAP_TAINT] }), required: [ext('gpu')] }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
    },
  },
  {
    name: 'agent reported, extension lease not written yet → Progressing (AwaitingFirstReport) within the grace',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu')],
      agent: agent(FRESH),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      message: 'gpu Progressing (AwaitingFirstReport): No lease has been written.',
      events: [],
      extensions: { gpu: [ExtensionState.Progressing, ControllerReason.AwaitingFirstReport] },
    },
  },
  {
    name: 'agent reported, extension lease still missing after the grace → Unknown (LeaseMissing), still Bootstrapping',
    input: input({
      now: T0 + 3 * MINUTE,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu')],
      agent: agent(T0 + 3 * MINUTE - SECOND),
      previous: memory(
        { gpu: ExtensionState.Progressing },
        { bootSeenMs: T0, bootstrapStartedMs: T0, requiredSinceMs: new Map([['gpu', T0]]) },
      ),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      label: 'unknown',
      events: [EventReason.ExtensionUnhealthy],
      extensions: { gpu: [ExtensionState.Unknown, ControllerReason.LeaseMissing] },
    },
  },
  {
    name: 'critical extension Unhealthy while bootstrapping → condition ExtensionsUnhealthy, no runtime taint',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      message: 'gpu Unhealthy (ProbeTimeout): connect timed out',
      events: [EventReason.ExtensionUnhealthy],
    },
  },
  {
    name: 'all critical Healthy and agent reported → bootstrap taint removed, annotation written, BootstrapTaintRemoved event',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu'), ext('csi')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {}, csi: {} }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      label: 'healthy',
      message: 'All required extensions are Healthy.',
      events: [EventReason.BootstrapTaintRemoved],
      annotation: BOOT,
    },
  },
  {
    name: 'critical Healthy but the agent heartbeat is from an earlier boot → still Bootstrapping',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu')],
      agent: agent(FRESH, { bootId: 'boot-0' }),
      leases: leases(FRESH, { gpu: {} }),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
      extensions: { gpu: [ExtensionState.Progressing, ControllerReason.AwaitingAgent] },
    },
  },
  {
    name: 'non-critical extension not Healthy does not hold bootstrap → Ready, condition False, no taint',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu'), ext('logs', { critical: false })],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {}, logs: { state: ExtensionState.Unhealthy, reason: 'BadStatus' } }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      label: 'unhealthy',
      events: [EventReason.BootstrapTaintRemoved, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'DryRun extension still Progressing does not hold bootstrap',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu'), ext('csi', { enforcement: 'DryRun' })],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {} }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [EventReason.BootstrapTaintRemoved],
      annotation: BOOT,
    },
  },
  {
    name: 'tripped extension → no runtime taint but bootstrap unaffected (a bootstrapping node keeps its taint)',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
      policy: { ...POLICY, trippedExtensions: new Set(['gpu']) },
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      events: [EventReason.ExtensionUnhealthy],
    },
  },
  {
    name: 'only non-critical and DryRun extensions → bootstrap taint not added',
    input: input({
      now: NOW,
      required: [ext('logs', { critical: false }), ext('csi', { enforcement: 'DryRun' })],
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
    },
  },
  {
    name: 'no required extensions, agent not reported yet → no bootstrap taint, condition Progressing',
    input: input({ now: NOW }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      message: 'Waiting for the nodecare agent to report on this boot.',
      events: [],
    },
  },
  {
    name: 'no required extensions, agent reported → condition True "No extensions required.", annotation written',
    input: input({ now: NOW, agent: agent(FRESH) }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      message: 'No extensions required.',
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'no required extensions, bootstrap taint from admission, agent reported → taint removed',
    input: input({ now: NOW, node: node({ taints: [BOOTSTRAP_TAINT] }), agent: agent(FRESH) }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      events: [EventReason.BootstrapTaintRemoved],
      annotation: BOOT,
    },
  },
  {
    name: 'no required extensions, bootstrap taint from admission, agent not reported → taint kept',
    input: input({ now: NOW, node: node({ taints: [BOOTSTRAP_TAINT] }) }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
    },
  },
];

const rebootedNode = bootstrappedNode({ bootId: 'boot-2' });
const rebootCases: Case[] = [
  {
    name: 'bootID changed on a Ready node → Bootstrapping again',
    input: input({
      now: NOW,
      node: rebootedNode,
      required: [ext('gpu')],
      agent: agent(FRESH, { bootId: 'boot-2' }),
      leases: leases(FRESH, { gpu: {} }),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [EventReason.BootstrapTaintAdded],
      extensions: { gpu: [ExtensionState.Progressing, ControllerReason.AwaitingFirstReport] },
    },
  },
  {
    name: 'old-boot lease Healthy does not end bootstrap after reboot',
    input: input({
      now: NOW,
      node: { ...rebootedNode, taints: [BOOTSTRAP_TAINT] },
      required: [ext('gpu')],
      agent: agent(FRESH, { bootId: 'boot-2' }),
      leases: leases(FRESH, { gpu: { bootId: BOOT } }),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      message: 'gpu Progressing (AwaitingFirstReport): The lease was written before the node rebooted.',
      events: [],
    },
  },
  {
    name: 'reboot of a Degraded node → runtime taint swapped for the bootstrap taint',
    input: input({
      now: NOW,
      node: { ...rebootedNode, taints: [RUNTIME_TAINT] },
      required: [ext('gpu')],
      agent: agent(FRESH, { bootId: 'boot-2' }),
      leases: leases(FRESH, { gpu: { ...unhealthyGpu, bootId: BOOT } }),
      previous: memory({ gpu: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [EventReason.BootstrapTaintAdded, EventReason.RuntimeTaintRemoved],
    },
  },
  {
    name: 'after reboot, new-boot leases Healthy → bootstrap completes, annotation = new bootID',
    input: input({
      now: NOW,
      node: { ...rebootedNode, taints: [BOOTSTRAP_TAINT] },
      required: [ext('gpu')],
      agent: agent(FRESH, { bootId: 'boot-2' }),
      leases: leases(FRESH, { gpu: { bootId: 'boot-2' } }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      events: [EventReason.BootstrapTaintRemoved],
      annotation: 'boot-2',
    },
  },
  {
    name: 'node reporting no bootID (empty) bootstraps and completes like any other',
    input: input({
      now: NOW,
      node: node({ bootId: '', taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu')],
      agent: agent(FRESH, { bootId: '' }),
      leases: leases(FRESH, { gpu: { bootId: '' } }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      events: [EventReason.BootstrapTaintRemoved],
      annotation: '',
    },
  },
];

const oldNode = node({ creationTimestampMs: T0 - 60 * MINUTE });
const adoptionCases: Case[] = [
  {
    name: 'adopted old node without annotation → not bootstrapping',
    input: input({
      now: NOW,
      node: oldNode,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {} }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'adopted old node with a failing critical extension → Degraded at once',
    input: input({
      now: NOW,
      node: oldNode,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      events: [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'adopted old node whose agent has not reported yet → Ready within the grace, no taint',
    input: input({ now: NOW, node: oldNode, required: [ext('gpu')] }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'old node without annotation but carrying the bootstrap taint → bootstrapping since creation, timed out',
    input: input({ now: NOW, node: { ...oldNode, taints: [BOOTSTRAP_TAINT] }, required: [ext('gpu')] }),
    expected: {
      state: NodeState.BootstrapTimeout,
      taints: { bootstrap: true, runtime: false },
      condition: ['False', ConditionReason.BootstrapTimeout],
      label: 'unhealthy',
      message:
        'Bootstrap did not complete within 900s: gpu Progressing (AwaitingAgent): Waiting for the nodecare agent to report on this boot.',
      events: [EventReason.BootstrapTimeout],
    },
  },
];

const ready = bootstrappedNode();
const degraded = bootstrappedNode({ taints: [RUNTIME_TAINT] });
const runtimeCases: Case[] = [
  {
    name: 'all Healthy → Ready, no taints, condition True',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu'), ext('csi')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {}, csi: {} }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      label: 'healthy',
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'critical extension Unhealthy → Degraded, runtime taint, RuntimeTaintAdded and ExtensionUnhealthy',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu'), ext('csi')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu, csi: {} }),
      previous: memory({ gpu: ExtensionState.Healthy, csi: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      label: 'unhealthy',
      message: 'gpu Unhealthy (ProbeTimeout): connect timed out',
      events: [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'lease not renewed for its duration → Unknown, runtime taint, staleLeases',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: new Map([['gpu', seen(lease('gpu'), NOW - 40 * SECOND)]]),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      message: 'gpu Unknown (LeaseExpired): The lease was not renewed within its 40s duration.',
      events: [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
      staleLeases: [GPU_LEASE],
      extensions: { gpu: [ExtensionState.Unknown, ControllerReason.LeaseExpired] },
    },
  },
  {
    name: 'lease seen renewed 1 ms before its duration ends → still Healthy',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: new Map([['gpu', seen(lease('gpu'), NOW - 40 * SECOND + 1)]]),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'non-critical extension Unhealthy → condition False but no taint',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('logs', { critical: false })],
      agent: agent(FRESH),
      leases: leases(FRESH, { logs: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'DryRun extension Unhealthy → no taint, condition False',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu', { enforcement: 'DryRun' })],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'tripped extension → no runtime taint but bootstrap unaffected (a bootstrapped node gets no runtime taint)',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
      previous: memory({ gpu: ExtensionState.Healthy }),
      policy: { ...POLICY, trippedExtensions: new Set(['gpu']) },
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'breaker trips while Degraded → the runtime taint it caused is removed',
    input: input({
      now: NOW,
      node: degraded,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
      previous: memory({ gpu: unhealthyGpu }),
      policy: { ...POLICY, trippedExtensions: new Set(['gpu']) },
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      events: [EventReason.RuntimeTaintRemoved],
      annotation: BOOT,
    },
  },
  {
    name: 'Progressing extension on a Ready node → stays Ready',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: { state: ExtensionState.Progressing, reason: ProbeReason.StartupGrace } }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      label: 'progressing',
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'Progressing extension on a Degraded node → stays Degraded until Healthy',
    input: input({
      now: NOW,
      node: degraded,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: { state: ExtensionState.Progressing, reason: ProbeReason.StartupGrace } }),
      previous: memory({ gpu: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'Degraded node, every blocking extension Healthy → Ready, RuntimeTaintRemoved',
    input: input({
      now: NOW,
      node: degraded,
      required: [ext('gpu'), ext('logs', { critical: false })],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {}, logs: unhealthyGpu }),
      previous: memory({ gpu: unhealthyGpu, logs: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      events: [EventReason.RuntimeTaintRemoved],
      annotation: BOOT,
    },
  },
  {
    name: 'agent heartbeat expired → every extension Unknown (AgentNotReporting), runtime taint, condition Unknown',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu'), ext('csi')],
      agent: agent(NOW - 40 * SECOND),
      leases: leases(FRESH, { gpu: {}, csi: {} }),
      previous: memory({ gpu: ExtensionState.Healthy, csi: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['Unknown', ConditionReason.AgentNotReporting],
      label: 'unknown',
      message: "The nodecare agent's heartbeat lease expired.",
      events: [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
      staleLeases: [AGENT_LEASE],
      extensions: {
        gpu: [ExtensionState.Unknown, ControllerReason.AgentNotReporting],
        csi: [ExtensionState.Unknown, ControllerReason.AgentNotReporting],
      },
    },
  },
  {
    name: 'agent heartbeat missing after a controller restart → grace, a Ready node stays Ready',
    input: input({ now: NOW, node: ready, required: [ext('gpu')], leases: leases(FRESH, { gpu: {} }) }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
      annotation: BOOT,
      extensions: { gpu: [ExtensionState.Progressing, ControllerReason.AwaitingAgent] },
    },
  },
  {
    name: 'agent heartbeat missing after a controller restart → a Degraded node keeps its taint',
    input: input({ now: NOW, node: degraded, required: [ext('gpu')] }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
      annotation: BOOT,
    },
  },
  {
    name: 'agent heartbeat missing beyond the grace → Unknown (AgentNotReporting), runtime taint',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      leases: leases(FRESH, { gpu: {} }),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['Unknown', ConditionReason.AgentNotReporting],
      message: 'The nodecare agent has not reported on this boot.',
      events: [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'invalid critical registration on a Ready node → Unknown (InvalidRegistration), no taint, InvalidRegistration event',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu', {}, ['probe: required', 'periodSeconds: expected an integer from 1 to 3600'])],
      agent: agent(FRESH),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      label: 'unknown',
      message:
        'gpu Unknown (InvalidRegistration): probe: required; periodSeconds: expected an integer from 1 to 3600',
      events: [EventReason.InvalidRegistration],
      annotation: BOOT,
    },
  },
  {
    name: 'agent reports InvalidRegistration on the lease → InvalidRegistration event, no taint',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, {
        gpu: {
          state: ExtensionState.Unknown,
          reason: ProbeReason.InvalidRegistration,
          message: 'probe.tcp.host: target "10.0.0.9" is not allowed from a node annotation',
        },
      }),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      events: [EventReason.InvalidRegistration],
      annotation: BOOT,
    },
  },
  {
    name: 'extension newly registered on a Ready node → Progressing (AwaitingFirstReport) within the grace',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu'), ext('csi')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {} }),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['False', ConditionReason.ExtensionsProgressing],
      events: [],
      annotation: BOOT,
      extensions: { csi: [ExtensionState.Progressing, ControllerReason.AwaitingFirstReport] },
    },
  },
  {
    name: 'extension registered, lease still missing after the grace → Unknown (LeaseMissing), no taint (the agent is alive)',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('csi')],
      agent: agent(FRESH),
      previous: memory(
        { csi: ExtensionState.Progressing },
        { requiredSinceMs: new Map([['csi', NOW - 2 * MINUTE]]) },
      ),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
      extensions: { csi: [ExtensionState.Unknown, ControllerReason.LeaseMissing] },
    },
  },
  {
    name: 'lease without a valid state → Unknown (LeaseStateInvalid), no taint',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: { state: undefined } }),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
      extensions: { gpu: [ExtensionState.Unknown, ControllerReason.LeaseStateInvalid] },
    },
  },
  {
    name: 'no required extensions, agent heartbeat expired → condition Unknown, no taint',
    input: input({ now: NOW, node: ready, agent: agent(NOW - 60 * SECOND), previous: memory({}) }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.AgentNotReporting],
      label: 'unknown',
      events: [],
      annotation: BOOT,
      staleLeases: [AGENT_LEASE],
    },
  },
  {
    name: 'bootstrap taint put back on a bootstrapped node → removed',
    input: input({ now: NOW, node: bootstrappedNode({ taints: [BOOTSTRAP_TAINT] }), agent: agent(FRESH) }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      events: [EventReason.BootstrapTaintRemoved],
      annotation: BOOT,
    },
  },
  {
    name: 'taints with other keys are not ours (custom keys from the policy)',
    input: input({
      now: NOW,
      node: bootstrappedNode({ taints: [RUNTIME_TAINT, taint('example.com/other')] }),
      agent: agent(FRESH),
      policy: { ...POLICY, bootstrapTaintKey: 'example.com/booting', runtimeTaintKey: 'example.com/broken' },
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['True', ConditionReason.AllExtensionsHealthy],
      events: [],
      annotation: BOOT,
    },
  },
];

const probeError = {
  state: ExtensionState.Unknown,
  reason: ProbeReason.ProbeError,
  message: 'open /dev/nvidia0: permission denied',
};
/** What Unknown means (docs/adr/0004): losing visibility neither sets nor clears a fault. */
const unknownCases: Case[] = [
  {
    name: 'Ready node, ProbeError Unknown → no taint, Warning event, message names it',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu'), ext('csi')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: probeError, csi: {} }),
      previous: memory({ gpu: ExtensionState.Healthy, csi: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      label: 'unknown',
      message: 'gpu Unknown (ProbeError): open /dev/nvidia0: permission denied',
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'Ready node, PermissionDenied Unknown → no taint',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: { state: ExtensionState.Unknown, reason: ProbeReason.PermissionDenied } }),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      label: 'unknown',
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'Degraded node (Unhealthy), then Unknown → stays tainted',
    input: input({
      now: NOW,
      node: degraded,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: probeError }),
      previous: memory({ gpu: unhealthyGpu }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      label: 'unknown',
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'Degraded node after a controller restart (no memory), Unknown → stays tainted',
    input: input({
      now: NOW,
      node: degraded,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: probeError }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'Ready node, invalid registration → no taint',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu', {}, ['probe.tcp.port: expected an integer from 1 to 65535'])],
      agent: agent(FRESH),
      previous: memory({ gpu: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      label: 'unknown',
      events: [EventReason.InvalidRegistration],
      annotation: BOOT,
    },
  },
  {
    name: 'Ready node, Unknown on one extension and Unhealthy on another → Degraded by the confirmed fault',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu'), ext('csi')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: probeError, csi: unhealthyGpu }),
      previous: memory({ gpu: ExtensionState.Healthy, csi: ExtensionState.Healthy }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      label: 'unhealthy',
      message: /^csi Unhealthy .*; gpu Unknown \(ProbeError\)/,
      events: [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'expired lease → Degraded',
    input: input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: new Map([['gpu', seen(lease('gpu', probeError), NOW - 40 * SECOND)]]),
      previous: memory({ gpu: probeError }),
    }),
    expected: {
      state: NodeState.Degraded,
      taints: { bootstrap: false, runtime: true },
      condition: ['False', ConditionReason.ExtensionsUnhealthy],
      label: 'unhealthy',
      events: [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy],
      annotation: BOOT,
      staleLeases: [GPU_LEASE],
      extensions: { gpu: [ExtensionState.Unknown, ControllerReason.LeaseExpired] },
    },
  },
  {
    name: 'adopted old node with an Unknown critical extension → Ready, no taint',
    input: input({
      now: NOW,
      node: oldNode,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: probeError }),
    }),
    expected: {
      state: NodeState.Ready,
      taints: { bootstrap: false, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      events: [EventReason.ExtensionUnhealthy],
      annotation: BOOT,
    },
  },
  {
    name: 'bootstrapping, Unknown → held',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT] }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: probeError }),
    }),
    expected: {
      state: NodeState.Bootstrapping,
      taints: { bootstrap: true, runtime: false },
      condition: ['Unknown', ConditionReason.ExtensionsUnknown],
      events: [EventReason.ExtensionUnhealthy],
    },
  },
];

/** What the node lifecycle controller writes when the kubelet stops posting status. */
const SILENT_KUBELET = {
  status: 'Unknown',
  reason: 'NodeStatusUnknown',
  message: 'Kubelet stopped posting node status.',
  since: '2026-01-01T00:00:10Z',
};
/** What a kubelet that just started posts until its runtime's network is up. */
const STARTING_KUBELET = {
  status: 'False',
  reason: 'KubeletNotReady',
  message: 'container runtime network not ready: NetworkReady=false',
  since: '2026-01-01T00:00:05Z',
};
const NOT_READY_MESSAGE =
  'The kubelet reports Ready=Unknown since 2026-01-01T00:00:10Z (NodeStatusUnknown: Kubelet stopped posting node status.); extension results are not trusted until the node is Ready again.';
/** Every row of the NOT_READY table shows the same condition, label and extension verdicts. */
const notReadyExpected = {
  state: NodeState.NotReady,
  condition: ['Unknown', ConditionReason.NodeNotReady] as [ConditionStatus, ConditionReason],
  label: 'unknown' as NodeStatusLabelValue,
  extensions: { gpu: [ExtensionState.Unknown, ControllerReason.NodeNotReady] as [ExtensionState, string] },
};

/** The NOT_READY table (decide.ts): one row per state the node would otherwise be in. */
const notReadyCases: Case[] = [
  {
    name: 'NotReady while Bootstrapping and everything Healthy → still held: bootstrap taint kept, no marker',
    input: input({
      now: NOW,
      node: node({ taints: [BOOTSTRAP_TAINT], kubeletNotReady: SILENT_KUBELET }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {} }),
    }),
    expected: {
      ...notReadyExpected,
      taints: { bootstrap: true, runtime: false },
      events: [EventReason.NodeNotReady],
      message: NOT_READY_MESSAGE,
    },
  },
  {
    name: 'NotReady (a starting kubelet) on a new node without the bootstrap taint → the bootstrap rule still adds it',
    input: input({
      now: NOW,
      node: node({ kubeletNotReady: STARTING_KUBELET }),
      required: [ext('gpu')],
    }),
    expected: {
      ...notReadyExpected,
      taints: { bootstrap: true, runtime: false },
      events: [EventReason.BootstrapTaintAdded, EventReason.NodeNotReady],
      message:
        'The kubelet reports Ready=False since 2026-01-01T00:00:05Z (KubeletNotReady: container runtime network not ready: NetworkReady=false); extension results are not trusted until the node is Ready again.',
    },
  },
  {
    name: 'NotReady past the bootstrap timeout → NotReady, taint kept, no BootstrapTimeout event',
    input: input({
      now: T0 + 20 * MINUTE,
      node: node({ taints: [BOOTSTRAP_TAINT], kubeletNotReady: SILENT_KUBELET }),
      required: [ext('gpu')],
      agent: agent(T0 + 20 * MINUTE - SECOND),
      leases: leases(T0 + 20 * MINUTE - SECOND, { gpu: unhealthyGpu }),
    }),
    expected: {
      ...notReadyExpected,
      taints: { bootstrap: true, runtime: false },
      events: [EventReason.NodeNotReady],
    },
  },
  {
    name: 'NotReady while Ready and the agent gone too → no runtime taint, no lease re-read',
    input: input({
      now: NOW,
      node: bootstrappedNode({ kubeletNotReady: SILENT_KUBELET }),
      required: [ext('gpu')],
      agent: agent(NOW - MINUTE),
      leases: leases(NOW - MINUTE, { gpu: {} }),
    }),
    expected: {
      ...notReadyExpected,
      taints: { bootstrap: false, runtime: false },
      events: [EventReason.NodeNotReady],
    },
  },
  {
    name: 'NotReady while Degraded and the extension Healthy again → the runtime taint stays',
    input: input({
      now: NOW,
      node: bootstrappedNode({ taints: [RUNTIME_TAINT], kubeletNotReady: SILENT_KUBELET }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {} }),
    }),
    expected: {
      ...notReadyExpected,
      taints: { bootstrap: false, runtime: true },
      events: [EventReason.NodeNotReady],
    },
  },
  {
    name: 'NotReady already reported (memory) → no second event',
    input: input({
      now: NOW,
      node: bootstrappedNode({ kubeletNotReady: SILENT_KUBELET }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
      previous: memory({ gpu: ExtensionState.Healthy }, { notReadyReported: true }),
    }),
    expected: { ...notReadyExpected, taints: { bootstrap: false, runtime: false }, events: [] },
  },
  {
    name: 'NotReady already on the node (a new leader, no memory) → no second event',
    input: input({
      now: NOW,
      node: bootstrappedNode({
        kubeletNotReady: SILENT_KUBELET,
        extensionsReadyCondition: { status: 'Unknown', reason: 'NodeNotReady', message: 'older text' },
      }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {} }),
    }),
    expected: { ...notReadyExpected, taints: { bootstrap: false, runtime: false }, events: [] },
  },
  {
    name: 'NotReady with no extension required → NotReady all the same',
    input: input({
      now: NOW,
      node: bootstrappedNode({ kubeletNotReady: SILENT_KUBELET }),
      agent: agent(FRESH),
    }),
    expected: {
      ...notReadyExpected,
      extensions: {},
      taints: { bootstrap: false, runtime: false },
      events: [EventReason.NodeNotReady],
    },
  },
];

const allCases = [
  ...bootstrapCases,
  ...rebootCases,
  ...adoptionCases,
  ...runtimeCases,
  ...unknownCases,
  ...notReadyCases,
];

describe('decideNode: what Unknown means', () => {
  it.each(unknownCases)('$name', ({ input: i, expected }) => check(decideNode(i), expected));

  it('the event for an Unknown that sets no taint says so', () => {
    const d = decideNode(unknownCases[0]?.input as DecisionInput);
    expect(d.events).toEqual([
      {
        type: 'Warning',
        reason: EventReason.ExtensionUnhealthy,
        message:
          'Extension gpu Unknown (ProbeError): open /dev/nvidia0: permission denied Could not be determined: the node keeps its last confirmed state (no taint is set or cleared for it).',
      },
    ]);
  });
});

describe('decideNode: the kubelet is not Ready (the NOT_READY table)', () => {
  it.each(notReadyCases)('$name', ({ input: i, expected }) => check(decideNode(i), expected));

  it('an extension verdict says it is not trusted and what it would otherwise be', () => {
    const d = decideNode(notReadyCases[0]!.input);
    expect(d.extensions[0]?.message).toBe(
      'Not trusted while the kubelet reports Ready=Unknown; otherwise judged Healthy (ProbeSucceeded).',
    );
    expect(d.kubeletNotReady).toEqual(SILENT_KUBELET);
    expect(d.nextDeadlineMs).toBeUndefined();
    expect(d.events.find((e) => e.reason === EventReason.NodeNotReady)).toEqual({
      type: 'Warning',
      reason: EventReason.NodeNotReady,
      message:
        'The kubelet reports Ready=Unknown since 2026-01-01T00:00:10Z (NodeStatusUnknown: Kubelet stopped posting node status.). Extension results are not trusted until the node is Ready again; nodecare adds and removes no runtime taint and keeps a bootstrapping node held meanwhile.',
    });
  });

  it('a node without a Ready condition (a plain Node object) is decided as before', () => {
    const i = input({
      now: NOW,
      node: ready,
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: {} }),
    });
    expect(i.node.kubeletNotReady).toBeUndefined();
    expect(decideNode(i).state).toBe(NodeState.Ready);
  });

  /** Decides `steps` in turn, each on the node as the previous decision left it, with the leases given. */
  function run(
    start: DecisionInput['node'],
    steps: Array<{ at: number; kubelet?: typeof SILENT_KUBELET; gpu: Partial<ObservedLeaseState> }>,
  ): NodeDecision[] {
    let n = start;
    let previous: NodeMemory | undefined;
    return steps.map(({ at, kubelet, gpu }) => {
      const { kubeletNotReady: _, ...rest } = n;
      n = kubelet ? { ...rest, kubeletNotReady: kubelet } : rest;
      const d = decideNode(
        input({
          now: at,
          node: n,
          required: [ext('gpu')],
          agent: agent(at - SECOND),
          leases: leases(at - SECOND, { gpu }),
          previous,
        }),
      );
      n = applied(n, d);
      previous = d.memory;
      return d;
    });
  }
  const summary = (d: NodeDecision): [string, boolean, boolean, string[]] => [
    d.state,
    d.desiredTaints.bootstrap,
    d.desiredTaints.runtime,
    d.events.map((e) => e.reason),
  ];

  it('Ready → NotReady → Ready again, the agent reporting Healthy throughout: one event, then as before', () => {
    const ds = run(ready, [
      { at: NOW, gpu: {} },
      { at: NOW + MINUTE, kubelet: SILENT_KUBELET, gpu: {} },
      { at: NOW + 2 * MINUTE, kubelet: SILENT_KUBELET, gpu: {} },
      { at: NOW + 3 * MINUTE, gpu: {} },
    ]);
    expect(ds.map(summary)).toEqual([
      [NodeState.Ready, false, false, []],
      [NodeState.NotReady, false, false, [EventReason.NodeNotReady]],
      [NodeState.NotReady, false, false, []],
      [NodeState.Ready, false, false, []],
    ]);
    expect(ds[3]?.condition.reason).toBe(ConditionReason.AllExtensionsHealthy);
    expect(ds[3]?.label).toBe('healthy');
  });

  it('NotReady again after recovering → a new event for the new spell', () => {
    const ds = run(ready, [
      { at: NOW, kubelet: SILENT_KUBELET, gpu: {} },
      { at: NOW + MINUTE, gpu: {} },
      { at: NOW + 2 * MINUTE, kubelet: SILENT_KUBELET, gpu: {} },
    ]);
    expect(ds.map((d) => d.events.map((e) => e.reason))).toEqual([
      [EventReason.NodeNotReady],
      [],
      [EventReason.NodeNotReady],
    ]);
  });

  it('Ready, the extension failing while NotReady → on recovery one ExtensionUnhealthy and the runtime taint, as before', () => {
    const ds = run(ready, [
      { at: NOW, gpu: {} },
      { at: NOW + MINUTE, kubelet: SILENT_KUBELET, gpu: unhealthyGpu },
      { at: NOW + 2 * MINUTE, gpu: unhealthyGpu },
    ]);
    expect(ds.map(summary)).toEqual([
      [NodeState.Ready, false, false, []],
      [NodeState.NotReady, false, false, [EventReason.NodeNotReady]],
      [NodeState.Degraded, false, true, [EventReason.RuntimeTaintAdded, EventReason.ExtensionUnhealthy]],
    ]);
  });

  it('Degraded → NotReady (extension recovers meanwhile) → Ready: the taint goes only after the kubelet is Ready', () => {
    const ds = run(degraded, [
      { at: NOW, gpu: unhealthyGpu },
      { at: NOW + MINUTE, kubelet: SILENT_KUBELET, gpu: {} },
      { at: NOW + 2 * MINUTE, gpu: {} },
    ]);
    expect(ds.map(summary)).toEqual([
      [NodeState.Degraded, false, true, [EventReason.ExtensionUnhealthy]],
      [NodeState.NotReady, false, true, [EventReason.NodeNotReady]],
      [NodeState.Ready, false, false, [EventReason.RuntimeTaintRemoved]],
    ]);
  });

  it('Bootstrapping → NotReady → Ready: bootstrap completes only once the kubelet is Ready', () => {
    const ds = run(node({ taints: [BOOTSTRAP_TAINT] }), [
      { at: NOW, kubelet: STARTING_KUBELET, gpu: {} },
      { at: NOW + 10 * SECOND, gpu: {} },
    ]);
    expect(ds.map(summary)).toEqual([
      [NodeState.NotReady, true, false, [EventReason.NodeNotReady]],
      [NodeState.Ready, false, false, [EventReason.BootstrapTaintRemoved]],
    ]);
    expect(ds[0]?.desiredAnnotations).toEqual({});
    expect(ds[1]?.desiredAnnotations).toEqual({ bootstrappedBootId: BOOT });
  });

  // The failure began while NotReady (first sight): it is announced once the kubelet is Ready, never lost.
  it('a bootstrap that timed out while NotReady is reported once the kubelet is Ready, once', () => {
    const start = node({ taints: [BOOTSTRAP_TAINT] });
    const ds = run(start, [
      { at: T0 + 14 * MINUTE, kubelet: SILENT_KUBELET, gpu: unhealthyGpu },
      { at: T0 + 16 * MINUTE, kubelet: SILENT_KUBELET, gpu: unhealthyGpu },
      { at: T0 + 17 * MINUTE, gpu: unhealthyGpu },
      { at: T0 + 18 * MINUTE, gpu: unhealthyGpu },
    ]);
    expect(ds.map(summary)).toEqual([
      [NodeState.NotReady, true, false, [EventReason.NodeNotReady]],
      [NodeState.NotReady, true, false, []],
      [
        NodeState.BootstrapTimeout,
        true,
        false,
        [EventReason.BootstrapTimeout, EventReason.ExtensionUnhealthy],
      ],
      [NodeState.BootstrapTimeout, true, false, []],
    ]);
  });
});

describe('decideNode: bootstrap', () => {
  it.each(bootstrapCases)('$name', ({ input: i, expected }) => check(decideNode(i), expected));
});

describe('decideNode: reboot', () => {
  it.each(rebootCases)('$name', ({ input: i, expected }) => check(decideNode(i), expected));
});

describe('decideNode: adoption of nodes that predate nodecare', () => {
  it.each(adoptionCases)('$name', ({ input: i, expected }) => check(decideNode(i), expected));
});

describe('decideNode: after bootstrap', () => {
  it.each(runtimeCases)('$name', ({ input: i, expected }) => check(decideNode(i), expected));
});

describe('decideNode: level-triggered, no heartbeat writes', () => {
  it.each(allCases)(
    'no heartbeat writes: same inputs twice → same condition, no events ($name)',
    ({ input: i }) => {
      const first = decideNode(i);
      const second = decideNode({ ...i, node: applied(i.node, first, i.policy), previous: first.memory });
      expect(second.events).toEqual([]);
      expect(second.condition).toEqual(first.condition);
      expect(second.state).toBe(first.state);
      expect(second.desiredTaints).toEqual(first.desiredTaints);
      expect(second.desiredAnnotations).toEqual(first.desiredAnnotations);
    },
  );

  it.each(allCases)(
    'controller restart with the decision already on the node → no events ($name)',
    ({ input: i }) => {
      const first = decideNode(i);
      const again = decideNode({ ...i, node: applied(i.node, first, i.policy), previous: undefined });
      expect(again.events).toEqual([]);
    },
  );

  it('controller restart with another condition on the node → ExtensionUnhealthy for what fails now', () => {
    const i = input({
      now: NOW,
      node: {
        ...degraded,
        extensionsReadyCondition: { status: 'True', reason: 'AllExtensionsHealthy', message: '' },
      },
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthyGpu }),
    });
    expect(decideNode(i).events.map((e) => e.reason)).toEqual([EventReason.ExtensionUnhealthy]);
  });

  it('memory keeps only extensions still required, with the time each was first required', () => {
    const d = decideNode(
      input({
        now: NOW,
        node: ready,
        required: [ext('gpu'), ext('csi')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: {}, csi: {} }),
        previous: memory({ gpu: ExtensionState.Healthy, old: ExtensionState.Unhealthy }),
      }),
    );
    expect([...d.memory.requiredSinceMs]).toEqual([
      ['csi', NOW],
      ['gpu', T0 - 60 * MINUTE],
    ]);
    expect([...d.memory.extensionStates.keys()]).toEqual(['csi', 'gpu']);
    expect(d.extensions.map((v) => v.name)).toEqual(['csi', 'gpu']);
  });
});

describe('decideNode: bootstrap timeout', () => {
  it('bootstrap timeout → condition BootstrapTimeout, one Warning event then none', () => {
    const required = [ext('gpu')];
    const at = (now: number, n: DecisionInput['node'], previous: DecisionInput['previous']): NodeDecision =>
      decideNode(input({ now, node: n, required, agent: agent(now - SECOND), previous }));

    const start = at(NOW, node(), undefined);
    expect(start.state).toBe(NodeState.Bootstrapping);
    let n = applied(node(), start);

    const graceOver = at(NOW + 2 * MINUTE, n, start.memory);
    expect(graceOver.state).toBe(NodeState.Bootstrapping);
    expect(graceOver.events.map((e) => e.reason)).toEqual([EventReason.ExtensionUnhealthy]);
    n = applied(n, graceOver);

    const justBefore = at(T0 + 15 * MINUTE - 1, n, graceOver.memory);
    expect(justBefore.state).toBe(NodeState.Bootstrapping);
    expect(justBefore.nextDeadlineMs).toBe(T0 + 15 * MINUTE);

    const timedOut = at(T0 + 15 * MINUTE, n, justBefore.memory);
    expect(timedOut.state).toBe(NodeState.BootstrapTimeout);
    expect(timedOut.desiredTaints).toEqual({ bootstrap: true, runtime: false });
    expect(timedOut.condition).toEqual({
      type: 'ExtensionsReady',
      status: 'False',
      reason: ConditionReason.BootstrapTimeout,
      message:
        'Bootstrap did not complete within 900s: gpu Unknown (LeaseMissing): No lease has been written.',
    });
    expect(timedOut.label).toBe('unhealthy');
    expect(timedOut.events).toEqual([
      { type: 'Warning', reason: EventReason.BootstrapTimeout, message: timedOut.condition.message },
    ]);
    n = applied(n, timedOut);

    const later = at(T0 + 20 * MINUTE, n, timedOut.memory);
    expect(later.state).toBe(NodeState.BootstrapTimeout);
    expect(later.events).toEqual([]);

    const afterRestart = at(T0 + 21 * MINUTE, n, undefined);
    expect(afterRestart.state).toBe(NodeState.BootstrapTimeout);
    expect(afterRestart.events.map((e) => e.reason)).not.toContain(EventReason.BootstrapTimeout);

    const recovered = decideNode(
      input({
        now: T0 + 22 * MINUTE,
        node: n,
        required,
        agent: agent(T0 + 22 * MINUTE),
        leases: leases(T0 + 22 * MINUTE, { gpu: {} }),
        previous: later.memory,
      }),
    );
    expect(recovered.state).toBe(NodeState.Ready);
    expect(recovered.events.map((e) => e.reason)).toEqual([EventReason.BootstrapTaintRemoved]);
    expect(recovered.desiredAnnotations).toEqual({ bootstrappedBootId: BOOT });
    expect(recovered.memory.timeoutReported).toBe(false);
  });

  it('bootstrap timeout after a reboot counts from when the reboot was seen, not from creation', () => {
    const n = { ...bootstrappedNode({ bootId: 'boot-2' }), taints: [BOOTSTRAP_TAINT] };
    const seenAt = T0 + 60 * MINUTE;
    const first = decideNode(input({ now: seenAt, node: n, required: [ext('gpu')], previous: memory({}) }));
    expect(first.state).toBe(NodeState.Bootstrapping);
    expect(first.memory.bootstrapStartedMs).toBe(seenAt);
    const stillIn = decideNode(
      input({ now: seenAt + 15 * MINUTE - 1, node: n, required: [ext('gpu')], previous: first.memory }),
    );
    expect(stillIn.state).toBe(NodeState.Bootstrapping);
    const out = decideNode(
      input({ now: seenAt + 15 * MINUTE, node: n, required: [ext('gpu')], previous: stillIn.memory }),
    );
    expect(out.state).toBe(NodeState.BootstrapTimeout);
    expect(out.condition.message).toBe(
      'Bootstrap did not complete within 900s: gpu Unknown (AgentNotReporting): The nodecare agent has not reported on this boot.',
    );
  });

  it('no required extensions and no agent: the untainted node is adopted at the timeout instead', () => {
    const n = node();
    const before = decideNode(input({ now: T0 + 15 * MINUTE - 1, node: n, previous: memory({}) }));
    expect(before.state).toBe(NodeState.Bootstrapping);
    expect(before.nextDeadlineMs).toBe(T0 + 15 * MINUTE);
    const at = decideNode(input({ now: T0 + 15 * MINUTE, node: n, previous: before.memory }));
    expect(at.state).toBe(NodeState.Ready);
    expect(at.condition.reason).toBe(ConditionReason.AgentNotReporting);
    expect(at.desiredTaints).toEqual({ bootstrap: false, runtime: false });
    expect(at.events).toEqual([]);
  });
});

describe('decideNode: next deadline', () => {
  // `parts`: which deadlines a lease renewal moves (the leases) and the earliest one it does not (fixedMs).
  const deadlineCases: Array<{
    name: string;
    input: DecisionInput;
    deadline: number | undefined;
    parts: NodeDecision['deadlines'];
  }> = [
    {
      name: 'deadline = earliest lease expiry',
      input: input({
        now: NOW,
        node: ready,
        required: [ext('gpu'), ext('csi')],
        agent: agent(NOW - 5 * SECOND),
        leases: new Map([
          ['gpu', seen(lease('gpu'), NOW - 30 * SECOND)],
          ['csi', seen(lease('csi'), NOW - 20 * SECOND)],
        ]),
      }),
      deadline: NOW + 10 * SECOND,
      parts: { leases: [extensionLeaseName(NODE, 'csi'), GPU_LEASE, AGENT_LEASE], fixedMs: undefined },
    },
    {
      name: 'deadline = agent heartbeat expiry when it comes first',
      input: input({
        now: NOW,
        node: ready,
        required: [ext('gpu')],
        agent: agent(NOW - 35 * SECOND),
        leases: leases(NOW, { gpu: {} }),
      }),
      deadline: NOW + 5 * SECOND,
      parts: { leases: [GPU_LEASE, AGENT_LEASE], fixedMs: undefined },
    },
    {
      name: 'deadline = end of the agent grace while awaiting the agent',
      input: input({ now: NOW, required: [ext('gpu')] }),
      deadline: NOW + 2 * MINUTE,
      parts: { leases: [], fixedMs: NOW + 2 * MINUTE },
    },
    {
      name: 'deadline = end of the missing-lease grace',
      input: input({
        now: NOW,
        node: ready,
        required: [ext('gpu')],
        agent: agent(NOW),
        previous: memory(
          { gpu: ExtensionState.Progressing },
          { requiredSinceMs: new Map([['gpu', NOW - 100 * SECOND]]) },
        ),
      }),
      deadline: NOW + 20 * SECOND,
      parts: { leases: [AGENT_LEASE], fixedMs: NOW + 20 * SECOND },
    },
    {
      name: 'deadline = bootstrap timeout when it comes first',
      input: input({
        now: T0 + 899 * SECOND,
        node: node({ taints: [BOOTSTRAP_TAINT] }),
        required: [ext('gpu')],
        agent: agent(T0 + 899 * SECOND),
        leases: leases(T0 + 899 * SECOND, { gpu: unhealthyGpu }),
        previous: memory({ gpu: unhealthyGpu }, { bootstrapStartedMs: T0 }),
      }),
      deadline: T0 + 900 * SECOND,
      parts: { leases: [GPU_LEASE, AGENT_LEASE], fixedMs: T0 + 900 * SECOND },
    },
    {
      name: 'no deadline when the agent is gone beyond its grace (only a new report can change the answer)',
      input: input({
        now: NOW,
        node: ready,
        required: [ext('gpu')],
        agent: agent(NOW - 60 * SECOND),
        leases: leases(FRESH, { gpu: {} }),
        previous: memory({ gpu: ExtensionState.Healthy }),
      }),
      deadline: undefined,
      parts: { leases: [], fixedMs: undefined },
    },
    {
      name: 'no deadline once timed out with nothing reporting',
      input: input({
        now: NOW,
        node: { ...oldNode, taints: [BOOTSTRAP_TAINT] },
        required: [ext('gpu')],
        previous: memory({ gpu: ExtensionState.Unknown }, { bootstrapStartedMs: T0 - 60 * MINUTE }),
      }),
      deadline: undefined,
      parts: { leases: [], fixedMs: undefined },
    },
  ];
  it.each(deadlineCases)('$name', ({ input: i, deadline, parts }) => {
    const decision = decideNode(i);
    expect(decision.nextDeadlineMs).toBe(deadline);
    expect(decision.deadlines).toEqual(parts);
  });

  it('deciding again at the deadline changes the answer', () => {
    const i = deadlineCases[0]?.input as DecisionInput;
    const first = decideNode(i);
    const at = first.nextDeadlineMs as number;
    const atDeadline = decideNode({ ...i, now: at, monotonicNow: at, previous: first.memory });
    expect(first.state).toBe(NodeState.Ready);
    expect(atDeadline.state).toBe(NodeState.Degraded);
    expect(atDeadline.staleLeases).toEqual([GPU_LEASE]);
  });
});

describe('decideNode: extension events fire once per transition', () => {
  const other = { state: ExtensionState.Unknown, reason: ControllerReason.LeaseExpired, message: 'x' };
  const invalid = {
    state: ExtensionState.Unknown,
    reason: ControllerReason.InvalidRegistration,
    message: 'bad',
  };
  const cases: Array<{
    name: string;
    before: Parameters<typeof memory>[0];
    now: Partial<{ state: ExtensionState; reason: string; message: string }> | 'invalid';
    events: EventReason[];
  }> = [
    {
      name: 'Healthy → Unhealthy: ExtensionUnhealthy',
      before: { gpu: ExtensionState.Healthy },
      now: unhealthyGpu,
      events: [EventReason.ExtensionUnhealthy],
    },
    {
      name: 'Progressing → Unknown: ExtensionUnhealthy',
      before: { gpu: ExtensionState.Progressing },
      now: { state: ExtensionState.Unknown, reason: ProbeReason.ProbeError },
      events: [EventReason.ExtensionUnhealthy],
    },
    {
      name: 'newly required and already Unhealthy: ExtensionUnhealthy',
      before: {},
      now: unhealthyGpu,
      events: [EventReason.ExtensionUnhealthy],
    },
    {
      name: 'Unhealthy → Unhealthy (other message): none',
      before: { gpu: unhealthyGpu },
      now: { ...unhealthyGpu, message: 'other' },
      events: [],
    },
    { name: 'Unknown → Unhealthy: none', before: { gpu: other }, now: unhealthyGpu, events: [] },
    {
      name: 'Healthy → invalid registration: InvalidRegistration only',
      before: { gpu: ExtensionState.Healthy },
      now: 'invalid',
      events: [EventReason.InvalidRegistration],
    },
    { name: 'invalid → invalid: none', before: { gpu: invalid }, now: 'invalid', events: [] },
    {
      name: 'invalid → fixed but Unhealthy: ExtensionUnhealthy',
      before: { gpu: invalid },
      now: unhealthyGpu,
      events: [EventReason.ExtensionUnhealthy],
    },
    {
      name: 'Unhealthy → invalid: InvalidRegistration',
      before: { gpu: unhealthyGpu },
      now: 'invalid',
      events: [EventReason.InvalidRegistration],
    },
    { name: 'Unhealthy → Healthy: none', before: { gpu: unhealthyGpu }, now: {}, events: [] },
  ];
  it.each(cases)('$name', ({ before, now, events }) => {
    const d = decideNode(
      input({
        now: NOW,
        node: bootstrappedNode({ taints: [RUNTIME_TAINT] }),
        required: [now === 'invalid' ? ext('gpu', {}, ['probe: required']) : ext('gpu', { critical: false })],
        agent: agent(FRESH),
        leases: now === 'invalid' ? new Map() : leases(FRESH, { gpu: now }),
        previous: memory(before),
      }),
    );
    expect(
      d.events
        .filter(
          (e) => e.reason !== EventReason.RuntimeTaintRemoved && e.reason !== EventReason.RuntimeTaintAdded,
        )
        .map((e) => e.reason),
    ).toEqual(events);
  });

  it('extensions that fail because the agent stopped share one event naming them', () => {
    const d = decideNode(
      input({
        now: NOW,
        node: ready,
        required: [ext('gpu'), ext('csi'), ext('logs', { critical: false })],
        agent: agent(NOW - 40 * SECOND),
        previous: memory({
          gpu: ExtensionState.Healthy,
          csi: ExtensionState.Healthy,
          logs: ExtensionState.Unhealthy,
        }),
      }),
    );
    expect(d.events).toEqual([
      {
        type: 'Warning',
        reason: EventReason.RuntimeTaintAdded,
        message: `Added taint ${POLICY.runtimeTaintKey}: csi Unknown (AgentNotReporting): The nodecare agent's heartbeat lease expired.; gpu Unknown (AgentNotReporting): The nodecare agent's heartbeat lease expired.`,
      },
      {
        type: 'Warning',
        reason: EventReason.ExtensionUnhealthy,
        message: "The nodecare agent's heartbeat lease expired. Unknown (AgentNotReporting): csi; gpu",
      },
    ]);
  });

  it.each([
    { name: 'not critical', policy: { critical: false }, tripped: [], note: 'Not critical: no taint.' },
    {
      name: 'DryRun',
      policy: { enforcement: 'DryRun' as const },
      tripped: [],
      note: 'Enforcement DryRun: no taint.',
    },
    {
      name: 'tripped',
      policy: {},
      tripped: ['gpu'],
      note: 'The correlated-failure breaker holds back its taint.',
    },
  ])('ExtensionUnhealthy says why a $name extension puts no taint on', ({ policy, tripped, note }) => {
    const d = decideNode(
      input({
        now: NOW,
        node: ready,
        required: [ext('gpu', policy)],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: unhealthyGpu }),
        previous: memory({ gpu: ExtensionState.Healthy }),
        policy: { ...POLICY, trippedExtensions: new Set(tripped) },
      }),
    );
    expect(d.events).toEqual([
      {
        type: 'Warning',
        reason: EventReason.ExtensionUnhealthy,
        message: `Extension gpu Unhealthy (ProbeTimeout): connect timed out ${note}`,
      },
    ]);
  });

  it('taint events name the taint key and, on removal by the breaker, the extension held back', () => {
    const d = decideNode(
      runtimeCases.find((c) => c.name.startsWith('breaker trips'))?.input as DecisionInput,
    );
    expect(d.events).toEqual([
      {
        type: 'Normal',
        reason: EventReason.RuntimeTaintRemoved,
        message: `Removed taint ${POLICY.runtimeTaintKey}: every blocking extension is Healthy. The correlated-failure breaker holds back the taint for gpu.`,
      },
    ]);
  });

  it('BootstrapTaintRemoved says why: bootstrap completed now, or already on this boot', () => {
    const completed = decideNode(
      bootstrapCases.find((c) => c.name.startsWith('all critical Healthy'))?.input as DecisionInput,
    );
    const putBack = decideNode(
      runtimeCases.find((c) => c.name.startsWith('bootstrap taint put back'))?.input as DecisionInput,
    );
    expect(completed.events[0]?.message).toBe(
      `Removed taint ${POLICY.bootstrapTaintKey}: the agent has reported and every critical extension is Healthy.`,
    );
    expect(putBack.events[0]?.message).toBe(
      `Removed taint ${POLICY.bootstrapTaintKey}: the node already completed bootstrap on this boot.`,
    );
  });

  it('the annotation the decision writes is the controller-owned bootstrapped-boot-id', () => {
    const d = decideNode(adoptionCases[0]?.input as DecisionInput);
    expect(applied(oldNode, d).annotations).toEqual({ [NodeAnnotation.bootstrappedBootId]: BOOT });
  });
});

describe('decideNode: registration conflicts (annotation ignored, SystemExtension in force)', () => {
  const conflict = {
    name: 'gpu',
    message:
      'Annotation extensions.nodecare.io/gpu is ignored: SystemExtension gpu is in force and does not allow annotation overrides.',
  };
  const decide = (conflicts: (typeof conflict)[], previous: NodeMemory | undefined): NodeDecision =>
    decideNode(
      input({
        now: NOW,
        node: ready,
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: {} }),
        conflicts,
        previous,
      }),
    );

  it('a new conflict → one Warning RegistrationConflict event with its message', () => {
    const d = decide([conflict], memory({ gpu: ExtensionState.Healthy }));
    expect(d.events).toEqual([
      { type: 'Warning', reason: EventReason.RegistrationConflict, message: conflict.message },
    ]);
  });

  it('the same conflict on the next reconcile → no event; gone and back → one event again', () => {
    const first = decide([conflict], memory({ gpu: ExtensionState.Healthy }));
    const again = decide([conflict], first.memory);
    const gone = decide([], again.memory);
    const back = decide([conflict], gone.memory);
    expect([first, again, gone, back].map((d) => d.events.map((e) => e.reason))).toEqual([
      [EventReason.RegistrationConflict],
      [],
      [],
      [EventReason.RegistrationConflict],
    ]);
  });

  it('one event per conflicting extension', () => {
    const csi = { name: 'csi', message: 'Annotation extensions.nodecare.io/csi is ignored.' };
    const d = decide([conflict, csi], memory({ gpu: ExtensionState.Healthy }));
    expect(d.events.map((e) => [e.reason, e.message])).toEqual([
      [EventReason.RegistrationConflict, csi.message],
      [EventReason.RegistrationConflict, conflict.message],
    ]);
  });

  it('a conflict changes neither taints nor condition (the SystemExtension stays in force)', () => {
    const withConflict = decide([conflict], memory({ gpu: ExtensionState.Healthy }));
    const without = decide([], memory({ gpu: ExtensionState.Healthy }));
    expect({ ...withConflict, events: [], memory: undefined }).toEqual({
      ...without,
      events: [],
      memory: undefined,
    });
  });
});
