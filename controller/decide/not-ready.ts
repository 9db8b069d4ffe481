// The NotReady overlay: while the kubelet's own Ready condition is not True, the decision in service is
// replaced by the NOT_READY table's, built from the same facts (facts.ts), as maintenance and a suspension
// overlay theirs (maintenance.ts, suspend.ts).

import { ConditionReason, EventReason } from '../../api/reasons.ts';
import { notReadyCondition, notTrusted } from './condition.ts';
import { notReadyEventMessage, taintEvents } from './events.ts';
import type { NodeFacts } from './facts.ts';
import { NodeState } from './node-state.ts';
import { labelFor } from './node-status.ts';
import type { NodeDecision } from './types.ts';

/*
 * The NOT_READY table: the decision while the kubelet's own `Ready` condition exists and is not True (Unknown:
 * the node lifecycle controller says the kubelet stopped posting status; False: the kubelet says it is not
 * ready). Kubernetes says the node is not Ready, so nodecare neither trusts its extension results nor acts on
 * them. A node without a Ready condition (a plain Node object) is decided as before. Decided here, once:
 *
 * | would otherwise be           | state    | bootstrap taint                        | runtime taint       | bootstrapped marker |
 * | ---------------------------- | -------- | -------------------------------------- | ------------------- | ------------------- |
 * | Bootstrapping                | NotReady | kept; added as the bootstrap rule adds | not added           | not written         |
 * | BootstrapTimeout             | NotReady | kept                                   | not added           | not written         |
 * | Ready                        | NotReady | not added                              | not added           | left as it is       |
 * | Degraded                     | NotReady | —                                      | kept (not removed)  | left as it is       |
 *
 * In every row:
 * - ExtensionsReady Unknown / NodeNotReady, "The kubelet reports Ready=<status> since <lastTransitionTime>
 *   (<reason>: <message>); extension results are not trusted until the node is Ready again."; label `unknown`
 *   (labelFor, the one mapping); every extension Unknown / NodeNotReady (neither a fault nor health).
 * - No taint because of it (the node lifecycle controller's not-ready/unreachable taints keep pods off; ours
 *   would only flap on recovery) and none removed (a held node stays held: bootstrap never completes while
 *   NotReady). The bootstrap taint a bootstrapping node needs anyway is still added: it is the bootstrap rule,
 *   and a node must never become schedulable early when its kubelet turns Ready.
 * - Breaker: the node does not count (it counts only Ready and Degraded nodes). Eviction: none (only Degraded
 *   nodes are evicted; a NotReady node counts as unhealthy for a zone's disruption).
 * - Events: one Warning NodeNotReady per transition into NotReady (memory, or the condition already on the
 *   node after a leader change); no extension or BootstrapTimeout events while in it. Memory keeps the last
 *   reported extension states and the bootstrap start, so the first decision with Ready True is the one
 *   nodecare would have made anyway and reports only what changed, once.
 */

/** The NOT_READY table's decision while the kubelet is not Ready; `decided` (in service) otherwise. */
export function withNotReady(decided: NodeDecision, facts: NodeFacts): NodeDecision {
  const { input, tainted, bootstrapPending, sameBoot } = facts;
  const { node, policy, previous } = input;
  const kubelet = node.kubeletNotReady;
  if (kubelet === undefined) return decided;
  // Nothing nodecare judged is trusted or acted on.
  const desiredTaints = { bootstrap: tainted.bootstrap || facts.bootstrapTaint, runtime: tainted.runtime };
  const condition = notReadyCondition(kubelet);
  const events = taintEvents({
    ...{ policy, bootstrapPending, desiredTaints, judged: facts.judged, record: undefined },
    bootstrapTainted: tainted.bootstrap,
    runtimeTainted: tainted.runtime,
  });
  if (!previous?.notReadyReported && node.extensionsReadyCondition?.reason !== ConditionReason.NodeNotReady) {
    events.push({
      type: 'Warning',
      reason: EventReason.NodeNotReady,
      message: notReadyEventMessage(kubelet),
    });
  }
  events.push(...facts.conflictEvents);
  return {
    state: NodeState.NotReady,
    desiredTaints,
    condition,
    label: labelFor(condition.reason),
    // Bootstrap never completes while the kubelet is not Ready: the marker is left as it is.
    desiredAnnotations: {},
    events,
    // Nothing changes by time alone: the node changes when the kubelet's Ready does.
    nextDeadlineMs: undefined,
    deadlines: { leases: [], fixedMs: undefined },
    staleLeases: [],
    extensions: decided.extensions.map((v) => ({ ...v, ...notTrusted(kubelet, v) })),
    kubeletNotReady: kubelet,
    memory: {
      bootId: node.bootId,
      bootSeenMs: facts.bootSeenMs,
      bootstrapStartedMs: bootstrapPending ? facts.bootstrapStartedMs : undefined,
      timeoutReported: sameBoot?.timeoutReported === true,
      requiredSinceMs: facts.requiredSinceMs,
      // Frozen at what was last reported (nothing, on first sight): on recovery, events report what
      // changed since then, once, and a failure that began meanwhile is never lost.
      extensionStates: previous?.extensionStates ?? new Map(),
      conflicts: facts.conflictNames,
      notReadyReported: true,
      agentReportedMs: facts.agentReportedMs,
      ...(previous?.labelWaitsEnded ? { labelWaitsEnded: previous.labelWaitsEnded } : {}),
    },
  };
}
