// The controller's view of the cluster: Nodes, nodecare Leases and SystemExtensions, each stripped on ingest
// to what the decision reads (a few hundred bytes per object instead of tens of KB; docs/adr/0001).
// Lease staleness is judged from `observedAtMs`: the controller's own clock when it saw renewTime change,
// reset to "now" for every lease on start-up and on becoming leader (SPEC section 5).

import {
  EXTENSION_ANNOTATION_PREFIX,
  GROUP_VERSION,
  LEASE_NAMESPACE,
  LeaseLabel,
  LeaseRole,
  NODE_CONDITION_TYPE,
  NodeAnnotation,
  SYSTEM_EXTENSION,
  decodeLease,
  parseSystemExtension,
  type LeaseObject,
  type ObservedLease,
  type ParsedSystemExtension,
  type SystemExtensionObject,
} from '../api/index.ts';
import type { Clock } from '../lib/clock.ts';
import type { KubeClient } from '../lib/kube/client.ts';
import { Reflector } from '../lib/kube/reflector.ts';
import type { NodeTaint, ObservedNode, SeenLease } from './decide/index.ts';

export interface CachedNode extends ObservedNode {
  resourceVersion: string;
  /** lastTransitionTime of the current ExtensionsReady condition (kept when only reason/message change). */
  conditionTransitionTime: string | undefined;
}

interface RawNode {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { taints?: NodeTaint[] };
  status?: {
    nodeInfo?: { bootID?: string };
    conditions?: Array<{
      type: string;
      status: string;
      reason?: string;
      message?: string;
      lastTransitionTime?: string;
    }>;
  };
}

export function toCachedNode(raw: RawNode): CachedNode {
  const annotations: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw.metadata?.annotations ?? {})) {
    if (key.startsWith(EXTENSION_ANNOTATION_PREFIX) || key === NodeAnnotation.bootstrappedBootId)
      annotations[key] = value;
  }
  const condition = raw.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE);
  return {
    name: raw.metadata?.name ?? '',
    uid: raw.metadata?.uid ?? '',
    resourceVersion: raw.metadata?.resourceVersion ?? '',
    creationTimestampMs: Date.parse(raw.metadata?.creationTimestamp ?? '') || 0,
    bootId: raw.status?.nodeInfo?.bootID ?? '',
    labels: raw.metadata?.labels ?? {},
    annotations,
    taints: (raw.spec?.taints ?? []).map(({ key, value, effect }) =>
      value === undefined ? { key, effect } : { key, value, effect },
    ),
    extensionsReadyCondition: condition
      ? { status: condition.status, reason: condition.reason ?? '', message: condition.message ?? '' }
      : undefined,
    conditionTransitionTime: condition?.lastTransitionTime,
  };
}

/** Two stripped nodes that differ only in resourceVersion give the same decision: no reconcile needed. */
function sameForDecision(a: CachedNode, b: CachedNode): boolean {
  return JSON.stringify({ ...a, resourceVersion: '' }) === JSON.stringify({ ...b, resourceVersion: '' });
}

/** True when a lease update changed nothing but renewTime (and the resourceVersion that comes with it). */
function onlyRenewed(lease: ObservedLease, old: ObservedLease): boolean {
  return (
    JSON.stringify({ ...lease, renewTime: '', resourceVersion: '' }) ===
    JSON.stringify({ ...old, renewTime: '', resourceVersion: '' })
  );
}

export interface CacheEvents {
  nodeChanged(name: string): void;
  /** SystemExtensions changed: any node may be affected. */
  allNodesChanged(): void;
  error(source: string, err: unknown): void;
}

export class ClusterCache {
  readonly nodes: Reflector<RawNode, CachedNode>;
  readonly leases: Reflector<LeaseObject, ObservedLease>;
  readonly systemExtensions: Reflector<SystemExtensionObject, ParsedSystemExtension>;
  /** Lease name → controller clock when its renewTime was last seen to change. */
  private readonly observedAt = new Map<string, number>();
  /** Node name → its lease names. */
  private readonly leasesByNode = new Map<string, Set<string>>();
  private readonly clock: Clock;

  constructor(client: KubeClient, clock: Clock, events: CacheEvents) {
    this.clock = clock;
    this.nodes = new Reflector({
      client,
      clock,
      path: '/api/v1/nodes',
      transform: toCachedNode,
      handlers: {
        added: (node) => events.nodeChanged(node.name),
        updated: (node, old) => {
          if (!sameForDecision(node, old)) events.nodeChanged(node.name);
        },
        deleted: (node) => events.nodeChanged(node.name),
        error: (err) => events.error('nodes', err),
      },
    });
    this.leases = new Reflector({
      client,
      clock,
      path: `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases`,
      labelSelector: LeaseLabel.role,
      transform: decodeLease,
      handlers: {
        added: (lease) => {
          this.observedAt.set(lease.name, clock.now());
          this.index(lease);
          events.nodeChanged(lease.node);
        },
        updated: (lease, old) => {
          const now = clock.now();
          const lastSeen = this.observedAt.get(lease.name) ?? now;
          const wasExpired = now - lastSeen >= old.leaseDurationSeconds * 1000;
          if (lease.renewTime !== old.renewTime) this.observedAt.set(lease.name, now);
          if (lease.node !== old.node) this.unindex(old);
          this.index(lease);
          // A renewal of a live lease changes nothing the decision reads now: the node's pending deadline (the
          // lease's old expiry) re-checks it, which saves a reconcile per heartbeat (500/s at 5,000 nodes). A
          // renewal that revives an expired lease (an agent back from the dead) is a change.
          if (wasExpired || !onlyRenewed(lease, old)) events.nodeChanged(lease.node);
        },
        deleted: (lease) => {
          this.observedAt.delete(lease.name);
          this.unindex(lease);
          events.nodeChanged(lease.node);
        },
        error: (err) => events.error('leases', err),
      },
    });
    this.systemExtensions = new Reflector({
      client,
      clock,
      path: `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`,
      transform: parseSystemExtension,
      handlers: {
        added: () => events.allNodesChanged(),
        updated: () => events.allNodesChanged(),
        deleted: () => events.allNodesChanged(),
        error: (err) => events.error('systemextensions', err),
      },
    });
  }

  private index(lease: ObservedLease): void {
    let names = this.leasesByNode.get(lease.node);
    if (!names) {
      names = new Set();
      this.leasesByNode.set(lease.node, names);
    }
    names.add(lease.name);
  }

  private unindex(lease: ObservedLease): void {
    const names = this.leasesByNode.get(lease.node);
    names?.delete(lease.name);
    if (names?.size === 0) this.leasesByNode.delete(lease.node);
  }

  start(): void {
    this.nodes.start();
    this.leases.start();
    this.systemExtensions.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.nodes.stop(), this.leases.stop(), this.systemExtensions.stop()]);
  }

  get synced(): boolean {
    return this.nodes.synced && this.leases.synced && this.systemExtensions.synced;
  }

  node(name: string): CachedNode | undefined {
    return this.nodes.store.get(name);
  }

  nodeNames(): IterableIterator<string> {
    return this.nodes.store.keys();
  }

  /** Every lease gets a fresh full duration from now (after start-up or a leader change). */
  refreshObservations(): void {
    const now = this.clock.now();
    for (const name of this.observedAt.keys()) this.observedAt.set(name, now);
  }

  /** Records a lease read live (before acting on staleness); returns true when it was renewed meanwhile. */
  observeLive(lease: ObservedLease): boolean {
    const key = `${LEASE_NAMESPACE}/${lease.name}`;
    const cached = this.leases.store.get(key);
    if (cached && cached.renewTime === lease.renewTime) return false;
    this.leases.store.set(key, lease);
    this.observedAt.set(lease.name, this.clock.now());
    this.index(lease);
    return true;
  }

  /** The node's extension leases by extension name, and its agent heartbeat. */
  leasesOf(nodeName: string): { extensions: Map<string, SeenLease>; agent: SeenLease | undefined } {
    const extensions = new Map<string, SeenLease>();
    let agent: SeenLease | undefined;
    for (const name of this.leasesByNode.get(nodeName) ?? []) {
      const lease = this.leases.store.get(`${LEASE_NAMESPACE}/${name}`);
      if (!lease) continue;
      const seen = { lease, observedAtMs: this.observedAt.get(name) ?? this.clock.now() };
      if (lease.role === LeaseRole.agent) agent = seen;
      else if (lease.extension) extensions.set(lease.extension, seen);
    }
    return { extensions, agent };
  }
}
