// nodecare-controller's flags and environment variables: one table, read by the parser, --help, the docs'
// test and the chart's schema test. The rules across flags are config.ts's.

import { DEFAULT_NODE_SELECTOR, COMPONENT_NAMESPACE } from '../api/index.ts';
import { COMMON_OPTIONS } from '../lib/common-options.ts';
import type { OptionTable } from '../lib/options.ts';
import { BREAKER_DEFAULTS, DECISION_DEFAULTS } from './decide/index.ts';
import { EVICTION_DEFAULTS } from './eviction/index.ts';
import { LEADER_ELECTION_DEFAULTS } from '../lib/leader/timing.ts';
import { SYNC_BOUND_DEFAULTS } from './sync-bounds.ts';

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
  // Leader election defaults: docs/adr/0005 (crash fail-over ≤ 15 s, P7), from lib/leader/timing.ts. Every
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
