import { describe, expect, it } from 'vitest';
import { ExtensionState, NodeAnnotation, NodeOverrideAnnotation } from '../../api/names.ts';
import { EventReason, ProbeReason } from '../../api/reasons.ts';
import { decideNode } from './decide.ts';
import { judgeRelease } from './override.ts';
import {
  agent,
  applied,
  BOOTSTRAP_TAINT,
  bootstrappedNode,
  ext,
  input,
  leases,
  memory,
  MINUTE,
  node,
  POLICY,
  RUNTIME_TAINT,
  SECOND,
  T0,
} from './testing.ts';
import type { DecisionInput } from './types.ts';

const NOW = T0 + 30 * SECOND;
const FRESH = NOW - 10 * SECOND;
const unhealthy = { state: ExtensionState.Unhealthy, reason: ProbeReason.ProbeTimeout };
const iso = (ms: number) => new Date(ms).toISOString();
const UNTIL = iso(NOW + 30 * MINUTE);
const release = (until: string, reason = 'replacing the GPU driver by hand') => ({
  [NodeOverrideAnnotation.releaseUntil]: until,
  [NodeOverrideAnnotation.releaseReason]: reason,
});

/** A bootstrapped node whose critical extension fails and that carries the runtime taint. */
function degraded(annotations: Record<string, string>, over: Partial<DecisionInput> = {}): DecisionInput {
  return input({
    node: bootstrappedNode({
      taints: [RUNTIME_TAINT],
      annotations: { [NodeAnnotation.bootstrappedBootId]: 'boot-1', ...annotations },
    }),
    required: [{ ...ext('gpu'), source: 'systemExtension' }],
    agent: agent(FRESH),
    leases: leases(FRESH, { gpu: unhealthy }),
    previous: memory({ gpu: { ...unhealthy, message: '' } }),
    now: NOW,
    ...over,
  });
}

const reasons = (d: { events: { reason: string }[] }) => d.events.map((e) => e.reason);

describe('judgeRelease: the RELEASE table', () => {
  it.each([
    ['absent', {}, undefined],
    ['ahead within 24 h', release(UNTIL), 'active'],
    ['with an offset', release('2026-01-01T01:00:30+01:00'), 'expired'],
    ['exactly now', release(iso(NOW)), 'expired'],
    ['past', release(iso(NOW - MINUTE)), 'expired'],
    ['24 h ahead', release(iso(NOW + 24 * 60 * MINUTE)), 'active'],
    ['more than 24 h ahead', release(iso(NOW + 24 * 60 * MINUTE + SECOND)), 'invalid'],
    ['not a time', release('tomorrow'), 'invalid'],
    ['a date only', release('2026-01-02'), 'invalid'],
    ['empty', release(''), 'invalid'],
  ])('%s → %s', (_name, annotations, verdict) => {
    expect(judgeRelease(annotations, NOW)?.verdict).toBe(verdict);
  });
});

describe('decideNode under a release override', () => {
  it('no annotation: the same decision as without the feature', () => {
    const d = decideNode(degraded({}));
    expect(d.desiredTaints).toEqual({ bootstrap: false, runtime: true });
    expect(d.release).toBeUndefined();
  });

  it('active on a Degraded node: the controller lifts the runtime taint, says so once, and wakes at the expiry', () => {
    const d = decideNode(degraded(release(UNTIL)));
    expect(d.desiredTaints).toEqual({ bootstrap: false, runtime: false });
    expect(d.release).toMatchObject({
      verdict: 'active',
      until: UNTIL,
      reason: 'replacing the GPU driver by hand',
      lifted: [`remove the runtime taint ${POLICY.runtimeTaintKey}`],
    });
    expect(reasons(d)).toContain(EventReason.ReleaseStarted);
    expect(d.events[0]?.message).toContain(`release until ${UNTIL} (replacing the GPU driver by hand)`);
    expect(d.condition.message.startsWith(`Released: release until ${UNTIL}`)).toBe(true);
    expect(d.condition.reason).toBe('ExtensionsUnhealthy');
    expect(d.nextDeadlineMs).toBeLessThanOrEqual(Date.parse(UNTIL));
    const again = decideNode(
      degraded(release(UNTIL), { node: applied(degraded(release(UNTIL)).node, d), previous: d.memory }),
    );
    expect(again.desiredTaints.runtime).toBe(false);
    expect(reasons(again)).not.toContain(EventReason.ReleaseStarted);
  });

  it('expired: the runtime taint comes back, one ReleaseEnded, then none', () => {
    const active = decideNode(degraded(release(UNTIL)));
    const later = Date.parse(UNTIL) + SECOND;
    const lifted = applied(degraded(release(UNTIL)).node, active);
    const over = {
      node: lifted,
      previous: active.memory,
      now: later,
      monotonicNow: later,
      agent: agent(later - SECOND),
      leases: leases(later - SECOND, { gpu: unhealthy }),
    };
    const d = decideNode(degraded(release(UNTIL), over));
    expect(d.desiredTaints.runtime).toBe(true);
    expect(d.release?.verdict).toBe('expired');
    expect(reasons(d)).toContain(EventReason.ReleaseEnded);
    expect(reasons(d)).toContain(EventReason.RuntimeTaintAdded);
    const again = decideNode(
      degraded(release(UNTIL), { ...over, node: applied(lifted, d), previous: d.memory }),
    );
    expect(again.desiredTaints.runtime).toBe(true);
    expect(reasons(again)).toEqual([]);
  });

  it.each([
    ['not a time', 'tomorrow', 'not an RFC 3339 time'],
    ['too far ahead', iso(NOW + 25 * 60 * MINUTE), 'more than 24 hours ahead'],
  ])('%s: one Warning ReleaseInvalid, the taint stays, nothing lost', (_name, until, problem) => {
    const d = decideNode(degraded(release(until)));
    expect(d.desiredTaints).toEqual({ bootstrap: false, runtime: true });
    expect(d.release).toMatchObject({ verdict: 'invalid', problem: expect.stringContaining(problem) });
    const warning = d.events.find((e) => e.reason === EventReason.ReleaseInvalid);
    expect(warning?.type).toBe('Warning');
    expect(warning?.message).toContain(problem);
    const again = decideNode(degraded(release(until), { previous: d.memory }));
    expect(reasons(again)).not.toContain(EventReason.ReleaseInvalid);
  });

  it('a held bootstrap: lifted without completing it (no marker), and back at the expiry', () => {
    const held = (over: Partial<DecisionInput> & { now: number }) =>
      input({
        node: node({ taints: [BOOTSTRAP_TAINT], annotations: release(UNTIL) }),
        required: [{ ...ext('gpu'), source: 'systemExtension' }],
        agent: agent(over.now - SECOND),
        leases: leases(over.now - SECOND, { gpu: unhealthy }),
        ...over,
      });
    const d = decideNode(held({ now: NOW }));
    expect(d.desiredTaints).toEqual({ bootstrap: false, runtime: false });
    expect(d.desiredAnnotations.bootstrappedBootId).toBeUndefined();
    expect(d.release?.lifted).toEqual([`remove the bootstrap taint ${POLICY.bootstrapTaintKey}`]);
    // The expiry, long after the bootstrap timeout: the node has neither taint nor marker now.
    const later = Date.parse(UNTIL) + 2 * 60 * MINUTE;
    const lifted = applied(held({ now: NOW }).node, d);
    const after = decideNode(held({ now: later, node: lifted, previous: d.memory }));
    expect(after.desiredTaints.bootstrap).toBe(true);
    expect(reasons(after)).toContain(EventReason.ReleaseEnded);
  });

  it('a suspension still holds every taint change', () => {
    const d = decideNode(degraded(release(UNTIL), { suspendedBy: ['SystemExtension gpu'] }));
    expect(d.desiredTaints).toEqual({ bootstrap: false, runtime: true });
    expect(d.suspended?.wouldChange).toEqual([`remove the runtime taint ${POLICY.runtimeTaintKey}`]);
  });
});
