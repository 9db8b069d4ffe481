// Karpenter with its KWOK cloud provider, as the Karpenter test and the demo run it: starting KWOK and
// Karpenter against a control plane, the NodePool and KWOKNodeClass of the fixture
// (test/fixtures/autoscalers/karpenter-nodepool.yaml), instance types with a GPU, and reading NodeClaims.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  PatchStrategy,
  setHeaderOptions,
  type CustomObjectsApi,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { load } from 'js-yaml';
import { BOOTSTRAP_TAINT_VALUE, DEFAULT_BOOTSTRAP_TAINT_KEY } from '../../api/index.ts';
import { ensureTool, karpenterCrds, startKarpenter, startKwok, type ServingTool } from './tools.ts';

export const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'autoscalers', 'karpenter-nodepool.yaml');
/** The label Karpenter puts on every NodeClaim and Node of a NodePool. */
export const POOL_LABEL = 'karpenter.sh/nodepool';
const NODECLAIMS = { group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims' } as const;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface NodeClaim {
  metadata: { name: string; creationTimestamp?: string | Date; labels?: Record<string, string> };
  status?: {
    nodeName?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

/** The NodeClaims of one NodePool, or of all when `pool` is not given. */
export async function listNodeClaims(custom: CustomObjectsApi, pool?: string): Promise<NodeClaim[]> {
  const list = (await custom.listClusterCustomObject({
    ...NODECLAIMS,
    ...(pool ? { labelSelector: `${POOL_LABEL}=${pool}` } : {}),
  })) as { items: NodeClaim[] };
  return list.items;
}

const conditionTrue = (claim: NodeClaim, type: string): boolean =>
  claim.status?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;

export const isInitialized = (claim: NodeClaim): boolean => conditionTrue(claim, 'Initialized');

/** A NodeClaim's lifecycle as Karpenter reports it in its conditions, in order. */
export const NODECLAIM_STAGES = ['Launched', 'Registered', 'Initialized'] as const;
export type NodeClaimStage = (typeof NODECLAIM_STAGES)[number] | 'Pending';

/** The furthest stage whose condition is True; `Pending` before the cloud provider launched anything. */
export function nodeClaimStage(claim: NodeClaim): NodeClaimStage {
  let stage: NodeClaimStage = 'Pending';
  for (const type of NODECLAIM_STAGES) if (conditionTrue(claim, type)) stage = type;
  return stage;
}

/** The GPU instance type the demo's workload needs; the only one offering `nvidia.com/gpu`. */
export const GPU_INSTANCE_TYPE = 'g-4x-amd64-linux';
/** A cheaper instance type without a GPU (Karpenter picks it for pods that need no GPU). */
export const CPU_INSTANCE_TYPE = 'c-4x-amd64-linux';

function instanceType(name: string, price: number, resources: Record<string, string>): object {
  return {
    name,
    architecture: 'amd64',
    operatingSystems: ['linux'],
    resources: { pods: '110', 'ephemeral-storage': '20Gi', ...resources },
    offerings: [
      {
        Price: price,
        Available: true,
        Requirements: [
          { key: 'karpenter.sh/capacity-type', operator: 'In', values: ['on-demand'] },
          { key: 'topology.kubernetes.io/zone', operator: 'In', values: ['test-zone-a'] },
        ],
      },
    ],
  };
}

/**
 * Writes the instance types file for Karpenter's KWOK provider (its INSTANCE_TYPES_FILE_PATH): the CPU type
 * and the GPU type, whose nodes report `nvidia.com/gpu: 1` allocatable. Returns the file's path.
 */
export async function writeGpuInstanceTypes(dir: string): Promise<string> {
  const path = join(dir, 'instance-types.json');
  const types = [
    instanceType(CPU_INSTANCE_TYPE, 0.11, { cpu: '4', memory: '8Gi' }),
    instanceType(GPU_INSTANCE_TYPE, 0.9, { cpu: '4', memory: '16Gi', 'nvidia.com/gpu': '1' }),
  ];
  await writeFile(path, JSON.stringify(types, null, 2));
  return path;
}

export interface PoolOptions {
  /** List nodecare's bootstrap taint in the NodePool's startupTaints (the setting docs/autoscalers.md gives). */
  startupTaint: boolean;
  /** The instance types the NodePool may launch (default: the fixture's). */
  instanceTypes?: string[];
}

/**
 * Creates the fixture's KWOKNodeClass and NodePool under `name`, and marks the node class Ready (what a cloud
 * provider's node class controller does; the KWOK provider has none, and a NodePool whose node class is not
 * Ready launches nothing).
 */
export async function createKarpenterObjects(
  custom: CustomObjectsApi,
  name: string,
  options: PoolOptions,
): Promise<void> {
  const [nodeClass, nodePool] = (await readFile(FIXTURE, 'utf8'))
    .split(/^---$/m)
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- free-form YAML objects, edited by path
    .map((doc) => load(doc) as any);
  if (!nodeClass || !nodePool) throw new Error(`${FIXTURE}: expected a KWOKNodeClass and a NodePool`);
  nodeClass.metadata.name = name;
  nodePool.metadata.name = name;
  const template = nodePool.spec.template.spec;
  template.nodeClassRef.name = name;
  const taints = JSON.stringify(template.startupTaints);
  const expected = JSON.stringify([
    { key: DEFAULT_BOOTSTRAP_TAINT_KEY, value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' },
  ]);
  if (taints !== expected) throw new Error(`${FIXTURE}: startupTaints ${taints}, expected ${expected}`);
  if (!options.startupTaint) delete template.startupTaints;
  if (options.instanceTypes) {
    const requirement = (template.requirements as Array<{ key: string; values: string[] }>).find(
      (r) => r.key === 'node.kubernetes.io/instance-type',
    );
    if (!requirement) throw new Error(`${FIXTURE}: no node.kubernetes.io/instance-type requirement`);
    requirement.values = options.instanceTypes;
  }
  const nodeClasses = { group: 'karpenter.kwok.sh', version: 'v1alpha1', plural: 'kwoknodeclasses' };
  await custom.createClusterCustomObject({ ...nodeClasses, body: nodeClass as KubernetesObject });
  await custom.patchClusterCustomObjectStatus(
    {
      ...nodeClasses,
      name,
      body: {
        status: {
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'Ready',
              message: '',
              observedGeneration: 1,
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        },
      },
    },
    mergePatch,
  );
  await custom.createClusterCustomObject({
    group: 'karpenter.sh',
    version: 'v1',
    plural: 'nodepools',
    body: nodePool as KubernetesObject,
  });
}

export interface KarpenterStack {
  kwok: ServingTool;
  karpenter: ServingTool;
  /** Stops Karpenter, then KWOK. */
  stop(): Promise<void>;
}

export interface StackOptions {
  kubeconfig: string;
  /** Where KWOK's and Karpenter's logs go. */
  logDir: string;
  /** Runs kubectl against the cluster; throws when kubectl fails. */
  kubectl: (args: string[]) => Promise<unknown>;
  /** Instance types for Karpenter (writeGpuInstanceTypes); default the provider's built-in ones. */
  instanceTypesFile?: string;
  /** Build progress lines (cold builds take minutes); default stderr. */
  log?: (line: string) => void;
}

/**
 * Builds KWOK and Karpenter's KWOK provider if they are not cached (test/autoscalers/build.sh), installs
 * Karpenter's CRDs and starts both, waiting until each answers its health check. Throws, naming the tool
 * and with the end of its build output or log, when either cannot be built or started.
 */
export async function startKarpenterStack(options: StackOptions): Promise<KarpenterStack> {
  const kwokDir = await ensureTool('kwok', options.log);
  const karpenterDir = await ensureTool('karpenter', options.log);
  const crds = await karpenterCrds(karpenterDir);
  await options.kubectl(['apply', '--server-side', ...crds.flatMap((f) => ['-f', f])]);
  await options.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/nodepools.karpenter.sh',
    'crd/nodeclaims.karpenter.sh',
    'crd/kwoknodeclasses.karpenter.kwok.sh',
  ]);
  await mkdir(options.logDir, { recursive: true });
  const kwok = await startKwok(kwokDir, options.kubeconfig, options.logDir);
  const started: ServingTool[] = [kwok];
  const stopAll = async (): Promise<void> => {
    for (const tool of [...started].reverse()) await tool.stop();
  };
  try {
    const karpenter = await startKarpenter(
      karpenterDir,
      options.kubeconfig,
      options.logDir,
      options.instanceTypesFile,
    );
    started.push(karpenter);
    await Promise.all([kwok.ready(), karpenter.ready()]);
    return { kwok, karpenter, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
