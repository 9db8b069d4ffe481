// The KWOK demo's stage (demo/start.ts): the control plane and the header with the commands to try, nodecare's
// controller, Karpenter with its KWOK provider and the SystemExtensions; what the live view prints of state
// changes; and what a failed run prints of the last state it saw.

import type { DemoCluster } from './cluster.ts';
import { GPU_POOL, WORKLOAD } from './cluster.ts';
import { GPU_RESOURCE } from './endpoints.ts';
import type { ClusterObserver } from './observer.ts';
import type { Output } from './output.ts';
import { autoscalerLines, renderStatus } from './view.ts';

/** Starts the control plane and nodecare's controller; the header's kubectl hints (none with --once). */
export async function startStage(
  cluster: DemoCluster,
  out: Output,
  once: boolean,
): Promise<{ plane: Awaited<ReturnType<DemoCluster['start']>>; hints: string[] }> {
  out.say(
    'Starting a local Kubernetes control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager); ' +
      'the first run builds it from source, which takes several minutes.',
  );
  const plane = await cluster.start((line) => out.say(line.replace(/^\[controlplane\] /, 'control plane: ')));
  const k = cluster.kubectlPath;
  // --once stops the cluster at the end: no commands to try against it.
  const hints = once
    ? []
    : [
        `kubectl against it, e.g. from another terminal: K=${k}`,
        '  $K nodecare status   $K nodecare explain <node>   $K nodecare extensions',
        `  $K get nodeclaims   $K get nodepool ${GPU_POOL} -o yaml   $K get pod ${WORKLOAD.name}`,
        '  $K get nodes -L nodecare.io/status   $K get clusterhealth   $K get leases -n nodecare-leases',
        `  ($K runs the bundled ${plane.binDir}/kube-testenv kubectl with KUBECONFIG=${plane.kubeconfigPath}` +
          " and this checkout's kubectl-nodecare plugin on its PATH)",
      ];
  out.setHeader([
    `nodecare demo — Kubernetes ${plane.version} at ${plane.server}${once ? '' : ' — Ctrl-C stops everything'}`,
    ...hints,
  ]);
  out.say('Starting nodecare-controller (one replica, no leader election)…');
  await cluster.startController();
  out.say(
    'nodecare-controller is running: it owns the taints, the ExtensionsReady condition and the status label.',
  );
  return { plane, hints };
}

/** Starts KWOK and Karpenter (`stopped` is called if Karpenter stops) and registers the SystemExtensions. */
export async function setUpAutoscalerAndExtensions(
  cluster: DemoCluster,
  out: Output,
  stopped: (message: string) => void,
): Promise<void> {
  out.say(
    'Starting KWOK and Karpenter with its KWOK cloud provider; the first run builds them from the Go module ' +
      'proxy (a few minutes on 2 cores; progress below), later runs reuse them.',
  );
  await cluster
    .startAutoscaler(stopped, (line) => out.say(line))
    .catch((err: unknown) => {
      throw new Error(
        'Karpenter with its KWOK provider could not be built or started, and the demo does not run without ' +
          `it: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
  out.say(
    `Karpenter is running: NodePool ${GPU_POOL} may launch a CPU or a GPU instance type and lists nodecare's ` +
      'bootstrap taint in its startupTaints (docs/autoscalers.md).',
  );
  await cluster.registerExtensions();
  out.say(
    'SystemExtensions registered: kube-proxy and log-agent on every node, gpu-plugin on the nodes of NodePool ' +
      `${GPU_POOL} (a devicePlugin probe: at least 1 ${GPU_RESOURCE} allocatable as the kubelet counts them, ` +
      "and the plugin answering GetDevicePluginOptions on its socket; it never opens ListAndWatch, the kubelet's stream).",
  );
}

/** Shows every snapshot; on a terminal also says each node's state change (plain output prints every row). */
export function followStates(observer: ClusterObserver, out: Output, tty: boolean): void {
  const states = new Map<string, string>();
  observer.onSnapshot((snapshot) => {
    out.snapshot(snapshot);
    if (!tty) return;
    for (const s of snapshot.statuses) {
      const before = states.get(s.name);
      states.set(s.name, s.stateText);
      if (before && before !== s.stateText) out.say(`${s.name}: ${before} → ${s.stateText}`);
    }
  });
}

/** After a failed phase: the last view and the last log lines, for a log that has no live screen. */
export async function printLastState(
  observer: ClusterObserver,
  cluster: DemoCluster,
  out: Output,
): Promise<void> {
  const latest = observer.latest;
  if (latest) {
    const table = renderStatus(latest.nodes, latest.leases, new Date(), { nodeClaims: latest.nodeClaims });
    for (const line of [
      ...table,
      ...autoscalerLines(latest.nodeClaims, latest.noWorkload ? undefined : latest.pods),
    ])
      out.say(line);
  }
  out.say('Last log lines:');
  for (const line of await cluster.recentLogs()) out.say(line);
}
