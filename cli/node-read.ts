// What `kubectl nodecare explain <node>` reads: that one node and its Leases, not the whole cluster (issue 51
// item 5). The Node by name; its Leases by the names an agent gives them (api/lease.ts: `<extension>.<node>`,
// or `<extension>.<node UID>` for a long pair, and `nodecare-agent.<node>`), one paged LIST with a
// `metadata.name=` field selector each, so that they are decoded and bounded exactly as the whole list is
// (cli/snapshot.ts listLeases); every SystemExtension (few, and needed to know what the node requires) and
// ClusterHealth `cluster` (the published policy, and the roll-up counts below). Leases carry no label that
// names their node (only nodecare.io/role and nodecare.io/extension), and a field selector on metadata.name
// takes only equality, so naming each Lease is the one way to read a node's Leases alone.
//
// The correlated-failure breaker is judged over every node. It can trip for an extension only when at least
// BREAKER_DEFAULTS.minFailing nodes fail it; the roll-up counts (ClusterHealth status.extensions, the
// controller's own count of every node that requires it) say how many do. When an extension the node requires
// shares its name with a SystemExtension and the counts do not rule the breaker out for it (3 or more failing,
// no row for it, no ClusterHealth, or a controller managing only some nodes), explain reads and judges the
// whole cluster as before, so that its answer is the same.

import {
  agentLeaseName,
  LEASE_NAMESPACE,
  leaseNameOrUndefined,
  parseSystemExtension,
  type LeaseObject,
  type SystemExtensionObject,
} from '../api/index.ts';
import { BREAKER_DEFAULTS } from '../controller/decide/index.ts';
import { toCachedNode } from '../controller/ingest.ts';
import { isKubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import type { OptionValues } from '../lib/options.ts';
import { leasesPath } from '../lib/kube/paths.ts';
import {
  analyze,
  registrationsOf,
  type ClusterHealthObject,
  type ClusterSnapshot,
  type NodeObject,
  type NodeReport,
} from './model.ts';
import {
  listLeases,
  readClusterHealth,
  readSnapshot,
  readSystemExtensions,
  type Client,
} from './snapshot.ts';
import { CliError, policyOf, publishedPolicyOf } from './verbs/common.ts';

/** One node judged as the controller would at `now`, and how much of the cluster was read for it. */
export interface NodeRead {
  report: NodeReport;
  tripped: ReadonlySet<string>;
  /** `node`: the node and its Leases; `cluster`: every node and Lease (the breaker may matter). */
  read: 'node' | 'cluster';
}

/** The Node, or undefined when there is none of that name. */
async function readNode(client: Client, name: string): Promise<NodeObject | undefined> {
  try {
    return await client.request<NodeObject>('GET', `/api/v1/nodes/${encodeURIComponent(name)}`);
  } catch (err) {
    if (isKubeError(err, KubeErrorCode.NotFound)) return undefined;
    throw err;
  }
}

/** `node "x" not found (… e.g. a, b, c)`: the first three nodes the API lists, one page of three. */
async function notFound(client: Client, name: string): Promise<CliError> {
  const page = await client.request<{ items?: NodeObject[] }>('GET', '/api/v1/nodes', {
    query: { limit: 3 },
  });
  const names = (page.items ?? []).map((n) => n.metadata?.name ?? '');
  return new CliError(
    `node "${name}" not found (kubectl nodecare status lists the nodes${names.length > 0 ? `; e.g. ${names.join(', ')}` : ''})`,
  );
}

/**
 * The names the node's Leases have: its heartbeat's, and one per extension it requires or a SystemExtension
 * names (a Lease of one no longer required is listed as such).
 */
export function nodeLeaseNames(
  raw: NodeObject,
  systemExtensions: readonly SystemExtensionObject[],
  policy: Parameters<typeof registrationsOf>[2],
): string[] {
  const node = toCachedNode(raw);
  const sxs = systemExtensions.map(parseSystemExtension);
  const extensions = new Set([
    ...registrationsOf(node, sxs, policy).byName.keys(),
    ...sxs.map((sx) => sx.name),
  ]);
  const names = [
    safeAgentName(node.name, node.uid),
    ...[...extensions].sort().map((ext) => leaseNameOrUndefined(node.name, ext, node.uid)),
  ];
  return [...new Set(names.filter((n): n is string => n !== undefined))];
}

function safeAgentName(node: string, uid: string): string | undefined {
  try {
    return agentLeaseName(node, uid);
  } catch {
    return undefined;
  }
}

/** Each named Lease that exists, read as the whole list reads Leases (protobuf, bounded, compact). */
async function readLeases(
  client: Client,
  namespace: string,
  names: readonly string[],
): Promise<LeaseObject[]> {
  const path = leasesPath(namespace);
  const found = await Promise.all(
    names.map((name) => listLeases(client, path, { fieldSelector: `metadata.name=${name}` })),
  );
  // Only the Lease asked for: a server or proxy that ignored the field selector would answer with every one.
  return found.flatMap((f, i) => f.leases.filter((lease) => lease.metadata.name === names[i]));
}

/**
 * Whether the correlated-failure breaker may have tripped for an extension the node requires, by the roll-up's
 * counts: only then does explain judge the whole cluster.
 */
export function breakerMayMatter(
  report: NodeReport,
  systemExtensions: readonly SystemExtensionObject[],
  health: ClusterHealthObject | undefined,
  nodeSelector: string | undefined,
): boolean {
  const sxNames = new Set(systemExtensions.map((sx) => sx.metadata.name ?? ''));
  const candidates = [...report.registrations.keys()].filter((name) => sxNames.has(name));
  if (candidates.length === 0) return false;
  // The roll-up counts the nodes the controller manages; the plugin judges every node.
  if (!health || (nodeSelector ?? '') !== '') return true;
  const rows = Array.isArray(health.status?.extensions) ? (health.status.extensions as unknown[]) : [];
  const failing = new Map<string, number>();
  for (const row of rows) {
    if (typeof row !== 'object' || row === null) continue;
    const { name, unhealthy, unknown } = row as Record<string, unknown>;
    if (typeof name === 'string' && typeof unhealthy === 'number' && typeof unknown === 'number')
      failing.set(name, unhealthy + unknown);
  }
  return candidates.some((name) => (failing.get(name) ?? Infinity) >= BREAKER_DEFAULTS.minFailing);
}

/** Every node and Lease, judged: the answer `kubectl nodecare status` gives, for the node named. */
async function readWhole(client: Client, values: OptionValues, name: string, now: number): Promise<NodeRead> {
  const { snapshot } = await readSnapshot(client, leaseNamespace(values));
  const analysis = analyze(snapshot, policyOf(values, publishedPolicyOf(snapshot).policy), now);
  const report = analysis.nodes.find((r) => r.name === name);
  if (!report) throw await notFound(client, name);
  return { report, tripped: analysis.tripped, read: 'cluster' };
}

const leaseNamespace = (values: OptionValues): string =>
  (values['lease-namespace'] as string | undefined) ?? LEASE_NAMESPACE;

/** The node named, judged as the controller would at `now`, from that node and its Leases where that suffices. */
export async function readNodeReport(
  client: Client,
  values: OptionValues,
  name: string,
  now: number,
): Promise<NodeRead> {
  const missing: string[] = [];
  const [raw, systemExtensions, clusterHealth] = await Promise.all([
    readNode(client, name),
    readSystemExtensions(client, missing),
    readClusterHealth(client, missing),
  ]);
  if (!raw) throw await notFound(client, name);
  const snapshot: ClusterSnapshot = { nodes: [raw], leases: [], systemExtensions, clusterHealth };
  const published = publishedPolicyOf(snapshot).policy;
  const policy = policyOf(values, published);
  snapshot.leases = await readLeases(
    client,
    leaseNamespace(values),
    nodeLeaseNames(raw, systemExtensions, policy),
  );
  const analysis = analyze(snapshot, policy, now);
  const report = analysis.nodes[0];
  if (!report || breakerMayMatter(report, systemExtensions, clusterHealth, published.nodeSelector)) {
    return readWhole(client, values, name, now);
  }
  return { report, tripped: analysis.tripped, read: 'node' };
}
