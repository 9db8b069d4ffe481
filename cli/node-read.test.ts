// The pure parts of what `explain <node>` reads (cli/node-read.ts): the names of the node's Leases, and when the
// roll-up's counts rule the breaker out (else the whole cluster is read). On the real control plane:
// test/integration/cli-explain-node.test.ts.

import { describe, expect, it } from 'vitest';
import { type SystemExtensionObject } from '../api/index.ts';
import { analyze, CLI_POLICY_DEFAULTS, type ClusterHealthObject, type NodeObject } from './model.ts';
import { breakerMayMatter, nodeLeaseNames } from './node-read.ts';

const NOW = Date.parse('2026-12-02T12:00:00Z');
const UID = '6f1c1a52-0c8e-4a53-9a4e-2f5d8c1b7e90';

function node(name: string, annotations: Record<string, string> = {}): NodeObject {
  return {
    metadata: {
      name,
      uid: UID,
      creationTimestamp: '2026-12-02T11:00:00Z',
      labels: { pool: 'gpu' },
      annotations,
    },
    status: { nodeInfo: { bootID: 'boot-1' } as never, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function sx(name: string, matchLabels: Record<string, string> = { pool: 'gpu' }): SystemExtensionObject {
  return {
    metadata: { name },
    spec: { nodeSelector: { matchLabels }, probe: { tcp: { host: '127.0.0.1', port: 1 } } },
  } as SystemExtensionObject;
}

const SXS = [sx('gpu'), sx('csi', { pool: 'other' })];
const DNS = {
  'extensions.nodecare.io/dns': JSON.stringify({ probe: { tcp: { host: '127.0.0.1', port: 53 } } }),
};

function reportOf(raw: NodeObject, sxs = SXS) {
  return analyze(
    { nodes: [raw], leases: [], systemExtensions: sxs, clusterHealth: undefined },
    CLI_POLICY_DEFAULTS,
    NOW,
  ).nodes[0]!;
}

function health(rows: unknown): ClusterHealthObject {
  return { metadata: { name: 'cluster' }, status: { extensions: rows } };
}

const row = (name: string, unhealthy: number, unknown = 0) => ({
  name,
  healthy: 10,
  progressing: 0,
  unhealthy,
  unknown,
});

describe('nodeLeaseNames', () => {
  it("the heartbeat's, and one per extension required or named by a SystemExtension, each under the node's name", () => {
    expect(nodeLeaseNames(node('worker-1', DNS), SXS, CLI_POLICY_DEFAULTS)).toEqual([
      'nodecare-agent.worker-1',
      'csi.worker-1',
      'dns.worker-1',
      'gpu.worker-1',
    ]);
  });

  it("a pair longer than 253 characters is named after the node's UID, as the agent names it", () => {
    const long = `${'n'.repeat(63)}.${'n'.repeat(63)}.${'n'.repeat(63)}.${'n'.repeat(61)}`;
    expect(long.length).toBe(253);
    expect(nodeLeaseNames(node(long), [sx('gpu')], CLI_POLICY_DEFAULTS)).toEqual([
      `nodecare-agent.${UID}`,
      `gpu.${UID}`,
    ]);
  });
});

describe('breakerMayMatter', () => {
  const gpuNode = reportOf(node('worker-1', DNS));

  it('no: fewer than 3 nodes fail each SystemExtension the node requires (the breaker needs 3)', () => {
    expect(breakerMayMatter(gpuNode, SXS, health([row('gpu', 1, 1), row('dns', 40)]), '')).toBe(false);
  });

  it('yes: 3 or more fail one, Unhealthy and Unknown together', () => {
    expect(breakerMayMatter(gpuNode, SXS, health([row('gpu', 2, 1)]), '')).toBe(true);
    expect(breakerMayMatter(gpuNode, SXS, health([row('gpu', 3)]), '')).toBe(true);
  });

  it('yes: no ClusterHealth, no row for it, a row it cannot read, or a controller that manages some nodes only', () => {
    expect(breakerMayMatter(gpuNode, SXS, undefined, '')).toBe(true);
    expect(breakerMayMatter(gpuNode, SXS, health([row('csi', 0)]), '')).toBe(true);
    expect(breakerMayMatter(gpuNode, SXS, health([{ name: 'gpu', unhealthy: '0', unknown: 0 }]), '')).toBe(
      true,
    );
    expect(breakerMayMatter(gpuNode, SXS, health('not a list'), '')).toBe(true);
    expect(breakerMayMatter(gpuNode, SXS, health([row('gpu', 0)]), 'pool=gpu')).toBe(true);
  });

  it('no: the node requires no SystemExtension (annotations only), whatever ClusterHealth says', () => {
    const annotated = reportOf(node('worker-2', DNS), [sx('gpu', { pool: 'none' })]);
    expect([...annotated.registrations.keys()]).toEqual(['dns']);
    expect(breakerMayMatter(annotated, [sx('gpu', { pool: 'none' })], undefined, 'pool=gpu')).toBe(false);
  });
});
