import { defineConfig } from 'vitest/config';
import { RealNodesSequencer } from './test/realnodes/sequencer.ts';

export default defineConfig({
  test: {
    // The real-node suite's upstream-*.test.ts files last: they share one nodecare install (the sequencer says why).
    sequence: { sequencer: RealNodesSequencer },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['{api,lib,agent,controller,cli,demo}/**/*.test.ts', 'test/unit/**/*.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/controlplane/global-setup.ts'],
          // One worker: the 2 cores are shared with etcd, kube-apiserver and the scheduler.
          fileParallelism: false,
          maxWorkers: 1,
          testTimeout: 90_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          // Real kubelets + containerd (test/realnodes): needs root; `npm run test:realnodes`.
          name: 'realnodes',
          include: ['test/realnodes/**/*.test.ts'],
          globalSetup: ['test/realnodes/global-setup.ts'],
          fileParallelism: false,
          maxWorkers: 1,
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
