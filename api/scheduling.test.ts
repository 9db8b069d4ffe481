import { describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_TAINT_VALUE,
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  RUNTIME_TAINT_VALUE,
} from './names.ts';
import {
  boundForNode,
  keptOffByTaints,
  selectsNode,
  type DaemonSetObject,
  type PlacementSpec,
  type PodObject,
  type SchedulingNode,
  type Taint,
  type Toleration,
} from './scheduling.ts';

const OWN = [BOOTSTRAP, RUNTIME];
const HELD = { key: BOOTSTRAP, value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' };
const DEGRADED = { key: RUNTIME, value: RUNTIME_TAINT_VALUE, effect: 'NoSchedule' };
const NVIDIA: Toleration[] = [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }];
const OURS: Toleration[] = OWN.map((key) => ({ key, operator: 'Exists', effect: 'NoSchedule' }));

function node(
  taints: Taint[] = [HELD],
  labels: Record<string, string> = { 'kubernetes.io/os': 'linux' },
): SchedulingNode {
  return { name: 'gpu-1', labels: { 'kubernetes.io/hostname': 'gpu-1', ...labels }, taints };
}

function ds(name: string, spec: PlacementSpec, uid = `uid-${name}`): DaemonSetObject {
  return { metadata: { name, namespace: 'kube-system', uid }, spec: { template: { spec } } };
}

/** A daemon pod as the DaemonSet controller creates it: pinned to the node by matchFields, not nodeName. */
function daemonPod(
  owner: DaemonSetObject,
  nodeName: string,
  phase: string,
  tolerations: Toleration[],
): PodObject {
  return {
    metadata: {
      name: `${owner.metadata.name}-x`,
      namespace: 'kube-system',
      ownerReferences: [
        { kind: 'DaemonSet', name: owner.metadata.name, uid: owner.metadata.uid, controller: true },
      ],
    },
    spec: {
      tolerations,
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] },
            ],
          },
        },
      },
    },
    status: {
      phase,
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/3 nodes are available: 1 node(s) had untolerated taint(s).',
        },
      ],
    },
  };
}

const required = (...terms: object[]): PlacementSpec => ({
  affinity: {
    nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } },
  },
});

describe('selectsNode (nodeName, nodeSelector, required node affinity as Kubernetes matches them)', () => {
  it.each<[string, PlacementSpec, boolean]>([
    ['nothing set → every node', {}, true],
    ['nodeName of this node → yes', { nodeName: 'gpu-1' }, true],
    ['nodeName of another node → no', { nodeName: 'gpu-2' }, false],
    ['nodeSelector matching → yes', { nodeSelector: { 'kubernetes.io/os': 'linux' } }, true],
    [
      'nodeSelector on a label the node lacks → no',
      { nodeSelector: { 'nvidia.com/gpu.present': 'true' } },
      false,
    ],
    [
      'a term In → yes',
      required({ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }] }),
      true,
    ],
    [
      'NotIn on a missing label → yes',
      required({ matchExpressions: [{ key: 'type', operator: 'NotIn', values: ['virtual-kubelet'] }] }),
      true,
    ],
    [
      'DoesNotExist on a present label → no',
      required({ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'DoesNotExist' }] }),
      false,
    ],
    [
      'terms are ORed: second matches → yes',
      required(
        { matchExpressions: [{ key: 'a', operator: 'Exists' }] },
        { matchExpressions: [{ key: 'kubernetes.io/os', operator: 'Exists' }] },
      ),
      true,
    ],
    [
      'requirements in a term are ANDed → no',
      required({
        matchExpressions: [
          { key: 'kubernetes.io/os', operator: 'Exists' },
          { key: 'a', operator: 'Exists' },
        ],
      }),
      false,
    ],
    ['an empty term matches nothing → no', required({}), false],
    [
      'matchFields metadata.name In this node → yes',
      required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-1'] }] }),
      true,
    ],
    [
      'matchFields metadata.name In another node → no',
      required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-2'] }] }),
      false,
    ],
    [
      'matchFields on another field → no',
      required({ matchFields: [{ key: 'spec.podCIDR', operator: 'In', values: ['x'] }] }),
      false,
    ],
    [
      'Gt on a label the node lacks → no',
      required({ matchExpressions: [{ key: 'gpus', operator: 'Gt', values: ['4'] }] }),
      false,
    ],
    [
      'an unknown operator → no',
      required({ matchExpressions: [{ key: 'kubernetes.io/os', operator: 'Like', values: ['linux'] }] }),
      false,
    ],
  ])('%s', (_name, spec, expected) => {
    expect(selectsNode(spec, node())).toBe(expected);
  });

  it('Gt and Lt compare integers', () => {
    const gpus = node([HELD], { gpus: '8' });
    expect(
      selectsNode(required({ matchExpressions: [{ key: 'gpus', operator: 'Gt', values: ['4'] }] }), gpus),
    ).toBe(true);
    expect(
      selectsNode(required({ matchExpressions: [{ key: 'gpus', operator: 'Lt', values: ['4'] }] }), gpus),
    ).toBe(false);
  });
});

describe('boundForNode', () => {
  it.each<[string, PlacementSpec, boolean]>([
    ['nodeName → yes', { nodeName: 'gpu-1' }, true],
    [
      'a daemon pod pinned by matchFields → yes',
      required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-1'] }] }),
      true,
    ],
    [
      'pinned to another node → no',
      required({ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-2'] }] }),
      false,
    ],
    ['a pod that may go to many nodes → no', { nodeSelector: { 'kubernetes.io/os': 'linux' } }, false],
  ])('%s', (_name, spec, expected) => {
    expect(boundForNode(spec, 'gpu-1')).toBe(expected);
  });
});

describe('keptOffByTaints', () => {
  const plugin = ds('nvidia-device-plugin-daemonset', { tolerations: NVIDIA });

  it.each<{
    name: string;
    node: SchedulingNode;
    daemonSets: DaemonSetObject[];
    pods?: PodObject[];
    expected: string[];
  }>([
    {
      name: "a DaemonSet with NVIDIA's stock tolerations on a held node, no pod → named, with the taint",
      node: node(),
      daemonSets: [plugin],
      expected: [
        `DaemonSet kube-system/nvidia-device-plugin-daemonset: ${BOOTSTRAP}=${BOOTSTRAP_TAINT_VALUE}:NoSchedule`,
      ],
    },
    {
      name: 'the same on a Degraded node → named, with the runtime taint',
      node: node([DEGRADED]),
      daemonSets: [plugin],
      expected: [
        `DaemonSet kube-system/nvidia-device-plugin-daemonset: ${RUNTIME}=${RUNTIME_TAINT_VALUE}:NoSchedule`,
      ],
    },
    {
      name: "a taint of nodecare's key with another value (Karpenter) counts as nodecare's",
      node: node([{ key: BOOTSTRAP, value: 'true', effect: 'NoSchedule' }]),
      daemonSets: [plugin],
      expected: [`DaemonSet kube-system/nvidia-device-plugin-daemonset: ${BOOTSTRAP}=true:NoSchedule`],
    },
    {
      name: "with nodecare's tolerations (the admission policy's) → nothing",
      node: node([HELD, DEGRADED]),
      daemonSets: [ds('plugin', { tolerations: [...NVIDIA, ...OURS] })],
      expected: [],
    },
    {
      name: 'tolerating every taint → nothing',
      node: node(),
      daemonSets: [ds('agent', { tolerations: [{ operator: 'Exists' }] })],
      expected: [],
    },
    {
      name: 'a DaemonSet that does not select the node (nodeSelector) → nothing',
      node: node(),
      daemonSets: [ds('plugin', { tolerations: NVIDIA, nodeSelector: { 'nvidia.com/gpu.present': 'true' } })],
      expected: [],
    },
    {
      name: 'no nodecare taint on the node → nothing, whatever else it has',
      node: node([{ key: 'example.com/other', effect: 'NoSchedule' }]),
      daemonSets: [plugin],
      expected: [],
    },
    {
      name: "our key with effect NoExecute is not nodecare's → nothing",
      node: node([{ key: BOOTSTRAP, effect: 'NoExecute' }]),
      daemonSets: [plugin],
      expected: [],
    },
    {
      name: 'a DaemonSet with a running pod on the node (it tolerated the taint when placed) → not named',
      node: node(),
      daemonSets: [plugin],
      pods: [
        {
          ...daemonPod(plugin, 'gpu-1', 'Running', NVIDIA),
          spec: { nodeName: 'gpu-1', tolerations: NVIDIA },
        },
      ],
      expected: [],
    },
    {
      name: 'a Pending pod pinned to the node that does not tolerate the taint → named with its owner, not its DaemonSet again',
      node: node(),
      daemonSets: [plugin],
      pods: [daemonPod(plugin, 'gpu-1', 'Pending', NVIDIA)],
      expected: [
        `Pod kube-system/nvidia-device-plugin-daemonset-x (DaemonSet kube-system/nvidia-device-plugin-daemonset): ${BOOTSTRAP}=${BOOTSTRAP_TAINT_VALUE}:NoSchedule`,
      ],
    },
    {
      name: "a Pending pod pinned to another node → nothing; that node's DaemonSet is named for this one",
      node: node(),
      daemonSets: [plugin],
      pods: [daemonPod(plugin, 'gpu-2', 'Pending', NVIDIA)],
      expected: [
        `DaemonSet kube-system/nvidia-device-plugin-daemonset: ${BOOTSTRAP}=${BOOTSTRAP_TAINT_VALUE}:NoSchedule`,
      ],
    },
    {
      name: 'a Pending pod that tolerates the taint → nothing',
      node: node(),
      daemonSets: [],
      pods: [daemonPod(ds('ok', {}), 'gpu-1', 'Pending', OURS)],
      expected: [],
    },
  ])('$name', ({ node: n, daemonSets, pods = [], expected }) => {
    const found = keptOffByTaints(n, OWN, daemonSets, pods);
    expect(
      found.map(
        (f) =>
          `${f.kind} ${f.namespace}/${f.name}${f.owner ? ` (${f.owner})` : ''}: ${f.untolerated.join(', ')}`,
      ),
    ).toEqual(expected);
  });

  it("a pod's scheduler message and the other taints it does not tolerate are kept", () => {
    const [found] = keptOffByTaints(
      node([HELD, { key: 'example.com/dedicated', value: 'ml', effect: 'NoSchedule' }]),
      OWN,
      [],
      [daemonPod(plugin, 'gpu-1', 'Pending', NVIDIA)],
    );
    expect(found?.scheduler).toBe(
      'Unschedulable: 0/3 nodes are available: 1 node(s) had untolerated taint(s).',
    );
    expect(found?.alsoUntolerated).toEqual(['example.com/dedicated=ml:NoSchedule']);
  });

  it("the DaemonSet controller's own tolerations count: a cordoned held node names the DaemonSet for nodecare's taint only", () => {
    const [found] = keptOffByTaints(
      node([HELD, { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }]),
      OWN,
      [plugin],
      [],
    );
    expect(found?.alsoUntolerated).toEqual([]);
  });
});
