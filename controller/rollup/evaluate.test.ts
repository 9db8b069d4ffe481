import { describe, expect, it } from 'vitest';
import { apiTime, initCondition, type RollupCondition } from './condition.ts';
import {
  classifyPair,
  ERR_CONFIGURATION_PROBLEM,
  evaluateRollup,
  itemsMessage,
  MAX_CONDITION_MESSAGE,
  MAX_CONDITIONS,
  MAX_EXTENSION_ROWS,
  MAX_ITEM_LENGTH,
  statusLabel,
  SUCCESS_MESSAGE,
  type RollupInput,
  type RollupPair,
} from './evaluate.ts';

const T0 = Date.parse('2026-11-23T10:00:00Z');
const MINUTE = 60_000;

function pair(
  node: string,
  extension: string,
  state: RollupPair['state'],
  reason = '',
  conditionType = 'EveryNodeReady',
): RollupPair {
  return { node, extension, state, reason, conditionType };
}

function run(pairs: RollupPair[], over: Partial<RollupInput> = {}) {
  return evaluateRollup({ pairs, previous: [], ownedBefore: [], nowMs: T0, ...over });
}

function byType(conditions: RollupCondition[], type: string): RollupCondition | undefined {
  return conditions.find((c) => c.type === type);
}

describe('classifyPair', () => {
  it.each([
    ['Healthy', '', 'healthy'],
    ['Progressing', 'StartupGrace', 'progressing'],
    ['Unhealthy', 'ProbeTimeout', 'failing'],
    ['Unknown', 'ProbeError', 'failing'],
    ['Unknown', 'PermissionDenied', 'failing'],
    ['Unknown', 'InvalidRegistration', 'failing'],
    ['Unknown', 'AgentNotReporting', 'unevaluable'],
    ['Unknown', 'LeaseExpired', 'unevaluable'],
    ['Unknown', 'LeaseMissing', 'unevaluable'],
    ['Unknown', 'NodeNotReady', 'failing'],
  ] as const)('%s (%s) → %s', (state, reason, verdict) => {
    expect(classifyPair({ state, reason })).toBe(verdict);
  });

  it('a pair of a NotReady node fails whatever its state says (Gardener: a node whose Ready is not True fails EveryNodeReady)', () => {
    const nodeNotReady = { reason: 'NodeStatusUnknown', since: '2026-11-23T09:58:00Z' };
    expect(classifyPair({ state: 'Healthy', reason: '', nodeNotReady })).toBe('failing');
    expect(classifyPair({ state: 'Unknown', reason: 'AgentNotReporting', nodeNotReady })).toBe('failing');
  });
});

describe('evaluateRollup: a NotReady node (its kubelet Ready is not True)', () => {
  const nodeNotReady = { reason: 'NodeStatusUnknown', since: '2026-11-23T09:58:00Z' };
  /** What the reconciler yields for a NotReady node: the decision's Unknown / NodeNotReady, and the kubelet's word. */
  const notReady = (node: string, extension: string, conditionType = 'EveryNodeReady'): RollupPair => ({
    ...pair(node, extension, 'Unknown', 'NodeNotReady', conditionType),
    nodeNotReady,
  });

  it('fails its condition type through the threshold machine, naming the node once and why, Gardener reasons kept', () => {
    const r = run([notReady('b', 'csi'), notReady('b', 'gpu'), pair('a', 'gpu', 'Healthy')], {
      previous: [
        {
          ...initCondition('EveryNodeReady', T0 - MINUTE),
          status: 'True',
          reason: 'HealthCheckSuccessful',
          message: SUCCESS_MESSAGE,
        },
      ],
      ownedBefore: ['EveryNodeReady'],
    });
    expect(byType(r.conditions, 'EveryNodeReady')).toMatchObject({
      status: 'Progressing',
      reason: 'HealthCheckUnsuccessful',
      message: 'b: kubelet not ready (NodeStatusUnknown) since 2026-11-23T09:58:00Z.',
      codes: [],
    });
    expect(r.label).toBe('progressing');
    expect(r.extensions).toEqual([
      { name: 'csi', conditionType: 'EveryNodeReady', healthy: 0, progressing: 0, unhealthy: 0, unknown: 1 },
      { name: 'gpu', conditionType: 'EveryNodeReady', healthy: 1, progressing: 0, unhealthy: 0, unknown: 1 },
    ]);
  });

  it('listed among other failures in node order; a new condition is False at once', () => {
    const c = byType(
      run([pair('c', 'gpu', 'Unhealthy', 'ProbeTimeout'), notReady('b', 'gpu'), notReady('b', 'csi')])
        .conditions,
      'EveryNodeReady',
    );
    expect(c).toMatchObject({
      status: 'False',
      reason: 'HealthCheckUnsuccessful',
      message:
        '1) b: kubelet not ready (NodeStatusUnknown) since 2026-11-23T09:58:00Z. 2) c: gpu Unhealthy (ProbeTimeout).',
    });
  });

  it('fails each condition type its extensions feed; an unevaluable pair elsewhere still wins (ConditionCheckError)', () => {
    const r = run([
      notReady('b', 'fluent-bit', 'ObservabilityComponentsHealthy'),
      notReady('b', 'gpu'),
      pair('a', 'gpu', 'Unknown', 'AgentNotReporting'),
    ]);
    expect(byType(r.conditions, 'ObservabilityComponentsHealthy')).toMatchObject({
      status: 'False',
      message: 'b: kubelet not ready (NodeStatusUnknown) since 2026-11-23T09:58:00Z.',
    });
    expect(byType(r.conditions, 'EveryNodeReady')).toMatchObject({
      status: 'Unknown',
      reason: 'ConditionCheckError',
    });
  });

  it('without a reason or time from the kubelet the item still names the node', () => {
    const p = { ...pair('b', 'gpu', 'Unknown', 'NodeNotReady'), nodeNotReady: { reason: '', since: '' } };
    expect(itemsMessage([p])).toBe('b: kubelet not ready.');
  });
});

describe('evaluateRollup: precedence per condition type', () => {
  it('every pair Healthy → True / HealthCheckSuccessful / All health checks successful', () => {
    const c = byType(
      run([pair('a', 'gpu', 'Healthy'), pair('b', 'gpu', 'Healthy')]).conditions,
      'EveryNodeReady',
    );
    expect(c).toMatchObject({ status: 'True', reason: 'HealthCheckSuccessful', message: SUCCESS_MESSAGE });
  });

  it('a pair that cannot be evaluated wins over a failing one → Unknown / ConditionCheckError', () => {
    const c = byType(
      run([pair('a', 'gpu', 'Unhealthy', 'ProbeTimeout'), pair('b', 'gpu', 'Unknown', 'AgentNotReporting')])
        .conditions,
      'EveryNodeReady',
    );
    expect(c).toMatchObject({
      status: 'Unknown',
      reason: 'ConditionCheckError',
      message: 'gpu on node b: agent has not reported on this boot.',
    });
  });

  it('the message says what happened, one item per node and cause (the reason stays ConditionCheckError)', () => {
    const since = '2026-11-24T14:00:00.000000Z';
    const silent = { agentNotReporting: { since } };
    const c = byType(
      run([
        { ...pair('x', 'gpu-plugin', 'Unknown', 'AgentNotReporting'), ...silent },
        { ...pair('x', 'kube-proxy', 'Unknown', 'AgentNotReporting'), ...silent },
        { ...pair('x', 'log-agent', 'Unknown', 'AgentNotReporting'), ...silent },
        pair('y', 'csi', 'Unknown', 'LeaseExpired'),
        pair('z', 'csi', 'Unknown', 'LeaseMissing'),
      ]).conditions,
      'EveryNodeReady',
    );
    expect(c).toMatchObject({
      status: 'Unknown',
      reason: 'ConditionCheckError',
      message:
        `1) 3 extensions on node x: agent not reporting since ${since}. ` +
        '2) csi on node y: its lease was not renewed in time (LeaseExpired). ' +
        '3) csi on node z: no lease written (LeaseMissing).',
    });
    expect(c?.message).not.toContain('failed to execute');
  });

  it('a failing pair on a new condition → False at once (Gardener: initial → False)', () => {
    const c = byType(
      run([pair('a', 'gpu', 'Unhealthy', 'ProbeTimeout'), pair('b', 'gpu', 'Progressing')]).conditions,
      'EveryNodeReady',
    );
    expect(c).toMatchObject({
      status: 'False',
      reason: 'HealthCheckUnsuccessful',
      message: 'a: gpu Unhealthy (ProbeTimeout).',
    });
  });

  it('a failing pair on a True condition → Progressing for the threshold, then False', () => {
    const healthy = run([pair('a', 'gpu', 'Healthy')]);
    const failing = [pair('a', 'gpu', 'Unhealthy', 'ProbeTimeout')];
    const first = run(failing, {
      previous: healthy.conditions,
      ownedBefore: healthy.owned,
      nowMs: T0 + MINUTE,
    });
    expect(byType(first.conditions, 'EveryNodeReady')?.status).toBe('Progressing');
    expect(first.nextDeadlineMs, 're-evaluate when the threshold runs out').toBe(T0 + 6 * MINUTE + 1_000);
    const within = run(failing, {
      previous: first.conditions,
      ownedBefore: first.owned,
      nowMs: T0 + 6 * MINUTE,
    });
    expect(within.changed).toBe(false);
    const past = run(failing, {
      previous: first.conditions,
      ownedBefore: first.owned,
      nowMs: T0 + 6 * MINUTE + 1_000,
    });
    expect(byType(past.conditions, 'EveryNodeReady')).toMatchObject({
      status: 'False',
      lastTransitionTime: apiTime(T0 + 6 * MINUTE + 1_000),
    });
  });

  it('other types use a 1 minute threshold, and thresholds are configurable per type', () => {
    const pairs = [pair('a', 'fluent-bit', 'Healthy', '', 'ObservabilityComponentsHealthy')];
    const healthy = run(pairs);
    const failing = [pair('a', 'fluent-bit', 'Unhealthy', 'FileStale', 'ObservabilityComponentsHealthy')];
    const first = run(failing, { previous: healthy.conditions, ownedBefore: healthy.owned, nowMs: T0 });
    const at = (nowMs: number, thresholdsMs?: Record<string, number>) =>
      byType(
        run(failing, {
          previous: first.conditions,
          ownedBefore: first.owned,
          nowMs,
          ...(thresholdsMs ? { thresholdsMs } : {}),
        }).conditions,
        'ObservabilityComponentsHealthy',
      )?.status;
    expect(at(T0 + MINUTE)).toBe('Progressing');
    expect(at(T0 + MINUTE + 1_000)).toBe('False');
    expect(at(T0 + MINUTE + 1_000, { ObservabilityComponentsHealthy: 10 * MINUTE })).toBe('Progressing');
  });

  it('only progressing pairs → Progressing / HealthCheckProgressing', () => {
    const c = byType(run([pair('a', 'gpu', 'Progressing', 'StartupGrace')]).conditions, 'EveryNodeReady');
    expect(c).toMatchObject({ status: 'Progressing', reason: 'HealthCheckProgressing' });
  });

  it('recovery turns the condition True at once', () => {
    const failing = run([pair('a', 'gpu', 'Unhealthy', 'ProbeTimeout')]);
    const recovered = run([pair('a', 'gpu', 'Healthy')], {
      previous: failing.conditions,
      ownedBefore: failing.owned,
      nowMs: T0 + 1_000,
    });
    expect(byType(recovered.conditions, 'EveryNodeReady')?.status).toBe('True');
  });

  it('an unhealthy extension of another type affects only its own condition', () => {
    const result = run([
      pair('a', 'gpu', 'Healthy'),
      pair('a', 'fluent-bit', 'Unhealthy', 'FileStale', 'ObservabilityComponentsHealthy'),
    ]);
    expect(byType(result.conditions, 'EveryNodeReady')?.status).toBe('True');
    expect(byType(result.conditions, 'ObservabilityComponentsHealthy')?.status).toBe('False');
  });

  it('an invalid registration carries ERR_CONFIGURATION_PROBLEM', () => {
    const c = byType(run([pair('a', 'gpu', 'Unknown', 'InvalidRegistration')]).conditions, 'EveryNodeReady');
    expect(c?.codes).toEqual([ERR_CONFIGURATION_PROBLEM]);
  });

  it('an agent-reported Unknown counts as not healthy (our deviation from Gardener)', () => {
    const c = byType(run([pair('a', 'gpu', 'Unknown', 'PermissionDenied')]).conditions, 'EveryNodeReady');
    expect(c?.status).toBe('False');
  });
});

describe('evaluateRollup: writing only on change, keeping what is not ours', () => {
  it('the same input twice → changed false and the same objects', () => {
    const first = run([pair('a', 'gpu', 'Healthy')]);
    const second = run([pair('a', 'gpu', 'Healthy')], {
      previous: first.conditions,
      ownedBefore: first.owned,
      nowMs: T0 + 30 * MINUTE,
    });
    expect(second.changed).toBe(false);
    expect(second.conditions[0]).toBe(first.conditions[0]);
  });

  it('another owner’s condition type is kept as it is', () => {
    const foreign = { ...initCondition('APIServerAvailable', T0), status: 'True' as const, reason: 'X' };
    const result = run([pair('a', 'gpu', 'Healthy')], { previous: [foreign], ownedBefore: [] });
    expect(result.conditions).toContain(foreign);
    expect(result.owned).toEqual(['EveryNodeReady']);
  });

  it('a type of ours that is no longer in use is removed', () => {
    const first = run([pair('a', 'gpu', 'Healthy'), pair('a', 'x', 'Healthy', '', 'GpuFleetHealthy')]);
    const second = run([pair('a', 'gpu', 'Healthy')], {
      previous: first.conditions,
      ownedBefore: first.owned,
    });
    expect(second.changed).toBe(true);
    expect(second.conditions.map((c) => c.type)).toEqual(['EveryNodeReady']);
  });

  it('counts per extension, never per node', () => {
    const result = run([
      pair('a', 'gpu', 'Healthy'),
      pair('b', 'gpu', 'Unhealthy'),
      pair('c', 'gpu', 'Unknown'),
      pair('d', 'gpu', 'Progressing'),
      pair('a', 'csi', 'Healthy'),
    ]);
    expect(result.extensions).toEqual([
      { name: 'csi', conditionType: 'EveryNodeReady', healthy: 1, progressing: 0, unhealthy: 0, unknown: 0 },
      { name: 'gpu', conditionType: 'EveryNodeReady', healthy: 1, progressing: 1, unhealthy: 1, unknown: 1 },
    ]);
  });
});

describe('evaluateRollup: Gardener awareness', () => {
  it('hibernated: every condition True / HealthCheckSuccessful / Shoot is hibernated', () => {
    const result = run(
      [pair('a', 'gpu', 'Unhealthy'), pair('a', 'f', 'Unknown', 'X', 'SystemComponentsHealthy')],
      {
        hibernated: true,
      },
    );
    expect(result.conditions.map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      ['EveryNodeReady', 'True', 'HealthCheckSuccessful', 'Shoot is hibernated'],
      ['SystemComponentsHealthy', 'True', 'HealthCheckSuccessful', 'Shoot is hibernated'],
    ]);
  });

  it('workerless: no EveryNodeReady condition, and an old one is removed', () => {
    const before = run([pair('a', 'gpu', 'Healthy')]);
    const result = run(
      [pair('a', 'gpu', 'Unhealthy'), pair('a', 'f', 'Healthy', '', 'SystemComponentsHealthy')],
      {
        previous: before.conditions,
        ownedBefore: before.owned,
        workerless: true,
      },
    );
    expect(result.conditions.map((c) => c.type)).toEqual(['SystemComponentsHealthy']);
  });
});

describe('itemsMessage', () => {
  it('one item: "<x>."; several: "1) <a>. 2) <b>."; sorted by node, then extension', () => {
    expect(itemsMessage([pair('a', 'gpu', 'Unhealthy', 'ProbeTimeout')])).toBe(
      'a: gpu Unhealthy (ProbeTimeout).',
    );
    expect(itemsMessage([pair('b', 'gpu', 'Unhealthy', 'X'), pair('a', 'csi', 'Unknown', 'Y')])).toBe(
      '1) a: csi Unknown (Y). 2) b: gpu Unhealthy (X).',
    );
  });

  it('caps the list and counts the rest', () => {
    const many = Array.from({ length: 5_000 }, (_, i) =>
      pair(`node-${String(i).padStart(4, '0')}`, 'gpu', 'Unhealthy'),
    );
    const message = itemsMessage(many);
    expect(message).toMatch(/^1\) node-0000: gpu Unhealthy\. 2\) /);
    expect(message).toMatch(/10\) node-0009: gpu Unhealthy\. … and 4990 more\.$/);
  });
});

describe('statusLabel (Gardener ComputeShootStatus)', () => {
  it.each([
    [[], 'healthy'],
    [['True', 'True'], 'healthy'],
    [['True', 'Progressing'], 'progressing'],
    [['Progressing', 'Unknown'], 'unknown'],
    [['Unknown', 'False'], 'unhealthy'],
  ] as const)('%j → %s', (statuses, label) => {
    expect(statusLabel(statuses.map((status) => ({ status })))).toBe(label);
  });
});

describe('evaluateRollup: bounded by the ClusterHealth schema whatever nodes write', () => {
  it('caps a 40 KB reason and a long node name in every item, and the whole message', () => {
    const huge = `Bad\u001b[2J${'x'.repeat(40_000)}`;
    const longNode = `n${'a'.repeat(252)}`;
    const pairs = Array.from({ length: 12 }, (_, i) =>
      pair(`${longNode.slice(0, 250)}-${i}`, 'gpu', 'Unhealthy', huge),
    );
    const { conditions } = run(pairs);
    const message = byType(conditions, 'EveryNodeReady')!.message;
    expect(message.length).toBeLessThanOrEqual(MAX_CONDITION_MESSAGE);
    expect(message).not.toContain('\u001b');
    expect(message).toContain('… and 2 more.');
    for (const item of message.split(/ \d+\) /))
      expect(item.length).toBeLessThanOrEqual(MAX_ITEM_LENGTH + 64);
    const single = byType(run([pair(longNode, 'gpu', 'Unhealthy', huge)]).conditions, 'EveryNodeReady')!;
    expect(single.message.length).toBeLessThanOrEqual(MAX_ITEM_LENGTH + 64);
    expect(single.message).toMatch(/^na{252}: gpu Unhealthy \(Bad\\u001b\[2Jx+… \(\d+ more characters\)\.$/);
  });

  it('cuts a non-ASCII message by UTF-8 bytes on a character boundary, never by characters (issue 50 item 7)', () => {
    // Ten items of 512 CJK characters and surrogate pairs: within 8,192 characters, but about 16 KB of UTF-8.
    const reason = '障害😀'.repeat(400);
    const pairs = Array.from({ length: 12 }, (_, i) => pair(`node-${i}`, 'gpu', 'Unhealthy', reason));
    const message = byType(run(pairs).conditions, 'EveryNodeReady')!.message;
    expect(Buffer.byteLength(message, 'utf8')).toBeLessThanOrEqual(MAX_CONDITION_MESSAGE);
    expect(Buffer.from(message, 'utf8').toString('utf8')).toBe(message);
    expect(message).toMatch(/… \(\d+ more bytes\)$/);
  });

  it('never writes more than MAX_CONDITIONS conditions: Gardener types first, then custom ones by name; foreign ones kept', () => {
    const custom = Array.from({ length: 70 }, (_, i) =>
      pair('node-a', `ext-${i}`, 'Healthy', '', `Custom${String(i).padStart(2, '0')}`),
    );
    const foreign: RollupCondition = { ...initCondition('APIServerAvailable', T0), status: 'True' };
    const result = run([...custom, pair('node-a', 'proxy', 'Unhealthy', 'ProbeTimeout')], {
      previous: [foreign],
    });
    expect(result.conditions).toHaveLength(MAX_CONDITIONS);
    expect(result.conditions[0]).toBe(foreign);
    expect(byType(result.conditions, 'EveryNodeReady')?.status).toBe('False');
    expect(result.owned).toContain('Custom61');
    expect(result.owned).not.toContain('Custom62');
    expect(result.droppedTypes).toEqual(Array.from({ length: 8 }, (_, i) => `Custom${62 + i}`));
    // Every extension is still counted.
    expect(result.extensions).toHaveLength(71);
  });

  it('a type another owner already writes is taken over in place, needing no room', () => {
    const foreign = Array.from({ length: MAX_CONDITIONS }, (_, i) => ({
      ...initCondition(`Other${i}`, T0),
      status: 'True' as const,
    }));
    foreign[5] = { ...initCondition('EveryNodeReady', T0), status: 'True' };
    const result = run([pair('node-a', 'gpu', 'Healthy'), pair('node-a', 'x', 'Healthy', '', 'Mine')], {
      previous: foreign,
    });
    expect(result.conditions).toHaveLength(MAX_CONDITIONS);
    expect(result.owned).toEqual(['EveryNodeReady']);
    expect(result.droppedTypes).toEqual(['Mine']);
  });

  it('keeps at most MAX_EXTENSION_ROWS extension rows', () => {
    const pairs = Array.from({ length: MAX_EXTENSION_ROWS + 3 }, (_, i) =>
      pair('node-a', `e${i}`, 'Healthy'),
    );
    const result = run(pairs);
    expect(result.extensions).toHaveLength(MAX_EXTENSION_ROWS);
    expect(result.droppedExtensions).toBe(3);
  });
});

describe('nodes in maintenance (Gardener: nodes being rolled are Progressing, not a failure)', () => {
  const maintenance = { cause: 'DrainInProgress', since: '2026-11-23T09:58:00Z', detail: '' } as const;

  it('a pair of a maintained node that is not Healthy is progressing, whatever else holds', () => {
    const nodeNotReady = { reason: 'KubeletNotReady', since: '' };
    expect(classifyPair({ state: 'Unhealthy', reason: 'ProbeTimeout', maintenance })).toBe('progressing');
    expect(classifyPair({ state: 'Unknown', reason: 'AgentNotReporting', maintenance })).toBe('progressing');
    expect(classifyPair({ state: 'Unknown', reason: 'NodeNotReady', nodeNotReady, maintenance })).toBe(
      'progressing',
    );
    expect(classifyPair({ state: 'Healthy', reason: '', maintenance })).toBe('healthy');
  });

  it('EveryNodeReady is Progressing, names the node once, and the status counts maintained and planned nodes', () => {
    const result = run([
      { ...pair('node-a', 'gpu', 'Unhealthy', 'ProbeTimeout'), maintenance },
      { ...pair('node-a', 'cni', 'Unknown', 'AgentNotReporting'), maintenance },
      { ...pair('node-b', 'gpu', 'Healthy'), maintenancePlanned: true },
      pair('node-c', 'gpu', 'Healthy'),
    ]);
    const everyNode = byType(result.conditions, 'EveryNodeReady');
    expect(everyNode?.status).toBe('Progressing');
    expect(everyNode?.message).toBe('node-a: in maintenance since 2026-11-23T09:58:00Z (DrainInProgress).');
    expect(result.nextDeadlineMs).toBeUndefined();
    expect(result.maintenance).toEqual({ inProgress: 1, planned: 1 });
  });

  it('a failure on a node in service still fails beside a maintained one', () => {
    const result = run([
      { ...pair('node-a', 'gpu', 'Unhealthy', 'ProbeTimeout'), maintenance },
      pair('node-b', 'gpu', 'Unhealthy', 'ProbeTimeout'),
    ]);
    expect(byType(result.conditions, 'EveryNodeReady')?.reason).toBe('HealthCheckUnsuccessful');
    expect(byType(result.conditions, 'EveryNodeReady')?.message).toBe(
      'node-b: gpu Unhealthy (ProbeTimeout).',
    );
  });
});
