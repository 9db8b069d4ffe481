// vitest globalSetup of the integration project: one real control plane for the whole run. If it cannot be
// built or started, this throws and the test command fails with the reason: integration tests never skip.

import type { TestProject } from 'vitest/node';
import { startControlPlane } from './controlplane.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kubeconfig: string;
    server: string;
    binDir: string;
    kubernetesVersion: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const plane = await startControlPlane();
  project.provide('kubeconfig', plane.kubeconfigPath);
  project.provide('server', plane.server);
  project.provide('binDir', plane.binDir);
  project.provide('kubernetesVersion', plane.version);
  return () => plane.stop();
}
