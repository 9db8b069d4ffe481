import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  NODE_CONDITION_TYPE,
} from '../api/index.ts';
import {
  DEFAULT_TAINT_KEYS,
  describeCleanup,
  isNodecareKey,
  planNodeCleanup,
  type CleanupNode,
} from './cleanup.ts';

describe('isNodecareKey', () => {
  it.each([
    ['nodecare.io/status', true],
    ['nodecare.io/bootstrapped-boot-id', true],
    ['extensions.nodecare.io/gpu-plugin', true],
    ['kubernetes.io/hostname', false],
    ['notnodecare.io/x', false],
    ['nodecare.io', false],
    ['example.com/nodecare.io', false],
  ])('%s → %s', (key, expected) => {
    expect(isNodecareKey(key)).toBe(expected);
  });
});

describe('planNodeCleanup', () => {
  const node: CleanupNode = {
    metadata: {
      name: 'n1',
      resourceVersion: '42',
      labels: { 'kubernetes.io/hostname': 'n1', 'nodecare.io/status': 'healthy' },
      annotations: {
        'extensions.nodecare.io/kube-proxy': 'http://127.0.0.1:10256/healthz',
        'nodecare.io/bootstrapped-boot-id': 'b1',
        'node.alpha.kubernetes.io/ttl': '0',
      },
    },
    spec: {
      taints: [
        { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
        { key: BOOTSTRAP, effect: 'NoSchedule' },
        { key: RUNTIME, effect: 'NoSchedule' },
      ],
    },
    status: { conditions: [{ type: 'Ready' }, { type: NODE_CONDITION_TYPE }] },
  };

  it('removes nodecare taints, labels, annotations and the condition, keeping everything else', () => {
    const plan = planNodeCleanup(node, DEFAULT_TAINT_KEYS);
    expect(plan.metadataPatch).toEqual({
      metadata: {
        resourceVersion: '42',
        labels: { 'nodecare.io/status': null },
        annotations: { 'extensions.nodecare.io/kube-proxy': null, 'nodecare.io/bootstrapped-boot-id': null },
      },
      spec: { taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] },
    });
    expect(plan.statusPatch).toEqual({
      status: { conditions: [{ type: NODE_CONDITION_TYPE, $patch: 'delete' }] },
    });
    expect(describeCleanup(plan)).toBe(
      `node n1: taints ${BOOTSTRAP}, ${RUNTIME}; labels nodecare.io/status; annotations extensions.nodecare.io/kube-proxy, nodecare.io/bootstrapped-boot-id; condition ${NODE_CONDITION_TYPE}`,
    );
  });

  it('removes a custom taint key only when named', () => {
    const custom: CleanupNode = {
      metadata: { name: 'n2', resourceVersion: '1' },
      spec: { taints: [{ key: 'example.com/booting', effect: 'NoSchedule' }] },
    };
    expect(planNodeCleanup(custom, DEFAULT_TAINT_KEYS).metadataPatch).toBeUndefined();
    expect(planNodeCleanup(custom, [...DEFAULT_TAINT_KEYS, 'example.com/booting']).metadataPatch).toEqual({
      metadata: { resourceVersion: '1' },
      spec: { taints: [] },
    });
  });

  it('a node without anything of nodecare → no patch, no line', () => {
    const plain: CleanupNode = { metadata: { name: 'n3', labels: { a: 'b' } }, spec: {}, status: {} };
    const plan = planNodeCleanup(plain, DEFAULT_TAINT_KEYS);
    expect(plan.metadataPatch).toBeUndefined();
    expect(plan.statusPatch).toBeUndefined();
    expect(describeCleanup(plan)).toBeUndefined();
  });
});
