// Builders for the decision core's tests: plain data with defaults, overridden per case.

import { DEFAULT_POLICY, type ExtensionPolicy } from '../../api/extension.ts';
import { extensionLeaseName, agentLeaseName, type ObservedLease } from '../../api/lease.ts';
import { ExtensionState, LeaseRole, NodeAnnotation } from '../../api/names.ts';
import { ProbeReason } from '../../api/reasons.ts';
import type {
  DecisionInput,
  DecisionPolicy,
  EffectiveState,
  NodeDecision,
  NodeMemory,
  ObservedNode,
  RequiredExtension,
  SeenLease,
} from './types.ts';
import { DECISION_DEFAULTS } from './types.ts';

export const T0 = Date.UTC(2026, 0, 1);
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const NODE = 'node-a';
export const BOOT = 'boot-1';
export const LEASE_SECONDS = 40;

export const POLICY: DecisionPolicy = { ...DECISION_DEFAULTS, trippedExtensions: new Set() };

export function node(overrides: Partial<ObservedNode> = {}): ObservedNode {
  return {
    name: NODE,
    uid: 'uid-a',
    creationTimestampMs: T0,
    bootId: BOOT,
    labels: {},
    annotations: {},
    taints: [],
    ...overrides,
  };
}

/** A node that completed bootstrap for `bootId` long ago. */
export function bootstrappedNode(overrides: Partial<ObservedNode> = {}, bootId = BOOT): ObservedNode {
  return node({
    creationTimestampMs: T0 - 24 * 60 * MINUTE,
    annotations: { [NodeAnnotation.bootstrappedBootId]: bootId },
    ...overrides,
  });
}

export function taint(key: string): { key: string; effect: string } {
  return { key, effect: 'NoSchedule' };
}
export const BOOTSTRAP_TAINT = taint(POLICY.bootstrapTaintKey);
export const RUNTIME_TAINT = taint(POLICY.runtimeTaintKey);

export function ext(
  name: string,
  policy: Partial<ExtensionPolicy> = {},
  invalid?: readonly string[],
): RequiredExtension {
  return {
    name,
    policy: { ...DEFAULT_POLICY, ...policy },
    valid: invalid === undefined,
    ...(invalid ? { problems: invalid } : {}),
  };
}

export function lease(extension: string | undefined, overrides: Partial<ObservedLease> = {}): ObservedLease {
  return {
    name: extension ? extensionLeaseName(NODE, extension) : agentLeaseName(NODE),
    resourceVersion: '1',
    node: NODE,
    role: extension ? LeaseRole.extension : LeaseRole.agent,
    extension,
    state: extension ? ExtensionState.Healthy : undefined,
    reason: extension ? ProbeReason.ProbeSucceeded : '',
    message: '',
    since: '',
    bootId: BOOT,
    holderIdentity: 'agent-pod',
    leaseDurationSeconds: LEASE_SECONDS,
    renewTime: '2026-01-01T00:00:00.000000Z',
    ...overrides,
  };
}

export function seen(l: ObservedLease, observedAtMs: number): SeenLease {
  return { lease: l, observedAtMs };
}

/** Extension leases by name, all observed at `observedAtMs`. */
export function leases(
  observedAtMs: number,
  byName: Record<string, Partial<ObservedLease>>,
): Map<string, SeenLease> {
  return new Map(Object.entries(byName).map(([name, o]) => [name, seen(lease(name, o), observedAtMs)]));
}

export function agent(observedAtMs: number, overrides: Partial<ObservedLease> = {}): SeenLease {
  return seen(lease(undefined, overrides), observedAtMs);
}

/** A decision input; the monotonic clock reads as the wall clock unless `monotonicNow` is given (a step). */
export function input(overrides: Partial<DecisionInput> & Pick<DecisionInput, 'now'>): DecisionInput {
  return {
    node: node(),
    required: [],
    leases: new Map(),
    agent: undefined,
    conflicts: [],
    previous: undefined,
    policy: POLICY,
    ...overrides,
    monotonicNow: overrides.monotonicNow ?? overrides.now,
  };
}

/**
 * Memory of a controller that has watched this boot for an hour, with these last extension states (a bare
 * state means an empty reason and message).
 */
export function memory(
  states: Record<string, ExtensionState | EffectiveState>,
  overrides: Partial<NodeMemory> = {},
): NodeMemory {
  const longAgo = T0 - 60 * MINUTE;
  return {
    bootId: BOOT,
    bootSeenMs: longAgo,
    bootstrapStartedMs: undefined,
    timeoutReported: false,
    requiredSinceMs: new Map(Object.keys(states).map((name) => [name, longAgo])),
    extensionStates: new Map(
      Object.entries(states).map(([name, s]) => [
        name,
        typeof s === 'string' ? { state: s, reason: '', message: '' } : s,
      ]),
    ),
    conflicts: new Set(),
    notReadyReported: false,
    ...overrides,
  };
}

/** The node as it is after the reconciler wrote the decision successfully. */
export function applied(n: ObservedNode, d: NodeDecision, policy: DecisionPolicy = POLICY): ObservedNode {
  const ours = new Set([policy.bootstrapTaintKey, policy.runtimeTaintKey]);
  const taints = n.taints.filter((t) => !ours.has(t.key));
  if (d.desiredTaints.bootstrap) taints.push(taint(policy.bootstrapTaintKey));
  if (d.desiredTaints.runtime) taints.push(taint(policy.runtimeTaintKey));
  const annotations = { ...n.annotations };
  if (d.desiredAnnotations.bootstrappedBootId !== undefined) {
    annotations[NodeAnnotation.bootstrappedBootId] = d.desiredAnnotations.bootstrappedBootId;
  }
  const marker = d.desiredAnnotations.maintenance;
  if (marker === null) delete annotations[NodeAnnotation.maintenance];
  else if (marker !== undefined) annotations[NodeAnnotation.maintenance] = marker;
  const { status, reason, message } = d.condition;
  return { ...n, taints, annotations, extensionsReadyCondition: { status, reason, message } };
}
