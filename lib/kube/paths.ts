// REST paths nodecare uses more than once, built in one place (names percent-encoded).

/** `/apis/coordination.k8s.io/v1/namespaces/<namespace>/leases`, or one Lease of it with `name`. */
export function leasesPath(namespace: string, name?: string): string {
  const collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  return name === undefined ? collection : `${collection}/${encodeURIComponent(name)}`;
}
