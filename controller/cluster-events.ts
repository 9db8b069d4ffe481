// Events about the cluster as a whole (a correlated failure is the extension's rollout, not any one node's
// fault), recorded regarding the cluster roll-up object: the cluster-scoped ClusterHealth `cluster`
// (docs/design.md section 6). An event may regard an object that does not exist yet, so this works before the roll-up
// is first written. Like node events they go to namespace `default`, where the API server accepts events
// about cluster-scoped objects.

import { CLUSTER_HEALTH, GROUP_VERSION } from '../api/index.ts';
import type { NodeEvent } from './decide/index.ts';
import { eventWriter, type Fence, type NodeApi } from './writes.ts';

export const CLUSTER_EVENT_REGARDING = {
  apiVersion: GROUP_VERSION,
  kind: CLUSTER_HEALTH.kind,
  name: CLUSTER_HEALTH.name,
} as const;

export interface ClusterEventRecorder {
  clusterEvent(event: NodeEvent): Promise<void>;
}

export function clusterEventRecorder(
  api: Pick<NodeApi, 'createEvent' | 'patchEvent'>,
  reportingInstance: string,
  clock: { now(): number },
  fence: Fence,
): ClusterEventRecorder {
  const write = eventWriter(api, reportingInstance, clock, fence);
  return { clusterEvent: (event) => write(CLUSTER_EVENT_REGARDING, event) };
}
