// devicePlugin probe (docs/design.md section 3): the first ListAndWatch response on the plugin's socket lists at least
// `minHealthy` devices with health "Healthy". The stream is cancelled after that first response.

import { ProbeReason } from '../../api/reasons.ts';
import { firstStreamMessage } from './grpc-call.ts';
import { method, PROTO_FILES } from './proto.ts';
import { healthy, unhealthy } from './result.ts';
import type { Probe } from './types.ts';

interface ListAndWatchResponse {
  devices?: Array<{ ID?: string; health?: string }>;
}

export const devicePluginProbe: Probe<'devicePlugin'> = async (spec, ctx) => {
  const listAndWatch = method(PROTO_FILES.devicePlugin, 'v1beta1.DevicePlugin', 'ListAndWatch');
  const answer = await firstStreamMessage(
    { address: `unix://${spec.socket}`, confineTo: spec.confineTo },
    listAndWatch,
    {},
    ctx,
  );
  if (!answer.ok) return answer.result;
  if (answer.value === undefined) {
    return unhealthy(ProbeReason.TooFewDevices, 'ListAndWatch ended without listing devices');
  }
  const devices = (answer.value as ListAndWatchResponse).devices ?? [];
  const healthyCount = devices.filter((device) => device.health === 'Healthy').length;
  const summary = `${healthyCount} of ${devices.length} devices Healthy`;
  return healthyCount >= spec.minHealthy
    ? healthy(summary)
    : unhealthy(ProbeReason.TooFewDevices, `${summary}, want at least ${spec.minHealthy}`);
};
