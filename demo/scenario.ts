// The demo's story, step by step: nodes join and are held with the bootstrap taint until their extensions come
// up, an extension fails on a Ready node (runtime taint) and recovers, an agent is lost (Unknown) and comes
// back. Each step says what will happen, then waits until the view shows it: a phase not reached in time fails
// the run with its name.

import { ConditionReason, ExtensionState } from '../api/index.ts';
import type { DemoCluster, SimulatedNode } from './cluster.ts';
import { HEARTBEAT_SECONDS } from './cluster.ts';
import { STARTUP_GRACE_SECONDS } from './endpoints.ts';
import { ClusterObserver, type Snapshot } from './observer.ts';
import { NodeState, type NodeStatus } from './view.ts';

export const PHASES = {
  'bootstrap-taint': 'every new node was held with the bootstrap taint until its extensions were up',
  'health-progressing': 'ClusterHealth EveryNodeReady was Progressing while the nodes booted',
  'all-ready': 'every node turned Ready: extensions Healthy, bootstrap taint removed',
  'health-true': 'ClusterHealth EveryNodeReady turned True',
  'runtime-taint': 'a failing extension put the runtime taint on a Ready node',
  'health-failing': 'ClusterHealth EveryNodeReady reported the failure (HealthCheckUnsuccessful)',
  recovered: 'the extension recovered and the runtime taint was removed',
  'health-recovered': 'ClusterHealth EveryNodeReady was True again',
  'agent-not-reporting': 'a lost agent made its node Unknown (AgentNotReporting) with the runtime taint',
  'agent-back': 'the restarted agent reported again and the node turned Ready',
} as const;
export type PhaseId = keyof typeof PHASES;

export interface ScenarioOutput {
  say(line: string): void;
  phase(id: PhaseId, detail: string): void;
}

export interface ScenarioTiming {
  /** Between two nodes joining. */
  nodeGapMs: number;
  /** After a node is created, when each of its endpoints starts (by endpoint index). */
  endpointDelaysMs: number[];
  /** How long a state stays on screen before the next step. */
  holdMs: number;
  /** Multiplies every phase timeout (a loaded machine). */
  timeoutFactor: number;
}

export const DEFAULT_TIMING: ScenarioTiming = {
  nodeGapMs: 3_000,
  endpointDelaysMs: [4_000, 6_500, 9_000],
  holdMs: 6_000,
  timeoutFactor: 1,
};

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

export async function runScenario(
  cluster: DemoCluster,
  observer: ClusterObserver,
  out: ScenarioOutput,
  timing: ScenarioTiming,
  signal: AbortSignal,
): Promise<void> {
  const t = (ms: number): number => ms * timing.timeoutFactor;
  const waitNode = (
    phase: PhaseId,
    name: string,
    what: string,
    check: (status: NodeStatus | undefined) => boolean,
    timeoutMs: number,
  ): Promise<Snapshot> =>
    observer.waitFor(
      phase,
      `${name}: ${what}`,
      (s) => check(ClusterObserver.node(s, name)),
      t(timeoutMs),
      signal,
    );
  const nodes = cluster.nodes;
  const [node1, node2, node3] = nodes;
  if (!node1 || !node2 || !node3) throw new Error('the scenario needs 3 nodes');
  // Every ClusterHealth state seen, so a short-lived one (Progressing while booting) is not missed.
  const healthSeen = new Set<string>();
  observer.onSnapshot((snapshot) => {
    const c = everyNodeReady(snapshot);
    if (c) healthSeen.add(`${c.status}/${c.reason ?? ''}`);
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

  // 1. Nodes join one after another; their extensions come up a few seconds later.
  const endpointStarts: Array<Promise<void>> = [];
  const startEndpointsLate = (node: SimulatedNode): void => {
    node.endpoints.forEach((endpoint, i) => {
      const delay = timing.endpointDelaysMs[i] ?? timing.endpointDelaysMs.at(-1) ?? 5_000;
      endpointStarts.push(
        sleep(delay, signal)
          .then(async () => {
            await endpoint.start();
            out.say(`${endpoint.name} on ${node.name} is up: ${endpoint.description}`);
          })
          .catch((err: unknown) => {
            if (!signal.aborted) out.say(`Could not start ${endpoint.name} on ${node.name}: ${String(err)}`);
          }),
      );
    });
  };
  for (const [i, node] of nodes.entries()) {
    if (i > 0) await sleep(timing.nodeGapMs, signal);
    const names = node.endpoints.map((e) => e.name).join(', ');
    out.say(
      `${node.name} joins the cluster; it needs ${names}. They start in ${timing.endpointDelaysMs[0]! / 1000}–` +
        `${timing.endpointDelaysMs[node.endpoints.length - 1]! / 1000} s, so the controller holds the node ` +
        'with the bootstrap taint until its agent reports them all Healthy.',
    );
    await cluster.createNode(node);
    startEndpointsLate(node);
    await cluster.startAgent(node);
    await waitNode(
      'bootstrap-taint',
      node.name,
      'Bootstrapping with the bootstrap taint',
      (s) => s?.state === NodeState.Bootstrapping && s.taints.includes('bootstrap'),
      30_000,
    );
  }
  out.phase(
    'bootstrap-taint',
    nodes.map((n) => n.name).join(', ') + ' were Bootstrapping with the bootstrap taint',
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
    `${EVERY_NODE_READY} Progressing (HealthCheckProgressing): extensions starting within their ${STARTUP_GRACE_SECONDS} s grace`,
  );
  await Promise.all(endpointStarts);

  // 2. All extensions up: every node Ready.
  const ready = await observer.waitFor(
    'all-ready',
    'every node Ready',
    (s) => nodes.every((n) => isReady(ClusterObserver.node(s, n.name))),
    t(60_000),
    signal,
  );
  out.phase(
    'all-ready',
    `${nodes.length} nodes Ready, ExtensionsReady=True, no nodecare taint ` +
      `(${ready.leases.filter((l) => l.state === ExtensionState.Healthy).length} extension leases Healthy)`,
  );
  const healthy = await waitHealth('health-true', 'True', (c) => c?.status === 'True', 30_000);
  out.phase('health-true', `${EVERY_NODE_READY} True (${everyNodeReady(healthy)?.reason})`);
  await sleep(timing.holdMs / 2, signal);

  // 3. An extension fails on a Ready node (once its startup grace is over: within it, a failure would count
  //    as still starting).
  const graceEndsMs = (node2.agentStartedMs ?? 0) + (STARTUP_GRACE_SECONDS + 3) * 1000;
  if (Date.now() < graceEndsMs) {
    out.say(
      `Waiting ${Math.ceil((graceEndsMs - Date.now()) / 1000)} s for the startup grace of ${node2.name}'s extensions to end ` +
        '(within it a failure counts as still starting: Progressing).',
    );
    await sleep(graceEndsMs - Date.now(), signal);
  }
  const proxy = node2.endpoints.find((e) => e.name === 'kube-proxy');
  if (!proxy) throw new Error(`${node2.name} has no kube-proxy`);
  out.say(
    `Stopping kube-proxy on ${node2.name}: the agent will report it Unhealthy within ~3 s ` +
      '(probe every 1 s, 2 failures in a row) and the controller will add the runtime taint.',
  );
  const stoppedAt = Date.now();
  await proxy.stop();
  const degraded = await waitNode(
    'runtime-taint',
    node2.name,
    'Degraded with the runtime taint and kube-proxy Unhealthy',
    (s) =>
      s?.state === NodeState.Degraded &&
      s.taints.includes('runtime') &&
      s.extensions.some((e) => e.name === 'kube-proxy' && e.state === ExtensionState.Unhealthy),
    30_000,
  );
  const seen = ClusterObserver.node(degraded, node2.name);
  out.phase(
    'runtime-taint',
    `${node2.name} Degraded after ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s: runtime taint, ` +
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

  // 4. It comes back.
  out.say(`Restarting kube-proxy on ${node2.name}: one Healthy probe is enough and the runtime taint goes.`);
  const restartedAt = Date.now();
  await proxy.start();
  await waitNode('recovered', node2.name, 'Ready again without the runtime taint', isReady, 30_000);
  out.phase(
    'recovered',
    `${node2.name} Ready again ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after kube-proxy restarted`,
  );
  await waitHealth('health-recovered', 'True again', (c) => c?.status === 'True', 30_000);
  out.phase('health-recovered', `${EVERY_NODE_READY} True again`);
  await sleep(timing.holdMs / 2, signal);

  // 5. An agent is lost, then comes back.
  out.say(
    `Killing the agent of ${node3.name} (SIGKILL): its ${HEARTBEAT_SECONDS} s heartbeat lease stops renewing, ` +
      'so the controller cannot tell whether the extensions still work and reports the node Unknown.',
  );
  const killedAt = Date.now();
  await cluster.killAgent(node3);
  await waitNode(
    'agent-not-reporting',
    node3.name,
    'Unknown (AgentNotReporting) with the runtime taint',
    (s) =>
      s?.state === NodeState.Unknown &&
      s.taints.includes('runtime') &&
      s.condition?.reason === ConditionReason.AgentNotReporting,
    45_000,
  );
  out.phase(
    'agent-not-reporting',
    `${node3.name} Unknown/AgentNotReporting with the runtime taint ` +
      `${((Date.now() - killedAt) / 1000).toFixed(1)} s after its agent died`,
  );
  await sleep(timing.holdMs / 2, signal);
  out.say(`Restarting the agent of ${node3.name}.`);
  const agentAt = Date.now();
  await cluster.startAgent(node3);
  await waitNode('agent-back', node3.name, 'Ready again', isReady, 45_000);
  out.phase(
    'agent-back',
    `${node3.name} Ready again ${((Date.now() - agentAt) / 1000).toFixed(1)} s after its agent restarted`,
  );
}
