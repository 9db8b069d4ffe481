// Maintenance events across leader changes (issue 50 item 8): each replica that leads is a new Reconciler whose
// caches are filled from the objects the earlier ones wrote (FakeNodeApi keeps them), so all it knows of an
// earlier term is what the nodes carry.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildLease } from '../api/lease.ts';
import { ExtensionState, NodeAnnotation } from '../api/names.ts';
import { EventReason, ProbeReason } from '../api/reasons.ts';
import { parseSystemExtension } from '../api/registration.ts';
import { createLogger } from '../lib/log.ts';
import { FakeClock } from '../lib/testing.ts';
import { toCachedLease, type CachedLease } from './cache/index.ts';
import { loadControllerConfig, type ControllerConfig } from './config.ts';
import { toCachedNode } from './ingest.ts';
import { ControllerMetrics } from './metrics.ts';
import { Reconciler } from './reconciler.ts';
import { FakeCache, FakeNodeApi } from './testing.ts';
import { eventRecorder } from './writes/index.ts';

const BOOT = 'boot-1';
const DAY_MS = 24 * 60 * 60 * 1000;

function config(): ControllerConfig {
  const loaded = loadControllerConfig([], {});
  if (!('config' in loaded)) throw new Error('expected a config');
  return loaded.config;
}

/** One bootstrapped node `n` whose gpu is `state`, and the replicas that take turns leading. */
class Fleet {
  readonly clock = new FakeClock();
  readonly api = new FakeNodeApi();
  private readonly leases: CachedLease[] = [];

  constructor(state: ExtensionState) {
    this.api.putNode({
      metadata: {
        name: 'n',
        uid: 'uid-n',
        creationTimestamp: new Date(this.clock.now() - DAY_MS).toISOString(),
        annotations: { [NodeAnnotation.bootstrappedBootId]: BOOT },
      },
      spec: { unschedulable: true },
      status: { nodeInfo: { bootID: BOOT } },
    });
    for (const extension of [undefined, 'gpu']) {
      const lease = toCachedLease(
        buildLease({
          node: { name: 'n', uid: 'uid-n' },
          extension,
          holderIdentity: 'nodecare-agent-n',
          leaseDurationSeconds: 3600,
          renewTime: new Date(this.clock.now()),
          bootId: BOOT,
          record: extension
            ? {
                state,
                reason:
                  state === ExtensionState.Healthy
                    ? ProbeReason.ProbeSucceeded
                    : ProbeReason.ConnectionRefused,
                message: '',
                since: '',
              }
            : undefined,
        }),
      );
      if (!lease) throw new Error('expected a nodecare lease');
      this.leases.push(lease);
    }
  }

  uncordon(): void {
    const node = this.api.node('n');
    if (!node) throw new Error('expected node n');
    this.api.putNode({ ...node, spec: { ...node.spec, unschedulable: false } });
  }

  /** A new replica leads: caches filled from the stored objects, the term started, its pressing nodes reconciled. */
  async newLeader(): Promise<void> {
    const cache = new FakeCache(this.clock);
    cache.systemExtensions.push(
      parseSystemExtension({ metadata: { name: 'gpu' }, spec: { probe: { tcp: { port: 9400 } } } }),
    );
    for (const [name, node] of this.api.nodes) cache.nodes.set(name, toCachedNode(structuredClone(node)));
    for (const lease of this.leases) cache.observeLive(lease);
    const fence = (): void => undefined;
    const reconciler = new Reconciler({
      cache,
      api: this.api,
      fence,
      clock: this.clock,
      log: createLogger({ level: 'silent', name: 'test' }),
      metrics: new ControllerMetrics(new Registry()),
      events: eventRecorder(this.api, 'test', this.clock, fence),
      config: config(),
    });
    cache.leases.refreshObservations();
    for (const name of reconciler.reset().pressing) await reconciler.reconcile(name);
    await new Promise((resolve) => setImmediate(resolve)); // events are recorded without awaiting
  }

  count(reason: string): number {
    return this.api.events.filter((e) => (e.event as { reason: string }).reason === reason).length;
  }
}

describe('maintenance events across leader changes (regression: MaintenanceStarted at every new leader, MaintenanceEnded never)', () => {
  it.each([ExtensionState.Healthy, ExtensionState.Unhealthy])(
    'a cordoned node whose gpu is %s: one MaintenanceStarted and one MaintenanceEnded over five leaders',
    async (state) => {
      const fleet = new Fleet(state);
      await fleet.newLeader();
      expect(fleet.count(EventReason.MaintenanceStarted)).toBe(1);
      await fleet.newLeader();
      await fleet.newLeader();
      expect(fleet.count(EventReason.MaintenanceStarted)).toBe(1);
      // What the new leaders read: the node says nodecare reported this spell.
      expect(fleet.api.node('n')?.metadata?.annotations?.[NodeAnnotation.maintenance]).toBe('Cordoned');

      fleet.uncordon();
      await fleet.newLeader();
      expect(fleet.count(EventReason.MaintenanceEnded)).toBe(1);
      expect(fleet.api.node('n')?.metadata?.annotations?.[NodeAnnotation.maintenance]).toBeUndefined();
      await fleet.newLeader();
      expect([
        fleet.count(EventReason.MaintenanceStarted),
        fleet.count(EventReason.MaintenanceEnded),
      ]).toEqual([1, 1]);
    },
  );
});
