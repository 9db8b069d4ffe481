// The controller's decision for one node (docs/design.md section 5, docs/conventions.md 1): a pure function of the node, its
// leases, the policy, the controller's memory and `now` (wall) with `monotonicNow` (docs/adr/0020). No I/O, no clock, no logger.
// Built in named phases: the facts (facts.ts: the boot, the judgement, the standing, the conflicts), the decision in
// service (in-service.ts), then the overlays, each over the one before: NotReady (not-ready.ts), maintenance
// (maintenance.ts), a release override (override.ts) and a suspension (suspend.ts).

import { nodeFacts } from './facts.ts';
import { inService } from './in-service.ts';
import { inMaintenance, outOfMaintenance } from './maintenance.ts';
import { withNotReady } from './not-ready.ts';
import { withRelease } from './override.ts';
import { suspended } from './suspend.ts';
import type { DecisionInput, NodeDecision } from './types.ts';

export { hasTaint, OWN_TAINT_EFFECT } from './taints.ts';

/**
 * The decision for one node: the one it gets in service (the NOT_READY table applied while the kubelet is not
 * Ready), or the MAINTENANCE table's (maintenance.ts) derived from it while the node is in maintenance; its
 * taint changes held while a suspension's scope holds the node (suspend.ts).
 */
export function decideNode(input: DecisionInput): NodeDecision {
  const facts = nodeFacts(input);
  const { tainted } = facts;
  const decided = withRelease(
    withMaintenance(withNotReady(inService(facts), facts), input, tainted),
    input,
    tainted,
  );
  const by = input.suspendedBy ?? [];
  return by.length > 0 ? suspended(decided, input, by, tainted) : decided;
}

/** The MAINTENANCE table's decision while the node is maintained; `decided` otherwise (maintenance.ts). */
function withMaintenance(
  decided: NodeDecision,
  input: DecisionInput,
  tainted: NodeDecision['desiredTaints'],
): NodeDecision {
  const { node } = input;
  const planned = node.maintenancePlanned ? { maintenancePlanned: node.maintenancePlanned } : {};
  if (node.maintenance === undefined) return { ...outOfMaintenance(decided, input), ...planned };
  return { ...inMaintenance(decided, input, node.maintenance, tainted), ...planned };
}
