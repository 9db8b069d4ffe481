import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { ConditionReason, EventReason, ProbeReason } from '../../api/reasons.ts';
import { BreakerState } from './breaker.ts';
import { decideNode } from './decide.ts';
import { MaintenanceCause, maintenanceOf, type NodeMaintenance } from './maintenance.ts';
import { NodeState } from './node-state.ts';
import {
  agent,
  applied,
  BOOTSTRAP_TAINT,
  bootstrappedNode,
  ext,
  input,
  leases,
  memory,
  node,
  RUNTIME_TAINT,
  SECOND,
  T0,
} from './testing.ts';

const NOW = T0 + 30 * SECOND;
const FRESH = NOW - 10 * SECOND;
const healthy = { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded };
const unhealthy = { state: ExtensionState.Unhealthy, reason: ProbeReason.ProbeTimeout };
const SINCE = '2026-01-01T00:00:00Z';
const cordoned: NodeMaintenance = {
  cause: MaintenanceCause.Cordoned,
  since: SINCE,
  detail: 'spec.unschedulable',
};

function condition(type: string, status = 'True', extra: Record<string, string> = {}) {
  return { type, status, lastTransitionTime: SINCE, ...extra };
}

describe('maintenanceOf: the MAINTENANCE table, strongest signal first', () => {
  it.each([
    {
      name: 'deletionTimestamp → Deleting',
      facts: { deletionTimestamp: SINCE, unschedulable: true },
      cause: MaintenanceCause.Deleting,
    },
    {
      name: 'GracefulNodeShutdownInProgress True → that',
      facts: { unschedulable: true, conditions: [condition('GracefulNodeShutdownInProgress')] },
      cause: MaintenanceCause.GracefulNodeShutdownInProgress,
    },
    {
      name: "the kubelet's Ready False with 'node is shutting down' → GracefulNodeShutdownInProgress (no gate)",
      facts: {
        conditions: [
          condition('Ready', 'False', { reason: 'KubeletNotReady', message: 'node is shutting down' }),
        ],
      },
      cause: MaintenanceCause.GracefulNodeShutdownInProgress,
    },
    {
      name: 'MaintenanceInProgress True over DrainInProgress and a cordon',
      facts: {
        unschedulable: true,
        conditions: [condition('DrainInProgress'), condition('MaintenanceInProgress')],
      },
      cause: MaintenanceCause.MaintenanceInProgress,
    },
    {
      name: 'DrainInProgress True → that',
      facts: { conditions: [condition('DrainInProgress')] },
      cause: MaintenanceCause.DrainInProgress,
    },
    {
      name: 'Drained True → that',
      facts: { conditions: [condition('Drained')] },
      cause: MaintenanceCause.Drained,
    },
    {
      name: 'spec.unschedulable → Cordoned',
      facts: { unschedulable: true },
      cause: MaintenanceCause.Cordoned,
    },
  ])('$name', ({ facts, cause }) => {
    expect(maintenanceOf(facts).maintenance?.cause).toBe(cause);
  });

  it('no signal, a lifecycle condition False, or a kubelet NotReady for another reason → none', () => {
    expect(maintenanceOf({})).toEqual({});
    expect(
      maintenanceOf({
        unschedulable: false,
        conditions: [
          condition('DrainInProgress', 'False'),
          condition('MaintenanceInProgress', 'Unknown'),
          condition('Ready', 'Unknown', { reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting' }),
        ],
      }),
    ).toEqual({});
  });

  it('dates a cordon by the unschedulable taint, a condition by its transition; Dates are read too', () => {
    expect(
      maintenanceOf({
        unschedulable: true,
        taints: [{ key: 'node.kubernetes.io/unschedulable', timeAdded: new Date(SINCE) }],
      }).maintenance,
    ).toEqual({ cause: 'Cordoned', since: '2026-01-01T00:00:00.000Z', detail: 'spec.unschedulable' });
    expect(
      maintenanceOf({
        conditions: [condition('DrainInProgress', 'True', { reason: 'NodeDrain', message: 'kernel update' })],
      }).maintenance,
    ).toEqual({ cause: 'DrainInProgress', since: SINCE, detail: 'NodeDrain: kernel update' });
  });

  it("keeps a node's words short and inert", () => {
    const m = maintenanceOf({
      conditions: [condition('MaintenanceInProgress', 'True', { message: `\u001b[31m${'x'.repeat(5000)}` })],
    }).maintenance;
    expect(m?.detail.length).toBeLessThan(400);
    expect(m?.detail).not.toContain('\u001b');
  });

  it('MaintenancePlanned True is carried on its own and is not maintenance', () => {
    expect(
      maintenanceOf({ conditions: [condition('MaintenancePlanned', 'True', { reason: 'Reboot' })] }),
    ).toEqual({ planned: { since: SINCE, detail: 'Reboot' } });
  });
});

describe('decideNode for a node in maintenance', () => {
  it('a failing extension: runtime taint added as in service, but InMaintenance, no fault event', () => {
    const d = decideNode(
      input({
        node: bootstrappedNode({ maintenance: cordoned }),
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: unhealthy }),
        previous: memory({ gpu: ExtensionState.Healthy }),
        now: NOW,
      }),
    );
    expect(d.state).toBe(NodeState.Maintenance);
    expect(d.desiredTaints).toEqual({ bootstrap: false, runtime: true });
    expect([d.condition.status, d.condition.reason, d.label]).toEqual([
      'False',
      'InMaintenance',
      'maintenance',
    ]);
    expect(d.condition.message).toMatch(
      /^In maintenance since 2026-01-01T00:00:00Z \(Cordoned: spec.unschedulable\): .*gpu Unhealthy \(ProbeTimeout\)/,
    );
    expect(d.events.map((e) => e.reason)).toEqual([
      EventReason.MaintenanceStarted,
      EventReason.RuntimeTaintAdded,
    ]);
    expect(d.memory.extensionStates.get('gpu')?.state).toBe(ExtensionState.Healthy);
    expect(d.memory.maintenanceReported).toBe(true);
  });

  it('a recovery never lifts a taint while maintained; the first decision after it does', () => {
    const during = input({
      node: bootstrappedNode({ taints: [RUNTIME_TAINT], maintenance: cordoned }),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: healthy }),
      previous: memory({ gpu: ExtensionState.Unhealthy }, { maintenanceReported: true }),
      now: NOW,
    });
    const d = decideNode(during);
    expect(d.desiredTaints.runtime).toBe(true);
    expect(d.events).toEqual([]);
    expect(d.condition.reason).toBe(ConditionReason.AllExtensionsHealthy);
    expect(d.state).toBe(NodeState.Maintenance);

    const after = decideNode({
      ...during,
      node: bootstrappedNode({ taints: [RUNTIME_TAINT] }),
      previous: d.memory,
    });
    expect(after.state).toBe(NodeState.Ready);
    expect(after.desiredTaints.runtime).toBe(false);
    expect(after.events.map((e) => e.reason)).toEqual([
      EventReason.MaintenanceEnded,
      EventReason.RuntimeTaintRemoved,
    ]);
  });

  it('a failure that began in maintenance is reported once it ends', () => {
    const during = decideNode(
      input({
        node: bootstrappedNode({ maintenance: cordoned }),
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: unhealthy }),
        previous: memory({ gpu: ExtensionState.Healthy }),
        now: NOW,
      }),
    );
    const after = decideNode(
      input({
        node: applied(bootstrappedNode({ maintenance: cordoned }), during),
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: unhealthy }),
        previous: during.memory,
        now: NOW,
      }),
    );
    expect(after.events).toEqual([]);
    const { maintenance: _gone, ...inService } = applied(bootstrappedNode({ maintenance: cordoned }), after);
    const ended = decideNode(
      input({
        node: inService,
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: unhealthy }),
        previous: after.memory,
        now: NOW,
      }),
    );
    expect(ended.state).toBe(NodeState.Degraded);
    expect(ended.events.map((e) => e.reason)).toEqual([
      EventReason.MaintenanceEnded,
      EventReason.ExtensionUnhealthy,
    ]);
  });

  it('a bootstrap does not complete while maintained: its taint and marker stay', () => {
    const d = decideNode(
      input({
        node: node({ taints: [BOOTSTRAP_TAINT], maintenance: cordoned }),
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: healthy }),
        now: NOW,
      }),
    );
    expect(d.desiredTaints.bootstrap).toBe(true);
    // The bootstrapped marker is not written; the maintenance marker is.
    expect(d.desiredAnnotations).toEqual({ maintenance: MaintenanceCause.Cordoned });
    expect(d.events.map((e) => e.reason)).toEqual([EventReason.MaintenanceStarted]);
    const released = decideNode(
      input({
        node: node({ taints: [BOOTSTRAP_TAINT] }),
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: healthy }),
        previous: d.memory,
        now: NOW,
      }),
    );
    expect(released.desiredTaints.bootstrap).toBe(false);
    expect(released.desiredAnnotations.bootstrappedBootId).toBe('boot-1');
  });

  it("a maintained node whose kubelet is not Ready: no NodeNotReady warning, the kubelet's word in the message", () => {
    const d = decideNode(
      input({
        node: bootstrappedNode({
          maintenance: { cause: MaintenanceCause.GracefulNodeShutdownInProgress, since: SINCE, detail: '' },
          kubeletNotReady: {
            status: 'False',
            reason: 'KubeletNotReady',
            message: 'node is shutting down',
            since: '',
          },
        }),
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: healthy }),
        now: NOW,
      }),
    );
    expect(d.state).toBe(NodeState.Maintenance);
    expect(d.condition.reason).toBe(ConditionReason.InMaintenance);
    expect(d.condition.message).toContain('The kubelet reports Ready=False');
    expect(d.events.map((e) => e.reason)).toEqual([EventReason.MaintenanceStarted]);
    expect(d.memory.notReadyReported).toBe(false);
  });

  it('MaintenanceStarted once per spell, also across a controller restart (the condition on the node)', () => {
    const base = {
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthy }),
      now: NOW,
    };
    const first = decideNode(input({ ...base, node: bootstrappedNode({ maintenance: cordoned }) }));
    const written = applied(bootstrappedNode({ maintenance: cordoned }), first);
    expect(decideNode(input({ ...base, node: written, previous: first.memory })).events).toEqual([]);
    expect(decideNode(input({ ...base, node: written })).events).toEqual([]);
  });

  it.each([
    { name: 'healthy', gpu: healthy },
    { name: 'unhealthy', gpu: unhealthy },
  ])(
    'a maintained node with $name extensions: MaintenanceStarted once and MaintenanceEnded once, whatever the leader changes (regression: Started at every new leader, Ended never)',
    ({ gpu }) => {
      const base = { required: [ext('gpu')], agent: agent(FRESH), leases: leases(FRESH, { gpu }), now: NOW };
      const reasons = (d: { events: Array<{ reason: string }> }) => d.events.map((e) => e.reason);
      const started = decideNode(input({ ...base, node: bootstrappedNode({ maintenance: cordoned }) }));
      expect(reasons(started)).toContain(EventReason.MaintenanceStarted);
      let node = applied(bootstrappedNode({ maintenance: cordoned }), started);
      // Two leader changes during the spell: each new leader decides the node as written, with no memory.
      for (let term = 0; term < 2; term++) {
        const d = decideNode(input({ ...base, node }));
        expect(reasons(d)).not.toContain(EventReason.MaintenanceStarted);
        node = applied(node, d);
      }
      // Uncordoned, decided by yet another new leader.
      const { maintenance: _over, ...inService } = node;
      const ended = decideNode(input({ ...base, node: inService }));
      expect(reasons(ended)).toContain(EventReason.MaintenanceEnded);
      // Once: the leader after that one says it no more.
      const after = applied(inService, ended);
      expect(reasons(decideNode(input({ ...base, node: after })))).not.toContain(
        EventReason.MaintenanceEnded,
      );
      expect(reasons(decideNode(input({ ...base, node: after, previous: ended.memory })))).not.toContain(
        EventReason.MaintenanceEnded,
      );
    },
  );

  it('MaintenancePlanned is carried and changes nothing', () => {
    const facts = {
      node: bootstrappedNode(),
      required: [ext('gpu')],
      agent: agent(FRESH),
      leases: leases(FRESH, { gpu: unhealthy }),
      now: NOW,
    };
    const plain = decideNode(input(facts));
    const planned = decideNode(
      input({ ...facts, node: bootstrappedNode({ maintenancePlanned: { since: SINCE, detail: 'Reboot' } }) }),
    );
    const { maintenancePlanned, ...rest } = planned;
    expect(maintenancePlanned).toEqual({ since: SINCE, detail: 'Reboot' });
    expect(rest).toEqual(plain);
  });

  it('the breaker does not count maintained nodes: a fleet-wide drain never trips it', () => {
    const tripped = (maintenance: NodeMaintenance | undefined) => {
      const breaker = new BreakerState({ maxUnhealthyFraction: 0.5, minFailing: 3 });
      for (let i = 0; i < 10; i++) {
        const n = bootstrappedNode({ name: `node-${i}`, ...(maintenance ? { maintenance } : {}) });
        breaker.apply(
          n.name,
          decideNode(
            input({
              node: n,
              required: [{ ...ext('gpu'), source: 'systemExtension' }],
              agent: agent(FRESH),
              leases: leases(FRESH, { gpu: unhealthy }),
              now: NOW,
            }),
          ),
        );
      }
      return [...breaker.evaluate().tripped];
    };
    expect(tripped(cordoned)).toEqual([]);
    expect(tripped(undefined)).toEqual(['gpu']);
  });
});
