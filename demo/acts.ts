// The demo's acts, in the order runScenario plays them. Each says what will happen, then waits until the view
// shows it and records the phase; a phase not reached in time, or reached the wrong way, fails the run with its
// name (PhaseError).

import { ConditionReason, ExtensionState } from '../api/index.ts';
import { GPU_INSTANCE_TYPE, isInitialized } from '../test/autoscalers/karpenter.ts';
import { HEARTBEAT_SECONDS, type DemoNode } from './cluster.ts';
import { GPU_RESOURCE, GPU_STARTUP_GRACE_SECONDS, STARTUP_GRACE_SECONDS } from './endpoints.ts';
import { ClusterObserver, PhaseError, type Snapshot } from './observer.ts';
import {
  EVERY_NODE_READY,
  describeExtension,
  describeGpus,
  everyNodeReady,
  gpuCounts,
  isReady,
  seconds,
  sleep,
  type Scene,
} from './scene.ts';
import { NodeState } from './view.ts';

/** 1. A workload asks for a GPU; no node has one. */
export async function podPending(scene: Scene): Promise<void> {
  // 1. A workload asks for a GPU; no node has one.
  scene.out.say(
    'Creating the workload: a pod asking for one nvidia.com/gpu. No node offers one, so it stays Pending and ' +
      `Karpenter looks for an instance type that does: ${GPU_INSTANCE_TYPE}.`,
  );
  await scene.cluster.createWorkload();
  const pending = await scene.observer.waitFor(
    'pod-pending',
    'the workload pod Pending',
    (s) => scene.workload(s)?.status?.phase === 'Pending' && !scene.workload(s)?.spec?.nodeName,
    scene.t(30_000),
    scene.signal,
  );
  scene.out.phase(
    'pod-pending',
    `pod ${scene.workload(pending)?.metadata?.name} Pending, not bound to any node`,
  );
}

/** 2. Karpenter launches a node; its name. */
export async function nodeLaunched(scene: Scene): Promise<string> {
  // 2. Karpenter launches a node.
  const launched = await scene.observer.waitFor(
    'node-launched',
    'a NodeClaim with its Node',
    (s) =>
      (s.nodeClaims ?? []).some(
        (c) => c.status?.nodeName && s.nodes.some((n) => n.metadata?.name === c.status?.nodeName),
      ),
    scene.t(120_000),
    scene.signal,
  );
  const claim = (launched.nodeClaims ?? []).find((c) => c.status?.nodeName);
  const gpuNodeName = claim?.status?.nodeName ?? '';
  const type = launched.nodes.find((n) => n.metadata?.name === gpuNodeName)?.metadata?.labels?.[
    'node.kubernetes.io/instance-type'
  ];
  scene.out.phase('node-launched', `NodeClaim ${claim?.metadata.name} (${type}) → node ${gpuNodeName}`);
  return gpuNodeName;
}

/** 3 and 4. nodecare holds the node until its GPUs are healthy; Karpenter initializes its NodeClaim only then. */
export async function heldUntilHealthy(scene: Scene, gpuNodeName: string): Promise<void> {
  // 3. nodecare holds it until the GPUs are healthy; Karpenter waits for the startup taint to go.
  const held = await scene.waitNode(
    'bootstrap-taint',
    gpuNodeName,
    'Bootstrapping with the bootstrap taint while the kubelet counts no healthy GPU (capacity 1 or more, ' +
      'allocatable 0) and gpu-plugin reports not Healthy, NodeClaim not Initialized',
    (status, s) => {
      const gpus = gpuCounts(s, gpuNodeName);
      return (
        status?.state === NodeState.Bootstrapping &&
        status.taints.includes('bootstrap') &&
        Number(gpus.capacity) >= 1 &&
        gpus.allocatable === '0' &&
        status.extensions.some(
          (e) => e.name === 'gpu-plugin' && e.state !== undefined && e.state !== ExtensionState.Healthy,
        ) &&
        claimIs(s, gpuNodeName, false)
      );
    },
    60_000,
  );
  const heldAt = Date.now();
  const heldStatus = ClusterObserver.node(held, gpuNodeName);
  const heldClaim = heldStatus?.nodeClaim ? `; NodeClaim ${heldStatus.nodeClaim}` : '';
  scene.out.phase(
    'bootstrap-taint',
    `${gpuNodeName} Bootstrapping with the bootstrap taint${heldClaim}; ` +
      `${describeGpus(held, gpuNodeName)}; ${describeExtension(heldStatus, 'gpu-plugin')}`,
  );
  await scene.observer.waitFor(
    'health-progressing',
    `ClusterHealth ${EVERY_NODE_READY} Progressing`,
    () => scene.healthSeen.has('Progressing/HealthCheckProgressing'),
    scene.t(30_000),
    scene.signal,
  );
  scene.out.phase(
    'health-progressing',
    `${EVERY_NODE_READY} Progressing (HealthCheckProgressing): extensions starting within their grace ` +
      `(${STARTUP_GRACE_SECONDS} s, gpu-plugin ${GPU_STARTUP_GRACE_SECONDS} s)`,
  );
  if (held.nodeClaims)
    scene.out.say(
      `Karpenter keeps the NodeClaim not Initialized while the bootstrap taint (one of its NodePool's startupTaints) ` +
        `is on and until the ${GPU_RESOURCE} the pod asked for is allocatable, counts the node as capacity on its ` +
        'way (its GPU as the instance type offers it), and launches nothing else for the pod.',
    );

  // 4. The GPUs turn healthy (the kubelet counts them allocatable): nodecare lifts the taint, Karpenter
  //    initializes the NodeClaim (it waits for both: the startup taint gone, the GPU allocatable).
  const readySnapshot = await scene.waitNode(
    'node-ready',
    gpuNodeName,
    `Ready without the bootstrap taint, ${GPU_RESOURCE} allocatable${held.nodeClaims ? ', NodeClaim Initialized' : ''}`,
    (status, s) =>
      isReady(status) && Number(gpuCounts(s, gpuNodeName).allocatable) >= 1 && claimIs(s, gpuNodeName, true),
    scene.timing.gpuHealthyAfterMs + 60_000,
  );
  scene.autoscaler.heldMs = Date.now() - heldAt;
  const ready = ClusterObserver.node(readySnapshot, gpuNodeName);
  scene.out.phase(
    'node-ready',
    `${gpuNodeName} Ready after ${seconds(scene.autoscaler.heldMs)} held, ${describeGpus(readySnapshot, gpuNodeName)}, ` +
      `${describeExtension(ready, 'gpu-plugin')}${ready?.nodeClaim ? `; NodeClaim ${ready.nodeClaim}` : ''}`,
  );
}

/**
 * Whether the node's NodeClaim is (or is not yet) Initialized; true where no NodeClaims are listed (a cluster
 * without Karpenter: the existing-cluster demo, whose node the demo creates itself).
 */
function claimIs(s: Snapshot, nodeName: string, initialized: boolean): boolean {
  return (
    s.nodeClaims === undefined ||
    s.nodeClaims.some((c) => c.status?.nodeName === nodeName && isInitialized(c) === initialized)
  );
}

/** 5. The pod lands, on that node alone; then the roll-up turns True. */
export async function podRuns(scene: Scene, gpuNodeName: string): Promise<void> {
  // 5. The pod lands.
  const running = await scene.observer.waitFor(
    'pod-running',
    `the workload pod Running on ${gpuNodeName}`,
    (s) => scene.workload(s)?.status?.phase === 'Running',
    scene.t(60_000),
    scene.signal,
  );
  const pod = scene.workload(running);
  const launchedCount = scene.autoscaler.nodeClaims.size;
  const wrong = [
    pod?.spec?.nodeName === gpuNodeName ? '' : `the pod runs on ${pod?.spec?.nodeName}, not ${gpuNodeName}`,
    scene.autoscaler.podBoundWhileHeld
      ? 'the pod was bound to a node that still had the bootstrap taint'
      : '',
    scene.autoscaler.podPendingWhileHeld ? '' : 'the pod was never seen Pending while the node was held',
    launchedCount === 1
      ? ''
      : `Karpenter launched ${launchedCount} NodeClaims (${[...scene.autoscaler.nodeClaims].join(', ')})`,
  ].filter(Boolean);
  if (wrong.length) throw new PhaseError('pod-running', wrong.join('; '));
  scene.out.phase(
    'pod-running',
    `pod ${pod?.metadata?.name} Running on ${gpuNodeName}: Pending while the node was held, bound after ` +
      `the bootstrap taint was removed; NodeClaims launched: ${launchedCount}`,
  );
  await healthTrue(scene);
}

/** The roll-up turns True: every node in scope Ready. */
export async function healthTrue(scene: Scene): Promise<void> {
  const healthy = await scene.waitHealth('health-true', 'True', (c) => c?.status === 'True', 30_000);
  scene.out.phase('health-true', `${EVERY_NODE_READY} True (${everyNodeReady(healthy)?.reason})`);
}

/** 6 and 7. An extension fails on a Ready node, then comes back. */
export async function failAndRecover(scene: Scene, node: DemoNode): Promise<void> {
  // 6. An extension fails on a Ready node (once its startup grace is over: within it, a failure would count
  //    as still starting).
  const graceEndsMs = (node.agentStartedMs ?? 0) + (STARTUP_GRACE_SECONDS + 3) * 1000;
  if (Date.now() < graceEndsMs) {
    scene.out.say(
      `Waiting ${Math.ceil((graceEndsMs - Date.now()) / 1000)} s for the startup grace of ${node.name}'s extensions to end ` +
        '(within it a failure counts as still starting: Progressing).',
    );
    await sleep(graceEndsMs - Date.now(), scene.signal);
  }
  scene.out.say(
    `Stopping kube-proxy on ${node.name}: the agent will report it Unhealthy within ~3 s ` +
      '(probe every 1 s, 2 failures in a row) and the controller will add the runtime taint.',
  );
  const stoppedAt = Date.now();
  await scene.proxy.stop();
  const degraded = await scene.waitNode(
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
  scene.out.phase(
    'runtime-taint',
    `${node.name} Degraded after ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s: runtime taint, ` +
      `ExtensionsReady=${seen?.condition?.status}/${seen?.condition?.reason}, ${describeExtension(seen, 'kube-proxy')}`,
  );
  const failing = await scene.waitHealth(
    'health-failing',
    'failing (HealthCheckUnsuccessful)',
    (c) => c?.reason === 'HealthCheckUnsuccessful' && (c.status === 'Progressing' || c.status === 'False'),
    30_000,
  );
  const f = everyNodeReady(failing);
  scene.out.phase(
    'health-failing',
    `${EVERY_NODE_READY} ${f?.status} (${f?.reason}): ${f?.message ?? ''} ` +
      '(Progressing until the 5 min threshold, then False)',
  );
  await sleep(scene.timing.holdMs, scene.signal);

  // 7. It comes back.
  scene.out.say(
    `Restarting kube-proxy on ${node.name}: one Healthy probe is enough and the runtime taint goes.`,
  );
  const restartedAt = Date.now();
  await scene.proxy.start();
  await scene.waitNode('recovered', node.name, 'Ready again without the runtime taint', isReady, 30_000);
  scene.out.phase(
    'recovered',
    `${node.name} Ready again ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after kube-proxy restarted`,
  );
  await scene.waitHealth('health-recovered', 'True again', (c) => c?.status === 'True', 30_000);
  scene.out.phase('health-recovered', `${EVERY_NODE_READY} True again`);
  await sleep(scene.timing.holdMs / 2, scene.signal);
}

/** 8. The agent is lost, then comes back. */
export async function loseAgent(scene: Scene, node: DemoNode): Promise<void> {
  scene.out.say(
    `Killing the agent of ${node.name} (SIGKILL): its ${HEARTBEAT_SECONDS} s heartbeat lease stops renewing, ` +
      'so the controller cannot tell whether the extensions still work: the node turns Degraded ' +
      '(AgentNotReporting), ExtensionsReady Unknown.',
  );
  const killedAt = Date.now();
  await scene.cluster.killAgent(node);
  await scene.waitNode(
    'agent-not-reporting',
    node.name,
    'Degraded (AgentNotReporting) with the runtime taint',
    (s) =>
      s?.state === NodeState.Degraded &&
      s.taints.includes('runtime') &&
      s.condition?.reason === ConditionReason.AgentNotReporting,
    45_000,
  );
  scene.out.phase(
    'agent-not-reporting',
    `${node.name} Degraded (AgentNotReporting) with the runtime taint ` +
      `${((Date.now() - killedAt) / 1000).toFixed(1)} s after its agent died`,
  );
  await sleep(scene.timing.holdMs / 2, scene.signal);
  scene.out.say(`Restarting the agent of ${node.name}.`);
  const agentAt = Date.now();
  await scene.cluster.startAgent(node);
  await scene.waitNode('agent-back', node.name, 'Ready again', isReady, 45_000);
  scene.out.phase(
    'agent-back',
    `${node.name} Ready again ${((Date.now() - agentAt) / 1000).toFixed(1)} s after its agent restarted`,
  );
}
