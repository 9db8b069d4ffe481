import { describe, expect, it } from 'vitest';
import { createLogger } from '../../lib/log.ts';
import type { NodeObject } from '../cache/index.ts';
import { eventNotRecorded, NotLeaderError, withEventLane, type NodeApi } from './index.ts';

/** A NodeApi whose every call waits until the test settles it. */
function heldApi() {
  const calls: Array<{ call: string; settle: (err?: Error) => void }> = [];
  const held = <T>(call: string, value: T): Promise<T> =>
    new Promise<T>((resolve, reject) =>
      calls.push({ call, settle: (err) => (err ? reject(err) : resolve(value)) }),
    );
  const node = { metadata: { name: 'n' } } as NodeObject;
  const api: NodeApi = {
    getNode: (name) => held(`getNode ${name}`, node),
    patchNode: (name) => held(`patchNode ${name}`, node),
    patchNodeStatus: (name) => held(`patchNodeStatus ${name}`, node),
    getLease: (_ns, name) => held(`getLease ${name}`, { metadata: { name } }),
    createEvent: (_ns, event) => held(`createEvent ${(event as { note: string }).note}`, undefined),
    patchEvent: (_ns, name) => held(`patchEvent ${name}`, undefined),
  };
  return { api, calls, sent: () => calls.map((c) => c.call) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('withEventLane', () => {
  it("sends events two at a time, one node's in the order they were made; node writes never wait for them", async () => {
    const { api, calls, sent } = heldApi();
    const lane = withEventLane(api, () => undefined);
    const done: string[] = [];
    for (const note of ['e1', 'e2', 'e3', 'e4'])
      void lane.createEvent('default', { note, regarding: { name: 'n' } }).then(() => done.push(note));
    void lane.patchEvent('default', 'n.abc', {}).then(() => done.push('p1'));
    void lane.patchNode('n', {});
    void lane.patchNodeStatus('n', {});
    await tick();
    expect(sent()).toEqual(['createEvent e1', 'createEvent e2', 'patchNode n', 'patchNodeStatus n']);
    calls[1]?.settle(); // e2 done: e3 goes out
    await tick();
    expect(sent().slice(4)).toEqual(['createEvent e3']);
    calls[0]?.settle();
    calls[4]?.settle();
    await tick();
    expect(sent().slice(5)).toEqual(['createEvent e4', 'patchEvent n.abc']);
    calls[5]?.settle();
    calls[6]?.settle();
    await tick();
    expect(done).toEqual(['e2', 'e1', 'e3', 'e4', 'p1']);
  });

  it('a failed event write rejects that event only; the lane goes on', async () => {
    const { api, calls, sent } = heldApi();
    const lane = withEventLane(api, () => undefined, { inFlight: 1 });
    const first = lane.createEvent('default', { note: 'bad' });
    const second = lane.createEvent('default', { note: 'good' });
    await tick();
    calls[0]?.settle(new Error('500 from the API server'));
    await expect(first).rejects.toThrow('500 from the API server');
    await tick();
    expect(sent()).toEqual(['createEvent bad', 'createEvent good']);
    calls[1]?.settle();
    await expect(second).resolves.toBeUndefined();
  });

  it('a full backlog drops the newest event (resolved, never sent) and says so', async () => {
    const { api, sent } = heldApi();
    let dropped = 0;
    const lane = withEventLane(api, () => undefined, { inFlight: 1, maxQueued: 2, dropped: () => dropped++ });
    for (const note of ['sent', 'q1', 'q2']) void lane.createEvent('default', { note });
    await expect(lane.createEvent('default', { note: 'over' })).resolves.toBeUndefined();
    await tick();
    expect(dropped).toBe(1);
    expect(sent()).toEqual(['createEvent sent']);
  });

  it('asks the fence just before sending: once it says not leading, that event and every waiting one reject', async () => {
    const { api, calls, sent } = heldApi();
    let leading = true;
    const fence = () => {
      if (!leading) throw new NotLeaderError();
    };
    const abandoned: number[] = [];
    const lane = withEventLane(api, fence, { inFlight: 1, abandoned: (count) => abandoned.push(count) });
    const results = ['a', 'b', 'c'].map((note) =>
      lane.createEvent('default', { note }).then(
        () => 'sent',
        (err: unknown) => (err instanceof NotLeaderError ? 'not leader' : 'other'),
      ),
    );
    await tick();
    leading = false;
    calls[0]?.settle();
    expect(await Promise.all(results)).toEqual(['sent', 'not leader', 'not leader']);
    expect(sent()).toEqual(['createEvent a']);
    // Said once, for both writes that did not go.
    expect(abandoned).toEqual([2]);
    // A later term's events go out again.
    leading = true;
    const later = lane.createEvent('default', { note: 'd' });
    await tick();
    calls[1]?.settle();
    await expect(later).resolves.toBeUndefined();
  });
});

describe('eventNotRecorded', () => {
  it('warns of a failed write, and only notes at debug a write not sent because this replica stopped leading', () => {
    const lines: Array<{ level: string; msg: string; reason?: string }> = [];
    const log = createLogger(
      { level: 'debug', name: 'test' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    );
    eventNotRecorded(log, new Error('boom'), { reason: 'ExtensionUnhealthy' });
    eventNotRecorded(log, new NotLeaderError(), { reason: 'ExtensionUnhealthy' });
    expect(lines.map((l) => [l.level, l.msg, l.reason])).toEqual([
      ['warn', 'Failed to record event', 'ExtensionUnhealthy'],
      ['debug', 'Event not recorded: no longer leading', 'ExtensionUnhealthy'],
    ]);
  });
});

describe('withEventLane fairness across nodes (regression: one flapping node delayed every other node)', () => {
  const nodeEvent = (node: string, note: string) => ({ note, regarding: { kind: 'Node', name: node } });

  it("a node that made 50 events does not hold back another node's event: nodes take turns", async () => {
    const { api, calls, sent } = heldApi();
    const lane = withEventLane(api, () => undefined, { inFlight: 1 });
    for (let i = 0; i < 50; i++) void lane.createEvent('default', nodeEvent('flappy', `flappy-${i}`));
    void lane.createEvent('default', nodeEvent('quiet', 'quiet-0'));
    void lane.patchEvent('default', 'quiet.18c2f3a', {});
    await tick();
    for (let i = 0; i < 4; i++) {
      calls[i]?.settle();
      await tick();
    }
    // flappy-0 was in flight before quiet had any: quiet's two writes join the turns behind flappy's next.
    expect(sent()).toEqual([
      'createEvent flappy-0',
      'createEvent flappy-1',
      'createEvent quiet-0',
      'createEvent flappy-2',
      'patchEvent quiet.18c2f3a',
    ]);
  });

  it("a node over its share of the backlog has its newest events dropped and counted; other nodes' still queue", async () => {
    const { api, calls, sent } = heldApi();
    const dropped: string[] = [];
    const lane = withEventLane(api, () => undefined, {
      inFlight: 1,
      maxQueuedPerSubject: 3,
      dropped: (reason) => dropped.push(reason),
    });
    for (let i = 0; i < 6; i++) void lane.createEvent('default', nodeEvent('flappy', `flappy-${i}`));
    void lane.createEvent('default', nodeEvent('quiet', 'quiet-0'));
    await tick();
    // flappy-0 is in flight, flappy-1..3 wait (its share), flappy-4 and -5 are dropped; quiet-0 waits.
    expect(dropped).toEqual(['subjectShare', 'subjectShare']);
    expect(sent()).toEqual(['createEvent flappy-0']);
    for (let i = 0; i < 4; i++) {
      calls[i]?.settle();
      await tick();
    }
    expect(sent()).toEqual([
      'createEvent flappy-0',
      'createEvent flappy-1',
      'createEvent quiet-0',
      'createEvent flappy-2',
      'createEvent flappy-3',
    ]);
  });
});
