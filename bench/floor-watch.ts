// The floor under the `renewal-cpu` row: the least a Node.js process spends to receive the controller's lease
// watch. It opens the same watch (nodecare Leases, the controller's label selector) with node:https and only
// counts the lines: no JSON, no cache, no decision. What the controller spends per renewal above this is
// nodecare's code; the floor itself is TLS, HTTP and one event-loop wake-up per event (the API server flushes
// each event unless more are queued, k8s.io/apiserver's watch handler). Run by bench/phases/steady.ts:
// `node bench/floor-watch.ts <kubeconfig>`; prints `watching` once the watch is open, the lines received so
// far on SIGUSR2, and them again on SIGTERM before it exits.

import { request } from 'node:https';
import { LEASE_NAMESPACE, LeaseLabel } from '../api/index.ts';
import { KubeClient } from '../lib/kube/client.ts';
import { loadConnection } from '../lib/kube/config.ts';
import { leasesPath } from '../lib/kube/paths.ts';

const kubeconfig = process.argv[2];
if (!kubeconfig) throw new Error('usage: floor-watch.ts <kubeconfig>');
const connection = await loadConnection(kubeconfig);
const headers = await connection.authHeaders();

// Where the list stands now (one item read, with nodecare's own client before the bare watch starts), so the
// watch brings the renewals to come and not a synthetic ADDED event for every Lease there is.
const client = new KubeClient(connection, { transport: 'node' });
const list = await client.get<{ metadata?: { resourceVersion?: string } }>(leasesPath(LEASE_NAMESPACE), {
  query: { labelSelector: LeaseLabel.role, limit: 1 },
});
await client.close();
const now = list.metadata?.resourceVersion;
if (!now) throw new Error('floor-watch: the Lease list has no resourceVersion');

let lines = 0;
const watchUrl = new URL(connection.server);
watchUrl.pathname = leasesPath(LEASE_NAMESPACE);
watchUrl.search = new URLSearchParams({
  labelSelector: LeaseLabel.role,
  watch: 'true',
  resourceVersion: now,
  allowWatchBookmarks: 'true',
}).toString();
const req = request(watchUrl, { ...connection.tls, headers }, (res) => {
  if (res.statusCode !== 200) {
    process.stderr.write(`floor-watch: HTTP ${res.statusCode}\n`);
    process.exit(1);
  }
  process.stdout.write('watching\n');
  res.on('data', (chunk: Buffer) => {
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
  });
  res.on('end', () => {
    process.stderr.write('floor-watch: the API server ended the watch\n');
    process.exit(1);
  });
});
req.on('error', (err) => {
  process.stderr.write(`floor-watch: ${err.message}\n`);
  process.exit(1);
});
req.end();
// SIGUSR2: print how many lines so far (the window's start); SIGTERM: print them and exit.
process.on('SIGUSR2', () => process.stdout.write(`${lines}\n`));
process.on('SIGTERM', () => {
  process.stdout.write(`${lines}\n`);
  process.exit(0);
});
