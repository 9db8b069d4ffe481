// Reads what `kubectl nodecare status|explain|extensions` need from the API server, read-only: Nodes, the
// nodecare Leases, SystemExtensions, ClusterHealth `cluster`, and (for explain) the node's events and the
// DaemonSets and pods that may be meant for it. Lists are paged. A missing CRD or namespace reads as empty (nodecare not installed yet), and says so.

import {
  API_GROUP,
  API_VERSION,
  CLUSTER_HEALTH,
  LEASE_NAMESPACE,
  SYSTEM_EXTENSION,
  type LeaseObject,
  type SystemExtensionObject,
} from '../api/index.ts';
import type { DaemonSetObject, PodObject } from '../api/scheduling.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import type { ClusterHealthObject, ClusterSnapshot, EventObject, NodeObject } from './model.ts';

const PAGE = 500;

type Client = Pick<KubeClient, 'request'>;

interface List<T> {
  items?: T[];
  metadata?: { continue?: string };
}

async function listAll<T>(client: Client, path: string, query: Record<string, string> = {}): Promise<T[]> {
  const items: T[] = [];
  let token: string | undefined;
  do {
    const page = await client.request<List<T>>('GET', path, {
      query: { ...query, limit: PAGE, continue: token },
    });
    items.push(...(page.items ?? []));
    token = page.metadata?.continue || undefined;
  } while (token);
  return items;
}

const notFound = (err: unknown): boolean => isKubeError(err, KubeErrorCode.NotFound);

export interface SnapshotNotes {
  /** Things that are missing (CRDs not installed, no ClusterHealth yet), for a hint under the output. */
  missing: string[];
}

export async function readSnapshot(
  client: Client,
  leaseNamespace: string = LEASE_NAMESPACE,
): Promise<{ snapshot: ClusterSnapshot; notes: SnapshotNotes }> {
  const missing: string[] = [];
  const [nodes, leases, systemExtensions, clusterHealth] = await Promise.all([
    listAll<NodeObject>(client, '/api/v1/nodes'),
    listAll<LeaseObject>(client, leasesPath(leaseNamespace)),
    listAll<SystemExtensionObject>(
      client,
      `/apis/${API_GROUP}/${API_VERSION}/${SYSTEM_EXTENSION.plural}`,
    ).catch((err) => {
      if (!notFound(err)) throw err;
      missing.push(`the ${SYSTEM_EXTENSION.plural}.${API_GROUP} CRD is not installed`);
      return [];
    }),
    client
      .request<ClusterHealthObject>(
        'GET',
        `/apis/${API_GROUP}/${API_VERSION}/${CLUSTER_HEALTH.plural}/${CLUSTER_HEALTH.name}`,
      )
      .catch((err) => {
        if (!notFound(err)) throw err;
        missing.push(
          `ClusterHealth ${CLUSTER_HEALTH.name} does not exist (the nodecare controller writes it once it leads)`,
        );
        return undefined;
      }),
  ]);
  return { snapshot: { nodes, leases, systemExtensions, clusterHealth }, notes: { missing } };
}

/** Events regarding the node (the controller records them in `default`, as the kubelet does), oldest first. */
export async function readNodeEvents(client: Client, node: string): Promise<EventObject[]> {
  const events = await listAll<EventObject>(client, '/api/v1/namespaces/default/events', {
    fieldSelector: `involvedObject.kind=Node,involvedObject.name=${node}`,
  });
  return events;
}

/** What could be kept off a node: every DaemonSet, and the pods on the node or not yet on any node. */
export interface NodeWorkloads {
  daemonSets: DaemonSetObject[];
  pods: PodObject[];
}

/**
 * The DaemonSets of every namespace, the pods on `node` and the unscheduled Pending pods (a DaemonSet's
 * pod for the node is one or the other). Three paged lists; explain reads them only for a node that
 * carries a nodecare taint.
 */
export async function readNodeWorkloads(client: Client, node: string): Promise<NodeWorkloads> {
  const [daemonSets, onNode, unscheduled] = await Promise.all([
    listAll<DaemonSetObject>(client, '/apis/apps/v1/daemonsets'),
    listAll<PodObject>(client, '/api/v1/pods', { fieldSelector: `spec.nodeName=${node}` }),
    listAll<PodObject>(client, '/api/v1/pods', { fieldSelector: 'spec.nodeName=,status.phase=Pending' }),
  ]);
  return { daemonSets, pods: [...onNode, ...unscheduled] };
}
