// nodeResource probe (docs/design.md section 3): the node's status.allocatable[resource] is at least `min`, e.g. a device
// plugin's resource registered with the kubelet. Reads the agent's watched Node, never the API server.

import { parseQuantity } from '../../api/quantity.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { healthy, unhealthy, unknown } from './result.ts';
import type { Probe } from './types.ts';
import { capInput, quoteInput } from '../../api/text.ts';

export const nodeResourceProbe: Probe<'nodeResource'> = async (spec, ctx) => {
  const node = ctx.env.node();
  if (!node) return unknown(ProbeReason.NodeNotObserved, 'node not observed yet');
  const raw = node.allocatable[spec.resource];
  if (raw === undefined)
    return unhealthy(ProbeReason.ResourceMissing, `${capInput(spec.resource)} not allocatable`);
  const amount = parseQuantity(raw);
  if (amount === undefined) {
    return unknown(
      ProbeReason.ProbeError,
      `${capInput(spec.resource)} allocatable ${quoteInput(raw)} is not a quantity`,
    );
  }
  const summary = `${capInput(spec.resource)} allocatable ${capInput(raw)}`;
  return amount >= spec.min
    ? healthy(summary)
    : unhealthy(ProbeReason.ResourceMissing, `${summary}, want at least ${spec.min}`);
};
