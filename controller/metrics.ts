// nodecare-controller metrics (docs/conventions.md 12): nodecare_controller_ prefix, base units, bounded labels.

import {
  MAX_UNDECLARED_EXTENSION_SERIES,
  OTHER_EXTENSION_LABEL,
  extensionSeries,
  type ExtensionPair,
} from '../lib/metric-labels.ts';
import { Counter, Gauge, Histogram, type Registry } from '../lib/prom.ts';
import { collectRuntimeMetrics } from '../lib/runtime-metrics.ts';
import { packageVersion } from '../lib/version.ts';

export class ControllerMetrics {
  readonly nodes: Gauge<'state'>;
  readonly reconcileDuration: Histogram;
  readonly reconciles: Counter<'result'>;
  readonly deadlineRearms: Counter;
  readonly nodeWrites: Counter<'kind' | 'result'>;
  readonly events: Counter<'reason'>;
  readonly eventsDropped: Counter<'reason'>;
  readonly breakerTripped: Gauge<'extension'>;
  readonly isLeader: Gauge;
  readonly queueDepth: Gauge;
  readonly watchErrors: Counter<'source'>;
  readonly watchObjectsSkipped: Counter<'source'>;
  readonly extensionNodes: Gauge<'extension' | 'state'>;
  readonly evictions: Counter<'outcome'>;
  readonly evictionSkipped: Counter<'subject' | 'reason'>;
  readonly evictionHeldNodes: Gauge<'reason'>;
  readonly evictionBlockedZones: Gauge<'reason'>;
  readonly evictionEvictingNodes: Gauge;
  readonly leasesIgnored: Gauge<'reason'>;
  readonly rollupWrites: Counter<'kind' | 'result'>;
  readonly rollupDuration: Histogram;
  readonly nodeConditions: Gauge<'status' | 'reason'>;
  readonly clusterHealthConditions: Gauge<'type' | 'status'>;
  readonly suspendedNodes: Gauge<'held'>;
  readonly releasedNodes: Gauge<'verdict'>;
  readonly bootstrapDuration: Histogram;
  readonly runtimeTaintDuration: Histogram;
  readonly buildInfo: Gauge<'version' | 'nodejs_version'>;
  readonly featureAvailable: Gauge<'feature'>;
  private extensionPairs: { pairs(): Iterable<ExtensionPair>; declared(): ReadonlySet<string> } | undefined;

  constructor(registry: Registry) {
    // The standard process_* and nodejs_* metrics, as the agent serves them (lib/runtime-metrics.ts). The
    // event-loop delay is sampled every 100 ms, not prom-client's 10 ms: 100 wake-ups a second cost 11 mCPU on
    // the benchmark machine, and at 1,000 nodes with nothing changing the controller's CPU halved without them
    // (docs/benchmark.md); a stall long enough to matter to a 1 s goal still shows.
    collectRuntimeMetrics(registry, { eventLoopMonitoringPrecision: 100 });
    const registers = [registry];
    this.nodes = new Gauge({
      name: 'nodecare_controller_nodes',
      help: 'Nodes by nodecare state.',
      labelNames: ['state'],
      registers,
    });
    this.reconcileDuration = new Histogram({
      name: 'nodecare_controller_reconcile_duration_seconds',
      help: 'Time to reconcile one node, including its writes.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.reconciles = new Counter({
      name: 'nodecare_controller_reconciles_total',
      help: 'Node reconciles by result.',
      labelNames: ['result'],
      registers,
    });
    this.deadlineRearms = new Counter({
      name: 'nodecare_controller_deadline_rearms_total',
      help: "Node deadlines that came when only lease renewals had arrived since the node's decision: requeued at the renewed expiry without deciding.",
      registers,
    });
    this.nodeWrites = new Counter({
      name: 'nodecare_controller_node_writes_total',
      help: 'Writes to Nodes by kind (node: taints/label/annotation; condition: the status patch, with the label/annotation when no taint changes) and result.',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.events = new Counter({
      name: 'nodecare_controller_events_total',
      help: 'Events recorded by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.eventsDropped = new Counter({
      name: 'nodecare_controller_events_dropped_total',
      help: "Event writes dropped unsent: the backlog was full (backlog), or their subject's share of it (subjectShare).",
      labelNames: ['reason'],
      registers,
    });
    this.breakerTripped = new Gauge({
      name: 'nodecare_controller_breaker_tripped',
      help: 'Extensions whose correlated-failure breaker has tripped (1) — their runtime taints are held back.',
      labelNames: ['extension'],
      registers,
    });
    this.isLeader = new Gauge({
      name: 'nodecare_controller_is_leader',
      help: '1 while this replica leads.',
      registers,
    });
    this.queueDepth = new Gauge({
      name: 'nodecare_controller_queue_depth',
      help: 'Nodes waiting to be reconciled.',
      registers,
    });
    this.watchErrors = new Counter({
      name: 'nodecare_controller_watch_errors_total',
      help: 'List or watch failures by source.',
      labelNames: ['source'],
      registers,
    });
    this.watchObjectsSkipped = new Counter({
      name: 'nodecare_controller_watch_objects_skipped_total',
      help: 'Listed or watched objects that could not be handled (poison objects) and were skipped, by source.',
      labelNames: ['source'],
      registers,
    });
    const extensionNodes: Gauge<'extension' | 'state'> = new Gauge({
      name: 'nodecare_controller_extension_nodes',
      help: `Nodes per extension and effective state; names no SystemExtension declares beyond the ${MAX_UNDECLARED_EXTENSION_SERIES} most required are counted as extension="${OTHER_EXTENSION_LABEL}".`,
      labelNames: ['extension', 'state'],
      registers,
      // Computed on each scrape from the nodes' latest decisions, so a name that is gone has no series.
      collect: () => {
        extensionNodes.reset();
        const source = this.extensionPairs;
        if (!source) return;
        for (const { extension, state, nodes } of extensionSeries(source.pairs(), source.declared()))
          extensionNodes.set({ extension, state }, nodes);
      },
    });
    this.extensionNodes = extensionNodes;
    this.evictions = new Counter({
      name: 'nodecare_controller_pod_evictions_total',
      help: 'Pod eviction attempts by outcome.',
      labelNames: ['outcome'],
      registers,
    });
    this.evictionSkipped = new Counter({
      name: 'nodecare_controller_eviction_skipped_total',
      help: 'Evictions left alone because another owner acts (subject node: DoNotDisrupt, KarpenterDisruption, Medik8sRemediation, OutOfService, Maintenance; subject pod: DoNotDisrupt), counted once per node and reason or per pod in a Degraded spell.',
      labelNames: ['subject', 'reason'],
      registers,
    });
    this.evictionHeldNodes = new Gauge({
      name: 'nodecare_controller_eviction_held_nodes',
      help: "Degraded nodes eviction holds back now, by reason: a budget (GroupBudget, ParallelCap) or another owner (the skip reasons); the leader's view.",
      labelNames: ['reason'],
      registers,
    });
    this.evictionBlockedZones = new Gauge({
      name: 'nodecare_controller_eviction_blocked_zones',
      help: "Zones with a Degraded node where eviction is stopped, by reason (ZoneDisrupted, CorrelatedFailure, StormCooldown); the leader's view.",
      labelNames: ['reason'],
      registers,
    });
    this.evictionEvictingNodes = new Gauge({
      name: 'nodecare_controller_eviction_evicting_nodes',
      help: 'Nodes being evicted now (first pass made, pods not all gone yet): what the group budgets and the parallel cap count.',
      registers,
    });
    this.leasesIgnored = new Gauge({
      name: 'nodecare_controller_leases_ignored',
      help: 'Leases claiming a node that are not the ones its agent writes (wrong name or owner), by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.rollupWrites = new Counter({
      name: 'nodecare_controller_rollup_writes_total',
      help: 'Writes of the roll-up by kind (clusterhealth, systemextension) and result (ok, created, conflict, error, invalid: refused with 422, a bug).',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.rollupDuration = new Histogram({
      name: 'nodecare_controller_rollup_evaluation_duration_seconds',
      help: 'Time to evaluate the ClusterHealth roll-up over every (node, extension) pair.',
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
    this.nodeConditions = new Gauge({
      name: 'nodecare_controller_node_conditions',
      help: 'Nodes by the status and reason of their ExtensionsReady condition (reason AgentNotReporting: the agent is gone).',
      labelNames: ['status', 'reason'],
      registers,
    });
    this.clusterHealthConditions = new Gauge({
      name: 'nodecare_controller_clusterhealth_condition',
      help: 'The conditions nodecare writes on the ClusterHealth, as this replica last evaluated them: 1 for each condition type and its status (True, False, Progressing, Unknown); at most 64 types.',
      labelNames: ['type', 'status'],
      registers,
    });
    this.suspendedNodes = new Gauge({
      name: 'nodecare_controller_suspended_nodes',
      help: 'Nodes a suspension holds (a SystemExtension with spec.suspend selecting them, or --suspend); held="true": with a taint change nodecare would make and does not.',
      labelNames: ['held'],
      registers,
    });
    this.releasedNodes = new Gauge({
      name: 'nodecare_controller_released_nodes',
      help: 'Nodes that carry a release override (nodecare.io/release-until) by its verdict: active (the controller lifts its taints until the expiry), expired or invalid (ignored).',
      labelNames: ['verdict'],
      registers,
    });
    this.bootstrapDuration = new Histogram({
      name: 'nodecare_controller_bootstrap_duration_seconds',
      help: 'Time from the start of a bootstrap (node creation) to the removal of the bootstrap taint, observed when the leader removes it.',
      buckets: [5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 450, 600, 900, 1800, 3600],
      registers,
    });
    this.runtimeTaintDuration = new Histogram({
      name: 'nodecare_controller_runtime_taint_duration_seconds',
      help: 'How long a node carried the runtime taint, observed when the leader that added it removes it.',
      buckets: [5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400],
      registers,
    });
    this.buildInfo = new Gauge({
      name: 'nodecare_controller_build_info',
      help: 'Always 1; the labels say which nodecare version and Node.js runtime this controller runs.',
      labelNames: ['version', 'nodejs_version'],
      registers,
    });
    this.buildInfo.set({ version: packageVersion(), nodejs_version: process.version }, 1);
    this.featureAvailable = new Gauge({
      name: 'nodecare_controller_feature_available',
      help: 'Whether the API server serves an optional API nodecare uses (1) or not (0), as checked at start.',
      labelNames: ['feature'],
      registers,
    });
  }

  /** Where nodecare_controller_extension_nodes is computed from on each scrape. */
  countExtensionNodes(pairs: () => Iterable<ExtensionPair>, declared: () => ReadonlySet<string>): void {
    this.extensionPairs = { pairs, declared };
  }
}
