// The node writer against FakeNodeApi: taints before the condition (one status patch when no taint changes),
// each write fenced, counted and noted; a 409 is thrown for the reconciler to retry; taint events only for
// what a patch really changed.

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  NODE_CONDITION_TYPE,
  NODE_STATUS_LABEL,
  NodeAnnotation,
  RUNTIME_TAINT_VALUE,
} from '../../api/index.ts';
import { EventReason } from '../../api/reasons.ts';
import { createLogger } from '../../lib/log.ts';
import { FakeClock } from '../../lib/testing.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { CachedNode, NodeObject } from '../cache/index.ts';
import type { NodeDecision, NodeEvent } from '../decide/index.ts';
import { ControllerMetrics } from '../metrics.ts';
import { FakeNodeApi } from '../testing.ts';
import { NodeWriter, NotLeaderError } from './index.ts';
import { withMetadata } from './node-patch.ts';

const keys = { bootstrap: 'startup/meta', runtime: 'status/meta' };
const log = createLogger({ level: 'silent', name: 'test' });

function rawNode(taints: { key: string; effect: string }[] = []): NodeObject {
  return {
    metadata: { name: 'n', uid: 'u', labels: {}, annotations: {} },
    spec: { taints: taints as never },
    status: {},
  };
}

/** A decision that wants the runtime taint on and the node Unhealthy. */
function runtimeTainted(status: 'True' | 'False' = 'False'): NodeDecision {
  return {
    state: 'Unhealthy',
    desiredTaints: { bootstrap: false, runtime: true },
    label: 'unhealthy',
    desiredAnnotations: {},
    condition: { status, reason: 'ExtensionsUnhealthy', message: 'web is Unhealthy' },
    events: [{ type: 'Warning', reason: EventReason.RuntimeTaintAdded, message: 'tainted' }],
  } as unknown as NodeDecision;
}

function setup(options: { dryRun?: boolean; leading?: () => boolean } = {}) {
  const api = new FakeNodeApi();
  const node = api.putNode(rawNode());
  const noted: CachedNode[] = [];
  const metrics = new ControllerMetrics(new Registry());
  const writer = new NodeWriter({
    api,
    fence: () => {
      if (options.leading && !options.leading()) throw new NotLeaderError();
    },
    clock: new FakeClock(Date.UTC(2026, 0, 1)),
    metrics,
    keys,
    dryRun: options.dryRun ?? false,
    noteWritten: (n) => void noted.push(n),
  });
  const writes = async (kind: string, result: string): Promise<number> =>
    (await metrics.nodeWrites.get()).values.find((v) => v.labels.kind === kind && v.labels.result === result)
      ?.value ?? 0;
  return { api, node, noted, writer, writes };
}

/** One attempt (NodeWriter.apply) and the taint events it made. */
async function write(writer: NodeWriter, node: CachedNode, decision: NodeDecision) {
  const taintEvents: NodeEvent[] = [];
  await writer.apply(node, decision, log, taintEvents);
  return { taintEvents };
}

describe('NodeWriter', () => {
  it('patches the taints and label first, then the condition on the node that patch returned', async () => {
    const { api, node, noted, writer, writes } = setup();
    const written = await write(writer, node, runtimeTainted());
    expect(api.writes().map((w) => w.op)).toEqual(['patchNode', 'patchNodeStatus']);
    const stored = api.node('n')!;
    expect(stored.spec?.taints).toEqual([
      { key: 'status/meta', value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' },
    ]);
    expect(stored.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('unhealthy');
    expect(stored.status?.conditions?.map((c) => [c.type, c.status])).toEqual([
      [NODE_CONDITION_TYPE, 'False'],
    ]);
    expect(written.taintEvents.map((e) => e.reason)).toEqual([EventReason.RuntimeTaintAdded]);
    // Each write's result was noted, so the next decision reads it rather than the watch's older copy.
    expect(noted.map((n) => n.resourceVersion)).toEqual([
      String(Number(node.resourceVersion) + 1),
      String(Number(node.resourceVersion) + 2),
    ]);
    expect([await writes('node', 'ok'), await writes('condition', 'ok')]).toEqual([1, 1]);
  });

  it('writes nothing when the node already shows the decision, and says so through wouldWrite', async () => {
    const { api, node, writer } = setup();
    await write(writer, node, runtimeTainted());
    const current = api.putNode(api.node('n')!);
    expect(writer.wouldWrite(current, runtimeTainted())).toBe(false);
    expect(writer.wouldWrite(current, runtimeTainted('True'))).toBe(true);
    const before = api.writes().length;
    const again = await write(writer, current, runtimeTainted());
    expect(api.writes()).toHaveLength(before);
    expect(again.taintEvents).toEqual([]);
  });

  it('one attempt: a 409 is thrown for the reconciler to retry, with the taint events of the patch that went through', async () => {
    const { api, node, writer, writes } = setup();
    // The taint patch goes through, then the condition patch meets a node changed by another writer.
    api.beforeNext('patchNodeStatus', () => void api.putNode(api.node('n')!));
    const taintEvents: NodeEvent[] = [];
    const failure = await writer.apply(node, runtimeTainted(), log, taintEvents).catch((e: unknown) => e);
    expect(isKubeError(failure, KubeErrorCode.Conflict)).toBe(true);
    expect(taintEvents.map((e) => e.reason)).toEqual([EventReason.RuntimeTaintAdded]);
    expect(await writes('condition', 'conflict')).toBe(1);
    expect(api.writes().map((w) => w.op)).toEqual(['patchNode', 'patchNodeStatus']);
  });

  it('sends nothing once this replica no longer leads', async () => {
    const { api, node, writer } = setup({ leading: () => false });
    await expect(write(writer, node, runtimeTainted())).rejects.toBeInstanceOf(NotLeaderError);
    expect(api.writes()).toEqual([]);
  });

  it('in a dry run writes the label and condition but no taint, in one status patch', async () => {
    const { api, node, writer } = setup({ dryRun: true });
    const written = await write(writer, node, runtimeTainted());
    expect(api.writes().map((w) => w.op)).toEqual(['patchNodeStatus']);
    expect(api.node('n')!.spec?.taints).toEqual([]);
    expect(api.node('n')!.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('unhealthy');
    expect(written.taintEvents).toEqual([]);
  });

  it('when no taint changes, sends the label, the annotations and the condition in one status patch', async () => {
    const { api, writer, writes, noted } = setup();
    // Already tainted as decided, with a maintenance annotation the decision removes (null in the patch).
    const node = api.putNode({
      ...rawNode([{ key: 'status/meta', effect: 'NoSchedule' }]),
      metadata: { name: 'n', uid: 'u', labels: {}, annotations: { [NodeAnnotation.maintenance]: 'drain' } },
    });
    const decision = {
      ...runtimeTainted(),
      desiredAnnotations: { bootstrappedBootId: 'boot-1', maintenance: null },
    } as unknown as NodeDecision;
    const written = await write(writer, node, decision);
    expect(api.writes().map((w) => w.op)).toEqual(['patchNodeStatus']);
    const body = api.writes()[0]!.body as { metadata: object; spec?: object };
    expect(body.metadata).toEqual({
      resourceVersion: node.resourceVersion,
      labels: { [NODE_STATUS_LABEL]: 'unhealthy' },
      annotations: { [NodeAnnotation.bootstrappedBootId]: 'boot-1', [NodeAnnotation.maintenance]: null },
    });
    expect(body.spec).toBeUndefined();
    const stored = api.node('n')!;
    expect(stored.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('unhealthy');
    expect(stored.metadata?.annotations).toEqual({ [NodeAnnotation.bootstrappedBootId]: 'boot-1' });
    expect(stored.status?.conditions?.map((c) => [c.type, c.status])).toEqual([
      [NODE_CONDITION_TYPE, 'False'],
    ]);
    expect(written.taintEvents).toEqual([]);
    expect(noted).toHaveLength(1);
    expect([await writes('node', 'ok'), await writes('condition', 'ok')]).toEqual([0, 1]);
  });

  it('when no taint changes and the condition already matches, patches the label alone', async () => {
    const { api, writer } = setup();
    await write(writer, api.putNode(api.node('n')!), runtimeTainted());
    const current = api.putNode({
      ...api.node('n')!,
      metadata: { ...api.node('n')!.metadata, labels: {} },
    });
    const before = api.writes().length;
    await write(writer, current, runtimeTainted());
    expect(
      api
        .writes()
        .slice(before)
        .map((w) => w.op),
    ).toEqual(['patchNode']);
    expect(api.node('n')!.metadata?.labels?.[NODE_STATUS_LABEL]).toBe('unhealthy');
  });

  it('a taint change never goes through the status subresource, which would drop it', () => {
    const change = { taints: [], taintSummary: ['remove x:NoSchedule'] };
    expect(() => withMetadata({ metadata: { resourceVersion: '1' } }, change)).toThrow(/status subresource/);
  });
});
