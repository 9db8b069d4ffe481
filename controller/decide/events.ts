// The events of a node's decision, once per transition: the taints it adds and removes (the bootstrap record
// on a completed bootstrap), an extension that starts failing or whose registration turns invalid, the agent
// gone quiet, the kubelet not Ready. Pure, like the decision that calls them.

import { Enforcement } from '../../api/extension.ts';
import { ExtensionState } from '../../api/names.ts';
import { ControllerReason, EventReason } from '../../api/reasons.ts';
import {
  BOOTSTRAP_RECORD_ANNOTATION,
  encodeBootstrapRecord,
  type BootstrapRecord,
} from './bootstrap-record.ts';
import {
  describeExtension,
  describeKubelet,
  describeNotHealthy,
  isFault,
  isIndeterminate,
  joinCapped,
} from './condition.ts';
import { AGENT_MESSAGES, type AgentStatus } from './extension-state.ts';
import type {
  DecisionPolicy,
  EffectiveState,
  ExtensionVerdict,
  KubeletNotReady,
  NodeDecision,
  NodeEvent,
  RequiredExtension,
} from './types.ts';

/** One required extension as the decision judged it. */
export interface Judged {
  extension: RequiredExtension;
  verdict: ExtensionVerdict;
  /** Critical and enforced: holds bootstrap (the breaker does not apply to bootstrap). */
  holdsBootstrap: boolean;
  staleLease: string | undefined;
  deadlineMs: number | undefined;
  /** The Lease whose expiry is among deadlineMs's candidates (a renewal moves it). */
  expiringLease: string | undefined;
  /** The earliest of deadlineMs's candidates no renewal moves (a grace end, a rollout window's end). */
  fixedDeadlineMs: number | undefined;
}

/** `The kubelet reports Ready=Unknown since … (NodeStatusUnknown: …); nodecare holds …` */
export function notReadyEventMessage(k: KubeletNotReady): string {
  return `The kubelet reports ${describeKubelet(k)}. Extension results are not trusted until the node is Ready again; nodecare adds and removes no runtime taint and keeps a bootstrapping node held meanwhile.`;
}

/**
 * Events for each nodecare taint the decision adds or removes, compared with the node as observed. The
 * BootstrapTaintRemoved of a completed bootstrap carries `record` (what the node waited for).
 */
export function taintEvents(d: {
  policy: DecisionPolicy;
  bootstrapPending: boolean;
  bootstrapTainted: boolean;
  runtimeTainted: boolean;
  desiredTaints: NodeDecision['desiredTaints'];
  judged: readonly Judged[];
  record: BootstrapRecord | undefined;
}): NodeEvent[] {
  const { bootstrapTaintKey, runtimeTaintKey, trippedExtensions } = d.policy;
  const events: NodeEvent[] = [];
  if (!d.bootstrapTainted && d.desiredTaints.bootstrap) {
    events.push({
      type: 'Normal',
      reason: EventReason.BootstrapTaintAdded,
      message: `Added taint ${bootstrapTaintKey}: the node is bootstrapping until the agent has reported and every critical extension is Healthy.`,
    });
  }
  if (d.bootstrapTainted && !d.desiredTaints.bootstrap) {
    const why = d.bootstrapPending
      ? 'the agent has reported and every critical extension is Healthy.'
      : 'the node already completed bootstrap on this boot.';
    events.push({
      type: 'Normal',
      reason: EventReason.BootstrapTaintRemoved,
      message: `Removed taint ${bootstrapTaintKey}: ${why}`,
      ...(d.bootstrapPending && d.record
        ? { annotations: { [BOOTSTRAP_RECORD_ANNOTATION]: encodeBootstrapRecord(d.record) } }
        : {}),
    });
  }
  if (!d.runtimeTainted && d.desiredTaints.runtime) {
    const failing = d.judged.map((j) => j.verdict).filter((v) => v.blocking && isFault(v));
    events.push({
      type: 'Warning',
      reason: EventReason.RuntimeTaintAdded,
      message: `Added taint ${runtimeTaintKey}: ${describeNotHealthy(failing)}`,
    });
  }
  if (d.runtimeTainted && !d.desiredTaints.runtime) {
    const heldBack = d.judged
      .filter((j) => j.holdsBootstrap && trippedExtensions.has(j.verdict.name) && isFault(j.verdict))
      .map((j) => j.verdict.name);
    const why = d.desiredTaints.bootstrap
      ? 'the node is bootstrapping again; the bootstrap taint holds it.'
      : `every blocking extension is Healthy.${
          heldBack.length > 0
            ? ` The correlated-failure breaker holds back the taint for ${joinCapped(heldBack, 512)}.`
            : ''
        }`;
    events.push({
      type: 'Normal',
      reason: EventReason.RuntimeTaintRemoved,
      message: `Removed taint ${runtimeTaintKey}: ${why}`,
    });
  }
  return events;
}

/** Why a failing extension puts no runtime taint on, if it does not. */
function noTaintNote(j: Judged, tripped: ReadonlySet<string>): string {
  if (isIndeterminate(j.verdict)) {
    return ' Could not be determined: the node keeps its last confirmed state (no taint is set or cleared for it).';
  }
  if (!j.extension.policy.critical) return ' Not critical: no taint.';
  if (j.extension.policy.enforcement === Enforcement.DryRun) return ' Enforcement DryRun: no taint.';
  if (tripped.has(j.verdict.name)) return ' The correlated-failure breaker holds back its taint.';
  return '';
}

function isInvalidRegistration(s: EffectiveState): boolean {
  return s.state === ExtensionState.Unknown && s.reason === ControllerReason.InvalidRegistration;
}

/**
 * The kind of failure worth an ExtensionUnhealthy event, if any (an invalid registration has its own
 * event): a change between a fault and a loss of visibility is announced too, since it changes what the
 * failure does to the node's taint.
 */
function reportedFailure(s: EffectiveState | undefined): 'fault' | 'indeterminate' | undefined {
  if (s === undefined || isInvalidRegistration(s)) return undefined;
  if (isFault(s)) return 'fault';
  return isIndeterminate(s) ? 'indeterminate' : undefined;
}

/**
 * Once per transition: InvalidRegistration when an extension's registration becomes invalid (on the
 * controller's side, or reported so by the agent), ExtensionUnhealthy when it starts failing or its
 * failure changes between a fault and could-not-determine. Extensions
 * that fail because the agent stopped reporting share one event.
 */
export function extensionEvents(
  judged: readonly Judged[],
  before: ReadonlyMap<string, EffectiveState>,
  agent: AgentStatus,
  tripped: ReadonlySet<string>,
): NodeEvent[] {
  const events: NodeEvent[] = [];
  const agentGone: string[] = [];
  for (const j of judged) {
    const v = j.verdict;
    const was = before.get(v.name);
    if (isInvalidRegistration(v)) {
      if (!was || !isInvalidRegistration(was)) {
        events.push({
          type: 'Warning',
          reason: EventReason.InvalidRegistration,
          message: `Extension ${v.name} has an invalid registration: ${v.message}`,
        });
      }
    } else if (reportedFailure(v) !== undefined && reportedFailure(v) !== reportedFailure(was)) {
      if (v.reason === ControllerReason.AgentNotReporting) agentGone.push(v.name);
      else {
        events.push({
          type: 'Warning',
          reason: EventReason.ExtensionUnhealthy,
          message: `Extension ${describeExtension(v.name, v)}${noTaintNote(j, tripped)}`,
        });
      }
    }
  }
  if (agentGone.length > 0 && agent.kind === 'notReporting') {
    events.push({
      type: 'Warning',
      reason: EventReason.ExtensionUnhealthy,
      message: `${AGENT_MESSAGES[agent.cause]} Unknown (${ControllerReason.AgentNotReporting}): ${joinCapped(agentGone)}`,
    });
  }
  return events;
}
