// `npm start`: the main job on an embedded default. A real local control plane, the real nodecare-controller,
// a real autoscaler (Karpenter with its KWOK cloud provider), and a live view of the autoscaler's view beside
// nodecare's: a pod asks for a GPU, Karpenter launches a node, nodecare holds it with the bootstrap taint until
// the node's GPUs are healthy (a real agent reading the GPUs that the demo, in the kubelet's place, counts from
// a real local device plugin, and calling that plugin on its socket), the pod lands; then an extension fails
// (runtime taint) and recovers, and the node's agent is lost and back. Then it keeps running until Ctrl-C.
//
// `npm start -- --once` (or NODECARE_DEMO_ONCE=1) runs the same story without the live screen, checks that
// every phase was observed, prints a summary and exits 0 — or 1, naming the phase that was not reached.
// `npm start -- --kubeconfig <path>` plays the node story on the user's own cluster instead (demo/existing.ts).

import { parseArgs } from 'node:util';
import { DemoCluster, WORKLOAD, WORKLOAD_SELECTOR } from './cluster.ts';
import { ClusterObserver, PhaseError } from './observer.ts';
import { LineOutput, TtyOutput, type Output } from './output.ts';
import { DEFAULT_TIMING, PHASES, newAutoscalerRecord, runScenario, type PhaseId } from './scenario.ts';
import { followStates, printLastState, setUpAutoscalerAndExtensions, startStage } from './stage.ts';

const USAGE = `Usage: node demo/main.ts [--once] [--real-nodes | --kubeconfig <path> [--context <name>]]

Runs nodecare with Karpenter (KWOK provider) on a local control plane: a pod asks for a GPU, Karpenter
launches a node, nodecare holds it until its GPUs are healthy. Shows what happens live.
The first run builds the control plane, KWOK and Karpenter (progress on stderr); later runs reuse them.

Options:
  --once         Run the scenario without the live screen, check every phase, print a summary and exit
                 (0: every phase reached; 1: the phase that was not). Also NODECARE_DEMO_ONCE=1.
  --real-nodes   The GPU story on real kubelets instead (root only): the image built from the Dockerfile,
                 nodecare installed as shipped, a node joining with --register-with-taints held until its
                 device plugin registered with its kubelet. No autoscaler in this one.
  --kubeconfig <path>
                 The node story on a cluster you already have (kind, k3d, a cloud test cluster), in a few
                 minutes: no control plane built, no autoscaler. It refuses (exit 2) a cluster it cannot
                 reach or that already has nodecare; it creates nodecare's namespaces and CRDs, one KWOK node
                 named nodecare-demo-* (label demo.nodecare.io/node=true) and SystemExtensions for that node
                 only, runs the controller scoped to it, and removes all of it when it ends (--once, Ctrl-C).
  --context <name>
                 With --kubeconfig: the context to use (default: the kubeconfig's current context).
  --help         Show this help.`;

function parse(): { once: boolean; realNodes: boolean; kubeconfig?: string; context?: string } {
  try {
    const { values } = parseArgs({
      options: {
        once: { type: 'boolean', default: false },
        'real-nodes': { type: 'boolean', default: false },
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
    });
    if (values.help) {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    }
    if (values.context !== undefined && values.kubeconfig === undefined)
      throw new Error('--context needs --kubeconfig');
    if (values.kubeconfig !== undefined && values['real-nodes'])
      throw new Error('--kubeconfig and --real-nodes are two different demos: give one');
    if (values.kubeconfig === '') throw new Error('--kubeconfig needs a path');
    return {
      once: values.once || process.env.NODECARE_DEMO_ONCE === '1',
      realNodes: values['real-nodes'],
      kubeconfig: values.kubeconfig,
      context: values.context,
    };
  } catch (err) {
    process.stderr.write(`demo: ${(err as Error).message}\n\n${USAGE}\n`);
    process.exit(2);
  }
}

const { once, realNodes, kubeconfig, context } = parse();
if (realNodes) await (await import('./real-nodes.ts')).runRealNodesDemo({ once });
if (kubeconfig !== undefined)
  await (await import('./existing.ts')).runExistingClusterDemo({ kubeconfig, context, once });
const tty = !once && process.stdout.isTTY === true;
const out: Output = tty ? new TtyOutput() : new LineOutput();
const cluster = new DemoCluster();
const abort = new AbortController();
const startMs = Date.now();
const reached = new Map<PhaseId, { atMs: number; detail: string }>();
const autoscaler = newAutoscalerRecord();
let observer: ClusterObserver | undefined;
let stopping: Promise<never> | undefined;

function summary(): string[] {
  const ids = Object.keys(PHASES) as PhaseId[];
  const lines = [`Summary: ${reached.size} of ${ids.length} phases reached`];
  for (const id of ids) {
    const phase = reached.get(id);
    const at = phase ? `+${Math.floor((phase.atMs - startMs) / 1000)}s` : '';
    lines.push(`  ${phase ? '✔' : '✘'} ${id.padEnd(20)} ${at.padStart(5)}  ${PHASES[id]}`);
  }
  const claims = [...autoscaler.nodeClaims];
  lines.push(
    `Autoscaler: NodeClaims launched: ${claims.length}${claims.length ? ` (${claims.join(', ')})` : ''}; ` +
      `workload pod seen Pending while the node was held: ${autoscaler.podPendingWhileHeld ? 'yes' : 'no'}; ` +
      `bound to a held node: ${autoscaler.podBoundWhileHeld ? 'yes' : 'no'}` +
      (autoscaler.heldMs === undefined ? '' : `; node held ${Math.round(autoscaler.heldMs / 1000)} s`),
  );
  return lines;
}

/** Stops everything started (agents, controller, endpoints, control plane) and exits with `code`. */
function shutdown(code: number, why?: string): Promise<never> {
  stopping ??= (async (): Promise<never> => {
    abort.abort(new Error('stopping'));
    observer?.stop();
    out.close();
    if (why) out.say(why);
    out.say(
      'Stopping Karpenter, the agents, the controller, KWOK, the extension endpoints and the control plane…',
    );
    setTimeout(() => {
      process.stderr.write('demo: not stopped after 20 s; killing what is left\n');
      process.exit(code || 1);
    }, 20_000).unref();
    await cluster.stop().catch((err: unknown) => out.say(`Stopping failed: ${String(err)}`));
    out.say('Stopped.');
    process.exit(code);
  })();
  return stopping;
}

let signals = 0;
const onSignal = (signal: string): void => {
  signals++;
  if (signals > 1) {
    cluster.killNow();
    process.exit(130);
  }
  void shutdown(once ? 1 : 0, `${signal}: stopping the demo.`);
};
process.on('SIGINT', () => onSignal('SIGINT'));
process.on('SIGTERM', () => onSignal('SIGTERM'));
process.on('SIGHUP', () => onSignal('SIGHUP')); // the terminal went away
// A closed terminal or pipe (EIO, EPIPE) must not keep the demo from stopping what it started.
process.stdout.on('error', () => undefined);
process.on('exit', () => {
  cluster.killNow();
  if (tty) process.stdout.write('\u001b[?25h');
});

async function main(): Promise<void> {
  const { plane, hints } = await startStage(cluster, out, once);
  const obs = new ClusterObserver(plane.kubeconfigPath, {
    namespace: WORKLOAD.namespace,
    labelSelector: WORKLOAD_SELECTOR,
  });
  observer = obs;
  followStates(obs, out, tty);
  obs.start();
  await setUpAutoscalerAndExtensions(
    cluster,
    out,
    (message) => void shutdown(1, `demo failed: the autoscaler stopped: ${message}`),
  );
  out.live();
  const timing = { ...DEFAULT_TIMING, holdMs: once ? 3_000 : 8_000 };
  const phase = (id: PhaseId, detail: string): void => {
    reached.set(id, { atMs: Date.now(), detail });
    out.say(`✔ PHASE ${id}: ${PHASES[id]} — ${detail}`);
  };
  try {
    await runScenario(
      cluster,
      obs,
      { say: (line) => out.say(line), phase },
      timing,
      autoscaler,
      abort.signal,
    );
  } catch (err) {
    if (abort.signal.aborted) return; // shutting down
    const failed = err instanceof PhaseError ? err.phase : 'scenario';
    out.say(`✘ PHASE ${failed} NOT REACHED: ${err instanceof Error ? err.message : String(err)}`);
    if (!tty) await printLastState(obs, cluster, out);
    for (const line of summary()) out.say(line);
    if (once) await shutdown(1);
    out.say('The cluster keeps running for a look with kubectl:');
    for (const line of [...hints, 'Ctrl-C stops everything.']) out.say(line);
    return;
  }
  for (const line of summary()) out.say(line);
  if (once) await shutdown(0, `Every phase reached in ${Math.floor((Date.now() - startMs) / 1000)} s.`);
  // Printed again at the end: in a pipe or a log the header has long scrolled away.
  out.say('The story is over; the cluster keeps running. Ask it, from another terminal:');
  for (const line of [...hints, 'Ctrl-C stops everything.']) out.say(line);
}

main().catch((err: unknown) => {
  if (abort.signal.aborted) return;
  void shutdown(1, `demo failed: ${err instanceof Error ? err.message : String(err)}`);
});
