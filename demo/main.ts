// `npm start`: the main job on an embedded default. Starts a real local control plane and keeps it up until
// Ctrl-C, printing how to reach it.

import { startControlPlane } from '../test/controlplane/controlplane.ts';

const plane = await startControlPlane();
const kubectl = `${plane.binDir}/kube-testenv kubectl --kubeconfig=${plane.kubeconfigPath}`;
process.stdout.write(
  [
    '',
    `Control plane ${plane.version} is up at ${plane.server}`,
    `  export KUBECONFIG=${plane.kubeconfigPath}`,
    `  ${kubectl} get nodes`,
    'Press Ctrl-C to stop it.',
    '',
  ].join('\n'),
);
let stopping = false;
const stop = async (): Promise<void> => {
  if (stopping) return;
  stopping = true;
  process.stdout.write('\nStopping the control plane...\n');
  await plane.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
