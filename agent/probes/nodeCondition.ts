// nodeCondition probe (docs/design.md section 3): the node condition `type` has `status`, e.g. one written by
// node-problem-detector. An absent condition does not hold. Reads the agent's watched Node.

import { ProbeReason } from '../../api/reasons.ts';
import { healthy, unhealthy, unknown } from './result.ts';
import type { Probe } from './types.ts';
import { capInput } from '../../api/text.ts';

export const nodeConditionProbe: Probe<'nodeCondition'> = async (spec, ctx) => {
  const node = ctx.env.node();
  if (!node) return unknown(ProbeReason.NodeNotObserved, 'node not observed yet');
  const condition = node.conditions.find((c) => c.type === spec.type);
  if (!condition)
    return unhealthy(ProbeReason.ConditionNotMet, `condition ${capInput(spec.type)} not reported`);
  const observed = `${capInput(spec.type)} is ${capInput(condition.status)}${condition.reason ? ` (${capInput(condition.reason)})` : ''}`;
  return condition.status === spec.status
    ? healthy(observed)
    : unhealthy(ProbeReason.ConditionNotMet, `${observed}, want ${spec.status}`);
};
