// What the controller will do next for one node, and when (kubectl nodecare explain's "Next:" lines): the
// controller's decision core stepped through its own deadlines, as its work queue requeues the node, until the
// outcome changes. Pure, like cli/model.ts whose reports it reads.

import { NODE_STATUS_LABEL } from '../api/names.ts';
import {
  decideNode,
  NodeState,
  stateText,
  taintChanges,
  type DecisionInput,
  type DecisionPolicy,
  type NodeDecision,
  type SeenLease,
} from '../controller/decide/index.ts';
import type { NodeReport } from './model.ts';

/** What the controller will do by itself if nothing else changes: the first future decision that differs. */
export interface NextAction {
  atMs: number;
  /** The node's state as shown now and then (stateText: `Degraded (AgentNotReporting)`). */
  from: string;
  to: string;
  /** What the controller writes then, as verb phrases (`add the runtime taint …`, `set ExtensionsReady …`). */
  changes: string[];
  /** The extension verdicts that change with it. */
  because: string[];
  /** What would prevent it. */
  unless: string;
}

/** What the controller writes differently between two decisions (taints, condition, label), as verb phrases. */
function decisionChanges(from: NodeDecision, to: NodeDecision, policy: DecisionPolicy): string[] {
  const changes: string[] = [];
  changes.push(...taintChanges(to.desiredTaints, from.desiredTaints, policy));
  if (from.condition.status !== to.condition.status || from.condition.reason !== to.condition.reason) {
    changes.push(`set ExtensionsReady=${to.condition.status} (${to.condition.reason})`);
  }
  if (from.label !== to.label) changes.push(`label it ${NODE_STATUS_LABEL}=${to.label}`);
  return changes;
}

/** The decision input at `at`, with every Lease renewed just then (the agent keeps reporting what it reports now). */
function renewedAt(input: DecisionInput, at: number): DecisionInput {
  const renew = (s: SeenLease): SeenLease => ({ ...s, observedAtMs: Math.max(s.observedAtMs, at) });
  return {
    ...input,
    leases: new Map([...input.leases].map(([name, s]) => [name, renew(s)])),
    agent: input.agent ? renew(input.agent) : undefined,
    now: at,
    monotonicNow: at,
  };
}

/**
 * Steps the decision core through its own deadlines (nextDeadlineMs), as the controller's work queue requeues
 * the node, until the outcome changes: that is what the controller will do next, and when. `renewed`: the
 * agent keeps renewing its Leases with what they say now (the normal case: grace ends, the bootstrap
 * deadline); `stopped`: nothing is renewed any more (the agent dies now). Undefined when nothing is due.
 */
export function nextAction(
  report: NodeReport,
  mode: 'renewed' | 'stopped' = 'renewed',
  maxSteps = 512,
): NextAction | undefined {
  const first = report.decision;
  let current = first;
  for (let step = 0; step < maxSteps; step++) {
    const at = current.nextDeadlineMs;
    if (at === undefined) return undefined;
    const input =
      mode === 'renewed' ? renewedAt(report.input, at) : { ...report.input, now: at, monotonicNow: at };
    const next = decideNode({ ...input, previous: current.memory });
    const changes = decisionChanges(first, next, report.input.policy);
    const from = stateText(first.state, first.condition.reason);
    const to = stateText(next.state, next.condition.reason);
    if (changes.length > 0 || from !== to) {
      // The extensions that change the same way are one line: `a and b go from Healthy to Unknown (…)`.
      const before = new Map(first.extensions.map((e) => [e.name, e]));
      const byChange = new Map<string, string[]>();
      for (const e of next.extensions) {
        const was = before.get(e.name);
        if (was && was.state === e.state && was.reason === e.reason) continue;
        const change = `${was ? `from ${was.state} to ` : ''}${e.state}${e.reason ? ` (${e.reason})` : ''}`;
        byChange.set(change, [...(byChange.get(change) ?? []), e.name]);
      }
      const because = [...byChange].map(([change, names]) => {
        const who = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
        const verb = change.startsWith('from ')
          ? names.length === 1
            ? 'goes'
            : 'go'
          : names.length === 1
            ? 'is'
            : 'are';
        return `${who} ${verb} ${change}`;
      });
      const timeout = next.state === NodeState.BootstrapTimeout;
      return {
        atMs: at,
        from,
        to,
        changes,
        because,
        unless: timeout
          ? 'unless the agent has reported and every critical extension is Healthy before then'
          : mode === 'stopped'
            ? 'if the agent stops renewing its Leases now'
            : 'unless an agent reports a change before then',
      };
    }
    current = next;
  }
  return undefined;
}
