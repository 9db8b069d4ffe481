// The demo's story, step by step: a workload asks for a GPU; Karpenter launches a GPU node for it; nodecare
// holds the node with the bootstrap taint (listed in the NodePool's startupTaints) until the node's device
// plugin reports healthy GPUs, so Karpenter keeps the NodeClaim not initialized and launches nothing else;
// then the pod lands. Later an extension fails on the Ready node (runtime taint) and recovers, and the node's
// agent is lost (Degraded (AgentNotReporting)) and comes back. Each step says what will happen, then waits until
// the view shows it: a phase not reached in time, or reached the wrong way, fails the run with its name.

import type { V1Pod } from '@kubernetes/client-node';
import { ConditionReason, ExtensionState } from '../api/index.ts';
import { GPU_INSTANCE_TYPE, isInitialized } from '../test/autoscalers/karpenter.ts';
import type { DemoCluster, DemoNode, GpuNodeEndpoints } from './cluster.ts';
import { HEARTBEAT_SECONDS } from './cluster.ts';
import { GPU_STARTUP_GRACE_SECONDS, STARTUP_GRACE_SECONDS } from './endpoints.ts';
import { ClusterObserver, PhaseError, type Snapshot } from './observer.ts';
import { NodeState, type NodeStatus } from './view.ts';

export const PHASES = {
  'pod-pending': "the GPU workload's pod was Pending: no node offered nvidia.com/gpu",
  'node-launched': 'Karpenter launched a NodeClaim of the GPU instance type and KWOK brought its node up',
  'bootstrap-taint':
    'nodecare held the node with the bootstrap taint while its GPUs were not healthy; NodeClaim not Initialized',
  'health-progressing': 'ClusterHealth EveryNodeReady was Progressing while the node booted',
  'node-ready': 'the device plugin reported healthy GPUs: bootstrap taint removed, NodeClaim Initialized',
  'pod-running':
    'the pod ran on the new node, bound only after the bootstrap taint went; Karpenter launched no second node',
  'health-true': 'ClusterHealth EveryNodeReady turned True',
  'runtime-taint': 'a failing extension put the runtime taint on a Ready node',
  'health-failing': 'ClusterHealth EveryNodeReady reported the failure (HealthCheckUnsuccessful)',
  recovered: 'the extension recovered and the runtime taint was removed',
  'health-recovered': 'ClusterHealth EveryNodeReady was True again',
  'agent-not-reporting': 'a lost agent made its node Degraded (AgentNotReporting) with the runtime taint',
  'agent-back': 'the restarted agent reported again and the node turned Ready',
} as const;
export type PhaseId = keyof typeof PHASES;

export interface ScenarioOutput {
  say(line: string): void;
  phase(id: PhaseId, detail: string): void;
}

export interface ScenarioTiming {
  /** After the node appears, when kube-proxy starts. */
  kubeProxyDelayMs: number;
  /** After the node appears, when the logging agent starts. */
  logAgentDelayMs: number;
  /**
   * After the node appears, when the device plugin's GPUs turn healthy (the plugin serves from the start,
   * its GPUs Unhealthy). A window in which to watch Karpenter launch no second node: longer than its
   * batching (1 s idle, 10 s at most) plus a provisioning round.
   */
  gpuHealthyAfterMs: number;
  /** How long a state stays on screen before the next step. */
  holdMs: number;
  /** Multiplies every phase timeout (a loaded machine). */
  timeoutFactor: number;
}

export const DEFAULT_TIMING: ScenarioTiming = {
  kubeProxyDelayMs: 3_000,
  logAgentDelayMs: 5_000,
  gpuHealthyAfterMs: 25_000,
  holdMs: 6_000,
  timeoutFactor: 1,
};

/** What the autoscaler did, recorded from every snapshot (the scenario's checks and the summary read it). */
export interface AutoscalerRecord {
  /** The names of every NodeClaim seen. */
  nodeClaims: Set<string>;
  /** The pod was seen Pending, not bound, while a node carried the bootstrap taint. */
  podPendingWhileHeld: boolean;
  /** The pod was seen bound to a node that carried the bootstrap taint (nodecare failed if so). */
  podBoundWhileHeld: boolean;
  /** From the bootstrap-taint phase until node-ready. */
  heldMs?: number;
}

export function newAutoscalerRecord(): AutoscalerRecord {
  return { nodeClaims: new Set(), podPendingWhileHeld: false, podBoundWhileHeld: false };
}

function record(autoscaler: AutoscalerRecord, snapshot: Snapshot): void {
  for (const claim of snapshot.nodeClaims ?? []) autoscaler.nodeClaims.add(claim.metadata.name);
  const held = new Set(snapshot.statuses.filter((s) => s.taints.includes('bootstrap')).map((s) => s.name));
  for (const pod of snapshot.pods) {
    const node = pod.spec?.nodeName;
    if (!node && held.size > 0 && pod.status?.phase === 'Pending') autoscaler.podPendingWhileHeld = true;
    if (node && held.has(node)) autoscaler.podBoundWhileHeld = true;
  }
}

const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

function isReady(status: NodeStatus | undefined): boolean {
  return (
    status?.state === NodeState.Ready && status.taints.length === 0 && status.condition?.status === 'True'
  );
}

/** The roll-up condition every node's extensions feed in the demo. */
const EVERY_NODE_READY = 'EveryNodeReady';

function everyNodeReady(
  snapshot: Snapshot,
): { status: string; reason?: string; message?: string } | undefined {
  return snapshot.clusterHealth?.find((c) => c.type === EVERY_NODE_READY);
}

function describeExtension(status: NodeStatus | undefined, name: string): string {
  const ext = status?.extensions.find((e) => e.name === name);
  return ext ? `${name} ${ext.state ?? 'no lease'} (${ext.reason})` : `${name} (not reported)`;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/**
 * The GPU node boots: its device plugin serves at once with its GPUs Unhealthy (the driver loads), kube-proxy
 * and the logging agent start a few seconds later, and the GPUs turn Healthy after `gpuHealthyAfterMs`.
 */
async function bootGpuNode(
  eps: GpuNodeEndpoints,
  name: string,
  timing: ScenarioTiming,
  out: ScenarioOutput,
  signal: AbortSignal,
): Promise<void> {
  const later = (ms: number, what: () => Promise<void>, said: string): Promise<void> =>
    sleep(ms, signal)
      .then(what)
      .then(() => out.say(said))
      .catch((err: unknown) => {
        if (!signal.aborted) out.say(`On ${name}: ${String(err)}`);
      });
  await Promise.all([
    later(
      0,
      () => eps.devicePlugin.start(),
      `gpu-plugin on ${name} is up, its GPUs not healthy yet (driver loading): ${eps.devicePlugin.description}`,
    ),
    later(
      timing.kubeProxyDelayMs,
      () => eps.kubeProxy.start(),
      `kube-proxy on ${name} is up: ${eps.kubeProxy.description}`,
    ),
    later(
      timing.logAgentDelayMs,
      () => eps.logAgent.start(),
      `log-agent on ${name} is up: ${eps.logAgent.description}`,
    ),
    later(
      timing.gpuHealthyAfterMs,
      async () => {
        eps.devicePlugin.devicesHealthy = true;
      },
      `The GPU driver on ${name} has loaded: gpu-plugin now reports its GPUs Healthy.`,
    ),
  ]);
}

export async function runScenario(
  cluster: DemoCluster,
  observer: ClusterObserver,
  out: ScenarioOutput,
  timing: ScenarioTiming,
  autoscaler: AutoscalerRecord,
  signal: AbortSignal,
): Promise<void> {
  const t = (ms: number): number => ms * timing.timeoutFactor;
  const endpoints = cluster.endpoints;
  if (!endpoints) throw new Error("the GPU node's extensions are not registered");
  const proxy = endpoints.kubeProxy;
  const waitNode = (
    phase: PhaseId,
    name: string,
    what: string,
    check: (status: NodeStatus | undefined, snapshot: Snapshot) => boolean,
    timeoutMs: number,
  ): Promise<Snapshot> =>
    observer.waitFor(
      phase,
      `${name}: ${what}`,
      (s) => check(ClusterObserver.node(s, name), s),
      t(timeoutMs),
      signal,
    );
  // Every ClusterHealth state seen, so a short-lived one (Progressing while booting) is not missed.
  const healthSeen = new Set<string>();
  // Every node gets its agent as soon as it appears (the agent DaemonSet's pod); the first one boots the
  // GPU node's extensions.
  const starts: Array<Promise<void>> = [];
  observer.onSnapshot((snapshot) => {
    record(autoscaler, snapshot);
    const c = everyNodeReady(snapshot);
    if (c) healthSeen.add(`${c.status}/${c.reason ?? ''}`);
    for (const node of snapshot.nodes) {
      const name = node.metadata?.name;
      if (!name || cluster.nodes.some((n) => n.name === name)) continue;
      const first = cluster.nodes.length === 0;
      const adopted = cluster.adopt(name);
      out.say(`${name} appeared; starting its nodecare-agent.`);
      starts.push(
        cluster.startAgent(adopted).catch((err: unknown) => {
          if (!signal.aborted) out.say(`Could not start the agent of ${name}: ${String(err)}`);
        }),
      );
      if (first) starts.push(bootGpuNode(endpoints, name, timing, out, signal));
    }
  });
  const waitHealth = (
    phase: PhaseId,
    what: string,
    check: (c: ReturnType<typeof everyNodeReady>) => boolean,
    timeoutMs: number,
  ): Promise<Snapshot> =>
    observer.waitFor(
      phase,
      `ClusterHealth ${EVERY_NODE_READY} ${what}`,
      (s) => check(everyNodeReady(s)),
      t(timeoutMs),
      signal,
    );
  const workload = (s: Snapshot): V1Pod | undefined => s.pods[0];

  // 1. A workload asks for a GPU; no node has one.
  out.say(
    'Creating the workload: a pod asking for one nvidia.com/gpu. No node offers one, so it stays Pending and ' +
      `Karpenter looks for an instance type that does: ${GPU_INSTANCE_TYPE}.`,
  );
  await cluster.createWorkload();
  const pending = await observer.waitFor(
    'pod-pending',
    'the workload pod Pending',
    (s) => workload(s)?.status?.phase === 'Pending' && !workload(s)?.spec?.nodeName,
    t(30_000),
    signal,
  );
  out.phase('pod-pending', `pod ${workload(pending)?.metadata?.name} Pending, not bound to any node`);

  // 2. Karpenter launches a node.
  const launched = await observer.waitFor(
    'node-launched',
    'a NodeClaim with its Node',
    (s) =>
      (s.nodeClaims ?? []).some(
        (c) => c.status?.nodeName && s.nodes.some((n) => n.metadata?.name === c.status?.nodeName),
      ),
    t(120_000),
    signal,
  );
  const claim = (launched.nodeClaims ?? []).find((c) => c.status?.nodeName);
  const gpuNodeName = claim?.status?.nodeName ?? '';
  const type = launched.nodes.find((n) => n.metadata?.name === gpuNodeName)?.metadata?.labels?.[
    'node.kubernetes.io/instance-type'
  ];
  out.phase('node-launched', `NodeClaim ${claim?.metadata.name} (${type}) → node ${gpuNodeName}`);

  // 3. nodecare holds it until the GPUs are healthy; Karpenter waits for the startup taint to go.
  const held = await waitNode(
    'bootstrap-taint',
    gpuNodeName,
    'Bootstrapping with the bootstrap taint while gpu-plugin reports no healthy GPU, NodeClaim not Initialized',
    (status, s) =>
      status?.state === NodeState.Bootstrapping &&
      status.taints.includes('bootstrap') &&
      status.extensions.some(
        (e) => e.name === 'gpu-plugin' && e.state !== undefined && e.state !== ExtensionState.Healthy,
      ) &&
      (s.nodeClaims ?? []).some((c) => c.status?.nodeName === gpuNodeName && !isInitialized(c)),
    60_000,
  );
  const heldAt = Date.now();
  const heldStatus = ClusterObserver.node(held, gpuNodeName);
  out.phase(
    'bootstrap-taint',
    `${gpuNodeName} Bootstrapping with the bootstrap taint; NodeClaim ${heldStatus?.nodeClaim}; ` +
      describeExtension(heldStatus, 'gpu-plugin'),
  );
  await observer.waitFor(
    'health-progressing',
    `ClusterHealth ${EVERY_NODE_READY} Progressing`,
    () => healthSeen.has('Progressing/HealthCheckProgressing'),
    t(30_000),
    signal,
  );
  out.phase(
    'health-progressing',
    `${EVERY_NODE_READY} Progressing (HealthCheckProgressing): extensions starting within their grace ` +
      `(${STARTUP_GRACE_SECONDS} s, gpu-plugin ${GPU_STARTUP_GRACE_SECONDS} s)`,
  );
  out.say(
    `Karpenter keeps the NodeClaim not Initialized while the bootstrap taint (one of its NodePool's startupTaints) ` +
      'is on, counts the node as capacity on its way, and launches nothing else for the pod.',
  );

  // 4. The GPUs turn healthy: nodecare lifts the taint, Karpenter initializes the NodeClaim.
  const readySnapshot = await waitNode(
    'node-ready',
    gpuNodeName,
    'Ready without the bootstrap taint, NodeClaim Initialized',
    (status, s) =>
      isReady(status) &&
      (s.nodeClaims ?? []).some((c) => c.status?.nodeName === gpuNodeName && isInitialized(c)),
    timing.gpuHealthyAfterMs + 60_000,
  );
  autoscaler.heldMs = Date.now() - heldAt;
  const ready = ClusterObserver.node(readySnapshot, gpuNodeName);
  out.phase(
    'node-ready',
    `${gpuNodeName} Ready after ${seconds(autoscaler.heldMs)} held, ${describeExtension(ready, 'gpu-plugin')}; ` +
      `NodeClaim ${ready?.nodeClaim}`,
  );

  // 5. The pod lands.
  const running = await observer.waitFor(
    'pod-running',
    `the workload pod Running on ${gpuNodeName}`,
    (s) => workload(s)?.status?.phase === 'Running',
    t(60_000),
    signal,
  );
  const pod = workload(running);
  const launchedCount = autoscaler.nodeClaims.size;
  const wrong = [
    pod?.spec?.nodeName === gpuNodeName ? '' : `the pod runs on ${pod?.spec?.nodeName}, not ${gpuNodeName}`,
    autoscaler.podBoundWhileHeld ? 'the pod was bound to a node that still had the bootstrap taint' : '',
    autoscaler.podPendingWhileHeld ? '' : 'the pod was never seen Pending while the node was held',
    launchedCount === 1
      ? ''
      : `Karpenter launched ${launchedCount} NodeClaims (${[...autoscaler.nodeClaims].join(', ')})`,
  ].filter(Boolean);
  if (wrong.length) throw new PhaseError('pod-running', wrong.join('; '));
  out.phase(
    'pod-running',
    `pod ${pod?.metadata?.name} Running on ${gpuNodeName}: Pending while the node was held, bound after ` +
      `the bootstrap taint was removed; NodeClaims launched: ${launchedCount}`,
  );
  const healthy = await waitHealth('health-true', 'True', (c) => c?.status === 'True', 30_000);
  out.phase('health-true', `${EVERY_NODE_READY} True (${everyNodeReady(healthy)?.reason})`);
  await sleep(timing.holdMs / 2, signal);
  await Promise.all(starts);
  const gpuNode = cluster.nodes.find((n) => n.name === gpuNodeName);
  if (!gpuNode) throw new Error(`no agent for ${gpuNodeName}`);
  await failAndRecover(gpuNode);
  await loseAgent(gpuNode);

  async function failAndRecover(node: DemoNode): Promise<void> {
    // 6. An extension fails on a Ready node (once its startup grace is over: within it, a failure would count
    //    as still starting).
    const graceEndsMs = (node.agentStartedMs ?? 0) + (STARTUP_GRACE_SECONDS + 3) * 1000;
    if (Date.now() < graceEndsMs) {
      out.say(
        `Waiting ${Math.ceil((graceEndsMs - Date.now()) / 1000)} s for the startup grace of ${node.name}'s extensions to end ` +
          '(within it a failure counts as still starting: Progressing).',
      );
      await sleep(graceEndsMs - Date.now(), signal);
    }
    out.say(
      `Stopping kube-proxy on ${node.name}: the agent will report it Unhealthy within ~3 s ` +
        '(probe every 1 s, 2 failures in a row) and the controller will add the runtime taint.',
    );
    const stoppedAt = Date.now();
    await proxy.stop();
    const degraded = await waitNode(
      'runtime-taint',
      node.name,
      'Degraded with the runtime taint and kube-proxy Unhealthy',
      (s) =>
        s?.state === NodeState.Degraded &&
        s.taints.includes('runtime') &&
        s.extensions.some((e) => e.name === 'kube-proxy' && e.state === ExtensionState.Unhealthy),
      30_000,
    );
    const seen = ClusterObserver.node(degraded, node.name);
    out.phase(
      'runtime-taint',
      `${node.name} Degraded after ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s: runtime taint, ` +
        `ExtensionsReady=${seen?.condition?.status}/${seen?.condition?.reason}, ${describeExtension(seen, 'kube-proxy')}`,
    );
    const failing = await waitHealth(
      'health-failing',
      'failing (HealthCheckUnsuccessful)',
      (c) => c?.reason === 'HealthCheckUnsuccessful' && (c.status === 'Progressing' || c.status === 'False'),
      30_000,
    );
    const f = everyNodeReady(failing);
    out.phase(
      'health-failing',
      `${EVERY_NODE_READY} ${f?.status} (${f?.reason}): ${f?.message ?? ''} ` +
        '(Progressing until the 5 min threshold, then False)',
    );
    await sleep(timing.holdMs, signal);

    // 7. It comes back.
    out.say(`Restarting kube-proxy on ${node.name}: one Healthy probe is enough and the runtime taint goes.`);
    const restartedAt = Date.now();
    await proxy.start();
    await waitNode('recovered', node.name, 'Ready again without the runtime taint', isReady, 30_000);
    out.phase(
      'recovered',
      `${node.name} Ready again ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after kube-proxy restarted`,
    );
    await waitHealth('health-recovered', 'True again', (c) => c?.status === 'True', 30_000);
    out.phase('health-recovered', `${EVERY_NODE_READY} True again`);
    await sleep(timing.holdMs / 2, signal);
  }

  // 8. The agent is lost, then comes back.
  async function loseAgent(node: DemoNode): Promise<void> {
    out.say(
      `Killing the agent of ${node.name} (SIGKILL): its ${HEARTBEAT_SECONDS} s heartbeat lease stops renewing, ` +
        'so the controller cannot tell whether the extensions still work: the node turns Degraded ' +
        '(AgentNotReporting), ExtensionsReady Unknown.',
    );
    const killedAt = Date.now();
    await cluster.killAgent(node);
    await waitNode(
      'agent-not-reporting',
      node.name,
      'Degraded (AgentNotReporting) with the runtime taint',
      (s) =>
        s?.state === NodeState.Degraded &&
        s.taints.includes('runtime') &&
        s.condition?.reason === ConditionReason.AgentNotReporting,
      45_000,
    );
    out.phase(
      'agent-not-reporting',
      `${node.name} Degraded (AgentNotReporting) with the runtime taint ` +
        `${((Date.now() - killedAt) / 1000).toFixed(1)} s after its agent died`,
    );
    await sleep(timing.holdMs / 2, signal);
    out.say(`Restarting the agent of ${node.name}.`);
    const agentAt = Date.now();
    await cluster.startAgent(node);
    await waitNode('agent-back', node.name, 'Ready again', isReady, 45_000);
    out.phase(
      'agent-back',
      `${node.name} Ready again ${((Date.now() - agentAt) / 1000).toFixed(1)} s after its agent restarted`,
    );
  }
}
