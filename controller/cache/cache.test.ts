// The controller's cache: which Leases it believes (issue 7 item 4), how it judges their renewals, and the
// node as kept (taints whole).

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { agentLeaseName, buildLease, extensionLeaseName, type LeaseObject } from '../../api/lease.ts';
import {
  EXTENSION_ANNOTATION_PREFIX,
  ExtensionState,
  GROUP_VERSION,
  LEASE_NAMESPACE,
  LeaseAnnotation,
  SYSTEM_EXTENSION,
} from '../../api/names.ts';
import { resolveRegistrations } from '../../api/registration.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { FakeClock } from '../../lib/testing.ts';
import type { KubeClient } from '../../lib/kube/client.ts';
import { KubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { FakeApiServer } from '../../lib/kube/testing.ts';
import { createLogger } from '../../lib/log.ts';
import {
  ClusterCache,
  LEASE_LIST_PAGE_SIZE,
  LeaseIndex,
  LeaseProblem,
  MAX_CACHED_LEASE_CHARS,
  MAX_LEASES_PER_NODE,
  Source,
  skippedObjectReporter,
  toCachedLease,
  toCachedNode,
  newerResourceVersion,
  WrittenNodes,
  type CachedLease,
  type CacheEvents,
} from './index.ts';
import { ownedByAnotherNode } from '../ingest.ts';
import { ControllerMetrics } from '../metrics.ts';
import { leasesPath } from '../../lib/kube/paths.ts';

const NODE = { name: 'node-x', uid: 'uid-x' };

function lease(extension: string | undefined, renewedAtMs = Date.UTC(2026, 0, 1)): LeaseObject {
  return buildLease({
    node: NODE,
    extension,
    holderIdentity: 'agent',
    leaseDurationSeconds: 40,
    renewTime: new Date(renewedAtMs),
    bootId: 'boot-1',
    record: extension
      ? { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded, message: '', since: '' }
      : undefined,
  });
}

function edited(obj: LeaseObject, edit: (metadata: LeaseObject['metadata']) => void): LeaseObject {
  const copy = structuredClone(obj);
  edit(copy.metadata);
  return copy;
}

describe('toCachedNode: maintenance signals (issue 23 item 2)', () => {
  it('keeps the strongest maintenance signal and a planned one, and nothing when there is none', () => {
    const cached = toCachedNode({
      metadata: { name: 'n1', uid: 'u1' },
      spec: {
        unschedulable: true,
        taints: [
          {
            key: 'node.kubernetes.io/unschedulable',
            effect: 'NoSchedule',
            timeAdded: '2026-11-25T08:00:00Z',
          },
        ],
      },
      status: {
        conditions: [
          {
            type: 'MaintenancePlanned',
            status: 'True',
            reason: 'KernelUpdate',
            lastTransitionTime: '2026-11-25T07:00:00Z',
          },
        ],
      },
    });
    expect(cached.maintenance).toEqual({
      cause: 'Cordoned',
      since: '2026-11-25T08:00:00Z',
      detail: 'spec.unschedulable',
    });
    expect(cached.maintenancePlanned).toEqual({ since: '2026-11-25T07:00:00Z', detail: 'KernelUpdate' });
    const plain = toCachedNode({ metadata: { name: 'n1', uid: 'u1' }, spec: { unschedulable: false } });
    expect('maintenance' in plain || 'maintenancePlanned' in plain).toBe(false);
  });

  it('a node being deleted is maintained, whatever else it says', () => {
    const cached = toCachedNode({
      metadata: { name: 'n1', deletionTimestamp: '2026-11-25T09:00:00Z' },
      status: { conditions: [{ type: 'DrainInProgress', status: 'True' }] },
    });
    expect(cached.maintenance?.cause).toBe('Deleting');
  });
});

describe('toCachedLease', () => {
  it.each([
    { behaviour: "the agent's own extension lease → believed", obj: lease('gpu'), problem: undefined },
    { behaviour: "the agent's heartbeat → believed", obj: lease(undefined), problem: undefined },
    {
      behaviour: 'claims node-x for gpu under another name → NameMismatch',
      obj: edited(lease('gpu'), (m) => (m.name = 'gpu.node-y')),
      problem: LeaseProblem.NameMismatch,
    },
    {
      behaviour: 'named for another extension than its label → NameMismatch',
      obj: edited(lease('gpu'), (m) => (m.name = extensionLeaseName(NODE.name, 'csi'))),
      problem: LeaseProblem.NameMismatch,
    },
    {
      behaviour: 'a heartbeat under an extension name → NameMismatch',
      obj: edited(lease(undefined), (m) => (m.name = extensionLeaseName(NODE.name, 'gpu'))),
      problem: LeaseProblem.NameMismatch,
    },
    {
      behaviour: 'no owner reference → OwnerMismatch',
      obj: edited(lease('gpu'), (m) => delete m.ownerReferences),
      problem: LeaseProblem.OwnerMismatch,
    },
    {
      behaviour: 'owned by another node → OwnerMismatch',
      obj: edited(
        lease('gpu'),
        (m) => (m.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: 'node-y', uid: 'u' }]),
      ),
      problem: LeaseProblem.OwnerMismatch,
    },
    {
      behaviour:
        'a dotted extension label under the name derived from it → InvalidExtension (node c writing nodecare-agent.b.c, the heartbeat name of node b.c)',
      obj: lease('nodecare-agent.b'),
      problem: LeaseProblem.InvalidExtension,
    },
    {
      behaviour: "the agent's reserved name as an extension → InvalidExtension",
      obj: lease('nodecare-agent'),
      problem: LeaseProblem.InvalidExtension,
    },
  ])('$behaviour', ({ obj, problem }) => {
    expect(toCachedLease(obj)?.problem).toBe(problem);
  });
});

describe('toCachedLease for a node whose `<extension>.<node>` exceeds 253 characters (issue 20 item 5)', () => {
  const LONG = { name: `${'n'.repeat(200)}.${'m'.repeat(52)}`, uid: '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b' };
  const longLease = (node: { name: string; uid: string }): LeaseObject =>
    buildLease({
      node,
      extension: 'gpu',
      holderIdentity: 'agent',
      leaseDurationSeconds: 40,
      renewTime: new Date(Date.UTC(2026, 0, 1)),
      bootId: 'boot-1',
      record: { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded, message: '', since: '' },
    });

  it('believes the Lease named after its owner Node UID', () => {
    const cached = toCachedLease(longLease(LONG));
    expect(cached?.name).toBe(`gpu.${LONG.uid}`);
    expect(cached?.problem).toBeUndefined();
  });

  it('does not believe a Lease named after another UID than its owner (the other node keeps its name)', () => {
    const other = '0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d';
    const squatter = edited(longLease(LONG), (m) => (m.name = `gpu.${other}`));
    expect(toCachedLease(squatter)?.problem).toBe(LeaseProblem.NameMismatch);
  });

  it('does not believe a long pair without an owner (no UID, so no name)', () => {
    const orphan = edited(longLease(LONG), (m) => delete m.ownerReferences);
    expect(toCachedLease(orphan)?.problem).toBe(LeaseProblem.NameMismatch);
  });

  it("is ignored for a node whose UID is not its owner's (another incarnation)", () => {
    const index = new LeaseIndex(new FakeClock(), {});
    index.added(toCachedLease(longLease(LONG))!);
    expect(index.leasesOf({ name: LONG.name, uid: LONG.uid }).extensions.get('gpu')).toBeDefined();
    expect(index.leasesOf({ name: LONG.name, uid: 'another-uid' }).extensions.get('gpu')).toBeUndefined();
  });
});

function setup() {
  const clock = new FakeClock();
  const ignored: Array<{ name: string; problem: LeaseProblem }> = [];
  const counts: Record<string, number> = {};
  const index = new LeaseIndex(clock, {
    ignored: (l, problem) => ignored.push({ name: l.name, problem }),
    ignoredCount: (problem, count) => (counts[problem] = count),
  });
  const cached = (obj: LeaseObject): CachedLease => toCachedLease(obj)!;
  return { clock, index, ignored, counts, cached };
}

describe('ownedByAnotherNode (the foreign-lease rule the controller and kubectl nodecare share)', () => {
  it.each([
    { name: "owned by the node's UID → believed", ownerUid: 'uid-1', nodeUid: 'uid-1', foreign: false },
    { name: 'owned by another UID → foreign', ownerUid: 'uid-0', nodeUid: 'uid-1', foreign: true },
    { name: 'no owner reference → believed', ownerUid: undefined, nodeUid: 'uid-1', foreign: false },
    { name: "the node's UID unknown → believed", ownerUid: 'uid-0', nodeUid: '', foreign: false },
  ])('$name', ({ ownerUid, nodeUid, foreign }) => {
    expect(ownedByAnotherNode(ownerUid === undefined ? {} : { ownerUid }, nodeUid)).toBe(foreign);
  });
});

describe('LeaseIndex (regression: the controller believed any Lease)', () => {
  it('a lease claiming node-x for gpu under a wrong name is not filed under node-x, and reported once', () => {
    const { index, ignored, counts, cached } = setup();
    const forged = cached(edited(lease('gpu'), (m) => (m.name = 'forged')));
    expect(index.added(forged)).toBeUndefined();
    expect(index.updated({ ...forged, renewTime: 'later' }, forged)).toBeUndefined();
    expect(index.leasesOf(NODE).extensions.size).toBe(0);
    expect(ignored).toEqual([{ name: 'forged', problem: LeaseProblem.NameMismatch }]);
    expect(counts).toEqual({ NameMismatch: 1 });
    index.deleted(forged);
    expect(counts).toEqual({ NameMismatch: 0 });
  });

  it('a lease owned by an earlier node of the same name (owner UID) is ignored for the new node', () => {
    const { index, ignored, cached } = setup();
    expect(index.added(cached(lease('gpu')))).toBe(NODE.name);
    expect(index.leasesOf({ name: NODE.name, uid: 'uid-new' }).extensions.size).toBe(0);
    expect(index.leasesOf({ name: NODE.name, uid: 'uid-new' }).extensions.size).toBe(0);
    expect(ignored).toEqual([
      { name: extensionLeaseName(NODE.name, 'gpu'), problem: LeaseProblem.OwnerMismatch },
    ]);
    expect(index.leasesOf(NODE).extensions.get('gpu')?.lease.extension).toBe('gpu');
  });

  it('the real leases are filed by node: extension by name, heartbeat apart', () => {
    const { index, cached } = setup();
    index.added(cached(lease('gpu')));
    index.added(cached(lease(undefined)));
    const { extensions, agent } = index.leasesOf(NODE);
    expect([...extensions.keys()]).toEqual(['gpu']);
    expect(agent?.lease.name).toBe(agentLeaseName(NODE.name));
  });

  it('a lease that becomes forged is taken away from its node; one that is fixed is filed', () => {
    const { index, cached } = setup();
    const good = cached(lease('gpu'));
    index.added(good);
    const forged = cached(edited(lease('gpu'), (m) => delete m.ownerReferences));
    expect(index.updated(forged, good)).toBe(NODE.name);
    expect(index.leasesOf(NODE).extensions.size).toBe(0);
    expect(index.updated(good, forged)).toBe(NODE.name);
    expect(index.leasesOf(NODE).extensions.size).toBe(1);
  });

  it('a live read of a forged lease is never taken as a renewal', () => {
    const { index, cached } = setup();
    index.added(cached(lease('gpu', 0)));
    const forged = cached(edited(lease('gpu', 1_000), (m) => delete m.ownerReferences));
    expect(index.observeLive(forged)).toBe(false);
    expect(index.observeLive(cached(lease('gpu', 1_000)))).toBe(true);
  });

  it('a renewal of a live lease needs no reconcile; one that revives an expired lease does', async () => {
    const { clock, index, cached } = setup();
    index.added(cached(lease('gpu', 0)));
    expect(index.updated(cached(lease('gpu', 1)), cached(lease('gpu', 0)))).toBeUndefined();
    await clock.advance(41_000);
    expect(index.updated(cached(lease('gpu', 2)), cached(lease('gpu', 1)))).toBe(NODE.name);
  });
});

describe('LeaseIndex: a renewal is renewTime and resourceVersion only, any other field is a change', () => {
  const renewed = { renewTime: '2026-01-01T00:00:09.000000Z', resourceVersion: '999' };
  it.each([
    { field: 'state', value: 'Unhealthy' },
    { field: 'reason', value: 'ProbeFailed' },
    { field: 'message', value: 'broken' },
    { field: 'since', value: '2026-01-01T00:00:05Z' },
    { field: 'bootId', value: 'boot-2' },
    { field: 'holderIdentity', value: 'someone-else' },
    { field: 'leaseDurationSeconds', value: 80 },
    { field: 'ownerUid', value: undefined },
  ])('a renewal that also changes $field queues its node', ({ field, value }) => {
    const { index, cached } = setup();
    const known = cached(lease('gpu', 0));
    index.added(known);
    expect(index.updated({ ...known, ...renewed }, known)).toBeUndefined();
    expect(index.updated({ ...known, ...renewed, [field]: value }, known)).toBe(NODE.name);
  });

  it('an absent field equals an undefined one', () => {
    const { index, cached } = setup();
    const heartbeat = cached(lease(undefined, 0)); // extension and state: undefined
    expect(heartbeat).toHaveProperty('extension', undefined);
    index.added(heartbeat);
    const { extension: _extension, state: _state, ...absent } = { ...heartbeat, ...renewed };
    expect(index.updated(absent as CachedLease, heartbeat)).toBeUndefined();
  });
});

describe('LeaseIndex bounds what one node can make the controller hold (issue 20 item 2)', () => {
  it(`files at most ${MAX_LEASES_PER_NODE} Leases per node; more are ignored as TooManyLeases, reported once, filed when room is made`, () => {
    const { index, ignored, counts, cached } = setup();
    const names = Array.from({ length: MAX_LEASES_PER_NODE }, (_, i) => `ext-${i}`);
    for (const name of names) expect(index.added(cached(lease(name)))).toBe(NODE.name);
    const extra = cached(lease('one-too-many'));
    expect(index.added(extra)).toBeUndefined();
    expect(index.updated(cached(lease('one-too-many', 1)), extra)).toBeUndefined();
    expect(index.leasesOf(NODE).extensions.size).toBe(MAX_LEASES_PER_NODE);
    expect(ignored).toEqual([{ name: extra.name, problem: LeaseProblem.TooManyLeases }]);
    expect(counts).toEqual({ TooManyLeases: 1 });
    // Another node is not affected by node-x's Leases.
    const other = { name: 'node-y', uid: 'uid-y' };
    const otherLease = toCachedLease(
      buildLease({
        node: other,
        extension: 'gpu',
        holderIdentity: 'agent',
        leaseDurationSeconds: 40,
        renewTime: new Date(0),
        bootId: 'boot-1',
        record: { state: ExtensionState.Healthy, reason: ProbeReason.ProbeSucceeded, message: '', since: '' },
      }),
    )!;
    expect(index.added(otherLease)).toBe('node-y');
    // One Lease of node-x goes: the ignored one is filed on its next renewal.
    index.deleted(cached(lease(names[0])));
    expect(index.updated(cached(lease('one-too-many', 2)), cached(lease('one-too-many', 1)))).toBe(NODE.name);
    expect(index.leasesOf(NODE).extensions.has('one-too-many')).toBe(true);
    expect(counts).toEqual({ TooManyLeases: 0 });
  });

  it('keeps the count of ignored Leases per problem exact through adds, problem changes and deletes', () => {
    const { index, counts, cached } = setup();
    const unowned = (name: string): CachedLease =>
      cached(edited(lease(name), (m) => delete m.ownerReferences));
    const misnamed = (name: string): CachedLease =>
      cached(edited(lease(name), (m) => (m.name = `${name}-x`)));
    for (let i = 0; i < 1000; i++) index.added(unowned(`u-${i}`));
    for (let i = 0; i < 500; i++) index.added(misnamed(`m-${i}`));
    expect(counts).toEqual({ OwnerMismatch: 1000, NameMismatch: 500 });
    // A fixed Lease stops being ignored; a deleted one too.
    index.updated(cached(lease('u-0')), unowned('u-0'));
    index.deleted(unowned('u-1'));
    index.deleted(misnamed('m-0'));
    expect(counts).toEqual({ OwnerMismatch: 998, NameMismatch: 499 });
    // Renewals of ignored Leases change nothing.
    index.updated(unowned('u-2'), unowned('u-2'));
    expect(counts).toEqual({ OwnerMismatch: 998, NameMismatch: 499 });
  });
});

describe('WrittenNodes: the controller reads its own writes before the watch delivers them (issue 24 item 1)', () => {
  const at = (resourceVersion: string, taint?: string) =>
    toCachedNode({
      metadata: { name: 'n', resourceVersion },
      spec: { taints: taint ? [{ key: taint, effect: 'NoSchedule' }] : [] },
    });

  it.each([
    ['102', '101', true],
    ['101', '102', false],
    ['101', '101', false],
    ['1000', '999', true], // by number, not by text
    ['999', '1000', false],
    ['9223372036854775807', '1', true],
    ['abc', '1', undefined], // not etcd's revisions: no order assumed
    ['1', '', undefined],
  ] as const)('newerResourceVersion(%s, %s) → %s', (a, b, newer) => {
    expect(newerResourceVersion(a, b)).toBe(newer);
  });

  it('our write is read until the watch delivers it; events older than it do not hide it', () => {
    const written = new WrittenNodes();
    const before = at('100', 'boot');
    written.note(at('102'), before); // status write → 101, taint write → 102
    expect(written.read('n', before)?.resourceVersion).toBe('102');
    expect(written.read('n', at('101', 'boot'))?.resourceVersion).toBe('102'); // the status write's event
    expect(written.read('n', at('102'))?.resourceVersion).toBe('102'); // the watch caught up
    expect(written.size).toBe(0);
    expect(written.read('n', at('102'))?.resourceVersion).toBe('102');
  });

  it('a newer change by someone else wins over our write', () => {
    const written = new WrittenNodes();
    written.note(at('102'), at('100'));
    expect(written.read('n', at('105', 'theirs'))?.taints.map((t) => t.key)).toEqual(['theirs']);
    expect(written.size).toBe(0);
  });

  it('a node the watch deleted is gone, whatever we wrote', () => {
    const written = new WrittenNodes();
    written.note(at('102'), at('100'));
    expect(written.read('n', undefined)).toBeUndefined();
    expect(written.size).toBe(0);
  });

  it("covers the watch's echoes of our writes, and nothing newer, unordered or unwritten", () => {
    const written = new WrittenNodes();
    written.note(at('102'), at('100')); // taint write → 101, status write → 102
    expect(written.covers(at('101'))).toBe(true); // the first write's echo
    expect(written.size).toBe(1);
    expect(written.covers(at('102'))).toBe(true); // the last write's echo: the watch caught up
    expect(written.size).toBe(0);
    expect(written.covers(at('102'))).toBe(false); // nothing written any more
    written.note(at('202'), at('200'));
    expect(written.covers(at('203', 'theirs'))).toBe(false); // someone else's, after our write
    expect(written.covers(at('x1'))).toBe(false); // no order: assumed news
    expect(written.covers({ ...at('101'), name: 'other' })).toBe(false);
  });

  it('keeps nothing it cannot order, or for a node the watch does not know', () => {
    const written = new WrittenNodes();
    written.note(at('x2'), at('x1'));
    written.note(at('5'), undefined);
    written.note(at('99'), at('100')); // older than the watch's copy
    expect(written.size).toBe(0);
    expect(written.read('n', at('x1'))?.resourceVersion).toBe('x1');
  });
});

describe('toCachedNode', () => {
  const ready = (status: string, extra: Record<string, string> = {}) => ({
    metadata: { name: 'n' },
    status: {
      conditions: [
        { type: 'MemoryPressure', status: 'False' },
        { type: 'Ready', status, lastHeartbeatTime: '2026-01-01T00:09:00Z', ...extra },
      ],
    },
  });

  it.each([
    { name: 'no Ready condition (a plain Node object) → as before', raw: { metadata: { name: 'n' } } },
    { name: 'Ready True → as before', raw: ready('True', { reason: 'KubeletReady' }) },
  ])('keeps no kubelet condition: $name', ({ raw }) => {
    const cached = toCachedNode(raw);
    expect(cached.kubeletNotReady).toBeUndefined();
    expect('kubeletNotReady' in cached).toBe(false);
  });

  it('keeps the kubelet Ready condition when it is not True: status, reason, message, since (no heartbeat time)', () => {
    const raw = ready('Unknown', {
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
      lastTransitionTime: '2026-01-01T00:05:00Z',
    });
    expect(toCachedNode(raw).kubeletNotReady).toEqual({
      status: 'Unknown',
      reason: 'NodeStatusUnknown',
      message: 'Kubelet stopped posting node status.',
      since: '2026-01-01T00:05:00Z',
    });
    expect(toCachedNode(ready('False')).kubeletNotReady).toEqual({
      status: 'False',
      reason: '',
      message: '',
      since: '',
    });
  });

  it('caps and escapes what a node writes in its Ready condition', () => {
    const cached = toCachedNode(
      ready('False', {
        reason: `Bad\u001b[2J${'x'.repeat(500)}`,
        message: `line1\nline2 \u001b]0;t\u0007 ${'y'.repeat(5000)}`,
      }),
    ).kubeletNotReady;
    expect(cached?.reason.startsWith('Bad\\u001b[2J')).toBe(true);
    expect(cached?.reason.length).toBeLessThan(120);
    expect(cached?.message.startsWith('line1 line2 \\u001b]0;t\\u0007 y')).toBe(true);
    expect([...(cached?.message ?? '')].some((c) => c.charCodeAt(0) < 0x20)).toBe(false);
    expect(cached?.message.length).toBeLessThanOrEqual(256);
  });

  it('keeps taints whole, timeAdded included', () => {
    const taint = {
      key: 'node.kubernetes.io/unreachable',
      effect: 'NoExecute',
      timeAdded: '2026-01-01T00:00:00Z',
    };
    expect(toCachedNode({ metadata: { name: 'n' }, spec: { taints: [taint] } }).taints).toEqual([taint]);
  });

  it.each([
    { name: '256 KiB of ASCII', value: 'x'.repeat(256 * 1024) },
    { name: '4097 bytes', value: `{"probe":{"tcp":{"port":1}},"x":"${'y'.repeat(4070)}"}` },
    { name: '2000 characters of 3-byte UTF-8 (6000 bytes)', value: '€'.repeat(2000) },
  ])(
    'keeps an extension annotation too long to parse ($name) only as its problem, registered as before (regression: kept raw)',
    ({ value }) => {
      const key = `${EXTENSION_ANNOTATION_PREFIX}big`;
      const raw = {
        metadata: {
          name: 'n',
          annotations: {
            [key]: value,
            [`${EXTENSION_ANNOTATION_PREFIX}small`]: 'tcp://127.0.0.1:9000',
            'other.example/big': value,
          },
        },
      };
      const cached = toCachedNode(raw);
      expect(JSON.stringify(cached).length).toBeLessThan(1024);
      expect(cached.annotations).toEqual({ [`${EXTENSION_ANNOTATION_PREFIX}small`]: 'tcp://127.0.0.1:9000' });
      const fromRaw = resolveRegistrations(
        { name: 'n', labels: {}, annotations: raw.metadata.annotations },
        [],
      );
      const fromCache = resolveRegistrations(cached, []);
      expect(fromCache).toEqual(fromRaw);
      expect(fromCache.byName.get('big')).toMatchObject({
        valid: false,
        problems: [expect.stringMatching(/^value: too long to parse/)],
      });
    },
  );

  it('keeps a value of exactly 4096 bytes (it is parsed)', () => {
    const value = `{"probe":{"tcp":{"port":1}},"x":"${'y'.repeat(4096 - 35)}"}`;
    expect(Buffer.byteLength(value)).toBe(4096);
    const key = `${EXTENSION_ANNOTATION_PREFIX}edge`;
    const cached = toCachedNode({ metadata: { name: 'n', annotations: { [key]: value } } });
    expect(cached.annotations[key]).toBe(value);
    expect(cached.unparsedAnnotations).toEqual({});
  });
});

/** A list-watch client for `items`; while `down`, every LIST and WATCH fails as in an outage. */
function listWatchClient(items: Array<{ metadata: { name: string; resourceVersion: string } }>) {
  const state = {
    lists: 0,
    down: false,
    notServed: false,
    endAtOnce: false,
    items,
    endWatch: () => undefined as void,
  };
  const refused = (): KubeError => new KubeError(KubeErrorCode.Network, 0, 'connection refused');
  const client = {
    get: async () => {
      if (state.down) throw refused();
      if (state.notServed) throw new KubeError(KubeErrorCode.NotFound, 404, 'the server could not find it');
      state.lists++;
      return { metadata: { resourceVersion: String(100 + state.lists) }, items: state.items };
    },
    watch: async (_path: string, _query: unknown, _onEvent: unknown, signal: AbortSignal) => {
      if (state.down) throw refused();
      if (state.endAtOnce) return;
      await new Promise<void>((resolve) => {
        state.endWatch = resolve;
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    },
  } as unknown as KubeClient;
  return { client, state };
}

describe('Source (regression: after an API outage the caches never reported "not synced")', () => {
  it('is out of sync from a failed watch until a relist is in; what vanished meanwhile comes out deleted', async () => {
    const clock = new FakeClock();
    const { client, state } = listWatchClient([
      { metadata: { name: 'a', resourceVersion: '1' } },
      { metadata: { name: 'b', resourceVersion: '1' } },
    ]);
    const deleted: string[] = [];
    // What the source said of its sync each time it turned.
    const turns: boolean[] = [];
    const source: Source<{ metadata: { name: string } }, string> = new Source({
      client,
      clock,
      path: '/things',
      transform: (raw: { metadata: { name: string } }) => raw.metadata.name,
      handlers: { deleted: (name) => deleted.push(name) },
      syncChanged: () => turns.push(source.synced),
    });
    source.start();
    await clock.advance(0);
    expect(source.synced).toBe(true);
    expect(turns).toEqual([true]);

    // An outage: the watch ends and cannot be reopened; 'b' is deleted while we cannot see it.
    state.down = true;
    state.items = [{ metadata: { name: 'a', resourceVersion: '1' } }];
    state.endWatch();
    await clock.advance(1_000);
    expect(source.synced).toBe(false);
    await clock.advance(60_000);
    expect(source.synced).toBe(false);
    // Said once when it fell out of sync, not again for each failed relist.
    expect(turns).toEqual([true, false]);

    state.down = false;
    await clock.advance(60_000); // the relist, after the reflector's backoff
    expect(source.synced).toBe(true);
    expect(turns).toEqual([true, false, true]);
    expect(deleted).toEqual(['b']);
    expect([...source.store.keys()]).toEqual(['a']);
    await source.stop();
  });

  it('a server that ends every watch at once is relisted with a growing backoff, not in a tight loop', async () => {
    const clock = new FakeClock();
    const { client, state } = listWatchClient([{ metadata: { name: 'a', resourceVersion: '1' } }]);
    const source = new Source({
      client,
      clock,
      path: '/things',
      transform: (raw: { metadata: { name: string } }) => raw.metadata.name,
      handlers: {},
      random: () => 1,
    });
    source.start();
    await clock.advance(0);
    state.endAtOnce = true;
    state.endWatch();
    for (let ms = 0; ms < 30_000; ms += 100) await clock.advance(100);
    // Backoff 0.8, 1.6, 3.2, 6.4, 12.8 s: a handful of lists in 30 s, not thousands.
    expect(state.lists).toBeGreaterThan(2);
    expect(state.lists).toBeLessThan(10);
    await source.stop();
  });

  it("a relist that meets a 404 (a restarted API server not serving a CRD's path yet) keeps what it knew", async () => {
    const clock = new FakeClock();
    const { client, state } = listWatchClient([{ metadata: { name: 'gpu', resourceVersion: '1' } }]);
    const deleted: string[] = [];
    const source = new Source({
      client,
      clock,
      path: '/apis/nodecare.io/v1alpha1/systemextensions',
      transform: (raw: { metadata: { name: string } }) => raw.metadata.name,
      handlers: { deleted: (name) => deleted.push(name) },
    });
    source.start();
    await clock.advance(0);
    state.notServed = true;
    state.endAtOnce = true;
    state.endWatch();
    for (let ms = 0; ms < 30_000; ms += 100) await clock.advance(100);
    expect(source.synced).toBe(false);
    expect(deleted).toEqual([]);
    expect([...source.store.keys()]).toEqual(['gpu']);

    state.notServed = false;
    state.endAtOnce = false;
    for (let ms = 0; ms < 60_000 && !source.synced; ms += 100) await clock.advance(100);
    expect(source.synced).toBe(true);
    expect([...source.store.keys()]).toEqual(['gpu']);
    await source.stop();
  });
});

const NODES = '/api/v1/nodes';

/** A ClusterCache over `api` whose events do nothing but what `events` sets. */
function clusterCacheOver(api: FakeApiServer, events: Partial<CacheEvents> = {}): ClusterCache {
  return new ClusterCache(api.client(), new FakeClock(), {
    nodeChanged: () => undefined,
    allNodesChanged: () => undefined,
    error: () => undefined,
    skipped: () => undefined,
    ...events,
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !check(); waited += 10) {
    if (waited > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('ClusterCache poison objects (regression: dropped silently)', () => {
  it('logs a skipped object once and counts every skip by source', async () => {
    const api = await FakeApiServer.start();
    // status.conditions that is not a list makes the node's ingest throw.
    const poison = { metadata: { name: 'poison' }, status: { conditions: {} } };
    api.serve(NODES, [{ metadata: { name: 'good' } }, poison]);
    api.serve(leasesPath(LEASE_NAMESPACE));
    api.serve('/apis/apps/v1/daemonsets');
    api.serve(`/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`);
    const lines: Array<Record<string, unknown>> = [];
    const log = createLogger(
      { level: 'info', name: 'test' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const metrics = new ControllerMetrics(new Registry());
    const skips = async (): Promise<unknown> =>
      (await metrics.watchObjectsSkipped.get()).values.map((v) => [v.labels.source, v.value]);
    const cache = clusterCacheOver(api, { skipped: skippedObjectReporter(log, metrics) });
    try {
      cache.start();
      await until(() => cache.synced, 'the first sync');
      expect([...cache.nodeNames()]).toEqual(['good']);
      // An event emitted before the watch is open would be lost.
      await until(() => api.watchRequests(NODES).length === 1, 'the node watch');
      api.emit(NODES, 'MODIFIED', poison);
      api.emit(NODES, 'ADDED', { metadata: { name: 'after' } });
      await until(() => cache.node('after') !== undefined, 'the event after the poison one');
      expect(await skips()).toEqual([['nodes', 2]]);
      const skipped = lines.filter((l) => l.msg === 'Skipped an object that could not be handled');
      expect(skipped).toEqual([
        expect.objectContaining({
          level: 'error',
          source: 'nodes',
          object: 'poison',
          err: expect.anything(),
        }),
      ]);
    } finally {
      await cache.stop();
      await api.close();
    }
  });
});

describe("ClusterCache node events (issue 24: the watch's echo of each of the controller's writes was reconciled)", () => {
  // The fake API server stamps each object it serves or emits with the next resourceVersion.
  const node = (taint?: string) => ({
    metadata: { name: 'a' },
    spec: { taints: taint ? [{ key: taint, effect: 'NoSchedule' }] : [] },
  });

  it("reports no change for the echo of the controller's own writes, and a change by anyone else after them", async () => {
    const api = await FakeApiServer.start();
    api.serve(NODES, [node('boot')]);
    api.serve(leasesPath(LEASE_NAMESPACE));
    api.serve('/apis/apps/v1/daemonsets');
    api.serve(`/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`);
    const changed: string[] = [];
    const cache = clusterCacheOver(api, { nodeChanged: (name) => void changed.push(name) });
    const version = (): number => Number(cache.nodes.store.get('a')?.resourceVersion);
    try {
      cache.start();
      await until(() => cache.synced && api.watchRequests(NODES).length > 0, 'the first sync and the watch');
      const listed = version();
      changed.length = 0;
      // The controller removed the taint (→ listed + 1), then wrote the condition (→ listed + 2), and noted the
      // last write; the watch delivers both.
      cache.noteWritten(
        toCachedNode({ ...node(), metadata: { name: 'a', resourceVersion: String(listed + 2) } }),
      );
      api.emit(NODES, 'MODIFIED', node());
      api.emit(NODES, 'MODIFIED', node());
      await until(() => version() === listed + 2, 'the echoes');
      expect(changed).toEqual([]);
      api.emit(NODES, 'MODIFIED', node('theirs'));
      await until(() => changed.length > 0, 'the change after them');
      expect(changed).toEqual(['a']);
    } finally {
      await cache.stop();
      await api.close();
    }
  });
});

describe('ClusterCache list pages (issue 24: a 5,000-node LIST of leases in pages of 500 took 18 s under load)', () => {
  it("lists leases LEASE_LIST_PAGE_SIZE to a page and nodes in the reflector's 500", async () => {
    const api = await FakeApiServer.start();
    api.serve(NODES, [{ metadata: { name: 'a' } }]);
    api.serve(leasesPath(LEASE_NAMESPACE));
    api.serve('/apis/apps/v1/daemonsets');
    api.serve(`/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`);
    const cache = clusterCacheOver(api);
    try {
      cache.start();
      await until(() => cache.synced, 'the first sync');
      expect(LEASE_LIST_PAGE_SIZE).toBe(2_000);
      const limits = (path: string): Array<string | null> =>
        api.listRequests(path).map((r) => r.query.get('limit'));
      expect(limits(leasesPath(LEASE_NAMESPACE))).toEqual(['2000']);
      expect(limits(NODES)).toEqual(['500']);
    } finally {
      await cache.stop();
      await api.close();
    }
  });
});

describe('ClusterCache SystemExtension events (issue 24: every status write re-decided every node)', () => {
  const SXS = `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`;
  const sx = (generation: number, status: object, url = 'http://127.0.0.1:9879/healthz') => ({
    metadata: {
      name: 'cni',
      generation,
      resourceVersion: String(10 + generation),
      creationTimestamp: '2026-11-25T10:00:00Z',
    },
    spec: { probe: { http: { url } } },
    status,
  });

  it('a status-only write (the roll-up counts) re-decides no node; a spec change or a new rollout window does', async () => {
    const api = await FakeApiServer.start();
    api.serve('/api/v1/nodes');
    api.serve(leasesPath(LEASE_NAMESPACE));
    api.serve('/apis/apps/v1/daemonsets');
    api.serve(SXS, [sx(1, { nodes: 3, healthy: 1 })]);
    const seen: string[] = [];
    const cache = clusterCacheOver(api, {
      allNodesChanged: () => void seen.push('all nodes'),
      systemExtensionStatusChanged: () => void seen.push('status'),
    });
    const until = async (n: number): Promise<void> => {
      for (let waited = 0; seen.length < n; waited += 10) {
        if (waited > 10_000) throw new Error(`timed out waiting for event ${n}: ${seen.join(', ')}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    try {
      cache.start();
      await until(1);
      // Events reach a watch that is open.
      for (let waited = 0; api.watchRequests(SXS).length === 0; waited += 10) {
        if (waited > 10_000) throw new Error('no SystemExtension watch');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      api.emit(SXS, 'MODIFIED', sx(1, { nodes: 3, healthy: 2 }));
      await until(2);
      api.emit(SXS, 'MODIFIED', sx(2, { nodes: 3, healthy: 2 }, 'http://127.0.0.1:9880/healthz'));
      await until(3);
      api.emit(
        SXS,
        'MODIFIED',
        sx(
          2,
          { rollout: { observedGeneration: 2, startedAt: '2026-11-25T10:05:00Z' } },
          'http://127.0.0.1:9880/healthz',
        ),
      );
      await until(4);
      expect(seen).toEqual(['all nodes', 'status', 'all nodes', 'all nodes']);
    } finally {
      await cache.stop();
      await api.close();
    }
  });
});

describe('ClusterCache lease renewals (issue 24 item 3: a renewal made a new long-lived object)', () => {
  it('a renewal brings the lease already held up to date in place; any other change replaces it', async () => {
    const api = await FakeApiServer.start();
    const key = `${LEASE_NAMESPACE}/${extensionLeaseName(NODE.name, 'gpu')}`;
    const at = (ms: number, state: ExtensionState = ExtensionState.Healthy): LeaseObject =>
      edited(lease('gpu', ms), (m) => (m.annotations = { ...m.annotations, [LeaseAnnotation.state]: state }));
    api.serve(NODES, [{ metadata: { name: NODE.name, uid: NODE.uid } }]);
    api.serve(leasesPath(LEASE_NAMESPACE), [at(0)]);
    api.serve('/apis/apps/v1/daemonsets');
    api.serve(`/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`);
    const changed: string[] = [];
    const cache = clusterCacheOver(api, { nodeChanged: (name) => void changed.push(name) });
    try {
      cache.start();
      await until(() => cache.synced, 'the first sync');
      const held = cache.leases.store.get(key);
      const listed = held?.resourceVersion;
      expect(held?.renewTime).toBe(toCachedLease(at(0))?.renewTime);
      changed.length = 0;

      api.emit(leasesPath(LEASE_NAMESPACE), 'MODIFIED', at(1_000));
      await until(() => held?.resourceVersion !== listed, 'the renewal');
      expect(cache.leases.store.get(key)).toBe(held);
      expect(held?.renewTime).toBe(toCachedLease(at(1_000))?.renewTime);
      expect(cache.leasesOf(NODE.name).extensions.get('gpu')?.lease).toBe(held);
      expect(changed).toEqual([]);

      api.emit(leasesPath(LEASE_NAMESPACE), 'MODIFIED', at(2_000, ExtensionState.Unhealthy));
      await until(() => cache.leases.store.get(key) !== held, 'the state change');
      const replaced = cache.leases.store.get(key);
      expect(replaced?.state).toBe(ExtensionState.Unhealthy);
      expect(held?.state).toBe(ExtensionState.Healthy);
      expect(cache.leasesOf(NODE.name).extensions.get('gpu')?.lease).toBe(replaced);
      expect(changed).toEqual([NODE.name]);
    } finally {
      await cache.stop();
      await api.close();
    }
  });
});

describe('What one Lease can make the controller hold is bounded (issue 50 item 2)', () => {
  const MB = 'x'.repeat(1_500_000);
  /** A Lease as an agent token could write it before admission bounded it: every string 1.5 MB. */
  const huge = (extension = 'gpu'): LeaseObject => {
    const obj = lease(extension);
    obj.metadata.resourceVersion = '9'.repeat(64) + MB;
    obj.metadata.annotations = {
      ...obj.metadata.annotations,
      [LeaseAnnotation.reason]: MB,
      [LeaseAnnotation.message]: MB,
      [LeaseAnnotation.since]: MB,
      [LeaseAnnotation.bootId]: MB,
      'example.com/other': MB,
    };
    obj.metadata.ownerReferences![0]!.uid = `${NODE.uid}${MB}`;
    obj.spec = { ...obj.spec, holderIdentity: MB, renewTime: MB };
    return obj;
  };
  const size = (lease: CachedLease | undefined): number => JSON.stringify(lease).length;

  it(`keeps at most MAX_CACHED_LEASE_CHARS (${MAX_CACHED_LEASE_CHARS}) characters of a Lease whose every string is 1.5 MB`, () => {
    const cached = toCachedLease(huge());
    expect(cached?.extension).toBe('gpu');
    expect(size(cached)).toBeLessThanOrEqual(MAX_CACHED_LEASE_CHARS);
  });

  it("holds no more than that in memory: a cut string is a string of its own, not a view of the Lease's 1.5 MB", () => {
    // A collection on demand (V8's flag set at run time, the gc function taken from a fresh context).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const before = process.memoryUsage().heapUsed;
    // Each its own strings, as parsed from the API server's answer.
    const leases = Array.from(
      { length: 20 },
      (_, i) => JSON.parse(JSON.stringify(huge(`ext-${i}`))) as LeaseObject,
    );
    const kept = leases.map((l) => toCachedLease(l));
    leases.length = 0;
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    expect(kept).toHaveLength(20);
    // 20 Leases of 9 MB each were read; what is kept of them is a few KB each.
    expect(grown).toBeLessThan(2 * 1024 * 1024);
  });

  it('keeps only the name, node and problem of an ignored Lease, never its body', () => {
    const misnamed = edited(huge(), (m) => (m.name = 'gpu.node-y'));
    const cached = toCachedLease(misnamed);
    expect(cached?.problem).toBe(LeaseProblem.NameMismatch);
    expect(cached).toMatchObject({ name: 'gpu.node-y', node: NODE.name, holderIdentity: '', message: '' });
    expect(size(cached)).toBeLessThanOrEqual(400);
  });

  it('ignores a Lease naming a node longer than a node name can be (InvalidNode), keeping 253 characters of it', () => {
    const obj = edited(lease('gpu'), (m) => (m.annotations![LeaseAnnotation.node] = `node-x${MB}`));
    const cached = toCachedLease(obj);
    expect(cached?.problem).toBe(LeaseProblem.InvalidNode);
    expect(cached?.node).toHaveLength(253);
  });

  it('keeps of a Lease over the per-node cap (TooManyLeases) only its name and problem in the watch cache', async () => {
    const api = await FakeApiServer.start();
    const leases = Array.from({ length: MAX_LEASES_PER_NODE }, (_, i) => lease(`ext-${i}`));
    api.serve(NODES, [{ metadata: { name: NODE.name, uid: NODE.uid } }]);
    api.serve(leasesPath(LEASE_NAMESPACE), [...leases, huge('zz-one-too-many')]);
    api.serve('/apis/apps/v1/daemonsets');
    api.serve(`/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`);
    const cache = clusterCacheOver(api, {});
    try {
      cache.start();
      await until(() => cache.synced, 'the first sync');
      const extra = cache.leases.store.get(
        `${LEASE_NAMESPACE}/${extensionLeaseName(NODE.name, 'zz-one-too-many')}`,
      );
      expect(extra?.problem).toBe(LeaseProblem.TooManyLeases);
      expect(extra?.holderIdentity).toBe('');
      expect(size(extra)).toBeLessThanOrEqual(400);
      expect(cache.leasesOf(NODE.name).extensions.size).toBe(MAX_LEASES_PER_NODE);
    } finally {
      await cache.stop();
      await api.close();
    }
  });
});
