import type { V1Node, V1Pod, V1Taint } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  EXTENSION_ANNOTATION_PREFIX,
  NODE_CONDITION_TYPE,
  NODE_STATUS_LABEL,
  buildLease,
  decodeLease,
  type ExtensionState,
  type ObservedLease,
} from '../api/index.ts';
import type { NodeClaim } from '../test/autoscalers/karpenter.ts';
import {
  LEGEND,
  autoscalerLines,
  clusterHealthLine,
  formatAge,
  formatTable,
  nodeStatuses,
  renderStatus,
  visibleLength,
} from './view.ts';

const NOW = new Date('2026-05-01T12:00:00Z');
const secondsAgo = (s: number): Date => new Date(NOW.getTime() - s * 1000);

function node(
  name: string,
  options: {
    label?: string;
    taints?: string[];
    condition?: [status: string, reason: string];
    extensions?: string[];
    ageSeconds?: number;
  } = {},
): V1Node {
  const annotations = Object.fromEntries(
    (options.extensions ?? []).map((e) => [`${EXTENSION_ANNOTATION_PREFIX}${e}`, 'http://127.0.0.1:1/']),
  );
  return {
    metadata: {
      name,
      creationTimestamp: secondsAgo(options.ageSeconds ?? 30),
      annotations,
      labels: options.label ? { [NODE_STATUS_LABEL]: options.label } : {},
    },
    spec: {
      taints: (options.taints ?? []).map((key): V1Taint => ({ key, effect: 'NoSchedule' })),
    },
    status: {
      conditions: options.condition
        ? [{ type: NODE_CONDITION_TYPE, status: options.condition[0], reason: options.condition[1] }]
        : [],
    },
  };
}

function lease(
  nodeName: string,
  extension: string | undefined,
  record?: { state: ExtensionState; reason: string },
  renewedSecondsAgo = 1,
  durationSeconds = 8,
): ObservedLease {
  const built = buildLease({
    node: { name: nodeName, uid: `uid-${nodeName}` },
    extension,
    holderIdentity: `agent-${nodeName}`,
    leaseDurationSeconds: durationSeconds,
    renewTime: secondsAgo(renewedSecondsAgo),
    bootId: 'boot-1',
    record: record && { ...record, message: `${record.reason} message`, since: NOW.toISOString() },
  });
  const decoded = decodeLease(built);
  if (!decoded) throw new Error('lease did not decode');
  return decoded;
}

const healthy = { state: 'Healthy', reason: 'ProbeSucceeded' } as const;

describe('nodeStatuses', () => {
  it.each([
    {
      name: 'bootstrap taint → Bootstrapping',
      node: node('n', {
        label: 'progressing',
        taints: [BOOTSTRAP],
        condition: ['False', 'ExtensionsProgressing'],
      }),
      state: 'Bootstrapping',
      text: 'Bootstrapping (ExtensionsProgressing)',
      taints: ['bootstrap'],
    },
    {
      name: 'bootstrap taint and BootstrapTimeout → BootstrapTimeout',
      node: node('n', { label: 'unhealthy', taints: [BOOTSTRAP], condition: ['False', 'BootstrapTimeout'] }),
      state: 'BootstrapTimeout',
      text: 'BootstrapTimeout',
      taints: ['bootstrap'],
    },
    {
      name: 'runtime taint → Degraded',
      node: node('n', { label: 'unhealthy', taints: [RUNTIME], condition: ['False', 'ExtensionsUnhealthy'] }),
      state: 'Degraded',
      text: 'Degraded (ExtensionsUnhealthy)',
      taints: ['runtime'],
    },
    {
      name: 'runtime taint and the agent not reporting → Degraded (AgentNotReporting), no fifth state',
      node: node('n', { label: 'unknown', taints: [RUNTIME], condition: ['Unknown', 'AgentNotReporting'] }),
      state: 'Degraded',
      text: 'Degraded (AgentNotReporting)',
      taints: ['runtime'],
    },
    {
      name: 'the kubelet not Ready → NotReady, whatever the taints',
      node: node('n', { label: 'unknown', taints: [RUNTIME], condition: ['Unknown', 'NodeNotReady'] }),
      state: 'NotReady',
      text: 'NotReady',
      taints: ['runtime'],
    },
    {
      name: 'no nodecare taint → Ready, even with a report-only failure',
      node: node('n', { label: 'unhealthy', condition: ['False', 'ExtensionsUnhealthy'] }),
      state: 'Ready',
      text: 'Ready (ExtensionsUnhealthy)',
      taints: [],
    },
    {
      name: 'no condition yet → not decided (-)',
      node: node('n'),
      state: undefined,
      text: '-',
      taints: [],
    },
    {
      name: 'taints of others are listed by key',
      node: node('n', {
        label: 'healthy',
        taints: ['example.com/maintenance'],
        condition: ['True', 'AllExtensionsHealthy'],
      }),
      state: 'Ready',
      text: 'Ready',
      taints: ['example.com/maintenance'],
    },
  ])('$name', ({ node: n, state, text, taints }) => {
    const [status] = nodeStatuses([n], [], NOW);
    expect(status?.state).toBe(state);
    if (text !== undefined) expect(status?.stateText).toBe(text);
    expect(status?.taints).toEqual(taints);
  });

  it('lists every required extension with its Lease state, and only this node’s Leases', () => {
    const [status] = nodeStatuses(
      [node('a', { label: 'healthy', extensions: ['kube-proxy', 'log-agent', 'gpu-plugin'] })],
      [
        lease('a', undefined),
        lease('a', 'kube-proxy', healthy),
        lease('a', 'gpu-plugin', { state: 'Unhealthy', reason: 'ProbeTimeout' }),
        lease('b', 'log-agent', healthy),
      ],
      NOW,
    );
    expect(status?.extensions.map((e) => [e.name, e.state, e.reason])).toEqual([
      ['gpu-plugin', 'Unhealthy', 'ProbeTimeout'],
      ['kube-proxy', 'Healthy', 'ProbeSucceeded'],
      ['log-agent', undefined, ''],
    ]);
    expect(status?.heartbeatAgeSeconds).toBe(1);
  });
});

/** A NodeClaim with conditions by type; Initialized not True carries Karpenter's StartupTaintsExist. */
function claim(name: string, nodeName: string | undefined, conditions: Record<string, string>): NodeClaim {
  return {
    metadata: { name, labels: { 'node.kubernetes.io/instance-type': 'g-4x-amd64-linux' } },
    status: {
      ...(nodeName ? { nodeName } : {}),
      conditions: Object.entries(conditions).map(([type, status]) => ({
        type,
        status,
        reason: type === 'Initialized' && status !== 'True' ? 'StartupTaintsExist' : type,
      })),
    },
  };
}

function pod(phase: string, nodeName?: string, scheduled?: { reason: string; message: string }): V1Pod {
  return {
    metadata: { name: 'gpu-workload' },
    spec: { containers: [], ...(nodeName ? { nodeName } : {}) },
    status: {
      phase,
      conditions: scheduled ? [{ type: 'PodScheduled', status: 'False', ...scheduled }] : [],
    },
  };
}

describe("the autoscaler's view", () => {
  it.each([
    {
      name: 'nothing launched yet, pod unschedulable → says so, with the scheduler’s reason',
      claims: [],
      pods: [pod('Pending', undefined, { reason: 'Unschedulable', message: '0/1 nodes are available' })],
      lines: [
        'Karpenter: no NodeClaim',
        'Workload: pod gpu-workload Pending — Unschedulable: 0/1 nodes are available',
      ],
    },
    {
      name: 'launched, no node yet → Launched, no node yet',
      claims: [claim('gpu-a', undefined, { Launched: 'True', Registered: 'Unknown' })],
      pods: [],
      lines: ['Karpenter: NodeClaim gpu-a Launched, g-4x-amd64-linux, no node yet', 'Workload: no pod yet'],
    },
    {
      name: 'registered, held by a startup taint → Registered with Karpenter’s reason',
      claims: [claim('gpu-a', 'kwok-a', { Launched: 'True', Registered: 'True', Initialized: 'Unknown' })],
      pods: [pod('Pending', undefined, { reason: 'Unschedulable', message: 'untolerated taint' })],
      lines: [
        'Karpenter: NodeClaim gpu-a Registered (StartupTaintsExist), g-4x-amd64-linux, node kwok-a',
        'Workload: pod gpu-workload Pending — Unschedulable: untolerated taint',
      ],
    },
    {
      name: 'initialized, pod running → Initialized, Running on the node',
      claims: [claim('gpu-a', 'kwok-a', { Launched: 'True', Registered: 'True', Initialized: 'True' })],
      pods: [pod('Running', 'kwok-a')],
      lines: [
        'Karpenter: NodeClaim gpu-a Initialized, g-4x-amd64-linux, node kwok-a',
        'Workload: pod gpu-workload Running on kwok-a',
      ],
    },
  ])('$name', ({ claims, pods, lines }) => {
    expect(autoscalerLines(claims, pods)).toEqual(lines);
  });

  it('shows no workload line where the story has no workload (an existing cluster, no Karpenter)', () => {
    expect(autoscalerLines(undefined, undefined)).toEqual([]);
    expect(autoscalerLines(undefined, [])).toEqual(['Workload: no pod yet']);
  });

  it('caps a long scheduler message', () => {
    const [, line] = autoscalerLines(
      [],
      [pod('Pending', undefined, { reason: 'Unschedulable', message: 'x'.repeat(1000) })],
    );
    expect(line?.length).toBeLessThan(250);
  });
});

describe('renderStatus', () => {
  it('renders a header and one aligned row per node, sorted by name', () => {
    const rows = renderStatus(
      [
        node('demo-node-2', {
          label: 'unhealthy',
          taints: [RUNTIME],
          condition: ['False', 'ExtensionsUnhealthy'],
          extensions: ['kube-proxy', 'gpu-plugin'],
          ageSeconds: 200,
        }),
        node('demo-node-1', {
          label: 'progressing',
          taints: [BOOTSTRAP],
          condition: ['False', 'ExtensionsProgressing'],
          extensions: ['kube-proxy', 'log-agent'],
          ageSeconds: 5,
        }),
        node('demo-node-3', {
          label: 'unknown',
          taints: [RUNTIME],
          condition: ['Unknown', 'AgentNotReporting'],
          extensions: ['kube-proxy'],
          ageSeconds: 4000,
        }),
      ],
      [
        lease('demo-node-1', undefined),
        lease('demo-node-1', 'kube-proxy', { state: 'Progressing', reason: 'AwaitingFirstProbe' }),
        lease('demo-node-2', undefined),
        lease('demo-node-2', 'kube-proxy', { state: 'Unhealthy', reason: 'ConnectionRefused' }),
        lease('demo-node-2', 'gpu-plugin', healthy),
        lease('demo-node-3', undefined, undefined, 12, 8),
        lease('demo-node-3', 'kube-proxy', healthy, 12, 30),
      ],
      NOW,
      {
        nodeClaims: [
          claim('gpu-a', 'demo-node-1', { Launched: 'True', Registered: 'True', Initialized: 'Unknown' }),
          claim('gpu-b', 'demo-node-2', { Launched: 'True', Registered: 'True', Initialized: 'True' }),
        ],
      },
    );
    expect(rows).toEqual([
      'NODE          NODECLAIM                               STATE                                   TAINTS      AGENT   AGE     EXTENSIONS',
      'demo-node-1   gpu-a Registered (StartupTaintsExist)   Bootstrapping (ExtensionsProgressing)   bootstrap   up      5s      kube-proxy … AwaitingFirstProbe  log-agent · no lease',
      'demo-node-2   gpu-b Initialized                       Degraded (ExtensionsUnhealthy)          runtime     up      3m20s   gpu-plugin ✓  kube-proxy ✗ ConnectionRefused',
      // The agent is gone: its last lease is not trusted (no stale ✓), the controller's verdict shows at once:
      // Degraded with the condition's reason beside it, the one name every view uses (no fifth state).
      'demo-node-3   -                                       Degraded (AgentNotReporting)            runtime     lost    66m     kube-proxy ? stale',
    ]);
  });

  it('shows "-" for a node without condition, heartbeat or extensions', () => {
    expect(renderStatus([node('bare', { ageSeconds: 0 })], [], NOW)[1]).toBe(
      'bare   -           -       -        -       0s    -',
    );
  });

  it('colours for a terminal without breaking the alignment', () => {
    const nodes = [
      node('a', { label: 'healthy', extensions: ['x'], condition: ['True', 'AllExtensionsHealthy'] }),
      node('b', { label: 'unhealthy', taints: [RUNTIME], extensions: ['x'] }),
    ];
    const leases = [lease('a', 'x', healthy), lease('b', 'x', { state: 'Unhealthy', reason: 'BadStatus' })];
    const plain = renderStatus(nodes, leases, NOW);
    const colored = renderStatus(nodes, leases, NOW, { color: true });
    expect(colored[1]).toContain('\u001b[32mReady\u001b[0m');
    expect(colored[2]).toContain('\u001b[31m✗ BadStatus\u001b[0m');
    expect(colored.map(visibleLength)).toEqual(plain.map(visibleLength));
  });

  it('leaves out the NODECLAIM column where no autoscaler makes NodeClaims (--real-nodes)', () => {
    const nodes = [node('node-2', { label: 'healthy', condition: ['True', 'AllExtensionsHealthy'] })];
    const rows = renderStatus(nodes, [], NOW, { claimsColumn: false });
    expect(rows[0]).toMatch(/^NODE +STATE +TAINTS +AGENT +AGE +EXTENSIONS$/);
    expect(rows[1]).toMatch(/^node-2 +Ready +- +- +30s +-$/);
    expect(renderStatus(nodes, [], NOW)[0]).toContain('NODECLAIM');
  });

  it('honours other taint keys', () => {
    const [status] = nodeStatuses(
      [
        node('n', {
          label: 'progressing',
          taints: ['my/boot'],
          condition: ['False', 'ExtensionsProgressing'],
        }),
      ],
      [],
      NOW,
      { bootstrapTaintKey: 'my/boot' },
    );
    expect(status?.state).toBe('Bootstrapping');
  });
});

describe('formatAge', () => {
  it.each([
    [undefined, '-'],
    [0, '0s'],
    [119, '119s'],
    [125, '2m5s'],
    [180, '3m'],
    [1500, '25m'],
    [4 * 3600 + 12 * 60, '4h12m'],
    [5 * 3600, '5h'],
    [3 * 86400 + 5 * 3600, '3d5h'],
  ])('%s s → %s', (seconds, text) => expect(formatAge(seconds)).toBe(text));
});

describe('formatTable', () => {
  it('with a width, continues a long last cell between its items under its column', () => {
    expect(
      formatTable(
        [
          ['NODE', 'EXTENSIONS'],
          ['n1', 'kube-proxy ✓  gpu-plugin ✗ ProbeTimeout  log-agent ✓'],
          ['n2', 'kube-proxy ✓'],
        ],
        35,
      ),
    ).toEqual([
      'NODE   EXTENSIONS',
      'n1     kube-proxy ✓',
      '       gpu-plugin ✗ ProbeTimeout',
      '       log-agent ✓',
      'n2     kube-proxy ✓',
    ]);
  });

  it('pads every column but the last', () => {
    expect(
      formatTable([
        ['A', 'BB', 'C'],
        ['aaa', 'b', 'c'],
      ]),
    ).toEqual(['A     BB   C', 'aaa   b    c']);
  });
});

describe('a lost agent and the roll-up in the live view', () => {
  const healthy = { state: 'Healthy' as ExtensionState, reason: 'ProbeSucceeded' };

  it("shows a dead agent's extensions as stale, not with its last ✓ (regression: stale leases)", () => {
    const nodes = [
      node('n1', {
        label: 'unknown',
        taints: [RUNTIME],
        condition: ['Unknown', 'AgentNotReporting'],
        extensions: ['kube-proxy'],
      }),
    ];
    const leases = [lease('n1', undefined, undefined, 20), lease('n1', 'kube-proxy', healthy, 20)];
    const [row] = renderStatus(nodes, leases, NOW).slice(1);
    expect(row).toContain('kube-proxy ? stale');
    expect(row).not.toContain('✓');
  });

  it('says the agent is lost as soon as the condition does, before its heartbeat looks old (regression: AGENT up)', () => {
    const nodes = [
      node('n1', {
        label: 'unknown',
        taints: [RUNTIME],
        condition: ['Unknown', 'AgentNotReporting'],
        extensions: ['kube-proxy'],
      }),
    ];
    const leases = [lease('n1', undefined, undefined, 2), lease('n1', 'kube-proxy', healthy, 2)];
    const [row] = renderStatus(nodes, leases, NOW).slice(1);
    expect(row).toMatch(/ lost /);
    expect(row).not.toMatch(/ up /);
  });

  it('marks extensions stale once the heartbeat expired, even before the controller says so', () => {
    const nodes = [
      node('n1', {
        label: 'healthy',
        condition: ['True', 'AllExtensionsHealthy'],
        extensions: ['kube-proxy'],
      }),
    ];
    const leases = [lease('n1', undefined, undefined, 30), lease('n1', 'kube-proxy', healthy, 30)];
    const [row] = renderStatus(nodes, leases, NOW).slice(1);
    expect(row).toContain('silent 30s');
    expect(row).toContain('kube-proxy ? stale');
  });

  it('keeps a live agent’s results', () => {
    const nodes = [
      node('n1', {
        label: 'healthy',
        condition: ['True', 'AllExtensionsHealthy'],
        extensions: ['kube-proxy'],
      }),
    ];
    const leases = [lease('n1', undefined, undefined, 1), lease('n1', 'kube-proxy', healthy, 1)];
    const [row] = renderStatus(nodes, leases, NOW).slice(1);
    expect(row).toMatch(/ up /);
    expect(row).toContain('kube-proxy ✓');
  });

  it('renders the ClusterHealth conditions on one line, and says when there are none yet', () => {
    expect(
      clusterHealthLine([
        { type: 'SystemComponentsHealthy', status: 'True', reason: 'HealthCheckSuccessful' },
        { type: 'EveryNodeReady', status: 'Progressing', reason: 'HealthCheckUnsuccessful' },
      ]),
    ).toBe(
      'ClusterHealth: EveryNodeReady Progressing (HealthCheckUnsuccessful) · SystemComponentsHealthy True (HealthCheckSuccessful)',
    );
    expect(clusterHealthLine(undefined)).toContain('not written yet');
  });

  it('has a legend for every mark it uses', () => {
    for (const mark of ['✓', '✗', '…', '?', '·', 'stale', 'lost']) expect(LEGEND).toContain(mark);
  });
});

describe('the live view fits the terminal (issue 21 item 5)', () => {
  // Node and NodeClaim names as Karpenter's KWOK provider makes them, a failing extension among several.
  const name = (n: number): string => `gpu-nodepool-g-4x-amd64-linux-kwok-provider-${n}-9x8k2`;
  const nodes = [1, 2].map((n) =>
    node(name(n), {
      label: n === 1 ? 'unhealthy' : 'healthy',
      taints: n === 1 ? [RUNTIME] : [],
      condition: n === 1 ? ['False', 'ExtensionsUnhealthy'] : ['True', 'AllExtensionsHealthy'],
      extensions: ['kube-proxy', 'gpu-plugin', 'log-agent'],
      ageSeconds: 300,
    }),
  );
  const leases = [1, 2].flatMap((n) => [
    lease(name(n), undefined),
    lease(name(n), 'kube-proxy', { state: 'Healthy', reason: 'ProbeSucceeded' }),
    lease(name(n), 'gpu-plugin', {
      state: n === 1 ? 'Unhealthy' : 'Healthy',
      reason: n === 1 ? 'DeviceUnhealthy' : 'ProbeSucceeded',
    }),
    lease(name(n), 'log-agent', { state: 'Healthy', reason: 'ProbeSucceeded' }),
  ]);

  it.each([80, 120, 200])(
    'at %i columns: no line is wider, and the failing extension is in view',
    (width) => {
      const lines = renderStatus(nodes, leases, NOW, { width, color: true });
      for (const line of lines) expect(visibleLength(line), line).toBeLessThanOrEqual(width);
      const text = lines.join('\n');
      expect(text).toContain('gpu-plugin');
      expect(text).toContain('DeviceUnhealthy');
      // Each node still recognisable: both ends of its name.
      for (const n of [1, 2]) expect(text).toMatch(new RegExp(`^gpu-nod\\S*${n}-9x8k2 `, 'm'));
      // The header keeps every column (at 80 the extensions are under each row instead).
      for (const column of ['NODE', 'STATE', 'TAINTS', 'AGENT', 'AGE']) expect(lines[0]).toContain(column);
      if (width >= 120) expect(lines[0]).toContain('EXTENSIONS');
    },
  );

  it('at 200 columns nothing is shortened', () => {
    const text = renderStatus(nodes, leases, NOW, { width: 200 }).join('\n');
    expect(text).toContain(name(1));
    expect(text).not.toContain('…');
  });

  it("never cuts the scheduler's message mid-word without saying so", () => {
    const message =
      "0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated " +
      'taint(s). no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful ' +
      'for scheduling.';
    const [, line] = autoscalerLines([], [pod('Pending', undefined, { reason: 'Unschedulable', message })]);
    const shown = /Unschedulable: (.*)…$/.exec(line!)?.[1];
    expect(shown, line).toBeDefined();
    // Cut where a word ends: what is shown is the message up to a space.
    expect(message.startsWith(`${shown!} `), shown).toBe(true);
  });
});
