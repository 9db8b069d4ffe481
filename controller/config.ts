// nodecare-controller configuration: flags and environment, validated together before any I/O.

import { hostname } from 'node:os';
import { taintKeyProblem, type PublishedPolicy } from '../api/index.ts';
import { labelSelectorProblem } from '../api/selector.ts';
import type { LogFormat } from '../lib/log.ts';
import { OptionsError, collectOptions, renderHelp, type OptionValues } from '../lib/options.ts';
import { CONTROLLER_OPTIONS, CONTROLLER_SUMMARY } from './config-options.ts';
import { EVICTION_DEFAULTS, validateEvictionPolicy, type EvictionSettings } from './eviction/index.ts';
import { validateLeaderElectionTiming } from '../lib/leader/timing.ts';

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

type Flag = keyof typeof CONTROLLER_OPTIONS;
/** True when the parser accepted every flag named: a rule reads only values the parser accepted. */
type Accepted = (...names: Flag[]) => boolean;
type Timing = Pick<
  ControllerConfig['leaderElection'],
  'leaseDurationMs' | 'renewDeadlineMs' | 'retryPeriodMs'
>;

export function loadControllerConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { help: string } | { config: ControllerConfig } {
  // Flags the parser refuses do not stop the rules across flags from being checked: every problem in one go
  // (as the agent does). A rule reads only values the parser accepted (a refused one is undefined here), so
  // one bad value is one problem.
  const { help, values: v, problems } = collectOptions(CONTROLLER_OPTIONS, argv, env);
  if (help) return { help: renderHelp('nodecare-controller', CONTROLLER_SUMMARY, CONTROLLER_OPTIONS) };
  const accepted: Accepted = (...names) => names.every((name) => v[name] !== undefined);
  const timing = leaderElectionTiming(v, accepted, problems);
  const eviction = evictionSettings(v, accepted, problems);
  checkNamesAndKeys(v, accepted, problems);
  const rollupThresholdsMs = parseRollupThresholds(v['rollup-threshold'] as string[], problems);
  if (problems.length > 0) throw new OptionsError(problems);
  return { config: Object.freeze(controllerConfig(v, timing, eviction, rollupThresholdsMs)) };
}

/** The leader election's timing in milliseconds; the rule across the three flags is lib/leader/timing.ts's. */
function leaderElectionTiming(v: OptionValues, accepted: Accepted, problems: string[]): Timing {
  const leaseDuration = v['leader-election-lease-duration-seconds'] as number;
  const renewDeadline = v['leader-election-renew-deadline-seconds'] as number;
  const retryPeriod = v['leader-election-retry-period-seconds'] as number;
  // The rule is lib/leader/timing.ts's (one definition); the message names the flags' seconds.
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
  return timing;
}

/** Eviction's settings, checked by the eviction policy's own rules and the group label's. */
function evictionSettings(v: OptionValues, accepted: Accepted, problems: string[]): EvictionSettings {
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
  return eviction;
}

/** The taint keys, the node selector, the annotation condition types and the Gardener Cluster's name. */
function checkNamesAndKeys(v: OptionValues, accepted: Accepted, problems: string[]): void {
  for (const flag of ['bootstrap-taint-key', 'runtime-taint-key'] as const) {
    if (!accepted(flag)) continue;
    const problem = taintKeyProblem(v[flag] as string);
    if (problem) problems.push(`--${flag}: "${String(v[flag])}" ${problem}`);
  }
  if (accepted('bootstrap-taint-key') && v['bootstrap-taint-key'] === v['runtime-taint-key'])
    problems.push('--bootstrap-taint-key and --runtime-taint-key must differ');
  const selectorProblem = accepted('node-selector') && labelSelectorProblem(v['node-selector'] as string);
  if (selectorProblem) problems.push(`--node-selector: ${selectorProblem}`);
  for (const type of v['annotation-condition-type'] as string[])
    if (!CONDITION_TYPE.test(type))
      problems.push(`--annotation-condition-type: "${type}" is not a PascalCase condition type`);
  const gardenerCluster = v['gardener-cluster'] as string;
  if (
    accepted('gardener-cluster') &&
    gardenerCluster !== '' &&
    !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(gardenerCluster)
  )
    problems.push(`--gardener-cluster: "${gardenerCluster}" is not a valid object name`);
}

/** The configuration of values that every rule accepted. */
function controllerConfig(
  v: OptionValues,
  timing: Timing,
  eviction: EvictionSettings,
  rollupThresholdsMs: Record<string, number>,
): ControllerConfig {
  const gardenerCluster = v['gardener-cluster'] as string;
  return {
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
    annotationConditionTypes: Object.freeze([...new Set(v['annotation-condition-type'] as string[])]),
    gardenerCluster: gardenerCluster === '' ? undefined : gardenerCluster,
    gardenerResyncMs: (v['gardener-resync-seconds'] as number) * 1000,
    workers: v.workers as number,
    requestTimeoutMs: (v['request-timeout-seconds'] as number) * 1000,
  };
}
