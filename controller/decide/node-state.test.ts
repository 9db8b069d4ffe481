import { describe, expect, it } from 'vitest';
import {
  isBootstrapState,
  nextNodeState,
  NodeState,
  RECORDED_STATES,
  recordedNodeState,
  type NodeObservation,
} from './node-state.ts';

const { Bootstrapping, Ready, Degraded, BootstrapTimeout } = NodeState;

/** Post-bootstrap, everything blocking Healthy. */
const calm: NodeObservation = {
  bootstrapPending: false,
  bootstrapComplete: false,
  bootstrapTimedOut: false,
  blockingFailing: false,
  blockingAllHealthy: true,
};
const failing = { blockingFailing: true, blockingAllHealthy: false };
const progressing = { blockingFailing: false, blockingAllHealthy: false };
const pending = { bootstrapPending: true };

describe('nextNodeState', () => {
  it.each([
    // Bootstrapping
    {
      name: 'bootstrapping, not complete → Bootstrapping',
      from: Bootstrapping,
      o: { ...pending },
      to: Bootstrapping,
    },
    {
      name: 'bootstrapping, not complete, blocking failing → Bootstrapping (no runtime taint while bootstrapping)',
      from: Bootstrapping,
      o: { ...pending, ...failing },
      to: Bootstrapping,
    },
    {
      name: 'bootstrapping, complete → Ready in the same decision',
      from: Bootstrapping,
      o: { ...pending, bootstrapComplete: true },
      to: Ready,
    },
    {
      name: 'bootstrapping, complete with a blocking failure (total function; decideNode cannot produce it) → Degraded',
      from: Bootstrapping,
      o: { ...pending, bootstrapComplete: true, ...failing },
      to: Degraded,
    },
    {
      name: 'bootstrapping, timed out → BootstrapTimeout',
      from: Bootstrapping,
      o: { ...pending, bootstrapTimedOut: true },
      to: BootstrapTimeout,
    },
    {
      name: 'bootstrapping, complete exactly at the timeout → Ready (completion wins)',
      from: Bootstrapping,
      o: { ...pending, bootstrapComplete: true, bootstrapTimedOut: true },
      to: Ready,
    },
    {
      name: 'bootstrapping, marked bootstrapped by someone else → settles',
      from: Bootstrapping,
      o: { ...progressing },
      to: Ready,
    },
    // BootstrapTimeout
    {
      name: 'timed out, still not complete → BootstrapTimeout',
      from: BootstrapTimeout,
      o: { ...pending, bootstrapTimedOut: true },
      to: BootstrapTimeout,
    },
    {
      name: 'timed out stays timed out for this boot even if the timer reads otherwise',
      from: BootstrapTimeout,
      o: { ...pending },
      to: BootstrapTimeout,
    },
    {
      name: 'timed out, then complete → Ready',
      from: BootstrapTimeout,
      o: { ...pending, bootstrapComplete: true, bootstrapTimedOut: true },
      to: Ready,
    },
    {
      name: 'timed out, marked bootstrapped → settles Degraded if failing',
      from: BootstrapTimeout,
      o: { ...failing },
      to: Degraded,
    },
    // Ready
    { name: 'Ready, all blocking Healthy → Ready', from: Ready, o: {}, to: Ready },
    {
      name: 'Ready, a blocking extension Progressing → Ready',
      from: Ready,
      o: { ...progressing },
      to: Ready,
    },
    { name: 'Ready, a blocking extension failing → Degraded', from: Ready, o: { ...failing }, to: Degraded },
    {
      name: 'Ready, rebooted → Bootstrapping',
      from: Ready,
      o: { ...pending, ...failing },
      to: Bootstrapping,
    },
    {
      name: 'Ready, rebooted and already complete → Ready',
      from: Ready,
      o: { ...pending, bootstrapComplete: true },
      to: Ready,
    },
    // Degraded
    { name: 'Degraded, still failing → Degraded', from: Degraded, o: { ...failing }, to: Degraded },
    {
      name: 'Degraded, Progressing → Degraded (taint kept until Healthy)',
      from: Degraded,
      o: { ...progressing },
      to: Degraded,
    },
    { name: 'Degraded, all blocking Healthy → Ready', from: Degraded, o: {}, to: Ready },
    {
      name: 'Degraded, rebooted → Bootstrapping',
      from: Degraded,
      o: { ...pending, ...failing },
      to: Bootstrapping,
    },
    {
      name: 'Degraded, rebooted and timed out → BootstrapTimeout',
      from: Degraded,
      o: { ...pending, bootstrapTimedOut: true },
      to: BootstrapTimeout,
    },
  ])('$name', ({ from, o, to }) => {
    expect(nextNodeState(from, { ...calm, ...o })).toBe(to);
  });

  const observations: NodeObservation[] = [];
  for (let bits = 0; bits < 32; bits++) {
    const flag = (i: number): boolean => (bits & (1 << i)) !== 0;
    const blockingFailing = flag(3);
    const blockingAllHealthy = flag(4);
    if (blockingFailing && blockingAllHealthy) continue; // impossible together
    observations.push({
      bootstrapPending: flag(0),
      bootstrapComplete: flag(1),
      bootstrapTimedOut: flag(2),
      blockingFailing,
      blockingAllHealthy,
    });
  }
  const describeFlags = (o: NodeObservation): string =>
    Object.entries(o)
      .filter(([, v]) => v)
      .map(([k]) => k)
      .join(', ') || 'nothing';
  const combos = RECORDED_STATES.flatMap((from) =>
    observations.map((o) => ({ from, o, flags: describeFlags(o) })),
  );

  it.each(combos)('invariants hold from $from with $flags', ({ from, o }) => {
    const to = nextNodeState(from, o);
    // Only an unfinished bootstrap keeps a node in a bootstrap state.
    expect(isBootstrapState(to)).toBe(o.bootstrapPending && !o.bootstrapComplete);
    // Degraded needs a blocking failure, except that Degraded holds while a blocking extension is not Healthy.
    if (to === Degraded) expect(o.blockingFailing || (from === Degraded && !o.blockingAllHealthy)).toBe(true);
    // A blocking failure after bootstrap always degrades.
    if (!isBootstrapState(to) && o.blockingFailing) expect(to).toBe(Degraded);
    // BootstrapTimeout needs the timer, or was already reached on this boot.
    if (to === BootstrapTimeout) expect(o.bootstrapTimedOut || from === BootstrapTimeout).toBe(true);
  });
});

describe('recordedNodeState (what survives a controller restart)', () => {
  it.each([
    {
      name: 'not bootstrapped, no timeout reported → Bootstrapping',
      facts: { bootstrapPending: true, runtimeTainted: false, timeoutReported: false },
      state: Bootstrapping,
    },
    {
      name: 'not bootstrapped, runtime taint left over → Bootstrapping',
      facts: { bootstrapPending: true, runtimeTainted: true, timeoutReported: false },
      state: Bootstrapping,
    },
    {
      name: 'not bootstrapped, timeout reported on this boot → BootstrapTimeout',
      facts: { bootstrapPending: true, runtimeTainted: false, timeoutReported: true },
      state: BootstrapTimeout,
    },
    {
      name: 'bootstrapped, runtime taint → Degraded',
      facts: { bootstrapPending: false, runtimeTainted: true, timeoutReported: false },
      state: Degraded,
    },
    {
      name: 'bootstrapped, no runtime taint → Ready',
      facts: { bootstrapPending: false, runtimeTainted: false, timeoutReported: true },
      state: Ready,
    },
  ])('$name', ({ facts, state }) => {
    expect(recordedNodeState(facts)).toBe(state);
  });
});
