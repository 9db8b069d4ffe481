// nodecare-controller configuration: flags and environment, validated together before any I/O.

import { hostname } from 'node:os';
import {
  DEFAULT_NODE_SELECTOR,
  COMPONENT_NAMESPACE,
  taintKeyProblem,
  type PublishedPolicy,
} from '../api/index.ts';
import { labelSelectorProblem } from '../api/selector.ts';
import { COMMON_OPTIONS } from '../lib/common-options.ts';
import type { LogFormat } from '../lib/log.ts';
import { OptionsError, collectOptions, renderHelp, type OptionTable } from '../lib/options.ts';
import { BREAKER_DEFAULTS, DECISION_DEFAULTS } from './decide/index.ts';
import { EVICTION_DEFAULTS, validateEvictionPolicy, type EvictionSettings } from './eviction/index.ts';
import { LEADER_ELECTION_DEFAULTS, SYNC_BOUND_DEFAULTS, validateLeaderElectionTiming } from './leader.ts';

export const CONTROLLER_OPTIONS = {
  kubeconfig: COMMON_OPTIONS.kubeconfig,
  identity: {
    type: 'string',
    description: "This replica's identity for leader election and events.",
    env: 'POD_NAME',
    default: '',
  },
  'health-port': {
    type: 'integer',
    description: 'Port of /healthz, /readyz and /metrics; 0 picks a free port.',
    default: 8096,
    min: 0,
    max: 65535,
  },
  'health-address': COMMON_OPTIONS['health-address'],
  'log-level': COMMON_OPTIONS['log-level'],
  'log-format': COMMON_OPTIONS['log-format'],
  'dry-run': {
    type: 'boolean',
    description:
      'Compute and report everything (condition, label, events, metrics) but write no taints and evict nothing.',
    default: false,
  },
  suspend: {
    type: 'boolean',
    description:
      'Incident switch: hold every taint change on every node (report what would change: events, metrics, explain) until it is off again; the held changes then go through the breaker like any change.',
    env: 'NODECARE_SUSPEND',
    default: false,
  },
  'leader-elect': {
    type: 'boolean',
    description: 'Elect a leader among replicas; only the leader writes.',
    default: true,
  },
  'leader-election-namespace': {
    type: 'string',
    description: 'Namespace of the leader election Lease.',
    default: COMPONENT_NAMESPACE,
  },
  'leader-election-name': {
    type: 'string',
    description: 'Name of the leader election Lease.',
    default: 'nodecare-controller',
  },
  // Leader election defaults: docs/adr/0005 (crash fail-over ≤ 15 s, P7), from controller/leader.ts. Every
  // default below that a module of the controller also uses is that module's constant: defined once.
  'leader-election-lease-duration-seconds': {
    type: 'number',
    description: 'Leader lease duration.',
    default: LEADER_ELECTION_DEFAULTS.leaseDurationMs / 1000,
    min: 1,
    max: 600,
  },
  'leader-election-renew-deadline-seconds': {
    type: 'number',
    description: 'Leader renew deadline.',
    default: LEADER_ELECTION_DEFAULTS.renewDeadlineMs / 1000,
    min: 1,
    max: 600,
  },
  'leader-election-retry-period-seconds': {
    type: 'number',
    description: 'Leader retry period.',
    default: LEADER_ELECTION_DEFAULTS.retryPeriodMs / 1000,
    min: 0.1,
    max: 300,
  },
  'leader-unsynced-step-down-seconds': {
    type: 'number',
    description:
      'A leader whose caches stay out of sync this long steps down and releases the lease for a standby; a replica campaigns only on synced caches.',
    default: SYNC_BOUND_DEFAULTS.leaderUnsyncedMs / 1000,
    min: 1,
    max: 3_600,
  },
  'startup-sync-timeout-seconds': {
    type: 'number',
    description:
      'Liveness (/healthz, /livez) fails when the caches have not synced once within this long of the start.',
    default: SYNC_BOUND_DEFAULTS.firstSyncMs / 1000,
    min: 1,
    max: 86_400,
  },
  'bootstrap-taint-key': {
    type: 'string',
    description: 'Key of the bootstrap taint (NoSchedule).',
    default: DECISION_DEFAULTS.bootstrapTaintKey,
  },
  'runtime-taint-key': {
    type: 'string',
    description: 'Key of the runtime taint (NoSchedule).',
    default: DECISION_DEFAULTS.runtimeTaintKey,
  },
  'node-selector': {
    type: 'string',
    description:
      "Label selector of the nodes nodecare manages (taints, condition, label, roll-up); the others are left alone. Keep it in step with the agent DaemonSet's node affinity: a selected node without an agent is held by its bootstrap taint.",
    default: DEFAULT_NODE_SELECTOR,
  },
  'bootstrap-timeout-seconds': {
    type: 'integer',
    description: 'Bootstrapping longer than this is BootstrapTimeout.',
    default: DECISION_DEFAULTS.bootstrapTimeoutSeconds,
    min: 1,
    max: 86_400,
  },
  'missing-lease-grace-seconds': {
    type: 'integer',
    description: 'How long a missing lease or heartbeat counts as Progressing before Unknown.',
    default: DECISION_DEFAULTS.missingLeaseGraceSeconds,
    min: 0,
    max: 86_400,
  },
  'max-unhealthy-fraction': {
    type: 'number',
    description:
      'Correlated-failure breaker: trip when more than this fraction of the nodes requiring an extension fail it (at least 3).',
    default: BREAKER_DEFAULTS.maxUnhealthyFraction,
    min: 0,
    max: 1,
  },
  'evict-after-seconds': {
    type: 'integer',
    description: 'Evict pods of nodes Degraded this long; 0 turns eviction off.',
    default: EVICTION_DEFAULTS.evictAfterSeconds,
    min: 0,
    max: 604_800,
  },
  'eviction-rate': {
    type: 'number',
    description: 'Nodes per second per zone whose pods may be evicted.',
    default: EVICTION_DEFAULTS.ratePerSecond,
    min: 0.001,
    max: 100,
  },
  'unhealthy-zone-threshold': {
    type: 'number',
    description: 'Stop evicting in a zone when this fraction of its nodes is Degraded.',
    default: EVICTION_DEFAULTS.unhealthyZoneThreshold,
    min: 0,
    max: 1,
  },
  'eviction-group-label': {
    type: 'string',
    description:
      "Eviction budget per node group: the node label whose value names a node's group (Karpenter's NodePool by default); nodes without it are grouped by zone. Empty: groups are zones.",
    default: EVICTION_DEFAULTS.groupLabel,
  },
  'eviction-group-budget-percent': {
    type: 'integer',
    description: "At most this percent of a group's nodes (rounded up) being evicted at once.",
    default: EVICTION_DEFAULTS.groupBudgetPercent,
    min: 1,
    max: 100,
  },
  'eviction-max-parallel-nodes': {
    type: 'integer',
    description: 'At most this many nodes being evicted at once in the cluster; 0: no count cap.',
    default: EVICTION_DEFAULTS.maxParallelNodes,
    min: 0,
    max: 100_000,
  },
  'eviction-max-parallel-percent': {
    type: 'integer',
    description:
      "At most this percent of the cluster's nodes (rounded up) being evicted at once; 100: no percentage cap. With --eviction-max-parallel-nodes the smaller applies.",
    default: EVICTION_DEFAULTS.maxParallelPercent,
    min: 1,
    max: 100,
  },
  'eviction-storm-cooldown-seconds': {
    type: 'integer',
    description:
      'After the correlated-failure breaker stops tripping (every zone) or a zone stops being disrupted (that zone), eviction waits this long before it starts again; 0: no wait.',
    default: EVICTION_DEFAULTS.stormCooldownSeconds,
    min: 0,
    max: 86_400,
  },
  'eviction-dry-run': {
    type: 'boolean',
    description: 'Log the pods eviction would evict, evict nothing.',
    default: false,
  },
  'rollup-threshold': {
    type: 'list',
    description:
      'ClusterHealth: how long a failing condition type stays Progressing before False, as <ConditionType>=<seconds> (Gardener defaults: EveryNodeReady=300, every other type 60).',
    default: [],
  },
  'annotation-condition-type': {
    type: 'list',
    description:
      'ClusterHealth: a custom PascalCase condition type a node annotation may feed, besides the four Gardener types (EveryNodeReady, SystemComponentsHealthy, ObservabilityComponentsHealthy, ControlPlaneHealthy). An annotation naming any other type is an invalid registration. SystemExtensions may name any type.',
    default: [],
  },
  'gardener-cluster': {
    type: 'string',
    description:
      'ClusterHealth: name of the Gardener extensions.gardener.cloud/v1alpha1 Cluster object of this shoot; a hibernated shoot reports every condition healthy, a workerless one has no EveryNodeReady. Empty: not a Gardener shoot.',
    default: '',
  },
  'gardener-resync-seconds': {
    type: 'integer',
    description:
      'ClusterHealth: how often the Gardener Cluster object is read again (hibernation and wake-up are noticed this fast).',
    default: 30,
    min: 1,
    max: 3600,
  },
  workers: {
    type: 'integer',
    description:
      'Nodes reconciled concurrently: each holds at most one API write at a time, so also the writes in flight.',
    // About the seats of the controller's priority level on a default API server (manifests/base/
    // flowcontrol.yaml: 23): at 100 ms a write, 24 workers write 120 nodes a second (8 wrote 40, less than
    // P2's changes and their healing at 1,000 nodes; docs/benchmark.md).
    default: 24,
    min: 1,
    max: 256,
  },
  'request-timeout-seconds': {
    type: 'integer',
    description: 'Deadline of each API request.',
    default: 10,
    min: 1,
    max: 120,
  },
} satisfies OptionTable;

export const CONTROLLER_SUMMARY =
  'nodecare-controller owns the MetaReadiness taints, the ExtensionsReady node condition and the nodecare.io/status label.';

export interface ControllerConfig {
  kubeconfig: string | undefined;
  identity: string;
  healthPort: number;
  healthAddress: string;
  logLevel: string;
  logFormat: LogFormat;
  dryRun: boolean;
  /** Every node's taint changes are held (controller/decide/suspend.ts). */
  suspend: boolean;
  leaderElect: boolean;
  leaderElection: {
    namespace: string;
    name: string;
    leaseDurationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
  };
  /** The caches' sync bounds (controller/term.ts): the leader's step-down and liveness at start. */
  syncBounds: { leaderUnsyncedMs: number; firstSyncMs: number };
  bootstrapTaintKey: string;
  runtimeTaintKey: string;
  /** The label selector of the managed nodes, as the API server takes it ('' = every node). */
  nodeSelector: string;
  bootstrapTimeoutSeconds: number;
  missingLeaseGraceSeconds: number;
  maxUnhealthyFraction: number;
  eviction: EvictionSettings;
  /** Per condition type, the threshold of the roll-up's threshold machine (types not listed: the defaults). */
  rollupThresholdsMs: Readonly<Record<string, number>>;
  /** Condition types a node annotation may feed besides the four Gardener types (--annotation-condition-type). */
  annotationConditionTypes: readonly string[];
  gardenerCluster: string | undefined;
  gardenerResyncMs: number;
  workers: number;
  requestTimeoutMs: number;
}

/** What the leader publishes of `config` in ClusterHealth status.policy (api/policy.ts). */
export function publishedPolicy(config: ControllerConfig): PublishedPolicy {
  return {
    bootstrapTaintKey: config.bootstrapTaintKey,
    runtimeTaintKey: config.runtimeTaintKey,
    bootstrapTimeoutSeconds: config.bootstrapTimeoutSeconds,
    missingLeaseGraceSeconds: config.missingLeaseGraceSeconds,
    maxUnhealthyFraction: config.maxUnhealthyFraction,
    annotationConditionTypes: [...config.annotationConditionTypes],
    suspend: config.suspend,
    dryRun: config.dryRun,
    nodeSelector: config.nodeSelector,
  };
}

const CONDITION_TYPE = /^[A-Z][A-Za-z0-9]{0,62}$/;

/** Why `key` cannot name the eviction groups: it must be one label key ('' = group by zone). */
export function evictionGroupLabelProblem(key: string): string | undefined {
  if (key === '') return undefined;
  // One key, as an existence selector is: a selector's operators and separators would make it several things.
  if (/[\s,=!()]/.test(key)) return `"${key}" is not a label key`;
  return labelSelectorProblem(key);
}

/** `--rollup-threshold EveryNodeReady=120` → { EveryNodeReady: 120000 }; problems are collected. */
export function parseRollupThresholds(values: readonly string[], problems: string[]): Record<string, number> {
  const thresholds: Record<string, number> = {};
  for (const value of values) {
    const match = /^([^=]*)=(.*)$/.exec(value);
    const type = match?.[1] ?? '';
    const seconds = Number(match?.[2]);
    if (!match || !CONDITION_TYPE.test(type)) {
      problems.push(
        `--rollup-threshold: "${value}" is not <ConditionType>=<seconds> with a PascalCase condition type`,
      );
    } else if (match[2] === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > 86_400) {
      problems.push(`--rollup-threshold: "${value}": seconds must be a number from 0 to 86400`);
    } else thresholds[type] = seconds * 1000;
  }
  return thresholds;
}

export function loadControllerConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { help: string } | { config: ControllerConfig } {
  // Flags the parser refuses do not stop the rules across flags from being checked: every problem in one go
  // (as the agent does). A rule reads only values the parser accepted (a refused one is undefined here), so
  // one bad value is one problem.
  const { help, values: v, problems } = collectOptions(CONTROLLER_OPTIONS, argv, env);
  if (help) return { help: renderHelp('nodecare-controller', CONTROLLER_SUMMARY, CONTROLLER_OPTIONS) };
  const accepted = (...names: Array<keyof typeof CONTROLLER_OPTIONS>): boolean =>
    names.every((name) => v[name] !== undefined);
  const leaseDuration = v['leader-election-lease-duration-seconds'] as number;
  const renewDeadline = v['leader-election-renew-deadline-seconds'] as number;
  const retryPeriod = v['leader-election-retry-period-seconds'] as number;
  // The rule is leader.ts's (one definition); the message names the flags' seconds.
  const timing = {
    leaseDurationMs: leaseDuration * 1000,
    renewDeadlineMs: renewDeadline * 1000,
    retryPeriodMs: retryPeriod * 1000,
  };
  const timingAccepted = accepted(
    'leader-election-lease-duration-seconds',
    'leader-election-renew-deadline-seconds',
    'leader-election-retry-period-seconds',
  );
  if (timingAccepted && validateLeaderElectionTiming(timing).length > 0) {
    problems.push(
      `leader election: need lease duration (${leaseDuration}) > renew deadline (${renewDeadline}) > 1.2 × retry period (${retryPeriod})`,
    );
  }
  const eviction: EvictionSettings = {
    evictAfterSeconds: v['evict-after-seconds'] as number,
    ratePerSecond: v['eviction-rate'] as number,
    unhealthyZoneThreshold: v['unhealthy-zone-threshold'] as number,
    groupLabel: ((v['eviction-group-label'] as string | undefined) ?? '').trim(),
    groupBudgetPercent: v['eviction-group-budget-percent'] as number,
    maxParallelNodes: v['eviction-max-parallel-nodes'] as number,
    maxParallelPercent: v['eviction-max-parallel-percent'] as number,
    stormCooldownSeconds: v['eviction-storm-cooldown-seconds'] as number,
    dryRun: v['eviction-dry-run'] as boolean,
  };
  const evictionAccepted = accepted(
    'evict-after-seconds',
    'eviction-rate',
    'unhealthy-zone-threshold',
    'eviction-group-budget-percent',
    'eviction-max-parallel-nodes',
    'eviction-max-parallel-percent',
    'eviction-storm-cooldown-seconds',
  );
  const evictionProblems = evictionAccepted
    ? validateEvictionPolicy({ ...eviction, minZoneNodes: EVICTION_DEFAULTS.minZoneNodes })
    : [];
  // Only these three reach the policy's rules with a value the parser accepted (the budgets' and cooldown's
  // ranges are the parser's), so they are the flags to name.
  for (const problem of evictionProblems)
    problems.push(
      `eviction (--evict-after-seconds, --eviction-rate, --unhealthy-zone-threshold): ${problem}`,
    );
  const groupLabelProblem =
    accepted('eviction-group-label') && evictionGroupLabelProblem(eviction.groupLabel);
  if (groupLabelProblem) problems.push(`--eviction-group-label: ${groupLabelProblem}`);
  for (const flag of ['bootstrap-taint-key', 'runtime-taint-key'] as const) {
    if (!accepted(flag)) continue;
    const problem = taintKeyProblem(v[flag] as string);
    if (problem) problems.push(`--${flag}: "${String(v[flag])}" ${problem}`);
  }
  if (accepted('bootstrap-taint-key') && v['bootstrap-taint-key'] === v['runtime-taint-key'])
    problems.push('--bootstrap-taint-key and --runtime-taint-key must differ');
  const selectorProblem = accepted('node-selector') && labelSelectorProblem(v['node-selector'] as string);
  if (selectorProblem) problems.push(`--node-selector: ${selectorProblem}`);
  const rollupThresholdsMs = parseRollupThresholds(v['rollup-threshold'] as string[], problems);
  const annotationConditionTypes = v['annotation-condition-type'] as string[];
  for (const type of annotationConditionTypes)
    if (!CONDITION_TYPE.test(type))
      problems.push(`--annotation-condition-type: "${type}" is not a PascalCase condition type`);
  const gardenerCluster = v['gardener-cluster'] as string;
  if (
    accepted('gardener-cluster') &&
    gardenerCluster !== '' &&
    !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(gardenerCluster)
  )
    problems.push(`--gardener-cluster: "${gardenerCluster}" is not a valid object name`);
  if (problems.length > 0) throw new OptionsError(problems);
  return {
    config: Object.freeze({
      kubeconfig: v.kubeconfig as string | undefined,
      identity: (v.identity as string) || `${hostname()}-${process.pid}`,
      healthPort: v['health-port'] as number,
      healthAddress: v['health-address'] as string,
      logLevel: v['log-level'] as string,
      logFormat: v['log-format'] as LogFormat,
      dryRun: v['dry-run'] as boolean,
      suspend: v.suspend as boolean,
      leaderElect: v['leader-elect'] as boolean,
      leaderElection: {
        namespace: v['leader-election-namespace'] as string,
        name: v['leader-election-name'] as string,
        ...timing,
      },
      syncBounds: {
        leaderUnsyncedMs: (v['leader-unsynced-step-down-seconds'] as number) * 1000,
        firstSyncMs: (v['startup-sync-timeout-seconds'] as number) * 1000,
      },
      bootstrapTaintKey: v['bootstrap-taint-key'] as string,
      runtimeTaintKey: v['runtime-taint-key'] as string,
      nodeSelector: (v['node-selector'] as string).trim(),
      bootstrapTimeoutSeconds: v['bootstrap-timeout-seconds'] as number,
      missingLeaseGraceSeconds: v['missing-lease-grace-seconds'] as number,
      maxUnhealthyFraction: v['max-unhealthy-fraction'] as number,
      eviction,
      rollupThresholdsMs,
      annotationConditionTypes: Object.freeze([...new Set(annotationConditionTypes)]),
      gardenerCluster: gardenerCluster === '' ? undefined : gardenerCluster,
      gardenerResyncMs: (v['gardener-resync-seconds'] as number) * 1000,
      workers: v.workers as number,
      requestTimeoutMs: (v['request-timeout-seconds'] as number) * 1000,
    }),
  };
}
