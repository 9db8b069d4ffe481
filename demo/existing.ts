// `npm start -- --kubeconfig <path> [--context <name>]`: the node story on a cluster the user already has, in
// a couple of minutes and without building Kubernetes. The demo checks the cluster (demo/existing-cluster.ts:
// reachable, no nodecare there, the rights it needs; a refusal exits 2 having created nothing), installs
// nodecare's namespaces and CRDs, runs KWOK and the real controller scoped to the one node it creates, that
// node's agent and extension endpoints, and plays the acts that need no autoscaler (acts.ts): held with the
// bootstrap taint until the GPU is healthy, released, an extension failing and recovering, the agent lost and
// back, with ClusterHealth following. Then, with --once, or on Ctrl-C, it removes everything it created.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { failAndRecover, healthTrue, heldUntilHealthy, loseAgent } from './acts.ts';
import { DEMO_NODE_SELECTOR, ExistingCluster } from './existing-cluster.ts';
import { ClusterObserver, PhaseError } from './observer.ts';
import { LineOutput, TtyOutput, type Output } from './output.ts';
import { Scene, sleep } from './scene.ts';
import { followStates, printLastState } from './stage.ts';
import {
  DEFAULT_TIMING,
  EXISTING_CLUSTER_PHASES,
  newAutoscalerRecord,
  type PhaseId,
  type ScenarioTiming,
} from './story.ts';

export interface ExistingClusterOptions {
  kubeconfig: string;
  context: string | undefined;
  once: boolean;
}

/** No autoscaler batches here: the GPU turns healthy sooner than in the Karpenter story. */
const TIMING: ScenarioTiming = { ...DEFAULT_TIMING, gpuHealthyAfterMs: 12_000 };

class ExistingRun {
  readonly once: boolean;
  readonly tty: boolean;
  readonly out: Output;
  readonly cluster = new ExistingCluster();
  readonly abort = new AbortController();
  readonly startMs = Date.now();
  readonly reached = new Map<PhaseId, number>();
  observer: ClusterObserver | undefined;
  private stopping: Promise<never> | undefined;

  constructor(once: boolean) {
    this.once = once;
    this.tty = !once && process.stdout.isTTY === true;
    this.out = this.tty ? new TtyOutput() : new LineOutput();
  }

  summary(): string[] {
    const ids = Object.keys(EXISTING_CLUSTER_PHASES) as PhaseId[];
    const lines = [`Summary: ${this.reached.size} of ${ids.length} phases reached`];
    for (const id of ids) {
      const at = this.reached.get(id);
      const when = at === undefined ? '' : `+${Math.floor((at - this.startMs) / 1000)}s`;
      lines.push(
        `  ${at === undefined ? '✘' : '✔'} ${id.padEnd(20)} ${when.padStart(5)}  ${EXISTING_CLUSTER_PHASES[id]}`,
      );
    }
    return lines;
  }

  /** Stops what the demo runs, removes what it created on the cluster, and exits with `code`. */
  shutdown(code: number, why?: string): Promise<never> {
    this.stopping ??= (async (): Promise<never> => {
      this.abort.abort(new Error('stopping'));
      this.observer?.stop();
      this.out.close();
      if (why) this.out.say(why);
      const created = this.cluster.createdObjects;
      this.out.say(
        'Stopping the agent, the controller, KWOK and the extension endpoints' +
          (created.length ? `, and removing what the demo created: ${created.join(', ')}…` : '…'),
      );
      setTimeout(() => {
        process.stderr.write(
          `demo: not stopped after 90 s; killing what is left. Remove by hand what is left of: ${created.join(', ')}\n`,
        );
        process.exit(code || 1);
      }, 90_000).unref();
      let exitCode = code;
      await this.cluster.stop().then(
        () => created.length && this.out.say('Removed everything the demo created.'),
        (err: unknown) => {
          this.out.say(`Stopping failed: ${err instanceof Error ? err.message : String(err)}`);
          exitCode = code || 1;
        },
      );
      this.out.say('Stopped.');
      process.exit(exitCode);
    })();
    return this.stopping;
  }
}

/** Checks the cluster; exits 2 with one line if the demo may not play there. */
async function connect(run: ExistingRun, options: ExistingClusterOptions): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'nodecare-demo-'));
  try {
    await run.cluster.connect(options.kubeconfig, options.context, dir);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  }
}

/** Installs nodecare's parts, starts KWOK, the controller and the extensions, and the view. */
async function setUp(run: ExistingRun): Promise<ClusterObserver> {
  const { cluster, out, once } = run;
  const kubectl = `kubectl --kubeconfig ${cluster.kubeconfigPath}`;
  const hints = once
    ? []
    : [
        `kubectl against it, e.g. from another terminal: K='${kubectl}'`,
        `  $K get node ${cluster.nodeName} -L nodecare.io/status   $K get clusterhealth cluster -o yaml`,
        '  $K get systemextensions   $K get leases -n nodecare-leases',
      ];
  out.setHeader([
    `nodecare demo on ${cluster.server} (context ${cluster.contextName})` +
      (once ? '' : ' — Ctrl-C stops it and removes what it created'),
    ...hints,
  ]);
  out.say(`Installing nodecare's namespaces and CRDs (manifests/base); the demo removes them when it ends.`);
  await cluster.install((line) => out.say(line));
  out.say(
    `Starting KWOK for the demo's node only (label ${DEMO_NODE_SELECTOR}); the first run builds it from the ` +
      'Go module proxy (progress below).',
  );
  await cluster.startKwok((line) => out.say(line));
  out.say(
    `Starting nodecare-controller (one replica, no leader election, --node-selector=${DEMO_NODE_SELECTOR})…`,
  );
  await cluster.startScopedController();
  out.say('nodecare-controller is running: it manages only the demo node; every other node is left alone.');
  await cluster.registerExtensions();
  out.say(
    `SystemExtensions registered for the nodes labelled ${DEMO_NODE_SELECTOR} only: kube-proxy, log-agent and ` +
      'gpu-plugin (a devicePlugin probe: at least 1 nvidia.com/gpu allocatable as the kubelet counts them).',
  );
  const observer = new ClusterObserver(cluster.kubeconfigPath, {
    // No workload on the user's cluster, and no Karpenter.
    namespace: '',
    labelSelector: '',
    pods: false,
    nodeClaims: false,
    nodeSelector: DEMO_NODE_SELECTOR,
  });
  run.observer = observer;
  followStates(observer, out, run.tty);
  observer.start();
  return observer;
}

/** The story on the demo's node. */
async function play(run: ExistingRun, observer: ClusterObserver): Promise<void> {
  const { cluster, out, abort } = run;
  const timing = { ...TIMING, holdMs: run.once ? 3_000 : 8_000 };
  const phase = (id: PhaseId, detail: string): void => {
    run.reached.set(id, Date.now());
    out.say(`✔ PHASE ${id}: ${EXISTING_CLUSTER_PHASES[id] ?? id} — ${detail}`);
  };
  const scene = new Scene(
    cluster,
    observer,
    { say: (line) => out.say(line), phase },
    timing,
    newAutoscalerRecord(),
    abort.signal,
  );
  scene.follow();
  out.live();
  out.say(
    `Creating Node ${cluster.nodeName} with the bootstrap taint, as a cloud machine registers with ` +
      '--register-with-taints (KWOK plays its kubelet), and a NoSchedule taint of the demo that keeps your pods off it.',
  );
  await cluster.createNode();
  await heldUntilHealthy(scene, cluster.nodeName);
  await healthTrue(scene);
  await sleep(timing.holdMs / 2, abort.signal);
  await Promise.all(scene.starts);
  const node = cluster.nodes.find((n) => n.name === cluster.nodeName);
  if (!node) throw new Error(`no agent for ${cluster.nodeName}`);
  await failAndRecover(scene, node);
  await loseAgent(scene, node);
}

export async function runExistingClusterDemo(options: ExistingClusterOptions): Promise<never> {
  const run = new ExistingRun(options.once);
  const { out, cluster, abort, once } = run;
  let signals = 0;
  const onSignal = (signal: string): void => {
    if (++signals > 1) {
      cluster.killNow();
      process.stderr.write(`demo: stopped before removing: ${cluster.createdObjects.join(', ')}\n`);
      process.exit(130);
    }
    void run.shutdown(once ? 1 : 0, `${signal}: stopping the demo.`);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => onSignal(signal));
  process.stdout.on('error', () => undefined);
  process.on('exit', () => cluster.killNow());
  await connect(run, options);
  let observer: ClusterObserver | undefined;
  // Never resolves: the demo ends in run.shutdown (process.exit), here or on a signal.
  const keepRunning = new Promise<never>(() => undefined);
  try {
    observer = await setUp(run);
    await play(run, observer);
  } catch (err) {
    if (abort.signal.aborted) return keepRunning;
    const failed = err instanceof PhaseError ? err.phase : 'setup';
    out.say(`✘ PHASE ${failed} NOT REACHED: ${err instanceof Error ? err.message : String(err)}`);
    if (observer && !run.tty) await printLastState(observer, cluster, out);
    for (const line of run.summary()) out.say(line);
    if (once || !observer) await run.shutdown(1);
    out.say('The demo keeps running for a look with kubectl; Ctrl-C stops it and removes what it created.');
    return keepRunning;
  }
  for (const line of run.summary()) out.say(line);
  const took = Math.floor((Date.now() - run.startMs) / 1000);
  if (once) await run.shutdown(0, `Every phase reached in ${took} s.`);
  out.say('The story is over; the demo node stays until Ctrl-C, which removes everything the demo created.');
  return keepRunning;
}
