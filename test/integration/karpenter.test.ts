// Karpenter (its KWOK cloud provider) against nodecare on the real control plane: KWOK turns the nodes that
// Karpenter launches Ready, one nodecare-agent process per node probes a real loopback endpoint standing in
// for the node's device plugin, and the real nodecare-controller owns the taints. Four runs of the same
// story (a pending pod → Karpenter launches a node → the extension is still starting for a while → it turns
// healthy) show what nodecare changes:
//   1. nodecare, bootstrap taint in the NodePool's startupTaints (docs/autoscalers.md): one node, the
//      NodeClaim stays not initialized while the extension starts, the pod lands once the taint is gone;
//   2. nodecare, taint not in startupTaints: Karpenter initializes the node at once; either the pod lands
//      before the controller's taint is on, or Karpenter, not expecting the taint, launches more nodes;
//   3. as 2, with the taint on every node from creation (nodecare's MutatingAdmissionPolicy): Karpenter
//      launches more nodes for the same pod;
//   4. no nodecare at all: the pod lands on a node whose extension is not healthy.
// The numbers (nodes launched, time to pod Running) are printed and recorded in docs/autoscalers.md.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP, LEASE_NAMESPACE } from '../../api/index.ts';
import {
  POOL_LABEL,
  createKarpenterObjects,
  isInitialized,
  listNodeClaims as listPoolNodeClaims,
  startKarpenterStack,
  type KarpenterStack,
  type NodeClaim,
} from '../autoscalers/karpenter.ts';
import { extensionEndpoint } from '../autoscalers/tools.ts';
import {
  adminKubeConfig,
  consistently,
  createSystemExtension,
  eventually,
  FAST_PROBING,
  needsKubernetes,
  uniqueName,
} from './helpers.ts';
import { startAgent, startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests, applyScopedBootstrapTaintPolicy, kubectl } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const coordination = admin.makeApiClient(CoordinationV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const NAMESPACE = 'default';

/**
 * How long the simulated device plugin keeps starting once the node is up. A window to observe Karpenter in,
 * not a timing assertion: longer than Karpenter's batching (1 s idle, 10 s max) plus a provisioning round.
 */
const STARTING_MS = 30_000;
/** How long the extension keeps starting after the reboot in place (again a window, not an assertion). */
const REBOOT_STARTING_MS = 10_000;
const AGENT_ARGS = ['--heartbeat-duration-seconds=8', '--extension-renew-seconds=5'];
const CONTROLLER_ARGS = [
  '--missing-lease-grace-seconds=20',
  '--leader-election-lease-duration-seconds=6',
  '--leader-election-renew-deadline-seconds=4',
  '--leader-election-retry-period-seconds=1',
];

let logDir = '';
let stack: KarpenterStack | undefined;
const results: Record<string, Observations> = {};

beforeAll(async () => {
  // Cold builds take minutes (npm run test:integration builds them first); a failed build fails the tests.
  await applyBaseManifests();
  logDir = await mkdtemp(join(tmpdir(), 'nodecare-karpenter-'));
  stack = await startKarpenterStack({ kubeconfig, logDir, kubectl: (args) => kubectl(...args) });
}, 45 * 60_000);

afterAll(async () => {
  await stack?.stop();
  if (Object.keys(results).length > 0) {
    process.stderr.write(`[karpenter] results: ${JSON.stringify(results, null, 2)}\n`);
  }
  if (logDir) await rm(logDir, { recursive: true, force: true });
});

interface Observations {
  /** NodeClaims Karpenter created for the one pod. */
  nodeClaimsLaunched: number;
  /** Whether any NodeClaim was Initialized while the extension was still starting. */
  initializedWhileStarting: boolean;
  /** From creating the pod until it was seen Running (ms, polled every 500 ms). */
  podRunningMs: number;
  /** Whether the pod was Running before the extension turned healthy. */
  podRanWhileStarting: boolean;
  /** The extension's Lease state on the pod's node when the pod was first seen Running. */
  leaseStateAtPodRunning: string;
  podNode: string;
  reboot?: RebootObservations;
}

interface RebootObservations {
  /** The bootstrap taint came back after the boot ID changed. */
  heldAgain: boolean;
  /** On throughout the REBOOT_STARTING_MS the extension spent starting on the new boot. */
  heldWhileStarting: boolean;
  /** From the boot ID change until the taint was gone again (ms). */
  heldMs: number;
  /** The boot ID on the extension's Lease when the taint went: the agent had reported on the new boot. */
  leaseBootIdAtRelease: string;
  bootId: string;
  /** NodeClaims of the pool after the reboot (Karpenter launched nothing for it). */
  nodeClaimsAfter: number;
  podStillRunning: boolean;
}

const listNodeClaims = (pool: string): Promise<NodeClaim[]> => listPoolNodeClaims(custom, pool);

const taintKeys = (node: V1Node): string[] => (node.spec?.taints ?? []).map((t) => t.key);

/** Deletes what a run created; Karpenter drains and deletes its nodes, finalizers are stripped if it cannot. */
async function cleanUp(name: string, extension: string): Promise<void> {
  const ignore = () => undefined;
  await core.deleteNamespacedPod({ name, namespace: NAMESPACE, gracePeriodSeconds: 0 }).catch(ignore);
  await custom
    .deleteClusterCustomObject({ group: 'karpenter.sh', version: 'v1', plural: 'nodepools', name })
    .catch(ignore);
  const gone = await eventually(
    async () => {
      const [claims, nodes] = await Promise.all([
        listNodeClaims(name),
        core.listNode({ labelSelector: `${POOL_LABEL}=${name}` }),
      ]);
      return claims.length === 0 && nodes.items.length === 0 ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 1_000, what: `Karpenter to remove the nodes of ${name}` },
  ).catch(() => false);
  if (!gone) {
    process.stderr.write(`[karpenter] ${name}: nodes not removed by Karpenter within 60 s; removing them\n`);
    const unblock = { metadata: { finalizers: null } };
    for (const claim of await listNodeClaims(name).catch(() => [])) {
      const ref = { group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims', name: claim.metadata.name };
      await custom.patchClusterCustomObject({ ...ref, body: unblock }, mergePatch).catch(ignore);
      await custom.deleteClusterCustomObject(ref).catch(ignore);
    }
    for (const node of (await core.listNode({ labelSelector: `${POOL_LABEL}=${name}` })).items) {
      const nodeName = node.metadata!.name!;
      await core.patchNode({ name: nodeName, body: unblock }, mergePatch).catch(ignore);
      await core.deleteNode({ name: nodeName }).catch(ignore);
    }
  }
  const nodeClass = { group: 'karpenter.kwok.sh', version: 'v1alpha1', plural: 'kwoknodeclasses', name };
  await custom.deleteClusterCustomObject(nodeClass).catch(ignore);
  await custom
    .patchClusterCustomObject({ ...nodeClass, body: { metadata: { finalizers: null } } }, mergePatch)
    .catch(ignore);
  await custom
    .deleteClusterCustomObject({
      group: 'nodecare.io',
      version: 'v1alpha1',
      plural: 'systemextensions',
      name: extension,
    })
    .catch(ignore);
}

/**
 * Reboots a node in place the way Karpenter's KWOK provider simulates it (its Reboot writes a new
 * status.nodeInfo.bootID, nothing else), with the extension starting again on the new boot.
 */
async function rebootInPlace(
  nodeName: string,
  extension: string,
  pool: string,
  endpoint: { healthy: () => void; restarting: () => void },
): Promise<RebootObservations> {
  const bootId = `kwok-${uniqueName('reboot')}`;
  endpoint.restarting();
  const rebootedAt = Date.now();
  await core.patchNodeStatus(
    { name: nodeName, body: { status: { nodeInfo: { bootID: bootId } } } },
    mergePatch,
  );
  const hasTaint = async () => taintKeys(await core.readNode({ name: nodeName })).includes(BOOTSTRAP);
  const heldAgain = await eventually(async () => ((await hasTaint()) ? true : undefined), {
    timeoutMs: 30_000,
    what: `the bootstrap taint back on ${nodeName} after its reboot`,
  }).catch(() => false);
  // On for the whole window, not only at its end (and the window ends at the first look without it).
  const heldWhileStarting = await consistently(hasTaint, REBOOT_STARTING_MS, {
    intervalMs: 500,
    what: `the bootstrap taint on ${nodeName} while its extension starts`,
  }).then(
    () => true,
    () => false,
  );
  endpoint.healthy();
  let leaseBootIdAtRelease = '';
  await eventually(
    async () => {
      if (await hasTaint()) return undefined;
      const leases = await coordination.listNamespacedLease({
        namespace: LEASE_NAMESPACE,
        labelSelector: `nodecare.io/extension=${extension}`,
      });
      const lease = leases.items.find((l) => l.metadata?.annotations?.['nodecare.io/node'] === nodeName);
      leaseBootIdAtRelease = lease?.metadata?.annotations?.['nodecare.io/boot-id'] ?? '';
      return true;
    },
    {
      timeoutMs: 60_000,
      what: `the bootstrap taint gone from ${nodeName} after the new boot turned healthy`,
    },
  );
  const heldMs = Date.now() - rebootedAt;
  const pod = await core.readNamespacedPod({ name: pool, namespace: NAMESPACE });
  return {
    heldAgain,
    heldWhileStarting,
    heldMs,
    leaseBootIdAtRelease,
    bootId,
    nodeClaimsAfter: (await listNodeClaims(pool)).length,
    podStillRunning: pod.status?.phase === 'Running' && pod.spec?.nodeName === nodeName,
  };
}

async function leaseState(nodeName: string, extension: string): Promise<string> {
  const leases = await coordination.listNamespacedLease({
    namespace: LEASE_NAMESPACE,
    labelSelector: `nodecare.io/extension=${extension}`,
  });
  const lease = leases.items.find((l) => l.metadata?.annotations?.['nodecare.io/node'] === nodeName);
  return lease?.metadata?.annotations?.['nodecare.io/state'] ?? 'none';
}

/**
 * One run of the story. `nodecare`: run the controller; `startupTaint`: list the bootstrap taint in the
 * NodePool's startupTaints. Agents run in every case (one per node, started as Karpenter's nodes appear).
 */
async function scenario(options: {
  nodecare: boolean;
  startupTaint: boolean;
  taintAtCreation?: boolean;
  /** After the pod runs, reboot its node in place (new boot ID) with the extension starting again. */
  reboot?: boolean;
}): Promise<Observations> {
  const name = uniqueName('nc-karpenter');
  const extension = uniqueName('gpu-plugin');
  const endpoint = await extensionEndpoint();
  const agents = new Map<string, Promise<ProgramProcess>>();
  let controller: ProgramProcess | undefined;
  let stopped = false;
  let starting = true;
  const claimsSeen = new Set<string>();
  /** Per node, each distinct set of taint keys seen, in order (for failure messages). */
  const taintHistory = new Map<string, string[]>();
  let initializedWhileStarting = false;
  let podRunningAt: number | undefined;
  let podRanWhileStarting = false;
  let leaseStateAtPodRunning = '';
  let pod: V1Pod | undefined;
  let podCreatedAt = 0;

  // Watches the run every 500 ms: NodeClaims launched, their initialization, new nodes (→ an agent each),
  // and when the pod turns Running.
  const monitor = (async () => {
    while (!stopped) {
      try {
        for (const claim of await listNodeClaims(name)) {
          claimsSeen.add(claim.metadata.name);
          if (starting && isInitialized(claim)) initializedWhileStarting = true;
        }
        for (const node of (await core.listNode({ labelSelector: `${POOL_LABEL}=${name}` })).items) {
          const nodeName = node.metadata!.name!;
          const keys = taintKeys(node).sort().join(',');
          const history = taintHistory.get(nodeName) ?? [];
          if (history.at(-1) !== keys) taintHistory.set(nodeName, [...history, keys]);
          if (!agents.has(nodeName)) {
            const agent = startAgent({ kubeconfig, nodeName, extraArgs: AGENT_ARGS });
            agent.catch(() => undefined); // a node deleted before its agent started: nothing to report
            agents.set(nodeName, agent);
          }
        }
        if (podCreatedAt > 0 && podRunningAt === undefined) {
          pod = await core.readNamespacedPod({ name, namespace: NAMESPACE });
          if (pod.status?.phase === 'Running') {
            podRunningAt = Date.now();
            podRanWhileStarting = starting;
            leaseStateAtPodRunning = await leaseState(pod.spec!.nodeName!, extension);
          }
        }
      } catch {
        // a transient API error: the next round looks again
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();

  try {
    if (options.taintAtCreation)
      await applyScopedBootstrapTaintPolicy({
        name,
        label: { key: POOL_LABEL, value: name },
        dir: logDir,
        core,
      });
    await createSystemExtension(custom, extension, {
      nodeSelector: { matchLabels: { [POOL_LABEL]: name } },
      probe: { http: { url: `http://127.0.0.1:${endpoint.port}/healthz` } },
      ...FAST_PROBING,
    });
    if (options.nodecare) {
      controller = startProgram('controller', [
        `--kubeconfig=${kubeconfig}`,
        '--health-port=0',
        '--health-address=127.0.0.1',
        '--log-level=debug',
        `--identity=${uniqueName('controller')}`,
        ...CONTROLLER_ARGS,
      ]);
      await controller.waitForLog('Started nodecare-controller');
    }
    await createKarpenterObjects(custom, name, { startupTaint: options.startupTaint });
    podCreatedAt = Date.now();
    await core.createNamespacedPod({
      namespace: NAMESPACE,
      body: {
        metadata: { name },
        spec: {
          nodeSelector: { [POOL_LABEL]: name },
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'workload',
              image: 'registry.invalid/gpu-workload',
              resources: { requests: { cpu: '1' } },
            },
          ],
        },
      },
    });

    // The first node is up (KWOK reports it Ready) and its agent reports the extension as not healthy yet.
    const first = await eventually(
      async () => {
        const nodes = (await core.listNode({ labelSelector: `${POOL_LABEL}=${name}` })).items;
        const node = nodes.find((n) =>
          n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        if (!node) return undefined;
        const state = await leaseState(node.metadata!.name!, extension);
        return state === 'Unhealthy' || state === 'Progressing' || podRunningAt ? node : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 500, what: `a Ready node of NodePool ${name} reporting ${extension}` },
    ).catch(async (err: Error) => {
      throw new Error(
        `${err.message}\n--- karpenter ---\n${await stack?.karpenter.logTail()}\n--- kwok ---\n${await stack?.kwok.logTail(10)}`,
      );
    });
    if (options.nodecare) {
      const nodeName = first.metadata!.name!;
      await eventually(
        async () =>
          taintKeys(await core.readNode({ name: nodeName })).includes(BOOTSTRAP) ? true : undefined,
        { timeoutMs: 20_000, what: `nodecare's bootstrap taint on ${nodeName}` },
      ).catch(async (err: Error) => {
        const node = await core.readNode({ name: nodeName });
        throw new Error(
          `${err.message}; taints ${JSON.stringify(node.spec?.taints)}; history ${JSON.stringify(taintHistory.get(nodeName))}\n` +
            controller!.logs
              .slice(-15)
              .map((l) => JSON.stringify(l))
              .join('\n'),
        );
      });
    }

    // The extension keeps starting for a while (a run without nodecare may see the pod land meanwhile).
    const holdUntil = Date.now() + STARTING_MS;
    while (Date.now() < holdUntil && podRunningAt === undefined) await new Promise((r) => setTimeout(r, 500));
    const claimsWhileStarting = (await listNodeClaims(name)).map((c) => ({
      name: c.metadata.name,
      init: isInitialized(c),
    }));
    starting = false;
    endpoint.healthy();

    await eventually(() => (podRunningAt !== undefined ? true : undefined), {
      timeoutMs: 90_000,
      intervalMs: 500,
      what: `pod ${name} Running (NodeClaims while starting: ${JSON.stringify(claimsWhileStarting)})`,
    });
    const podNode = pod?.spec?.nodeName ?? '';
    const launched = claimsSeen.size;
    const reboot = options.reboot ? await rebootInPlace(podNode, extension, name, endpoint) : undefined;
    return {
      ...(reboot ? { reboot } : {}),
      nodeClaimsLaunched: launched,
      initializedWhileStarting,
      podRunningMs: podRunningAt! - podCreatedAt,
      podRanWhileStarting,
      leaseStateAtPodRunning,
      podNode,
    };
  } finally {
    stopped = true;
    await monitor;
    await cleanUp(name, extension);
    if (options.taintAtCreation) {
      await kubectl(
        'delete',
        '--ignore-not-found',
        `mutatingadmissionpolicybinding/${name}`,
        `mutatingadmissionpolicy/${name}`,
      );
    }
    await controller?.kill();
    for (const agent of agents.values()) await (await agent.catch(() => undefined))?.kill();
    endpoint.close();
  }
}

describe('Karpenter (KWOK provider) with nodecare', () => {
  it(
    "holds the node it launched as not initialized until the extension is healthy, launches no second node, and the pod lands after nodecare's taint is gone; rebooted in place, the node is held again until the extension reports on the new boot",
    async () => {
      const run = await scenario({ nodecare: true, startupTaint: true, reboot: true });
      results.withNodecareStartupTaint = run;
      expect(run.nodeClaimsLaunched).toBe(1);
      expect(run.initializedWhileStarting).toBe(false);
      expect(run.podRanWhileStarting).toBe(false);
      expect(run.leaseStateAtPodRunning).toBe('Healthy');
      expect(run.podNode).toMatch(/^kwok-/);
      // Rebooted in place: held again until the agent reports the extension healthy on the new boot.
      expect(run.reboot).toMatchObject({
        heldAgain: true,
        heldWhileStarting: true,
        leaseBootIdAtRelease: run.reboot?.bootId,
        nodeClaimsAfter: 1,
        podStillRunning: true,
      });
    },
    5 * 60_000,
  );

  it(
    'contrast: with the taint left out of startupTaints Karpenter takes the node for initialized, then either the pod lands before the taint or more nodes are launched for the same pod',
    async () => {
      const run = await scenario({ nodecare: true, startupTaint: false });
      results.withNodecareNoStartupTaint = run;
      expect(run.initializedWhileStarting).toBe(true);
      // Two ways to go wrong, depending on who wins the race at registration: Karpenter lifts its
      // unregistered taint before nodecare's controller has added its own (the pod lands on a node whose
      // extension is not healthy), or nodecare's taint is there first and Karpenter, not expecting it, keeps
      // launching nodes for the pod. The first run above shows neither.
      if (run.podRanWhileStarting) expect(run.leaseStateAtPodRunning).not.toBe('Healthy');
      else expect(run.nodeClaimsLaunched).toBeGreaterThanOrEqual(2);
    },
    5 * 60_000,
  );

  const noAdmissionPolicy = needsKubernetes(36, 'the MutatingAdmissionPolicy (the taint at Node creation)');
  it.skipIf(noAdmissionPolicy !== '')(
    `contrast: with the taint on every node from creation (the admission policy) but not in startupTaints, Karpenter launches more nodes for the same pod${noAdmissionPolicy ? ` (NOT RUN: ${noAdmissionPolicy})` : ''}`,
    async () => {
      const run = await scenario({ nodecare: true, startupTaint: false, taintAtCreation: true });
      results.withNodecareAdmissionPolicyNoStartupTaint = run;
      expect(run.initializedWhileStarting).toBe(true);
      expect(run.podRanWhileStarting).toBe(false);
      expect(run.nodeClaimsLaunched).toBeGreaterThanOrEqual(2);
    },
    5 * 60_000,
  );

  it(
    'contrast: without nodecare the pod lands on a node whose extension is not healthy',
    async () => {
      const run = await scenario({ nodecare: false, startupTaint: false });
      results.withoutNodecare = run;
      expect(run.podRanWhileStarting).toBe(true);
      expect(run.leaseStateAtPodRunning).not.toBe('Healthy');
      expect(run.nodeClaimsLaunched).toBe(1);
    },
    5 * 60_000,
  );
});
