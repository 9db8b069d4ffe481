// The node condition `ExtensionsReady` and the status label (docs/design.md section 5). Messages are deterministic
// (sorted by extension name, no times or ages) so that equal inputs give an equal condition and the
// reconciler never writes it as a heartbeat.

import { truncateMessage } from '../../api/lease.ts';
import { ExtensionState, NODE_CONDITION_TYPE } from '../../api/names.ts';
import { ConditionReason, ControllerReason } from '../../api/reasons.ts';
import { AGENT_MESSAGES, type AgentStatus } from './extension-state.ts';
import { NodeState } from './node-state.ts';
import { conditionStatusFor } from './node-status.ts';
import type { DesiredCondition, EffectiveState, KubeletNotReady, ObservedCondition } from './types.ts';

/** Kubernetes allows 32 KiB; a node condition is read by people, so keep it to about 1 KB. */
export const MAX_CONDITION_MESSAGE = 1024;

/**
 * A confirmed fault (docs/adr/0004): the agent says Unhealthy, or the agent is gone (its heartbeat or the
 * extension's lease expired). Only a fault sets the runtime taint or counts for the breaker. Any other
 * Unknown (the agent could not determine, an invalid registration, no or a malformed lease from a live
 * agent) is a loss of visibility: it neither sets nor clears a fault.
 */
export function isFault(s: Pick<EffectiveState, 'state' | 'reason'>): boolean {
  return (
    s.state === ExtensionState.Unhealthy ||
    (s.state === ExtensionState.Unknown &&
      (s.reason === ControllerReason.LeaseExpired || s.reason === ControllerReason.AgentNotReporting))
  );
}

/** Unknown without being a fault: could not be determined. */
export function isIndeterminate(s: Pick<EffectiveState, 'state' | 'reason'>): boolean {
  return s.state === ExtensionState.Unknown && !isFault(s);
}

/** `gpu-plugin Unhealthy (ProbeTimeout): connect timed out` */
export function describeExtension(name: string, s: EffectiveState): string {
  const reason = s.reason ? ` (${s.reason})` : '';
  const message = s.message ? `: ${truncateMessage(s.message)}` : '';
  return `${name} ${s.state}${reason}${message}`;
}

/**
 * Joins items with "; ", keeping as many whole items as fit in `max` characters together with the
 * "; and N more" suffix the rest need.
 */
export function joinCapped(items: readonly string[], max = MAX_CONDITION_MESSAGE): string {
  const all = items.join('; ');
  if (all.length <= max) return all;
  let kept = '';
  for (let i = 0; i < items.length; i++) {
    const next = kept ? `${kept}; ${items[i]}` : (items[i] as string);
    const suffix = `; and ${items.length - i - 1} more`;
    if (next.length + suffix.length > max) {
      const rest = `and ${items.length - i} more`;
      return kept ? `${kept}; ${rest}` : rest;
    }
    kept = next;
  }
  return kept;
}

/** Every extension that is not Healthy, as "name State (Reason): message", sorted by name. */
function notHealthyItems(extensions: ReadonlyArray<EffectiveState & { name: string }>): string[] {
  return extensions
    .filter((e) => e.state !== ExtensionState.Healthy)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((e) => describeExtension(e.name, e));
}

/** Every extension that is not Healthy, as "name State (Reason): message", sorted by name, joined. */
export function describeNotHealthy(extensions: ReadonlyArray<EffectiveState & { name: string }>): string {
  return joinCapped(notHealthyItems(extensions));
}

/** The status follows the reason (node-status.ts CONDITION_REASONS): they cannot disagree. */
function condition(reason: ConditionReason, message: string): DesiredCondition {
  return { type: NODE_CONDITION_TYPE, status: conditionStatusFor(reason), reason, message };
}

/**
 * In order: BootstrapTimeout (the most actionable), the agent not reporting (nothing else can be known),
 * all Healthy, any fault (False), any other Unknown (Unknown: could not be determined), else Progressing.
 * With no required extension and no label wait the condition follows the agent alone. `labelWaits` are the
 * label waits in force (label-wait.ts describeLabelWait): listed after the extensions, they keep the node
 * Progressing at least. `keptOff` (DaemonSets nodecare's taint keeps off the node) come last, and only
 * when something else is listed: they explain why an extension may never turn Healthy here.
 */
export function buildCondition(input: {
  state: NodeState;
  agent: AgentStatus;
  extensions: ReadonlyArray<EffectiveState & { name: string }>;
  bootstrapTimeoutSeconds: number;
  labelWaits?: readonly string[];
  /** DaemonSets nodecare's taint keeps off the node (NodeInput.keptOff): named after what is not Healthy. */
  keptOff?: readonly string[];
}): DesiredCondition {
  const { state, agent, extensions } = input;
  const waits = input.labelWaits ?? [];
  const items = [...notHealthyItems(extensions), ...waits];
  // Only beside something that holds the node: on their own they neither fail nor hold it.
  const notHealthy = joinCapped(items.length > 0 ? [...items, ...(input.keptOff ?? [])] : items);
  if (state === NodeState.BootstrapTimeout) {
    const waitingFor = notHealthy || (agent.kind === 'reporting' ? '' : agentMessage(agent));
    return condition(
      ConditionReason.BootstrapTimeout,
      `Bootstrap did not complete within ${input.bootstrapTimeoutSeconds}s${waitingFor ? `: ${waitingFor}` : '.'}`,
    );
  }
  if (agent.kind === 'notReporting') {
    return condition(ConditionReason.AgentNotReporting, AGENT_MESSAGES[agent.cause]);
  }
  if (extensions.length === 0 && waits.length > 0 && agent.kind !== 'reporting') {
    return condition(ConditionReason.ExtensionsProgressing, joinCapped([AGENT_MESSAGES.awaiting, ...waits]));
  }
  if (extensions.length === 0 && waits.length === 0) {
    return agent.kind === 'reporting'
      ? condition(ConditionReason.AllExtensionsHealthy, 'No extensions required.')
      : condition(ConditionReason.ExtensionsProgressing, AGENT_MESSAGES.awaiting);
  }
  if (!notHealthy) {
    return condition(ConditionReason.AllExtensionsHealthy, 'All required extensions are Healthy.');
  }
  if (extensions.some(isFault)) {
    return condition(ConditionReason.ExtensionsUnhealthy, notHealthy);
  }
  if (extensions.some(isIndeterminate)) {
    return condition(ConditionReason.ExtensionsUnknown, notHealthy);
  }
  return condition(ConditionReason.ExtensionsProgressing, notHealthy);
}

/**
 * What Kubernetes says about the node, for messages: `Ready=Unknown since 2026-11-24T14:00:00Z
 * (NodeStatusUnknown: Kubelet stopped posting node status.)`. Only the node's fields (no clock), so equal inputs
 * give an equal message.
 */
export function describeKubelet(k: KubeletNotReady): string {
  const why = [k.reason, k.message].filter((part) => part !== '').join(': ');
  return `Ready=${k.status}${k.since ? ` since ${k.since}` : ''}${why ? ` (${why})` : ''}`;
}

/** ExtensionsReady while the kubelet's Ready condition is not True (the NOT_READY table in decide.ts). */
export function notReadyCondition(k: KubeletNotReady): DesiredCondition {
  return condition(
    ConditionReason.NodeNotReady,
    `The kubelet reports ${describeKubelet(k)}; extension results are not trusted until the node is Ready again.`,
  );
}

/** An extension's verdict while the kubelet is not Ready: not trusted, neither a fault nor health. */
export function notTrusted(k: KubeletNotReady, judged: EffectiveState): EffectiveState {
  return {
    state: ExtensionState.Unknown,
    reason: ControllerReason.NodeNotReady,
    message: `Not trusted while the kubelet reports Ready=${k.status}; otherwise judged ${judged.state}${judged.reason ? ` (${judged.reason})` : ''}.`,
  };
}

function agentMessage(agent: Exclude<AgentStatus, { kind: 'reporting' }>): string {
  return agent.kind === 'awaiting' ? AGENT_MESSAGES.awaiting : AGENT_MESSAGES[agent.cause];
}

export function sameCondition(observed: ObservedCondition | undefined, desired: DesiredCondition): boolean {
  return (
    observed !== undefined &&
    observed.status === desired.status &&
    observed.reason === desired.reason &&
    observed.message === desired.message
  );
}
