import { describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_TAINT_VALUE,
  NODE_STATUS_LABEL,
  NodeAnnotation,
  RUNTIME_TAINT_VALUE,
} from '../../api/index.ts';
import { EventReason } from '../../api/reasons.ts';
import { toCachedNode, type CachedNode } from '../cache/index.ts';
import { decideNode, type NodeDecision, type NodeEvent } from '../decide/index.ts';
import * as t from '../decide/testing.ts';
import { FakeClock } from '../../lib/testing.ts';
import { FakeNodeApi } from '../testing.ts';
import {
  desiredTaintList,
  EVENT_SERIES_FINISH_MS,
  eventName,
  eventWriter,
  nodeChange,
  nodePatch,
  NotLeaderError,
  writtenTaintEvents,
} from './index.ts';

const keys = { bootstrap: 'startup/meta', runtime: 'status/meta' };

function node(
  taints: CachedNode['taints'],
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
): CachedNode {
  return {
    name: 'n',
    uid: 'u',
    resourceVersion: '7',
    creationTimestampMs: 0,
    bootId: 'b',
    labels,
    annotations,
    unparsedAnnotations: {},
    taints,
    conditionTransitionTime: undefined,
  };
}

function decision(
  bootstrap: boolean,
  runtime: boolean,
  label: NodeDecision['label'] = 'healthy',
  bootId?: string,
): NodeDecision {
  return {
    desiredTaints: { bootstrap, runtime },
    label,
    desiredAnnotations: bootId ? { bootstrappedBootId: bootId } : {},
  } as NodeDecision;
}

describe('desiredTaintList', () => {
  it.each([
    {
      behaviour: 'adds ours after foreign taints and keeps them in place',
      current: [{ key: 'theirs', effect: 'NoExecute' }],
      want: [true, false],
      expected: ['theirs', 'startup/meta'],
    },
    {
      behaviour: 'removes only our taint, never a foreign one',
      current: [
        { key: 'a', effect: 'NoSchedule' },
        { key: 'status/meta', effect: 'NoSchedule' },
        { key: 'b', effect: 'PreferNoSchedule' },
      ],
      want: [false, false],
      expected: ['a', 'b'],
    },
    {
      behaviour: 'a taint with our key but another effect is not ours and stays',
      current: [{ key: 'status/meta', effect: 'NoExecute' }],
      want: [false, true],
      expected: ['status/meta', 'status/meta'],
    },
  ])('$behaviour', ({ current, want, expected }) => {
    const list = desiredTaintList(current, decision(want[0] as boolean, want[1] as boolean), keys);
    expect(list.map((t) => t.key)).toEqual(expected);
  });

  it('adds ours with the value that names nodecare and the reason', () => {
    expect(desiredTaintList([], decision(true, true), keys)).toEqual([
      { key: 'startup/meta', value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' },
      { key: 'status/meta', value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' },
    ]);
  });

  it('keeps a wanted taint of our key with another value (Karpenter, a kubelet) as it is, in place', () => {
    const karpenter = { key: 'startup/meta', value: 'true', effect: 'NoSchedule', timeAdded: 'x' };
    const list = desiredTaintList(
      [karpenter, { key: 'theirs', effect: 'NoExecute' }],
      decision(true, true),
      keys,
    );
    expect(list).toEqual([
      karpenter,
      { key: 'theirs', effect: 'NoExecute' },
      { key: 'status/meta', value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' },
    ]);
  });

  it.each([
    ['no value', { key: 'startup/meta', effect: 'NoSchedule' }],
    ['an empty value', { key: 'startup/meta', value: '', effect: 'NoSchedule' }],
    ['another value', { key: 'startup/meta', value: 'true', effect: 'NoSchedule' }],
  ])('removes a taint of our key with %s when it is not wanted', (_what, taint) => {
    expect(desiredTaintList([taint], decision(false, false), keys)).toEqual([]);
  });
});

describe('a taint of our key with another value or none is ours (no churn, still removed)', () => {
  it.each([
    ['no value', undefined],
    ['an empty value', ''],
    ['another value', 'true'],
    ["nodecare's value", BOOTSTRAP_TAINT_VALUE],
  ])('with %s: no write while wanted, one removal when not', (_what, value) => {
    const taint = { key: 'startup/meta', effect: 'NoSchedule', ...(value === undefined ? {} : { value }) };
    const n = node([taint], { [NODE_STATUS_LABEL]: 'progressing' });
    expect(nodeChange(n, decision(true, false, 'progressing'), keys, true)).toBeUndefined();
    expect(nodeChange(n, decision(false, false, 'progressing'), keys, true)).toEqual({
      taints: [],
      taintSummary: ['remove startup/meta:NoSchedule'],
    });
  });
});

describe('nodeChange', () => {
  it('is undefined when the node already matches (no write)', () => {
    const n = node([{ key: 'startup/meta', effect: 'NoSchedule' }], { [NODE_STATUS_LABEL]: 'progressing' });
    expect(nodeChange(n, decision(true, false, 'progressing'), keys, true)).toBeUndefined();
  });

  it('writes the label and the bootstrap annotation together with the taint change', () => {
    const n = node([{ key: 'startup/meta', effect: 'NoSchedule' }], { [NODE_STATUS_LABEL]: 'progressing' });
    const change = nodeChange(n, decision(false, false, 'healthy', 'b'), keys, true);
    expect(change).toEqual({
      taints: [],
      labels: { [NODE_STATUS_LABEL]: 'healthy' },
      annotations: { [NodeAnnotation.bootstrappedBootId]: 'b' },
      taintSummary: ['remove startup/meta:NoSchedule'],
    });
  });

  it('in dry run reports the taint change but leaves taints out of the patch', () => {
    const change = nodeChange(node([]), decision(false, true, 'unhealthy'), keys, false);
    expect(change?.taints).toBeUndefined();
    expect(change?.taintSummary).toEqual(['add status/meta:NoSchedule']);
    expect(change?.labels).toEqual({ [NODE_STATUS_LABEL]: 'unhealthy' });
  });
});

describe('foreign taints are written back field for field', () => {
  it('keeps timeAdded (and any other field) of a taint nodecare does not own (regression)', () => {
    const unreachable = {
      key: 'node.kubernetes.io/unreachable',
      effect: 'NoExecute',
      timeAdded: '2026-01-01T00:00:00Z',
    };
    const cached = toCachedNode({
      metadata: { name: 'n', resourceVersion: '7' },
      spec: { taints: [unreachable, { key: 'startup/meta', effect: 'NoSchedule' }] },
    });
    const change = nodeChange(cached, decision(false, true), keys, true);
    expect(nodePatch(cached, change!)).toMatchObject({
      metadata: { resourceVersion: '7' },
      spec: { taints: [unreachable, { key: 'status/meta', effect: 'NoSchedule' }] },
    });
  });
});

describe('one hasTaint rule for the decision and the writes (regression: two definitions)', () => {
  it('a taint with our key but another effect is not ours: no RuntimeTaintRemoved, no removal', () => {
    const foreign = { key: t.POLICY.runtimeTaintKey, effect: 'NoExecute' };
    const node = t.bootstrappedNode({ taints: [foreign] });
    const d = decideNode(
      t.input({
        node,
        required: [t.ext('web')],
        leases: t.leases(t.T0, { web: {} }),
        agent: t.agent(t.T0),
        previous: t.memory({ web: 'Healthy' }),
        now: t.T0,
      }),
    );
    expect(d.events.map((e) => e.reason)).not.toContain(EventReason.RuntimeTaintRemoved);
    const cached = {
      ...node,
      resourceVersion: '1',
      unparsedAnnotations: {},
      conditionTransitionTime: undefined,
    };
    const written = nodeChange(
      cached,
      d,
      { bootstrap: t.POLICY.bootstrapTaintKey, runtime: foreign.key },
      true,
    );
    expect(written?.taints).toBeUndefined();
  });
});

describe('writtenTaintEvents', () => {
  const added: NodeEvent = { type: 'Warning', reason: EventReason.RuntimeTaintAdded, message: 'm' };
  const other: NodeEvent = { type: 'Warning', reason: EventReason.ExtensionUnhealthy, message: 'm' };
  const tainted = node([{ key: 'status/meta', effect: 'NoSchedule' }]);
  it.each([
    { behaviour: 'the patch added the taint → its event', before: node([]), after: tainted, want: [added] },
    { behaviour: 'the taint was already there → nothing', before: tainted, after: tainted, want: [] },
    { behaviour: 'the taint is still missing → nothing', before: node([]), after: node([]), want: [] },
  ])('$behaviour', ({ before, after, want }) => {
    expect(writtenTaintEvents(before, after, [added, other], keys)).toEqual(want);
  });
});

describe('eventName (regression: 422 for node names near 253 characters)', () => {
  const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  it.each([
    { behaviour: 'a short name keeps its name', name: 'node-a' },
    { behaviour: 'a 253-character name is cut to leave room', name: `${'a'.repeat(200)}.${'b'.repeat(52)}` },
    { behaviour: 'a cut that ends in "-" drops it', name: `${'a'.repeat(239)}-${'b'.repeat(13)}` },
    { behaviour: 'a cut that ends in "." drops it', name: `${'a'.repeat(239)}.${'b'.repeat(13)}` },
  ])('$behaviour → a valid DNS subdomain of at most 253 characters', ({ name }) => {
    const result = eventName(name, 0x18d1e2f3a4b5c);
    expect(result.length).toBeLessThanOrEqual(253);
    expect(result).toMatch(DNS_SUBDOMAIN);
    expect(result.endsWith('.18d1e2f3a4b5c')).toBe(true);
    expect(name.startsWith(result.slice(0, result.lastIndexOf('.')))).toBe(true);
  });
});

describe('eventWriter: a repeated event is one Event with a series, as client-go records it', () => {
  const subject = { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-a' };
  const unhealthy: NodeEvent = {
    type: 'Warning',
    reason: EventReason.ExtensionUnhealthy,
    message: 'gpu-plugin is Unhealthy: ProbeTimeout',
  };
  function setup() {
    const api = new FakeNodeApi();
    const clock = new FakeClock(Date.UTC(2026, 0, 1));
    const state = { leading: true };
    const write = eventWriter(api, 'test', clock, () => {
      if (!state.leading) throw new NotLeaderError();
    });
    const series = () =>
      api.events.map((e) => {
        const event = e.event as { reason: string; series?: { count: number } };
        return [event.reason, event.series?.count ?? 1];
      });
    return { api, clock, state, write, series };
  }

  it('counts repeats within 6 minutes on the first Event; a different reason, note or subject is a new Event', async () => {
    const { api, clock, write, series } = setup();
    await write(subject, unhealthy);
    await clock.advance(60_000);
    await write(subject, unhealthy);
    await clock.advance(60_000);
    await write(subject, unhealthy);
    await write(subject, { ...unhealthy, message: 'csi-node is Unhealthy: ProbeTimeout' });
    await write(subject, { type: 'Normal', reason: EventReason.RuntimeTaintRemoved, message: 'recovered' });
    await write({ ...subject, name: 'node-b', uid: 'uid-b' }, unhealthy);
    expect(series()).toEqual([
      [EventReason.ExtensionUnhealthy, 3],
      [EventReason.ExtensionUnhealthy, 1],
      [EventReason.RuntimeTaintRemoved, 1],
      [EventReason.ExtensionUnhealthy, 1],
    ]);
    expect(api.calls.filter((c) => c.op === 'patchEvent')).toHaveLength(2);
    const first = api.events[0]!.event as { note: string; series: { lastObservedTime: string } };
    expect(first.series.lastObservedTime).toBe('2026-01-01T00:02:00.000000Z');
  });

  it('a long non-ASCII message becomes a note within 1 KiB of UTF-8, cut on a character boundary (issue 50 item 7)', async () => {
    const { api, write } = setup();
    // RuntimeTaintAdded names every failing extension with its message: 600 characters of CJK text are 1,800
    // bytes, which the API server refused (422) when the note was cut at 1,024 characters.
    const message = `gpu-plugin Unhealthy (ProbeFailed): ${'デバイスが見つかりません😀'.repeat(60)}`;
    await write(subject, { type: 'Warning', reason: EventReason.RuntimeTaintAdded, message });
    const note = (api.events[0]!.event as { note: string }).note;
    // The API server's limit (NoteLengthLimit), in bytes.
    expect(Buffer.byteLength(note, 'utf8')).toBeLessThanOrEqual(1024);
    expect(note.startsWith('gpu-plugin Unhealthy (ProbeFailed): デバイス')).toBe(true);
    expect(Buffer.from(note, 'utf8').toString('utf8')).toBe(note);
  });

  it('a repeat more than 6 minutes after the last one starts a new Event', async () => {
    const { clock, write, series } = setup();
    await write(subject, unhealthy);
    await clock.advance(EVENT_SERIES_FINISH_MS + 1);
    await write(subject, unhealthy);
    expect(series()).toEqual([
      [EventReason.ExtensionUnhealthy, 1],
      [EventReason.ExtensionUnhealthy, 1],
    ]);
  });

  it('finishes each series 6 minutes after its own last repeat, whichever series began first', async () => {
    const { clock, write, series } = setup();
    const other = { ...subject, name: 'node-b', uid: 'uid-b' };
    await write(subject, unhealthy); // 0:00, node-a's series begins
    await clock.advance(60_000);
    await write(other, unhealthy); // 1:00, node-b's
    await clock.advance(4 * 60_000);
    await write(subject, unhealthy); // 5:00, node-a repeats: its series runs to 11:00
    await clock.advance(2.5 * 60_000);
    await write(other, unhealthy); // 7:30: node-b's ended at 7:00, a new Event
    await write(subject, unhealthy); // node-a's goes on
    expect(series()).toEqual([
      [EventReason.ExtensionUnhealthy, 3],
      [EventReason.ExtensionUnhealthy, 1],
      [EventReason.ExtensionUnhealthy, 1],
    ]);
  });

  it('a series whose Event expired meanwhile (404) starts again with a new Event', async () => {
    const { api, write, series } = setup();
    await write(subject, unhealthy);
    api.events.splice(0); // expired: the API server deleted it
    await write(subject, unhealthy);
    expect(series()).toEqual([[EventReason.ExtensionUnhealthy, 1]]);
  });

  it("carries an event's annotations on the Event (the bootstrap record)", async () => {
    const { api, write } = setup();
    await write(subject, { ...unhealthy, annotations: { 'nodecare.io/bootstrap': '{}' } });
    await write(subject, { ...unhealthy, message: 'other' });
    const metadata = api.events.map((e) => (e.event as { metadata: { annotations?: object } }).metadata);
    expect(metadata[0]?.annotations).toEqual({ 'nodecare.io/bootstrap': '{}' });
    expect(metadata[1]).not.toHaveProperty('annotations');
  });

  it('writes nothing once this replica no longer leads', async () => {
    const { api, state, write } = setup();
    await write(subject, unhealthy);
    state.leading = false;
    await expect(write(subject, unhealthy)).rejects.toBeInstanceOf(NotLeaderError);
    expect(api.calls.filter((c) => c.op === 'patchEvent')).toEqual([]);
  });
});
