// Reads what `kubectl nodecare status|explain|extensions` need from the API server, read-only: Nodes, the
// nodecare Leases, SystemExtensions, ClusterHealth `cluster`, and (for explain) the node's events and the
// DaemonSets and pods that may be meant for it. Lists are paged. A missing CRD or namespace reads as empty (nodecare not installed yet), and says so.
// The Leases, which every node's agent writes, are read so that no Lease can make the plugin hold more than a
// constant of it (issue 50 item 2): in protobuf, a Lease over 64 KiB skipped unread (lib/kube/protobuf.ts),
// pages bounded in bytes as the controller's are (lib/kube/reflector.ts), and each Lease kept compact
// (api/lease.ts compactLease).

import {
  API_GROUP,
  API_VERSION,
  CLUSTER_HEALTH,
  LEASE_NAMESPACE,
  SYSTEM_EXTENSION,
  compactLease,
  type LeaseObject,
  type SystemExtensionObject,
} from '../api/index.ts';
import type { DaemonSetObject, PodObject } from '../api/scheduling.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import { decodeLeaseList } from '../lib/kube/protobuf.ts';
import { LIST_PAGE_SIZE, listAll, nextPageLimit, type ListBody } from '../lib/kube/list.ts';
import type { ClusterHealthObject, ClusterSnapshot, EventObject, NodeObject } from './model.ts';

export type Client = Pick<KubeClient, 'request'>;

/** The most bytes of one page of Leases read (the controller's bound, controller/cache/cluster-cache.ts). */
export const LEASE_PAGE_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Every Lease of `path`, compact, and the keys of those that could not be read (over 64 KiB in protobuf, or
 * not readable): pages of at most LEASE_PAGE_MAX_BYTES, a page over it asked for again with a quarter of the
 * items, each next one with as many as fit a quarter of it at the bytes per item seen (up to LIST_PAGE_SIZE).
 */
export async function listLeases(
  client: Client,
  path: string,
  query: Record<string, string> = {},
): Promise<{ leases: LeaseObject[]; skipped: string[] }> {
  const leases: LeaseObject[] = [];
  const skipped: string[] = [];
  let token: string | undefined;
  let limit = LIST_PAGE_SIZE;
  for (;;) {
    let bytes = 0;
    let page: ListBody<LeaseObject>;
    try {
      page = await client.request<ListBody<LeaseObject>>('GET', path, {
        query: { ...query, limit, continue: token },
        protobuf: decodeLeaseList,
        withoutManagedFields: true,
        maxBodyBytes: LEASE_PAGE_MAX_BYTES,
        peek: (body) => (bytes = body.length),
      });
    } catch (err) {
      if (!isKubeError(err, KubeErrorCode.TooLarge) || limit === 1) throw err;
      limit = Math.max(1, Math.floor(limit / 4));
      continue;
    }
    for (const { key } of page.skipped ?? []) skipped.push(key);
    for (const lease of page.items ?? []) leases.push(compactLease(lease));
    token = page.metadata?.continue || undefined;
    if (token === undefined) return { leases, skipped };
    limit = nextPageLimit(limit, bytes, LEASE_PAGE_MAX_BYTES, LIST_PAGE_SIZE);
  }
}

/** At most this many names of unreadable Leases in the note that says they were left out. */
const MAX_NAMED_SKIPPED = 5;

const notFound = (err: unknown): boolean => isKubeError(err, KubeErrorCode.NotFound);

export interface SnapshotNotes {
  /** Things that are missing (CRDs not installed, no ClusterHealth yet), for a hint under the output. */
  missing: string[];
}

/** Every SystemExtension; none (and a note in `missing`) when the CRD is not installed. */
export function readSystemExtensions(client: Client, missing: string[]): Promise<SystemExtensionObject[]> {
  return listAll<SystemExtensionObject>(
    client,
    `/apis/${API_GROUP}/${API_VERSION}/${SYSTEM_EXTENSION.plural}`,
  ).catch((err) => {
    if (!notFound(err)) throw err;
    missing.push(`the ${SYSTEM_EXTENSION.plural}.${API_GROUP} CRD is not installed`);
    return [];
  });
}

/** ClusterHealth `cluster`; undefined (and a note in `missing`) when it does not exist. */
export function readClusterHealth(
  client: Client,
  missing: string[],
): Promise<ClusterHealthObject | undefined> {
  return client
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
    });
}

/** The note that says which Leases could not be read and are left out. */
export function skippedNote(skipped: readonly string[]): string {
  return (
    `${skipped.length} Lease${skipped.length === 1 ? '' : 's'} could not be read and ${skipped.length === 1 ? 'is' : 'are'} left out (` +
    `${skipped.slice(0, MAX_NAMED_SKIPPED).join(', ')}${skipped.length > MAX_NAMED_SKIPPED ? ', …' : ''})`
  );
}

export async function readSnapshot(
  client: Client,
  leaseNamespace: string = LEASE_NAMESPACE,
): Promise<{ snapshot: ClusterSnapshot; notes: SnapshotNotes }> {
  const missing: string[] = [];
  const [nodes, { leases, skipped }, systemExtensions, clusterHealth] = await Promise.all([
    listAll<NodeObject>(client, '/api/v1/nodes'),
    listLeases(client, leasesPath(leaseNamespace)),
    readSystemExtensions(client, missing),
    readClusterHealth(client, missing),
  ]);
  if (skipped.length > 0) missing.push(skippedNote(skipped));
  return { snapshot: { nodes, leases, systemExtensions, clusterHealth }, notes: { missing } };
}

/** Events regarding the node (the controller records them in `default`, as the kubelet does), oldest first. */
export async function readNodeEvents(client: Client, node: string): Promise<EventObject[]> {
  const events = await listAll<EventObject>(client, '/api/v1/namespaces/default/events', {
    query: { fieldSelector: `involvedObject.kind=Node,involvedObject.name=${node}` },
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
    listAll<PodObject>(client, '/api/v1/pods', { query: { fieldSelector: `spec.nodeName=${node}` } }),
    listAll<PodObject>(client, '/api/v1/pods', {
      query: { fieldSelector: 'spec.nodeName=,status.phase=Pending' },
    }),
  ]);
  return { daemonSets, pods: [...onNode, ...unscheduled] };
}
