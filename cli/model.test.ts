import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  buildLease,
  NodeAnnotation,
  type LeaseObject,
} from '../api/index.ts';
import { nodeStatus } from '../controller/decide/index.ts';
import { humanDuration, table } from './format.ts';
import { bootstrapBreakdown } from './bootstrap.ts';
import {
  analyze,
  CLI_POLICY_DEFAULTS,
  isHealthy,
  sortWorstFirst,
  type ClusterSnapshot,
  type NodeObject,
} from './model.ts';
import { nextAction } from './next-action.ts';
import { describeTaint } from './taints.ts';
import { explainView, renderExplainText } from './verbs/explain.ts';
import { nodeView, renderStatusText } from './verbs/status.ts';
import { kubectlArgs } from './verbs/common.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const own = { bootstrap: BOOTSTRAP, runtime: RUNTIME };

function node(name: string, extra: Partial<NodeObject['metadata']> = {}, taints: string[] = []): NodeObject {
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      creationTimestamp: new Date(T0).toISOString(),
      labels: {},
      annotations: { 'extensions.nodecare.io/net': 'http://127.0.0.1:1/' },
      ...extra,
    },
    spec: { taints: taints.map((key) => ({ key, effect: 'NoSchedule' })) },
    status: { nodeInfo: { bootID: 'b1' } },
  };
}

function lease(
  nodeName: string,
  extension: string | undefined,
  state: 'Healthy' | 'Unhealthy' | undefined,
  renewMs: number,
  sinceMs = renewMs,
): LeaseObject {
  return buildLease({
    node: { name: nodeName, uid: `uid-${nodeName}` },
    extension,
    holderIdentity: 'agent',
    leaseDurationSeconds: 40,
    renewTime: new Date(renewMs),
    bootId: 'b1',
    record: state
      ? {
          state,
          reason: state === 'Healthy' ? 'ProbeSucceeded' : 'ConnectionRefused',
          message: '',
          since: new Date(sinceMs).toISOString(),
        }
      : undefined,
  });
}

describe('cli model (the controller decision core over an API snapshot)', () => {
  const now = T0 + 600_000;
  const bootstrapped = { [NodeAnnotation.bootstrappedBootId]: 'b1' };
  const snapshot: ClusterSnapshot = {
    nodes: [
      node('ok', { annotations: { 'extensions.nodecare.io/net': 'http://127.0.0.1:1/', ...bootstrapped } }),
      node('bad', { annotations: { 'extensions.nodecare.io/net': 'http://127.0.0.1:1/', ...bootstrapped } }, [
        RUNTIME,
      ]),
      node('booting', { creationTimestamp: new Date(now - 60_000).toISOString() }, [BOOTSTRAP]),
    ],
    leases: [
      lease('ok', undefined, undefined, now - 1000),
      lease('ok', 'net', 'Healthy', now - 1000, T0 + 30_000),
      lease('bad', undefined, undefined, now - 1000),
      lease('bad', 'net', 'Unhealthy', now - 1000),
    ],
    systemExtensions: [],
    clusterHealth: undefined,
  };
  const analysis = analyze(snapshot, CLI_POLICY_DEFAULTS, now);
  const byName = Object.fromEntries(analysis.nodes.map((r) => [r.name, r]));

  it('decides each node as the controller would', () => {
    expect(byName.ok?.decision.state).toBe('Ready');
    expect(byName.bad?.decision.state).toBe('Degraded');
    expect(byName.booting?.decision.state).toBe('Bootstrapping');
    expect(isHealthy(byName.ok!)).toBe(true);
    expect(isHealthy(byName.bad!)).toBe(false);
  });

  it("judges an annotation's condition type as the controller does (restricted unless allowed)", () => {
    const custom = {
      ...snapshot,
      nodes: [
        node('gpu', {
          annotations: {
            'extensions.nodecare.io/net': JSON.stringify({
              probe: { http: { url: 'http://127.0.0.1:1/' } },
              conditionType: 'GpuHealthy',
            }),
            ...bootstrapped,
          },
        }),
      ],
      leases: [lease('gpu', undefined, undefined, now - 1000), lease('gpu', 'net', 'Healthy', now - 1000)],
    };
    const refused = analyze(custom, CLI_POLICY_DEFAULTS, now).nodes[0]!;
    expect(refused.registrations.get('net')).toMatchObject({
      valid: false,
      policy: { conditionType: 'EveryNodeReady' },
    });
    const allowed = analyze(custom, { ...CLI_POLICY_DEFAULTS, annotationConditionTypes: ['GpuHealthy'] }, now)
      .nodes[0]!;
    expect(allowed.registrations.get('net')).toMatchObject({
      valid: true,
      policy: { conditionType: 'GpuHealthy' },
    });
  });

  it('sorts worst first', () => {
    expect(sortWorstFirst(analysis.nodes).map((r) => r.name)).toEqual(['bad', 'booting', 'ok']);
  });

  it('predicts the bootstrap deadline for a node waiting for its agent', () => {
    const next = nextAction(byName.booting!, 'renewed');
    expect(next?.atMs).toBeGreaterThan(now);
    expect(next?.changes.join('; ')).toMatch(/ExtensionsReady|BootstrapTimeout/);
  });

  it('predicts the runtime taint when a healthy node stops renewing', () => {
    const next = nextAction(byName.ok!, 'stopped');
    expect(next?.changes).toContain(`add the runtime taint ${RUNTIME}`);
    expect(next?.atMs).toBe(now - 1000 + 40_000);
    expect(nextAction(byName.ok!, 'renewed')).toBeUndefined();
  });

  it('without the controller record, splits the time to schedulable from the lease since and the taint removal event', () => {
    const b = bootstrapBreakdown(byName.ok!, [
      { reason: 'BootstrapTaintRemoved', eventTime: new Date(T0 + 31_000).toISOString() },
    ]);
    expect(b).toEqual({
      startedMs: T0,
      completedMs: T0 + 31_000,
      steps: [
        { kind: 'extension', name: 'net', atMs: T0 + 30_000, waitedMs: 30_000 },
        { kind: 'controller', name: 'controller', atMs: T0 + 31_000, waitedMs: 1000 },
      ],
      unknown: [],
      source: 'leases',
    });
  });
});

describe('a node whose kubelet is not Ready (explain and status)', () => {
  const now = T0 + 600_000;
  const notReady: NodeObject = {
    ...node('silent', {
      annotations: {
        'extensions.nodecare.io/net': 'http://127.0.0.1:1/',
        [NodeAnnotation.bootstrappedBootId]: 'b1',
      },
    }),
    status: {
      nodeInfo: { bootID: 'b1' },
      conditions: [
        {
          type: 'Ready',
          status: 'Unknown',
          reason: 'NodeStatusUnknown',
          message: 'Kubelet stopped posting node status.',
          lastTransitionTime: new Date(now - 120_000).toISOString(),
        },
      ],
    },
  };
  const snapshot: ClusterSnapshot = {
    nodes: [
      notReady,
      node('plain', {
        annotations: {
          'extensions.nodecare.io/net': 'http://127.0.0.1:1/',
          [NodeAnnotation.bootstrappedBootId]: 'b1',
        },
      }),
    ],
    // The agent's containers outlive the kubelet: its leases are still renewed and say Healthy.
    leases: [
      lease('silent', undefined, undefined, now - 1000),
      lease('silent', 'net', 'Healthy', now - 1000),
      lease('plain', undefined, undefined, now - 1000),
      lease('plain', 'net', 'Healthy', now - 1000),
    ],
    systemExtensions: [],
    clusterHealth: undefined,
  };
  const analysis = analyze(snapshot, CLI_POLICY_DEFAULTS, now);
  const silent = analysis.nodes.find((r) => r.name === 'silent')!;

  it('is decided NotReady by the controller core; a node without a Ready condition is as before', () => {
    expect(silent.decision.state).toBe('NotReady');
    expect(analysis.nodes.find((r) => r.name === 'plain')?.decision.state).toBe('Ready');
    expect(isHealthy(silent)).toBe(false);
    expect(sortWorstFirst(analysis.nodes).map((r) => r.name)).toEqual(['silent', 'plain']);
    expect(nextAction(silent, 'renewed')).toBeUndefined();
    expect(nextAction(silent, 'stopped')).toBeUndefined();
  });

  it('explain shows the state with the reason and what Kubernetes says', () => {
    const lines = renderExplainText(explainView(silent, analysis.tripped, [], 10, now), now);
    expect(lines).toContain(
      'nodecare state: NotReady; ExtensionsReady=Unknown (NodeNotReady), nodecare.io/status=unknown',
    );
    expect(lines).toContain(
      `  The kubelet reports Ready=Unknown since ${new Date(now - 120_000).toISOString()} (NodeStatusUnknown: Kubelet stopped posting node status.); extension results are not trusted until the node is Ready again.`,
    );
    expect(lines).toContain('  ? net: Unknown (NodeNotReady)');
    expect(lines).toContain(
      'Now: the controller should set ExtensionsReady=Unknown (NodeNotReady) — it does on its next reconcile (if this persists, is the nodecare controller running and leading?).',
    );
  });

  it('status lists it first with its state and condition', () => {
    const view = nodeView(silent, now);
    expect(view).toMatchObject({
      state: 'NotReady',
      healthy: false,
      label: 'unknown',
      condition: { status: 'Unknown', reason: 'NodeNotReady' },
    });
    const text = renderStatusText(analysis, sortWorstFirst(analysis.nodes), undefined, true, []).join('\n');
    expect(text).toMatch(/^silent\s+NotReady\s+Unknown\s+unknown\s/m);
    expect(text).toContain('2 nodes: 1 NotReady, 1 Ready; 1 healthy.');
  });
});

describe('taint owners', () => {
  it.each([
    [BOOTSTRAP, 'nodecare (bootstrap taint)'],
    ['node.kubernetes.io/not-ready', 'kubelet / node lifecycle controller'],
    ['karpenter.sh/disrupted', 'Karpenter'],
    ['ToBeDeletedByClusterAutoscaler', 'Cluster Autoscaler'],
    ['readiness.k8s.io/gpu', 'node-readiness-controller (a NodeReadinessRule)'],
    [
      'disk.csi.example.com/agent-not-ready',
      'the disk.csi.example.com node agent (CSI/CNI "agent-not-ready" convention)',
    ],
  ])('%s → %s', (key, owner) => {
    expect(describeTaint({ key }, own)?.owner).toBe(owner);
  });

  it('an unknown key has no owner', () => {
    expect(describeTaint({ key: 'example.com/x' }, own)).toBeUndefined();
  });
});

describe('kubectl-style arguments', () => {
  it.each([
    [['-o', 'json'], ['--output=json']],
    [['-ojson'], ['--output=json']],
    [['-o=yaml'], ['--output=yaml']],
    [['-l', 'a=b,c!=d'], ['--selector=a=b,c!=d']],
    [['-la=b'], ['--selector=a=b']],
    [['--output=wide'], ['--output=wide']],
  ])('%j → %j', (argv, expected) => {
    expect(kubectlArgs(argv)).toEqual(expected);
  });

  it('takes the first bare word as the positional, leaves a second for the parser to reject', () => {
    expect(kubectlArgs(['n1', '-o', 'json', 'n2'], 'node')).toEqual(['--node=n1', '--output=json', 'n2']);
  });

  it("a value flag's next word is its value, not the positional (regression: explain --context prod n1 took prod as the node)", () => {
    const options = {
      context: { type: 'string', description: '' },
      yes: { type: 'boolean', description: '' },
    } as const;
    expect(kubectlArgs(['--context', 'prod', 'n1'], 'node', undefined, options)).toEqual([
      '--context',
      'prod',
      '--node=n1',
    ]);
    expect(kubectlArgs(['--yes', 'n1'], 'node', undefined, options)).toEqual(['--yes', '--node=n1']);
  });
});

describe('formatting', () => {
  it.each([
    [5_000, '5s'],
    [119_000, '119s'],
    [200_000, '3m20s'],
    [3_600_000, '60m'],
    [4 * 3_600_000 + 60_000, '4h1m'],
    [30 * 3_600_000, '30h'],
    [3 * 86_400_000, '3d'],
    [20 * 86_400_000, '20d'],
  ])('%d ms → %s', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });

  it('aligns table columns', () => {
    expect(table(['A', 'BB'], [['xxx', 'y']])).toEqual(['A     BB', 'xxx   y']);
  });
});

describe('one name for a node state (status and explain render it from controller/decide/node-status.ts)', () => {
  const now = T0 + 600_000;
  const stopped = now - 60_000;
  // The agent was paused a minute ago: its heartbeat (40 s) expired.
  const analysis = analyze(
    {
      nodes: [
        node(
          'paused',
          {
            annotations: {
              'extensions.nodecare.io/net': 'http://127.0.0.1:1/',
              [NodeAnnotation.bootstrappedBootId]: 'b1',
            },
          },
          [RUNTIME],
        ),
      ],
      leases: [lease('paused', undefined, undefined, stopped), lease('paused', 'net', 'Healthy', stopped)],
      systemExtensions: [],
      clusterHealth: undefined,
    },
    CLI_POLICY_DEFAULTS,
    now,
  );
  const report = analysis.nodes[0]!;
  const expected = nodeStatus(report.decision.state, report.decision.condition.reason);

  it('is Degraded (AgentNotReporting), condition Unknown, label unknown', () => {
    expect(expected).toEqual({
      state: 'Degraded',
      reason: 'AgentNotReporting',
      condition: 'Unknown',
      label: 'unknown',
      text: 'Degraded (AgentNotReporting)',
    });
  });

  it('status shows that text in its table, its summary and its JSON', () => {
    const text = renderStatusText(analysis, analysis.nodes, undefined, false, []);
    expect(text[1]).toMatch(/^paused {3}Degraded \(AgentNotReporting\) {3}runtime /);
    expect(text).toContain('1 node: 1 Degraded (AgentNotReporting); 0 healthy.');
    const wide = renderStatusText(analysis, analysis.nodes, undefined, true, []);
    expect(wide[1]).toMatch(/^paused {3}Degraded \(AgentNotReporting\) {3}Unknown +unknown +not reporting /);
    expect(nodeView(report, now)).toMatchObject({
      state: expected.state,
      stateText: expected.text,
      label: expected.label,
      condition: { status: expected.condition, reason: expected.reason },
    });
  });

  it('explain shows the same text, with the condition and the label', () => {
    const lines = renderExplainText(explainView(report, analysis.tripped, [], 10, now), now);
    expect(lines[1]).toBe(
      `nodecare state: ${expected.text}; ExtensionsReady=${expected.condition} (${expected.reason}), nodecare.io/status=${expected.label}`,
    );
  });
});
