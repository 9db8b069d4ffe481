// Starts a control plane with the real-node profile and real nodes, prints one JSON line on stdout
// ({ slotDir, apiAddress, kubeconfig, nodes: [{ name, ip, dir, pids }] }) and keeps them until stdin closes
// or SIGTERM/SIGINT, then tears everything down. For a person at a shell (as root), and for the test that a
// killed run's leftovers are cleaned by the next run.
//   node test/realnodes/one-cluster.ts [node count, default 1]

import { startNodes, startRealNodeControlPlane } from './realnodes.ts';

const count = Number(process.argv[2] ?? 1);
const plane = await startRealNodeControlPlane();
let cluster;
try {
  cluster = await startNodes(plane, { count });
} catch (err) {
  await plane.stop();
  throw err;
}
process.stdout.write(
  `${JSON.stringify({
    slotDir: plane.slot.dir,
    apiAddress: plane.slot.apiAddress,
    kubeconfig: plane.kubeconfigPath,
    nodes: cluster.nodes.map((n) => ({
      name: n.name,
      ip: n.ip,
      dir: n.dir,
      pids: [n.holderPid, n.containerdPid, n.kubeletPid],
    })),
  })}\n`,
);
let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  await cluster.stop();
  await plane.stop();
  process.exit(0);
};
process.stdin.on('end', () => void stop());
process.stdin.resume();
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
