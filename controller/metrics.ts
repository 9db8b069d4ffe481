// nodecare-controller metrics (docs/conventions.md 12): nodecare_controller_ prefix, base units, bounded labels.

import { Counter, Gauge, Histogram, collectDefaultMetrics, type Registry } from 'prom-client';

export class ControllerMetrics {
  readonly nodes: Gauge<'state'>;
  readonly reconcileDuration: Histogram;
  readonly reconciles: Counter<'result'>;
  readonly nodeWrites: Counter<'kind' | 'result'>;
  readonly events: Counter<'reason'>;
  readonly breakerTripped: Gauge<'extension'>;
  readonly isLeader: Gauge;
  readonly queueDepth: Gauge;
  readonly watchErrors: Counter<'source'>;
  readonly extensionNodes: Gauge<'extension' | 'state'>;
  readonly evictions: Counter<'outcome'>;
  readonly leasesIgnored: Gauge<'reason'>;
  readonly rollupWrites: Counter<'kind' | 'result'>;
  readonly rollupDuration: Histogram;

  constructor(registry: Registry) {
    collectDefaultMetrics({ register: registry });
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
    this.nodeWrites = new Counter({
      name: 'nodecare_controller_node_writes_total',
      help: 'Writes to Nodes by kind (node: taints/label/annotation; condition) and result.',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.events = new Counter({
      name: 'nodecare_controller_events_total',
      help: 'Events recorded by reason.',
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
    this.extensionNodes = new Gauge({
      name: 'nodecare_controller_extension_nodes',
      help: 'Nodes per extension and effective state.',
      labelNames: ['extension', 'state'],
      registers,
    });
    this.evictions = new Counter({
      name: 'nodecare_controller_pod_evictions_total',
      help: 'Pod eviction attempts by outcome.',
      labelNames: ['outcome'],
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
      help: 'Writes of the roll-up by kind (clusterhealth, systemextension) and result (ok, created, conflict, error).',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.rollupDuration = new Histogram({
      name: 'nodecare_controller_rollup_evaluation_duration_seconds',
      help: 'Time to evaluate the ClusterHealth roll-up over every (node, extension) pair.',
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
  }
}
