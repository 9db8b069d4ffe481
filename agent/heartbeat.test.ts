// The heartbeat with a fake clock and a recording writer: written at once, then a third of its duration apart
// within the jitter, nothing while the Node is unknown, rewritten at once on request, nothing after stop.

import { describe, expect, it } from 'vitest';
import { FakeClock } from '../lib/testing.ts';
import type { DesiredLease } from '../api/lease.ts';
import { Heartbeat } from './heartbeat.ts';
import type { LeaseTarget } from './runner.ts';

const TARGET: LeaseTarget = { node: { name: 'n', uid: 'u' }, bootId: 'b', holderIdentity: 'agent-n' };

function setup(random = 0.5) {
  const clock = new FakeClock();
  const written: DesiredLease[] = [];
  let target: LeaseTarget | undefined = TARGET;
  const heartbeat = new Heartbeat({
    clock,
    random: () => random,
    durationSeconds: 60,
    target: () => target,
    writer: { write: async (lease) => void written.push(lease) },
  });
  return { clock, heartbeat, written, unknown: () => (target = undefined) };
}

describe('Heartbeat', () => {
  it('writes the agent lease (no extension, this boot, its duration) at once and every third of its duration', async () => {
    const { clock, heartbeat, written } = setup();
    expect(heartbeat.started).toBe(false);
    heartbeat.now();
    await Promise.resolve();
    expect(heartbeat.started).toBe(true);
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({ extension: undefined, bootId: 'b', leaseDurationSeconds: 60 });
    expect(heartbeat.lastOkMs).toBe(clock.now());
    await clock.advance(19_999);
    expect(written).toHaveLength(1);
    await clock.advance(1);
    expect(written).toHaveLength(2);
  });

  it.each([
    [0, 19_200],
    [1, 20_800],
  ])('with random() = %s the next one comes after %s ms (±4%%)', async (random, delayMs) => {
    const { clock, heartbeat, written } = setup(random);
    heartbeat.now();
    await clock.advance(delayMs - 1);
    expect(written).toHaveLength(1);
    await clock.advance(1);
    expect(written).toHaveLength(2);
  });

  it('writes nothing while the Node is unknown but keeps its schedule; now() rewrites at once, stop() ends it', async () => {
    const { clock, heartbeat, written, unknown } = setup();
    unknown();
    heartbeat.now();
    await clock.advance(30_000);
    expect(written).toHaveLength(0);
    expect(heartbeat.lastOkMs).toBeUndefined();
    heartbeat.stop();
    heartbeat.now();
    await clock.advance(60_000);
    expect(written).toHaveLength(0);
    expect(clock.pending).toBe(0);
  });
});
