// Golden output of `kubectl nodecare explain` for each shape it takes (cli/testdata/explain-*.txt: read them,
// they are what an operator sees). `npx vitest run --project unit cli/verbs/explain.test.ts -u` rewrites them
// after a deliberate change; review the diff by eye.

import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  buildLease,
  NodeAnnotation,
  type LeaseObject,
} from '../../api/index.ts';
import { BOOTSTRAP_RECORD_ANNOTATION, encodeBootstrapRecord } from '../../controller/decide/index.ts';
import { analyze, CLI_POLICY_DEFAULTS, type EventObject, type NodeObject } from '../model.ts';
import { explainView, renderExplainText } from './explain.ts';

const T0 = Date.parse('2026-11-24T14:00:00Z');
const NOW = T0 + 600_000;
const NODE = 'kwok-gpu-a';
const BOOT = 'boot-1';
const s = (seconds: number) => T0 + seconds * 1000;
const iso = (ms: number) => new Date(ms).toISOString();
/** An events.k8s.io time, as the controller writes it. */
const micro = (ms: number) => iso(ms).replace('Z', '000Z');

const ANNOTATIONS = {
  'extensions.nodecare.io/gpu-plugin': 'unix:///run/nodecare/gpu.sock',
  'extensions.nodecare.io/kube-proxy': 'http://127.0.0.1:10256/healthz',
  'extensions.nodecare.io/log-agent': JSON.stringify({
    probe: { tcp: { host: '127.0.0.1', port: 24224 } },
    critical: false,
  }),
};

/** ExtensionsReady as the controller wrote it: status, reason, message, seconds after creation. */
type Written = [string, string, string, number];

function node(
  taints: string[],
  extra: { bootstrapped?: boolean; kubeletReady?: 'Unknown'; written?: Written } = {},
): NodeObject {
  const written = extra.written
    ? [
        {
          type: 'ExtensionsReady',
          status: extra.written[0],
          reason: extra.written[1],
          message: extra.written[2],
          lastTransitionTime: iso(s(extra.written[3])),
        },
      ]
    : [];
  return {
    metadata: {
      name: NODE,
      uid: 'uid-a',
      creationTimestamp: iso(T0),
      labels: {},
      annotations: {
        ...ANNOTATIONS,
        ...(extra.bootstrapped ? { [NodeAnnotation.bootstrappedBootId]: BOOT } : {}),
      },
    },
    spec: { taints: taints.map((key) => ({ key, effect: 'NoSchedule' })) },
    status: {
      nodeInfo: { bootID: BOOT },
      conditions: [
        ...written,
        ...(extra.kubeletReady
          ? [
              {
                type: 'Ready',
                status: extra.kubeletReady,
                reason: 'NodeStatusUnknown',
                message: 'Kubelet stopped posting node status.',
                lastTransitionTime: iso(NOW - 120_000),
              },
            ]
          : []),
      ],
    },
  };
}

type State = 'Healthy' | 'Unhealthy' | 'Progressing';

function lease(
  extension: string | undefined,
  renewMs: number,
  state?: State,
  sinceMs = renewMs,
): LeaseObject {
  return buildLease({
    node: { name: NODE, uid: 'uid-a' },
    extension,
    holderIdentity: 'nodecare-agent-x7k2p',
    leaseDurationSeconds: 40,
    renewTime: new Date(renewMs),
    bootId: BOOT,
    record: state
      ? {
          state,
          reason: { Healthy: 'ProbeSucceeded', Unhealthy: 'ConnectionRefused', Progressing: 'StartupGrace' }[
            state
          ],
          message:
            state === 'Unhealthy'
              ? 'connect ECONNREFUSED 127.0.0.1:10256'
              : state === 'Progressing'
                ? 'within its 300s startup grace'
                : '',
          since: iso(sinceMs),
        }
      : undefined,
  });
}

/** The controller's record of a bootstrap: agent at 2 s, kube-proxy Healthy at 3 s, gpu-plugin at 25 s. */
const removed: EventObject = {
  type: 'Normal',
  reason: 'BootstrapTaintRemoved',
  message: `Removed taint ${BOOTSTRAP}: the agent has reported and every critical extension is Healthy.`,
  eventTime: micro(s(25.4)),
  metadata: {
    annotations: {
      [BOOTSTRAP_RECORD_ANNOTATION]: encodeBootstrapRecord({
        bootId: BOOT,
        startedMs: T0,
        agentReportedMs: s(2),
        extensions: [
          { name: 'gpu-plugin', healthyMs: s(25) },
          { name: 'kube-proxy', healthyMs: s(3) },
        ],
        completedMs: s(25.4),
      }),
    },
  },
};

/** kube-proxy failed at 300 s and recovered at 400 s, long after the bootstrap (listed out of order). */
const later: EventObject[] = [
  {
    type: 'Normal',
    reason: 'RuntimeTaintRemoved',
    message: `Removed taint ${RUNTIME}: every blocking extension is Healthy.`,
    lastTimestamp: iso(s(400)),
  },
  {
    type: 'Warning',
    reason: 'ExtensionUnhealthy',
    message: 'Extension kube-proxy Unhealthy (ConnectionRefused): connect ECONNREFUSED 127.0.0.1:10256',
    eventTime: micro(s(299.5)),
  },
  {
    type: 'Warning',
    reason: 'RuntimeTaintAdded',
    message: `Added taint ${RUNTIME}: kube-proxy Unhealthy (ConnectionRefused): connect ECONNREFUSED 127.0.0.1:10256`,
    eventTime: micro(s(300)),
  },
];

function explain(
  n: NodeObject,
  leases: LeaseObject[],
  events: EventObject[],
  policy = CLI_POLICY_DEFAULTS,
  workloads?: Parameters<typeof explainView>[5],
): string {
  const analysis = analyze(
    { nodes: [n], leases, systemExtensions: [], clusterHealth: undefined },
    policy,
    NOW,
  );
  const report = analysis.nodes[0]!;
  return `${renderExplainText(explainView(report, analysis.tripped, events, 10, NOW, workloads), NOW).join('\n')}\n`;
}

const HEALTHY: Written = ['True', 'AllExtensionsHealthy', 'All required extensions are Healthy.', 400];

const healthyLeases = [
  lease(undefined, NOW - 1000),
  lease('gpu-plugin', NOW - 1000, 'Healthy', s(25)),
  // Its Healthy since moved: it failed and recovered after the bootstrap.
  lease('kube-proxy', NOW - 1000, 'Healthy', s(400)),
  lease('log-agent', NOW - 1000, 'Healthy', s(3)),
];

describe('kubectl nodecare explain: golden output of each shape', () => {
  it('a Ready node: the time to schedulable from the controller record, correct after a later failure', async () => {
    const text = explain(node([], { bootstrapped: true, written: HEALTHY }), healthyLeases, [
      ...later,
      removed,
    ]);
    expect(text).toContain('25.4s after its creation');
    expect(text).not.toContain('Not counted');
    expect(text).toMatch(/\+25\.0s +22\.0s +gpu-plugin Healthy {2}\(the longest wait\)/);
    await expect(text).toMatchFileSnapshot('../testdata/explain-ready.txt');
  });

  it('a Ready node without the record (an older controller): reconstructed from the Leases, what moved not counted', async () => {
    const { metadata: _dropped, ...bare } = removed;
    const text = explain(node([], { bootstrapped: true, written: HEALTHY }), healthyLeases, [bare]);
    expect(text).toContain('Not counted (changed state since, and no controller record): kube-proxy.');
    await expect(text).toMatchFileSnapshot('../testdata/explain-ready-no-record.txt');
  });

  it('a bootstrapping node held by an extension, with what comes next', async () => {
    const text = explain(
      node([BOOTSTRAP], {
        written: [
          'False',
          'ExtensionsUnhealthy',
          'gpu-plugin Unhealthy (ConnectionRefused): connect ECONNREFUSED 127.0.0.1:10256',
          30,
        ],
      }),
      [
        lease(undefined, NOW - 1000),
        lease('gpu-plugin', NOW - 1000, 'Unhealthy', s(30)),
        lease('kube-proxy', NOW - 1000, 'Healthy', s(3)),
        lease('log-agent', NOW - 1000, 'Healthy', s(3)),
      ],
      [],
    );
    expect(text).toContain('nodecare state: Bootstrapping (ExtensionsUnhealthy);');
    expect(text).toContain('  the node goes from Bootstrapping (ExtensionsUnhealthy) to BootstrapTimeout');
    await expect(text).toMatchFileSnapshot('../testdata/explain-bootstrapping.txt');
  });

  it("a held node whose GPU device plugin DaemonSet has NVIDIA's stock tolerations: the DaemonSet and a Pending pod named with the cause (issue 49 item 3)", async () => {
    const nvidia = [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }];
    const pinned = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [NODE] }] }],
        },
      },
    };
    const leases = [lease(undefined, NOW - 1000), lease('gpu-plugin', NOW - 1000, 'Progressing', s(3))];
    const workloads = {
      daemonSets: [
        {
          metadata: { name: 'nvidia-device-plugin-daemonset', namespace: 'kube-system', uid: 'ds-1' },
          spec: { template: { spec: { tolerations: nvidia } } },
        },
        {
          metadata: { name: 'csi-node', namespace: 'storage', uid: 'ds-2' },
          spec: { template: { spec: { tolerations: nvidia } } },
        },
      ],
      pods: [
        {
          metadata: {
            name: 'csi-node-7xk2p',
            namespace: 'storage',
            ownerReferences: [{ kind: 'DaemonSet', name: 'csi-node', uid: 'ds-2', controller: true }],
          },
          spec: { tolerations: nvidia, affinity: pinned },
          status: {
            phase: 'Pending',
            conditions: [
              {
                type: 'PodScheduled',
                status: 'False',
                reason: 'Unschedulable',
                message:
                  "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node affinity/selector.",
              },
            ],
          },
        },
      ],
    };
    const text = explain(node([BOOTSTRAP]), leases, [], CLI_POLICY_DEFAULTS, workloads);
    expect(text).toContain(
      `DaemonSet kube-system/nvidia-device-plugin-daemonset selects this node but does not tolerate ${BOOTSTRAP}:NoSchedule`,
    );
    expect(text).toContain(
      'Pod storage/csi-node-7xk2p (of DaemonSet storage/csi-node) is Pending for this node',
    );
    await expect(text).toMatchFileSnapshot('../testdata/explain-kept-off.txt');
    // Credentials that may not list DaemonSets: said on the page, the rest of explain unchanged.
    const refused = explain(node([BOOTSTRAP]), leases, [], CLI_POLICY_DEFAULTS, {
      problem:
        'listing DaemonSets and pods in all namespaces failed: forbidden; it needs list on daemonsets and pods',
    });
    expect(refused).toContain(
      "Extension workloads kept off by nodecare's taints: not checked (listing DaemonSets",
    );
  });

  it('a Degraded node whose agent stopped (paused): the state with its reason, other taints and their owners', async () => {
    const stopped = NOW - 60_000;
    const text = explain(
      node([RUNTIME, 'node.cilium.io/agent-not-ready'], {
        bootstrapped: true,
        written: ['Unknown', 'AgentNotReporting', "The nodecare agent's heartbeat lease expired.", 580],
      }),
      [
        lease(undefined, stopped),
        lease('gpu-plugin', stopped, 'Healthy', s(25)),
        lease('kube-proxy', stopped, 'Healthy', s(3)),
        lease('log-agent', stopped, 'Healthy', s(3)),
      ],
      [removed],
    );
    expect(text).toContain(
      'nodecare state: Degraded (AgentNotReporting); ExtensionsReady=Unknown (AgentNotReporting), nodecare.io/status=unknown',
    );
    await expect(text).toMatchFileSnapshot('../testdata/explain-agent-not-reporting.txt');
  });

  it('a Ready node that will degrade if its agent stops: the prediction reads as sentences', async () => {
    const text = explain(node([], { bootstrapped: true, written: HEALTHY }), healthyLeases, []);
    expect(text).toContain('If the agent stops renewing its Leases now: in 39s (2026-11-24T14:10:39Z):');
    expect(text).toContain('  the node goes from Ready to Degraded (AgentNotReporting)');
    expect(text).toContain(
      `  the controller will add the runtime taint ${RUNTIME}, set ExtensionsReady=Unknown (AgentNotReporting) and label it nodecare.io/status=unknown`,
    );
    expect(text).toContain(
      '  because gpu-plugin, kube-proxy and log-agent go from Healthy to Unknown (AgentNotReporting)',
    );
    expect(text).not.toMatch(/will ExtensionsReady|will state/);
    await expect(text).toMatchFileSnapshot('../testdata/explain-no-events.txt');
  });

  it('a node whose kubelet is not Ready, before the controller wrote it', async () => {
    const text = explain(node([], { bootstrapped: true, kubeletReady: 'Unknown' }), healthyLeases, []);
    expect(text).toContain(
      'nodecare state: NotReady; ExtensionsReady=Unknown (NodeNotReady), nodecare.io/status=unknown',
    );
    await expect(text).toMatchFileSnapshot('../testdata/explain-not-ready.txt');
  });

  it('a Degraded node under a release override: the line says the controller lifts the taint until when', () => {
    const until = new Date(NOW + 30 * 60 * 1000).toISOString();
    const n = node([RUNTIME], { bootstrapped: true });
    const annotations: Record<string, string> = {
      ...n.metadata?.annotations,
      'nodecare.io/release-until': until,
      'nodecare.io/release-reason': 'driver swap',
    };
    n.metadata = { ...n.metadata, annotations };
    const leases = healthyLeases.map((l) =>
      l.metadata.name?.startsWith('kube-proxy.') ? lease('kube-proxy', NOW - 1000, 'Unhealthy', s(510)) : l,
    );
    const text = explain(n, leases, []);
    expect(text).toContain(
      `Node ${NODE} has a release until ${until} (driver swap): the controller lifts its taints until then (remove the runtime taint ${RUNTIME}), then decides them again.`,
    );
    annotations['nodecare.io/release-until'] = 'tonight';
    expect(explain(n, leases, [])).toContain(
      `Node ${NODE} has nodecare.io/release-until="tonight", ignored: not an RFC 3339 time`,
    );
  });

  it('a drained node whose kube-proxy is down, with maintenance planned: in maintenance, said in one line', async () => {
    const n = node([RUNTIME], { bootstrapped: true });
    n.spec = { ...n.spec, unschedulable: true };
    n.status!.conditions!.push(
      {
        type: 'DrainInProgress',
        status: 'True',
        reason: 'NodeDrain',
        message: 'kernel update',
        lastTransitionTime: iso(s(500)),
      },
      { type: 'MaintenancePlanned', status: 'True', reason: 'Reboot', lastTransitionTime: iso(s(450)) },
    );
    const leases = healthyLeases.map((l) =>
      l.metadata.name?.startsWith('kube-proxy.') ? lease('kube-proxy', NOW - 1000, 'Unhealthy', s(510)) : l,
    );
    const text = explain(n, leases, []);
    expect(text).toContain(
      `Node ${NODE} is in maintenance since 2026-11-24T14:08:20.000Z (DrainInProgress: NodeDrain: kernel update): nodecare removes no taint, evicts nothing, and leaves the node out of the breaker and the alerts.`,
    );
    expect(text).toContain(`Node ${NODE} has maintenance planned since 2026-11-24T14:07:30.000Z (Reboot)`);
    expect(text).toContain(
      'nodecare state: Maintenance; ExtensionsReady=False (InMaintenance), nodecare.io/status=maintenance',
    );
    await expect(text).toMatchFileSnapshot('../testdata/explain-maintenance.txt');
  });

  it('a Ready node whose kube-proxy fails while the controller runs with --suspend: the held change in one line', () => {
    const leases = healthyLeases.map((l) =>
      l.metadata.name?.startsWith('kube-proxy.') ? lease('kube-proxy', NOW - 1000, 'Unhealthy', s(590)) : l,
    );
    const text = explain(node([], { bootstrapped: true, written: HEALTHY }), leases, [], {
      ...CLI_POLICY_DEFAULTS,
      suspend: true,
    });
    expect(text).toContain(
      `Suspended by the controller (--suspend): would add the runtime taint ${RUNTIME} (nodecare writes no taint change here until the suspension is lifted).`,
    );
    expect(explain(node([], { bootstrapped: true, written: HEALTHY }), leases, [])).not.toContain(
      'Suspended',
    );
  });

  it('events are listed by time, whatever their timestamp field and format', () => {
    const text = explain(node([], { bootstrapped: true, written: HEALTHY }), healthyLeases, [
      ...later,
      removed,
    ]);
    const order = ['BootstrapTaintRemoved', 'ExtensionUnhealthy', 'RuntimeTaintAdded', 'RuntimeTaintRemoved'];
    const at = order.map((reason) => text.indexOf(`  ${reason}: `));
    expect(at.every((i) => i > 0)).toBe(true);
    expect(at).toEqual([...at].sort((a, b) => a - b));
  });
});
