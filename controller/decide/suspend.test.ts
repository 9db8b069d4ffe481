import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { EventReason, ProbeReason } from '../../api/reasons.ts';
import { BreakerState } from './breaker.ts';
import { decideNode } from './decide.ts';
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
  POLICY,
  RUNTIME_TAINT,
  SECOND,
  T0,
} from './testing.ts';
import type { DecisionInput } from './types.ts';

const NOW = T0 + 30 * SECOND;
const FRESH = NOW - 10 * SECOND;
const healthy = { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded };
const unhealthy = { state: ExtensionState.Unhealthy, reason: ProbeReason.ProbeTimeout };
const BY = ['SystemExtension gpu'];

function failing(over: Partial<DecisionInput> = {}): DecisionInput {
  return input({
    node: bootstrappedNode(),
    required: [{ ...ext('gpu'), source: 'systemExtension' }],
    agent: agent(FRESH),
    leases: leases(FRESH, { gpu: unhealthy }),
    previous: memory({ gpu: ExtensionState.Healthy }),
    now: NOW,
    ...over,
  });
}

describe('decideNode under a suspension: taint changes held and reported', () => {
  it('a failure that would add the runtime taint: held, one TaintChangeSuspended, the rest reported as usual', () => {
    const d = decideNode(failing({ suspendedBy: BY }));
    expect(d.desiredTaints).toEqual({ bootstrap: false, runtime: false });
    expect(d.suspended).toEqual({ by: BY, wouldChange: [`add the runtime taint ${POLICY.runtimeTaintKey}`] });
    expect(d.condition.reason).toBe('ExtensionsUnhealthy');
    expect(d.state).toBe(NodeState.Degraded);
    expect(d.events.map((e) => e.reason)).toEqual([
      EventReason.ExtensionUnhealthy,
      EventReason.TaintChangeSuspended,
    ]);
    expect(d.events.at(-1)?.message).toBe(
      `Suspended by SystemExtension gpu: would add the runtime taint ${POLICY.runtimeTaintKey} (ExtensionsUnhealthy). Nothing is written until the suspension is lifted.`,
    );
    // Reported once while the same change is held.
    const again = decideNode(
      failing({ suspendedBy: BY, node: applied(bootstrappedNode(), d), previous: d.memory }),
    );
    expect(again.events).toEqual([]);
    expect(again.desiredTaints.runtime).toBe(false);
  });

  it('a recovery that would lift the runtime taint: held too', () => {
    const d = decideNode(
      failing({
        suspendedBy: BY,
        node: bootstrappedNode({ taints: [RUNTIME_TAINT] }),
        leases: leases(FRESH, { gpu: healthy }),
        previous: memory({ gpu: ExtensionState.Unhealthy }),
      }),
    );
    expect(d.desiredTaints.runtime).toBe(true);
    expect(d.suspended?.wouldChange).toEqual([`remove the runtime taint ${POLICY.runtimeTaintKey}`]);
  });

  it('a bootstrap that would complete: its taint and marker stay', () => {
    const d = decideNode(
      input({
        node: node({ taints: [BOOTSTRAP_TAINT] }),
        required: [ext('gpu')],
        agent: agent(FRESH),
        leases: leases(FRESH, { gpu: healthy }),
        now: NOW,
        suspendedBy: ['the controller (--suspend)'],
      }),
    );
    expect(d.desiredTaints.bootstrap).toBe(true);
    expect(d.desiredAnnotations).toEqual({});
    expect(d.events.map((e) => e.reason)).toEqual([EventReason.TaintChangeSuspended]);
  });

  it('nothing to change: suspended, nothing held, no event', () => {
    const d = decideNode(failing({ suspendedBy: BY, leases: leases(FRESH, { gpu: healthy }) }));
    expect(d.suspended).toEqual({ by: BY, wouldChange: [] });
    expect(d.events).toEqual([]);
  });

  it('lifted: the held change is written, and the breaker judged during the suspension holds back a correlated failure', () => {
    const breaker = new BreakerState({ maxUnhealthyFraction: 0.5, minFailing: 3 });
    const names = ['n1', 'n2', 'n3', 'n4'];
    for (const name of names)
      breaker.apply(name, decideNode(failing({ suspendedBy: BY, node: bootstrappedNode({ name }) })));
    const tripped = breaker.evaluate().tripped;
    expect([...tripped]).toEqual(['gpu']);
    const resumed = decideNode(failing({ policy: { ...POLICY, trippedExtensions: tripped } }));
    expect(resumed.desiredTaints.runtime).toBe(false);
    // One node failing alone on resume gets its taint.
    expect(decideNode(failing()).desiredTaints.runtime).toBe(true);
  });
});
