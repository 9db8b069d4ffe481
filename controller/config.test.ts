// nodecare-controller's configuration, pure: every problem of a bad command line is reported in one pass
// (flags the parser refuses and rules across flags alike, as the agent does), and the taint keys may not be
// ones Kubernetes owns.

import { describe, expect, it } from 'vitest';
import { OptionsError } from '../lib/options.ts';
import { loadControllerConfig } from './config.ts';

function problems(argv: string[]): string[] {
  try {
    loadControllerConfig(argv, {});
  } catch (err) {
    if (err instanceof OptionsError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadControllerConfig', () => {
  it('reports a bad flag value and a bad rule across flags in one pass (issue 50 item 9)', () => {
    const found = problems([
      '--workers=zero',
      '--bootstrap-taint-key=not a key',
      '--leader-election-lease-duration-seconds=5',
      '--leader-election-renew-deadline-seconds=10',
      '--rollup-threshold=nonsense',
      '--gardener-cluster=Not_A_Name',
    ]);
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/--workers: expected an integer, got "zero"/),
        expect.stringMatching(/--bootstrap-taint-key: "not a key" is not a valid taint key/),
        expect.stringMatching(/lease duration \(5\) > renew deadline \(10\)/),
        expect.stringMatching(/--rollup-threshold: "nonsense"/),
        expect.stringMatching(/--gardener-cluster: "Not_A_Name"/),
      ]),
    );
  });

  it('an unknown flag does not hide the problems of the known ones', () => {
    const found = problems(['--bogus', '--runtime-taint-key=a/b', '--bootstrap-taint-key=a/b']);
    expect(found).toEqual([expect.stringMatching(/bogus/), expect.stringMatching(/must differ/)]);
  });

  it('a value the parser refused is judged once, never again by a rule that reads it', () => {
    // An out-of-range lease duration is one problem, not also a broken leader election timing.
    expect(problems(['--leader-election-lease-duration-seconds=0'])).toEqual([
      expect.stringMatching(/--leader-election-lease-duration-seconds: 0 is out of range/),
    ]);
    expect(problems(['--eviction-rate=0'])).toEqual([
      expect.stringMatching(/--eviction-rate: 0 is out of range/),
    ]);
  });

  // Kubernetes owns kubernetes.io/ and k8s.io/ and their subdomains: nodecare would remove the node lifecycle
  // controller's taint from Ready nodes. The Cluster Autoscaler's own prefixes are the defaults on purpose.
  it.each([
    'node.kubernetes.io/not-ready',
    'node.kubernetes.io/unreachable',
    'node-role.kubernetes.io/control-plane',
    'kubernetes.io/arch',
    'k8s.io/anything',
    'node.k8s.io/anything',
    'node.cloudprovider.kubernetes.io/uninitialized',
  ])('refuses the reserved taint key %s (issue 50 item 10)', (key) => {
    for (const flag of ['bootstrap-taint-key', 'runtime-taint-key']) {
      const found = problems([`--${flag}=${key}`]);
      expect(found, flag).toEqual([expect.stringMatching(new RegExp(`--${flag}: "${key}" .*Kubernetes`))]);
    }
  });

  it.each([
    'startup-taint.cluster-autoscaler.kubernetes.io/meta-readiness',
    'status-taint.cluster-autoscaler.kubernetes.io/meta-readiness',
    'ignore-taint.cluster-autoscaler.kubernetes.io/nodecare',
    'example.com/booting',
    'notkubernetes.io/x',
    'kubernetes.io.example.com/x',
    'plain-key',
  ])('accepts the taint key %s', (key) => {
    expect(problems([`--runtime-taint-key=${key}`, '--bootstrap-taint-key=example.com/other'])).toEqual([]);
    expect(problems([`--bootstrap-taint-key=${key}`, '--runtime-taint-key=example.com/other'])).toEqual([]);
  });
});

describe('eviction budgets, cooldown and groups (issue 54 item 1)', () => {
  function config(argv: string[]) {
    const loaded = loadControllerConfig(argv, {});
    if (!('config' in loaded)) throw new Error('expected a config');
    return loaded.config;
  }

  it('defaults: groups by karpenter.sh/nodepool at 10%, no cluster cap, 300 s cooldown; eviction off', () => {
    expect(config([]).eviction).toEqual({
      evictAfterSeconds: 0,
      ratePerSecond: 0.1,
      unhealthyZoneThreshold: 0.55,
      groupLabel: 'karpenter.sh/nodepool',
      groupBudgetPercent: 10,
      maxParallelNodes: 0,
      maxParallelPercent: 100,
      stormCooldownSeconds: 300,
      dryRun: false,
    });
  });

  it('takes every flag', () => {
    expect(
      config([
        '--eviction-group-label=example.com/pool',
        '--eviction-group-budget-percent=25',
        '--eviction-max-parallel-nodes=3',
        '--eviction-max-parallel-percent=20',
        '--eviction-storm-cooldown-seconds=0',
      ]).eviction,
    ).toMatchObject({
      groupLabel: 'example.com/pool',
      groupBudgetPercent: 25,
      maxParallelNodes: 3,
      maxParallelPercent: 20,
      stormCooldownSeconds: 0,
    });
    expect(config(['--eviction-group-label=']).eviction.groupLabel).toBe('');
  });

  it.each<[string, RegExp]>([
    ['--eviction-group-budget-percent=0', /--eviction-group-budget-percent: 0 is out of range/],
    ['--eviction-group-budget-percent=101', /--eviction-group-budget-percent: 101 is out of range/],
    ['--eviction-group-budget-percent=12.5', /--eviction-group-budget-percent: expected an integer/],
    ['--eviction-max-parallel-nodes=-1', /--eviction-max-parallel-nodes: -1 is out of range/],
    ['--eviction-max-parallel-percent=0', /--eviction-max-parallel-percent: 0 is out of range/],
    ['--eviction-storm-cooldown-seconds=-5', /--eviction-storm-cooldown-seconds: -5 is out of range/],
    ['--eviction-storm-cooldown-seconds=soon', /--eviction-storm-cooldown-seconds: expected an integer/],
    ['--eviction-group-label=not a key', /--eviction-group-label: "not a key" is not a label key/],
    ['--eviction-group-label=pool=a', /--eviction-group-label: "pool=a" is not a label key/],
    ['--eviction-group-label=Bad_Prefix/x', /--eviction-group-label: .*prefix is not a DNS subdomain/],
  ])('refuses %s, with one clear problem', (flag, message) => {
    expect(problems([flag])).toEqual([expect.stringMatching(message)]);
  });

  it('reports every bad eviction flag at once', () => {
    expect(
      problems([
        '--eviction-group-budget-percent=0',
        '--eviction-max-parallel-nodes=-1',
        '--eviction-max-parallel-percent=200',
        '--eviction-storm-cooldown-seconds=-1',
        '--eviction-group-label=a,b',
      ]),
    ).toHaveLength(5);
  });
});
