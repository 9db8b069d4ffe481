import { describe, expect, it } from 'vitest';
import { ExtensionState, NodeAnnotation } from '../../api/names.ts';
import { ConditionReason, EventReason, ProbeReason } from '../../api/reasons.ts';
import { parseSystemExtension } from '../../api/registration.ts';
import { decideNode } from './decide.ts';
import { labelWaitsOf } from './label-wait.ts';
import { NodeState } from './node-state.ts';
import {
  agent,
  applied,
  BOOT,
  BOOTSTRAP_TAINT,
  bootstrappedNode,
  ext,
  input,
  leases,
  node,
  POLICY,
  SECOND,
  T0,
} from './testing.ts';
import type { DecisionInput, LabelWait, NodeDecision, ObservedNode } from './types.ts';

const GPU_LABEL = 'nvidia.com/gpu.present';
const WAIT_SECONDS = 120;
const GPU_WAIT: LabelWait = { name: 'gpu', missingKeys: [GPU_LABEL], waitSeconds: WAIT_SECONDS, holds: true };
const WAIT_ENDS = '2026-01-01T00:02:00.000Z';

function sx(name: string, spec: Record<string, unknown>) {
  return parseSystemExtension({
    metadata: { name },
    spec: { nodeSelector: { matchLabels: { [GPU_LABEL]: 'true' } }, probe: { tcp: { port: 1 } }, ...spec },
  });
}

describe('labelWaitsOf: which SystemExtensions make a node wait', () => {
  const nfd = {
    matchExpressions: [{ key: 'feature.node.kubernetes.io/kernel-version.full', operator: 'Exists' }],
  };
  it.each<[string, ReturnType<typeof sx>, Record<string, string>, LabelWait[]]>([
    [
      'labelWait set, the label missing → waits',
      sx('gpu', { labelWait: { waitSeconds: 120 } }),
      {},
      [GPU_WAIT],
    ],
    ['no labelWait → no wait (as before)', sx('gpu', {}), {}, []],
    [
      'the label already there → no wait (the extension is required instead)',
      sx('gpu', { labelWait: { waitSeconds: 120 } }),
      { [GPU_LABEL]: 'true' },
      [],
    ],
    [
      'labelWait.nodeSelector does not select the node → no wait (a CPU node pool)',
      sx('gpu', { labelWait: { waitSeconds: 120, nodeSelector: { matchLabels: { pool: 'gpu' } } } }),
      { pool: 'cpu' },
      [],
    ],
    [
      'labelWait.nodeSelector selects the node → waits',
      sx('gpu', { labelWait: { waitSeconds: 120, nodeSelector: { matchLabels: { pool: 'gpu' } } } }),
      { pool: 'gpu' },
      [GPU_WAIT],
    ],
    [
      'settledSelector matches (node-feature-discovery has labeled the node) → no wait',
      sx('gpu', { labelWait: { waitSeconds: 120, settledSelector: nfd } }),
      { 'feature.node.kubernetes.io/kernel-version.full': '6.8.0' },
      [],
    ],
    [
      'settledSelector does not match yet → waits',
      sx('gpu', { labelWait: { waitSeconds: 120, settledSelector: nfd } }),
      {},
      [GPU_WAIT],
    ],
    [
      'not critical → no wait (it never holds a node)',
      sx('gpu', { labelWait: { waitSeconds: 120 }, critical: false }),
      {},
      [],
    ],
    [
      'enforcement DryRun → a wait that does not hold',
      sx('gpu', { labelWait: { waitSeconds: 120 }, enforcement: 'DryRun' }),
      {},
      [{ ...GPU_WAIT, holds: false }],
    ],
    ['an invalid labelWait → no wait', sx('gpu', { labelWait: { waitSeconds: 0 } }), {}, []],
  ])('%s', (_name, systemExtension, labels, waits) => {
    expect(labelWaitsOf(labels, [systemExtension])).toEqual(waits);
  });
});

/** A new node created at T0, its agent reporting since `now` - 1 s unless told otherwise. */
function newNode(overrides: Partial<ObservedNode> = {}): ObservedNode {
  return node({ creationTimestampMs: T0, ...overrides });
}

function at(seconds: number, overrides: Partial<DecisionInput> = {}): DecisionInput {
  const now = T0 + seconds * SECOND;
  return input({
    node: newNode(),
    agent: agent(now - SECOND),
    labelWaits: [GPU_WAIT],
    now,
    ...overrides,
  });
}

/** Decides `steps` in order, each on the node as the one before left it, with its memory. */
type Step = (n: ObservedNode) => DecisionInput;
function run<const S extends readonly Step[]>(steps: S): { [K in keyof S]: NodeDecision } {
  let current = newNode();
  let previous: NodeDecision['memory'] | undefined;
  return steps.map((step) => {
    const d = decideNode({ ...step(current), previous });
    current = applied(current, d);
    previous = d.memory;
    return d;
  }) as { [K in keyof S]: NodeDecision };
}

describe('decideNode: a new node waits for the labels a SystemExtension selects on (spec.labelWait)', () => {
  it('GPU label set 20 s after registration: held until the device plugin is Healthy', () => {
    const labeled = (n: ObservedNode): ObservedNode => ({ ...n, labels: { [GPU_LABEL]: 'true' } });
    const gpu = [ext('gpu')];
    const [waiting, labeledNoLease, progressing, healthy] = run([
      (n) => at(5, { node: n }),
      // The labeler set the label: the SystemExtension selects the node, no wait any more.
      (n) => at(20, { node: labeled(n), labelWaits: [], required: gpu }),
      (n) =>
        at(30, {
          node: labeled(n),
          labelWaits: [],
          required: gpu,
          leases: leases(T0 + 29 * SECOND, {
            gpu: { state: ExtensionState.Progressing, reason: ProbeReason.StartupGrace },
          }),
        }),
      (n) =>
        at(40, {
          node: labeled(n),
          labelWaits: [],
          required: gpu,
          leases: leases(T0 + 39 * SECOND, { gpu: {} }),
        }),
    ]);
    expect(waiting).toMatchObject({
      state: NodeState.Bootstrapping,
      desiredTaints: { bootstrap: true, runtime: false },
      condition: {
        status: 'False',
        reason: ConditionReason.ExtensionsProgressing,
        message: `gpu waiting until ${WAIT_ENDS} for node label ${GPU_LABEL} (SystemExtension spec.labelWait)`,
      },
      label: 'progressing',
      labelWaits: [{ name: 'gpu', endsMs: T0 + WAIT_SECONDS * SECOND, missingKeys: [GPU_LABEL] }],
    });
    expect(waiting.events.map((e) => e.reason)).toEqual([EventReason.BootstrapTaintAdded]);
    expect(waiting.deadlines.fixedMs).toBe(T0 + WAIT_SECONDS * SECOND);
    for (const d of [labeledNoLease, progressing]) {
      expect(d.state).toBe(NodeState.Bootstrapping);
      expect(d.desiredTaints.bootstrap).toBe(true);
      expect(d.labelWaits).toBeUndefined();
    }
    expect(labeledNoLease.extensions[0]).toMatchObject({ name: 'gpu', state: ExtensionState.Progressing });
    expect(healthy).toMatchObject({
      state: NodeState.Ready,
      desiredTaints: { bootstrap: false, runtime: false },
      condition: { status: 'True', reason: ConditionReason.AllExtensionsHealthy },
    });
    expect(healthy.events.map((e) => e.reason)).toEqual([EventReason.BootstrapTaintRemoved]);
  });

  it('never labeled: held until waitSeconds after creation, then released with one LabelWaitEnded', () => {
    const [before, ended, after] = run([
      (n) => at(119, { node: n }),
      (n) => at(120, { node: n }),
      (n) => at(121, { node: n }),
    ]);
    expect(before.desiredTaints.bootstrap).toBe(true);
    expect(before.nextDeadlineMs).toBe(T0 + WAIT_SECONDS * SECOND);
    expect(ended).toMatchObject({
      state: NodeState.Ready,
      desiredTaints: { bootstrap: false },
      desiredAnnotations: { bootstrappedBootId: BOOT },
      condition: {
        status: 'True',
        reason: ConditionReason.AllExtensionsHealthy,
        message: 'No extensions required.',
      },
    });
    expect(ended.labelWaits).toBeUndefined();
    expect(ended.events.map((e) => [e.type, e.reason])).toEqual([
      ['Normal', EventReason.BootstrapTaintRemoved],
      ['Normal', EventReason.LabelWaitEnded],
    ]);
    expect(ended.events[1]?.message).toBe(
      `SystemExtension gpu does not apply to this node: node label ${GPU_LABEL} not set within 120s of the node's creation (spec.labelWait). The node no longer waits for it.`,
    );
    // Bootstrapped: a completed bootstrap never waits again.
    expect(after.events).toEqual([]);
    expect(after.desiredTaints.bootstrap).toBe(false);
  });

  it('a controller restart or new leader (no memory) keeps the same end: measured from the node creation', () => {
    const d = decideNode(at(60, { node: newNode({ taints: [BOOTSTRAP_TAINT] }) }));
    expect(d.desiredTaints.bootstrap).toBe(true);
    expect(d.labelWaits?.[0]?.endsMs).toBe(T0 + WAIT_SECONDS * SECOND);
    expect(d.events).toEqual([]);
  });

  it('a wait that ended is reported once per bootstrap, not again while another extension holds the node', () => {
    const other = [ext('csi')];
    const [first, second] = run([
      (n) => at(130, { node: n, required: other }),
      (n) => at(131, { node: n, required: other }),
    ]);
    expect(first.events.map((e) => e.reason)).toContain(EventReason.LabelWaitEnded);
    expect(second.events.map((e) => e.reason)).not.toContain(EventReason.LabelWaitEnded);
    expect(second.desiredTaints.bootstrap).toBe(true);
  });

  it('the agent not reported yet: both are named', () => {
    const d = decideNode(at(5, { agent: undefined }));
    expect(d.condition).toMatchObject({
      reason: ConditionReason.ExtensionsProgressing,
      message: `Waiting for the nodecare agent to report on this boot.; gpu waiting until ${WAIT_ENDS} for node label ${GPU_LABEL} (SystemExtension spec.labelWait)`,
    });
  });

  it('another extension failing: the condition names both, the wait after it', () => {
    const d = decideNode(
      at(5, {
        required: [ext('csi')],
        leases: leases(T0 + 4 * SECOND, { csi: { state: ExtensionState.Unhealthy, reason: 'NotReady' } }),
      }),
    );
    expect(d.condition.reason).toBe(ConditionReason.ExtensionsUnhealthy);
    expect(d.condition.message).toBe(
      `csi Unhealthy (NotReady); gpu waiting until ${WAIT_ENDS} for node label ${GPU_LABEL} (SystemExtension spec.labelWait)`,
    );
  });

  it('never past the bootstrap timeout: the wait ends with it, and the node is released, not timed out', () => {
    const long = [{ ...GPU_WAIT, waitSeconds: 3600 }];
    const held = newNode({ taints: [BOOTSTRAP_TAINT] });
    expect(decideNode(at(POLICY.bootstrapTimeoutSeconds - 1, { node: held, labelWaits: long })).state).toBe(
      NodeState.Bootstrapping,
    );
    const d = decideNode(at(POLICY.bootstrapTimeoutSeconds, { node: held, labelWaits: long }));
    expect(d.state).toBe(NodeState.Ready);
    expect(d.events.find((e) => e.reason === EventReason.LabelWaitEnded)?.message).toMatch(/within 900s/);
  });

  it('a rebooted node does not wait (it completed bootstrap once: its labelers have run)', () => {
    const rebooted = bootstrappedNode({}, 'boot-0');
    const d = decideNode(at(5, { node: rebooted }));
    expect(d).toMatchObject({ state: NodeState.Ready, desiredTaints: { bootstrap: false } });
    expect(d.labelWaits).toBeUndefined();
  });

  it('a node that predates nodecare (adopted as bootstrapped) does not wait', () => {
    const old = newNode({ creationTimestampMs: T0 - 3600 * SECOND });
    const d = decideNode(at(5, { node: old }));
    expect(d).toMatchObject({ state: NodeState.Ready, desiredTaints: { bootstrap: false } });
    expect(d.labelWaits).toBeUndefined();
  });

  it('a DryRun wait holds nothing: the node is released at the agent report, the condition says it', () => {
    const d = decideNode(at(5, { labelWaits: [{ ...GPU_WAIT, holds: false }] }));
    expect(d).toMatchObject({ state: NodeState.Ready, desiredTaints: { bootstrap: false } });
    const waiting = decideNode(at(5, { labelWaits: [{ ...GPU_WAIT, holds: false }], agent: undefined }));
    expect(waiting.condition.message).toMatch(/spec\.labelWait; enforcement DryRun: not holding the node\)$/);
    expect(waiting.desiredTaints.bootstrap).toBe(false);
  });

  it('the kubelet not Ready: the wait still adds and keeps the bootstrap taint', () => {
    const d = decideNode(
      at(5, {
        node: newNode({
          kubeletNotReady: { status: 'False', reason: 'KubeletNotReady', message: '', since: '' },
        }),
      }),
    );
    expect(d).toMatchObject({ state: NodeState.NotReady, desiredTaints: { bootstrap: true } });
  });

  it('suspended: the taint the wait would add is held, and reported', () => {
    const d = decideNode(at(5, { suspendedBy: ['SystemExtension gpu'] }));
    expect(d.desiredTaints.bootstrap).toBe(false);
    expect(d.suspended?.wouldChange.join()).toMatch(/add the bootstrap taint/);
  });

  it('the marker of this boot already on the node: nothing to wait for', () => {
    const done = newNode({ annotations: { [NodeAnnotation.bootstrappedBootId]: BOOT } });
    expect(decideNode(at(5, { node: done })).labelWaits).toBeUndefined();
  });
});
