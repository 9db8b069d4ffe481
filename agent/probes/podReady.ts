// podReady probe (docs/design.md section 3): at least `min` pods on this node matching namespace + selector are Ready, e.g.
// an extension's DaemonSet pod. Reads the agent's pod cache through the environment port.

import { ProbeReason } from '../../api/reasons.ts';
import { healthy, unhealthy } from './result.ts';
import type { Probe } from './types.ts';

export const podReadyProbe: Probe<'podReady'> = async (spec, ctx) => {
  const pods = await ctx.env.pods(spec.namespace, spec.selector);
  const ready = pods.filter((pod) => pod.ready).length;
  const summary = `${ready} of ${pods.length} matching pods in ${spec.namespace} Ready`;
  return ready >= spec.min
    ? healthy(summary)
    : unhealthy(ProbeReason.TooFewPodsReady, `${summary}, want at least ${spec.min}`);
};
