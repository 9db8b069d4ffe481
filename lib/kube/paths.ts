// REST paths nodecare uses more than once, built in one place (names percent-encoded).

/** `/apis/coordination.k8s.io/v1/namespaces/<namespace>/leases`, or one Lease of it with `name`. */
export function leasesPath(namespace: string, name?: string): string {
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  return name === undefined ? collection : `${collection}/${encodeURIComponent(name)}`;
}

/** What one request asks the API server for, in the API server's own words (its audit log's verb and resource). */
export interface RequestKind {
  /** get, list, watch, create, update, patch or delete. */
  verb: string;
  /** `pods`, `nodes/status`, `leases`; `discovery` for a group's or version's resource list. */
  resource: string;
}

const VERBS: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/**
 * The verb and resource of `method path` (a watch is `WATCH`), for request counts by kind: `GET
 * /api/v1/namespaces/a/pods` is list pods, `GET /api/v1/nodes/n` get nodes, `PATCH /api/v1/nodes/n/status`
 * patch nodes/status.
 */
export function requestKind(method: string, path: string): RequestKind {
  const parts = path.split('?')[0]!.split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  if (rest.length === 0) return { verb: method === 'WATCH' ? 'watch' : 'get', resource: 'discovery' };
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3;
  const [resource, name, ...sub] = namespaced ? rest.slice(2) : rest;
  const verb =
    method === 'WATCH' ? 'watch' : method === 'GET' ? (name === undefined ? 'list' : 'get') : VERBS[method];
  return { verb: verb ?? method.toLowerCase(), resource: [resource, ...sub].join('/') };
}
