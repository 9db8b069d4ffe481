// The Cluster Autoscaler test runs apart from `npm test` (docs/autoscalers.md): it needs a binary the
// repository cannot build. `npm run test:cluster-autoscaler` with NODECARE_CLUSTER_AUTOSCALER set; `.ci/run`
// runs it when CI's binary is beside the repository. The verbose reporter lists every run by name in CI's
// output, next to the `[ca]` lines with the node counts.
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: join(import.meta.dirname, '..', '..'),
  test: {
    name: 'cluster-autoscaler',
    reporters: ['verbose'],
    include: ['test/autoscalers/**/*.test.ts'],
    globalSetup: ['test/controlplane/global-setup.ts'],
    fileParallelism: false,
    maxWorkers: 1,
    testTimeout: 90_000,
    hookTimeout: 180_000,
  },
});
