import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY,
  DEFAULT_RUNTIME_TAINT_KEY,
  RUNTIME_TAINT_VALUE,
} from '../../api/names.ts';
import type { KubeClient, RequestOptions } from '../../lib/kube/client.ts';
import { classifyResponse } from '../../lib/kube/errors.ts';
import { NotLeaderError } from '../writes/index.ts';
import {
  evictionComplete,
  evictNodePods,
  readNodeHold,
  runtimeTaint,
  skipReason,
  SkipReason,
  toleratesTaint,
  type PodEvictionResult,
  type PodObject,
  type Toleration,
} from './evict.ts';

const TAINT = runtimeTaint(DEFAULT_RUNTIME_TAINT_KEY);

describe("toleratesTaint (the runtime taint, NoSchedule, nodecare's value)", () => {
  it.each<{ name: string; toleration: Toleration; tolerates: boolean }>([
    {
      name: 'same key, Exists → tolerates',
      toleration: { key: TAINT.key, operator: 'Exists' },
      tolerates: true,
    },
    {
      name: 'same key, Equal with empty value → does not (the taint has a value)',
      toleration: { key: TAINT.key, operator: 'Equal' },
      tolerates: false,
    },
    {
      name: "same key, no operator (Equal), nodecare's value → tolerates",
      toleration: { key: TAINT.key, value: RUNTIME_TAINT_VALUE },
      tolerates: true,
    },
    {
      name: 'same key, Equal with another value → does not',
      toleration: { key: TAINT.key, operator: 'Equal', value: 'x' },
      tolerates: false,
    },
    {
      name: 'same key, Exists, effect NoSchedule → tolerates',
      toleration: { key: TAINT.key, operator: 'Exists', effect: 'NoSchedule' },
      tolerates: true,
    },
    {
      name: 'same key, Exists, effect NoExecute → does not',
      toleration: { key: TAINT.key, operator: 'Exists', effect: 'NoExecute' },
      tolerates: false,
    },
    {
      name: 'empty key, Exists (tolerates everything) → tolerates',
      toleration: { operator: 'Exists' },
      tolerates: true,
    },
    {
      name: 'empty key, Exists, effect NoSchedule → tolerates',
      toleration: { operator: 'Exists', effect: 'NoSchedule' },
      tolerates: true,
    },
    {
      name: 'empty key, Exists, effect PreferNoSchedule → does not',
      toleration: { operator: 'Exists', effect: 'PreferNoSchedule' },
      tolerates: false,
    },
    {
      name: 'the bootstrap key → does not',
      toleration: { key: DEFAULT_BOOTSTRAP_TAINT_KEY, operator: 'Exists' },
      tolerates: false,
    },
    {
      name: 'another key → does not',
      toleration: { key: 'node.kubernetes.io/not-ready', operator: 'Exists' },
      tolerates: false,
    },
    { name: 'unknown operator → does not', toleration: { key: TAINT.key, operator: 'Lt' }, tolerates: false },
  ])('$name', ({ toleration, tolerates }) => {
    expect(toleratesTaint(toleration, TAINT)).toBe(tolerates);
  });
});

function pod(
  overrides: Partial<PodObject['metadata']> = {},
  rest: Omit<PodObject, 'metadata'> = {},
): PodObject {
  return { metadata: { name: 'p', namespace: 'ns', uid: 'uid-p', ...overrides }, ...rest };
}

describe('skipReason', () => {
  it.each<{ name: string; pod: PodObject; reason: SkipReason | undefined }>([
    {
      name: 'a ReplicaSet pod → evictable',
      pod: pod({ ownerReferences: [{ kind: 'ReplicaSet', name: 'rs' }] }),
      reason: undefined,
    },
    { name: 'a bare pod → evictable', pod: pod(), reason: undefined },
    {
      name: 'a DaemonSet pod → skipped',
      pod: pod({ ownerReferences: [{ kind: 'DaemonSet', name: 'ds', controller: true }] }),
      reason: SkipReason.DaemonSetPod,
    },
    {
      name: 'a mirror pod → skipped',
      pod: pod({ annotations: { 'kubernetes.io/config.mirror': 'abc' } }),
      reason: SkipReason.MirrorPod,
    },
    {
      name: 'a terminating pod → skipped',
      pod: pod({ deletionTimestamp: '2026-01-01T00:00:00Z' }),
      reason: SkipReason.Terminating,
    },
    {
      name: 'a Succeeded pod → skipped',
      pod: pod({}, { status: { phase: 'Succeeded' } }),
      reason: SkipReason.Finished,
    },
    {
      name: 'a Failed pod → skipped',
      pod: pod({}, { status: { phase: 'Failed' } }),
      reason: SkipReason.Finished,
    },
    {
      name: 'a pod tolerating the runtime taint → skipped',
      pod: pod(
        {},
        {
          spec: {
            tolerations: [
              { key: 'other', operator: 'Exists' },
              { key: TAINT.key, operator: 'Exists' },
            ],
          },
        },
      ),
      reason: SkipReason.ToleratesRuntimeTaint,
    },
    {
      name: 'a pod annotated karpenter.sh/do-not-disrupt "true" → skipped',
      pod: pod({ annotations: { 'karpenter.sh/do-not-disrupt': 'true' } }),
      reason: SkipReason.DoNotDisrupt,
    },
    {
      name: 'a pod annotated karpenter.sh/do-not-disrupt "false" → evictable',
      pod: pod({ annotations: { 'karpenter.sh/do-not-disrupt': 'false' } }),
      reason: undefined,
    },
    {
      name: 'a terminating do-not-disrupt pod → Terminating (it is leaving already)',
      pod: pod({
        annotations: { 'karpenter.sh/do-not-disrupt': 'true' },
        deletionTimestamp: '2026-01-01T00:00:00Z',
      }),
      reason: SkipReason.Terminating,
    },
  ])('$name', ({ pod: p, reason }) => {
    expect(skipReason(p, TAINT)).toBe(reason);
  });
});

describe('evictionComplete', () => {
  const r = (outcome: PodEvictionResult['outcome'], reason = ''): PodEvictionResult => ({
    pod: 'ns/p',
    outcome,
    reason,
  });
  it.each([
    {
      name: 'gone and skipped (DaemonSet, do-not-disrupt) → complete',
      results: [r('gone'), r('skipped', 'DaemonSetPod'), r('skipped', 'DoNotDisrupt')],
      complete: true,
    },
    {
      name: 'one evicted by this pass → not complete (its pods have yet to leave)',
      results: [r('evicted'), r('gone')],
      complete: false,
    },
    {
      name: 'one still Terminating → not complete',
      results: [r('skipped', 'Terminating'), r('gone')],
      complete: false,
    },
    { name: 'dry run: would evict → complete', results: [r('wouldEvict')], complete: true },
    { name: 'nothing on the node → complete', results: [], complete: true },
    {
      name: 'one blocked by a PDB → not complete',
      results: [r('evicted'), r('blockedByPDB')],
      complete: false,
    },
    { name: 'one error → not complete', results: [r('error')], complete: false },
  ])('$name', ({ results, complete }) => {
    expect(evictionComplete(results)).toBe(complete);
  });
});

/** Answers GET /api/v1/pods with `pods` and each eviction POST with the outcome the test scripts. */
function fakeClient(pods: PodObject[], answer: (name: string) => Error | undefined) {
  const calls: Array<{ method: string; path: string; options: RequestOptions }> = [];
  const client: Pick<KubeClient, 'request'> = {
    async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
      calls.push({ method, path, options });
      if (method === 'GET') return { items: pods, metadata: {} } as T;
      const name = path.split('/').at(-2) as string;
      const error = answer(name);
      if (error) throw error;
      return {} as T;
    },
  };
  return { client, calls };
}

describe('evictNodePods outcomes', () => {
  const pods = ['ok', 'pdb', 'apf', 'gone', 'replaced', 'ds'].map((name) =>
    pod({ name, uid: `uid-${name}`, ...(name === 'ds' ? { ownerReferences: [{ kind: 'DaemonSet' }] } : {}) }),
  );
  const answers: Record<string, Error> = {
    pdb: classifyResponse(
      429,
      { message: "Cannot evict pod as it would violate the pod's disruption budget." },
      undefined,
      'POST',
    ),
    apf: classifyResponse(429, { message: 'Too many requests, please try again later.' }, '1', 'POST'),
    gone: classifyResponse(404, { message: 'pods "gone" not found' }, undefined, 'POST'),
    replaced: classifyResponse(
      409,
      { message: 'Precondition failed: UID in precondition' },
      undefined,
      'POST',
    ),
  };

  const evictOn = (client: Pick<KubeClient, 'request'>, dryRun = false) =>
    evictNodePods({
      ...{ client, nodeName: 'node-a', runtimeTaintKey: TAINT.key, dryRun },
      log: pino({ level: 'silent' }),
      timeoutMs: 5_000,
    });

  it('maps each answer to its outcome, with a UID precondition and a deadline on every request', async () => {
    const { client, calls } = fakeClient(pods, (name) => answers[name]);
    const results = await evictOn(client);
    expect(results.map((r) => [r.pod, r.outcome])).toEqual([
      ['ns/apf', 'error'],
      ['ns/ds', 'skipped'],
      ['ns/gone', 'gone'],
      ['ns/ok', 'evicted'],
      ['ns/pdb', 'blockedByPDB'],
      ['ns/replaced', 'gone'],
    ]);
    expect(calls[0]?.options.query).toMatchObject({ fieldSelector: 'spec.nodeName=node-a' });
    expect(calls.find((c) => c.path.endsWith('/ok/eviction'))?.options.body).toEqual({
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: 'ok', namespace: 'ns' },
      deleteOptions: { preconditions: { uid: 'uid-ok' } },
    });
    expect(calls.every((c) => c.options.timeoutMs === 5_000)).toBe(true);
  });

  it("a NotLeaderError from the port (this replica stopped leading) ends the pass: no later pod's eviction is sent", async () => {
    const { client, calls } = fakeClient(pods, (name) =>
      name === 'gone' ? new NotLeaderError() : undefined,
    );
    await expect(evictOn(client)).rejects.toBeInstanceOf(NotLeaderError);
    // Sorted by pod: apf, ds (skipped), gone (refused unsent); ok, pdb and replaced are never tried.
    expect(calls.filter((c) => c.method === 'POST').map((c) => c.path.split('/')[6])).toEqual([
      'apf',
      'gone',
    ]);
  });

  it('dry run → reports wouldEvict and posts nothing', async () => {
    const { client, calls } = fakeClient(pods, () => undefined);
    const results = await evictOn(client, true);
    expect(calls.map((c) => c.method)).toEqual(['GET']);
    expect(results.filter((r) => r.outcome === 'wouldEvict')).toHaveLength(5);
  });
});

describe('readNodeHold (the Node as the API server has it now)', () => {
  function nodeClient(answer: object | Error): Pick<KubeClient, 'request'> & { paths: string[] } {
    const paths: string[] = [];
    return {
      paths,
      async request<T>(_method: string, path: string): Promise<T> {
        paths.push(path);
        if (answer instanceof Error) throw answer;
        return answer as T;
      },
    };
  }
  const read = (client: Pick<KubeClient, 'request'>) =>
    readNodeHold({ client, nodeName: 'node-a', timeoutMs: 5_000 });

  it.each<{ name: string; node: object; hold: string | undefined }>([
    { name: 'a plain node → not held', node: { metadata: {}, spec: {} }, hold: undefined },
    {
      name: 'annotated karpenter.sh/do-not-disrupt → DoNotDisrupt',
      node: { metadata: { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } } },
      hold: 'DoNotDisrupt',
    },
    {
      name: 'cordoned → Maintenance',
      node: { metadata: {}, spec: { unschedulable: true } },
      hold: 'Maintenance',
    },
    {
      name: 'tainted karpenter.sh/disrupted → KarpenterDisruption',
      node: { spec: { taints: [{ key: 'karpenter.sh/disrupted', effect: 'NoSchedule' }] } },
      hold: 'KarpenterDisruption',
    },
    {
      name: 'KEP-5683 MaintenanceInProgress True → Maintenance',
      node: { status: { conditions: [{ type: 'MaintenanceInProgress', status: 'True' }] } },
      hold: 'Maintenance',
    },
  ])('$name', async ({ node, hold }) => {
    const client = nodeClient(node);
    expect(await read(client)).toBe(hold);
    expect(client.paths).toEqual(['/api/v1/nodes/node-a']);
  });

  it('a node that is gone (404) → not held; any other failure rejects', async () => {
    expect(await read(nodeClient(classifyResponse(404, { message: 'not found' }, undefined, 'GET')))).toBe(
      undefined,
    );
    await expect(
      read(nodeClient(classifyResponse(403, { message: 'forbidden' }, undefined, 'GET'))),
    ).rejects.toThrow(/forbidden/);
  });
});
