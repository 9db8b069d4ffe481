// devicePlugin probe (docs/design.md section 3): at least `minHealthy` of the plugin's devices are Healthy as
// the kubelet sees them. The kubelet is the plugin's one client: it holds the one ListAndWatch stream and
// counts the Healthy devices it hears of as the node's allocatable, all of them as its capacity. So this probe
// reads the agent's watched Node and asks the plugin nothing, except, when `socket` is set, the unary
// GetDevicePluginOptions, which no plugin keeps state for. It never opens ListAndWatch: upstream plugins
// (Kubernetes' own stub, NVIDIA's) loop over one shared update channel without watching the stream's
// context, so every cancelled stream leaves a handler that takes later health updates from the kubelet.

import { parseQuantity } from '../../api/quantity.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { capInput, quoteInput } from '../../api/text.ts';
import { callUnary } from './grpc-call.ts';
import { method, PROTO_FILES } from './proto.ts';
import { healthy, unhealthy, unknown } from './result.ts';
import type { Probe } from './types.ts';

export const devicePluginProbe: Probe<'devicePlugin'> = async (spec, ctx) => {
  if (spec.socket !== undefined) {
    const options = method(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin', 'GetDevicePluginOptions');
    const answer = await callUnary(
      { address: `unix://${spec.socket}`, confineTo: spec.confineTo },
      options,
      {},
      ctx,
    );
    if (!answer.ok) return answer.result;
  }
  const node = ctx.env.node();
  if (!node) return unknown(ProbeReason.NodeNotObserved, 'node not observed yet');
  const resource = capInput(spec.resource);
  const rawHealthy = node.allocatable[spec.resource];
  const rawAll = node.capacity[spec.resource];
  if (rawHealthy === undefined && rawAll === undefined) {
    return unhealthy(
      ProbeReason.ResourceMissing,
      `the kubelet lists no ${resource} devices (not registered)`,
    );
  }
  const healthyCount = rawHealthy === undefined ? 0 : parseQuantity(rawHealthy);
  const allCount = rawAll === undefined ? healthyCount : parseQuantity(rawAll);
  if (healthyCount === undefined || allCount === undefined) {
    const odd = healthyCount === undefined ? rawHealthy : rawAll;
    return unknown(ProbeReason.ProbeError, `${resource} count ${quoteInput(odd ?? '')} is not a quantity`);
  }
  const summary = `${healthyCount} of ${allCount} ${resource} devices Healthy (kubelet)`;
  return healthyCount >= spec.minHealthy
    ? healthy(summary)
    : unhealthy(ProbeReason.TooFewDevices, `${summary}, want at least ${spec.minHealthy}`);
};
