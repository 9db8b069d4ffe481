// Hand-written fakes of the controller's ports for unit tests (docs/conventions.md 5): FakeNodeApi keeps Nodes and
// Leases with resourceVersion semantics (a stale precondition gets 409, as from the API server) and injects
// faults with `failNext(op, error)` or runs a test's step just before a call with `beforeNext(op, fn)`;
// FakeCache is the reconciler's cache port over plain maps and the real LeaseIndex.

import type { DaemonSetObject } from '../api/scheduling.ts';
import type { LeaseObject } from '../api/lease.ts';
import type { ParsedSystemExtension } from '../api/registration.ts';
import type { Clock } from '../lib/clock.ts';
import { KubeError, KubeErrorCode } from '../lib/kube/errors.ts';
import {
  LeaseIndex,
  toCachedNode,
  type CachedLease,
  type CachedNode,
  type NodeLeases,
  type NodeObject,
  WrittenNodes,
} from './cache/index.ts';
import type { ReconcilerCache } from './node-decider.ts';
import type { NodeApi } from './writes/index.ts';

export type NodeApiOp = keyof NodeApi;

interface MergePatch {
  metadata?: {
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string | null>;
  };
  spec?: { taints?: NonNullable<NonNullable<NodeObject['spec']>['taints']> };
  status?: { conditions?: NonNullable<NonNullable<NodeObject['status']>['conditions']> };
}

export class FakeNodeApi implements NodeApi {
  readonly nodes = new Map<string, NodeObject>();
  /** By lease name (one namespace is enough for the controller). */
  readonly leases = new Map<string, LeaseObject>();
  readonly events: Array<{ namespace: string; event: object }> = [];
  /** Every call that reached the fake, in order. */
  readonly calls: Array<{ op: NodeApiOp; name: string; body?: object }> = [];
  private readonly faults: Array<{ op: NodeApiOp; error: Error }> = [];
  private readonly steps: Array<{ op: NodeApiOp; fn: () => void | Promise<void> }> = [];
  private version = 100;

  static conflict(): KubeError {
    return new KubeError(KubeErrorCode.Conflict, 409, 'injected conflict');
  }

  static notFound(): KubeError {
    return new KubeError(KubeErrorCode.NotFound, 404, 'not found');
  }

  /** The next call of `op` fails with `error`. */
  failNext(op: NodeApiOp, error: Error): void {
    this.faults.push({ op, error });
  }

  /** Runs `fn` when `op` is next called, before it is answered (the world changes while the call is out). */
  beforeNext(op: NodeApiOp, fn: () => void | Promise<void>): void {
    this.steps.push({ op, fn });
  }

  /** Stores a node as another writer would (new resourceVersion); returns it as the cache would see it. */
  putNode(node: NodeObject): CachedNode {
    return toCachedNode(this.stamp(node));
  }

  putLease(lease: LeaseObject): void {
    this.leases.set(lease.metadata.name ?? '', structuredClone(lease));
  }

  node(name: string): NodeObject | undefined {
    const node = this.nodes.get(name);
    return node && structuredClone(node);
  }

  writes(): Array<{ op: NodeApiOp; name: string; body?: object }> {
    return this.calls.filter(
      (c) =>
        c.op === 'patchNode' || c.op === 'patchNodeStatus' || c.op === 'createEvent' || c.op === 'patchEvent',
    );
  }

  async getNode(name: string): Promise<NodeObject> {
    await this.enter('getNode', name);
    return this.existing(name);
  }

  async patchNode(name: string, patch: object): Promise<NodeObject> {
    await this.enter('patchNode', name, patch);
    const node = this.existing(name);
    const { metadata = {}, spec } = this.checked(node, patch);
    FakeNodeApi.mergeMetadata(node, metadata);
    if (spec?.taints) node.spec = { ...node.spec, taints: spec.taints };
    return this.stamp(node);
  }

  /** Labels and annotations merged as both patch types do: a key set to null is removed. */
  private static mergeMetadata(node: NodeObject, metadata: NonNullable<MergePatch['metadata']>): void {
    const merged = (current?: Record<string, string>, patch?: Record<string, string | null>) =>
      Object.fromEntries(Object.entries({ ...current, ...patch }).filter(([, v]) => v !== null)) as Record<
        string,
        string
      >;
    node.metadata = {
      ...node.metadata,
      labels: merged(node.metadata?.labels, metadata.labels),
      annotations: merged(node.metadata?.annotations, metadata.annotations),
    };
  }

  async patchNodeStatus(name: string, patch: object): Promise<NodeObject> {
    await this.enter('patchNodeStatus', name, patch);
    const node = this.existing(name);
    // As the API server's status strategy: metadata is kept, spec is dropped.
    const { metadata = {}, status } = this.checked(node, patch);
    FakeNodeApi.mergeMetadata(node, metadata);
    // Strategic merge on the condition type: other conditions stay.
    const conditions = [...(node.status?.conditions ?? [])];
    for (const condition of status?.conditions ?? []) {
      const index = conditions.findIndex((c) => c.type === condition.type);
      if (index >= 0) conditions[index] = condition;
      else conditions.push(condition);
    }
    node.status = { ...node.status, conditions };
    return this.stamp(node);
  }

  async getLease(_namespace: string, name: string): Promise<LeaseObject> {
    await this.enter('getLease', name);
    const lease = this.leases.get(name);
    if (!lease) throw FakeNodeApi.notFound();
    return structuredClone(lease);
  }

  async createEvent(namespace: string, event: object): Promise<void> {
    await this.enter('createEvent', '', event);
    this.events.push({ namespace, event: structuredClone(event) });
  }

  /** Merges `patch` into the stored Event of that name (404 when there is none, as from the API server). */
  async patchEvent(namespace: string, name: string, patch: object): Promise<void> {
    await this.enter('patchEvent', name, patch);
    const stored = this.events.find(
      (e) => e.namespace === namespace && (e.event as { metadata: { name: string } }).metadata.name === name,
    );
    if (!stored) throw FakeNodeApi.notFound();
    Object.assign(stored.event, structuredClone(patch));
  }

  private async enter(op: NodeApiOp, name: string, body?: object): Promise<void> {
    this.calls.push({ op, name, ...(body ? { body: structuredClone(body) } : {}) });
    const step = this.steps.findIndex((s) => s.op === op);
    if (step >= 0) await this.steps.splice(step, 1)[0]?.fn();
    const fault = this.faults.findIndex((f) => f.op === op);
    if (fault >= 0) throw this.faults.splice(fault, 1)[0]?.error;
  }

  private existing(name: string): NodeObject {
    const node = this.nodes.get(name);
    if (!node) throw FakeNodeApi.notFound();
    return structuredClone(node);
  }

  /** A patch carrying a resourceVersion applies only to that version, as on the API server. */
  private checked(node: NodeObject, patch: object): MergePatch {
    const p = patch as MergePatch;
    const precondition = p.metadata?.resourceVersion;
    if (precondition !== undefined && precondition !== node.metadata?.resourceVersion)
      throw FakeNodeApi.conflict();
    return p;
  }

  private stamp(node: NodeObject): NodeObject {
    const copy = structuredClone(node);
    copy.metadata = { ...copy.metadata, resourceVersion: String(++this.version) };
    this.nodes.set(copy.metadata.name ?? '', copy);
    return structuredClone(copy);
  }
}

/**
 * The reconciler's cache port over plain maps (`nodes` is the watch's copy), with the real LeaseIndex for the
 * leases and the real WrittenNodes for the controller's own writes.
 */
export class FakeCache implements ReconcilerCache {
  readonly nodes = new Map<string, CachedNode>();
  readonly systemExtensions: ParsedSystemExtension[] = [];
  readonly daemonSets: DaemonSetObject[] = [];
  readonly leases: LeaseIndex;
  readonly written = new WrittenNodes();

  constructor(clock: Clock) {
    this.leases = new LeaseIndex(clock, {});
  }

  node(name: string): CachedNode | undefined {
    return this.written.read(name, this.nodes.get(name));
  }

  noteWritten(node: CachedNode): void {
    this.written.note(node, this.nodes.get(node.name));
  }

  nodeNames(): IterableIterator<string> {
    return this.nodes.keys();
  }

  systemExtensionList(): Iterable<ParsedSystemExtension> {
    return this.systemExtensions;
  }

  daemonSetList(): Iterable<DaemonSetObject> {
    return this.daemonSets;
  }

  observeLive(lease: CachedLease): boolean {
    return this.leases.observeLive(lease);
  }

  leasesOf(nodeName: string): NodeLeases {
    return this.leases.leasesOf({ name: nodeName, uid: this.node(nodeName)?.uid ?? '' });
  }

  leaseExpiresAtMs(leaseName: string, nodeName: string): number | undefined {
    return this.leases.expiresAtMs(leaseName, nodeName);
  }
}
