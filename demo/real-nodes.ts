// `npm start -- --real-nodes`: the GPU story on real kubelets, with the same narrated view as the KWOK demo.
// The image is built from the Dockerfile (BuildKit), a control plane and a real kubelet node with containerd
// start (test/realnodes: the harness the real-node tests use), and nodecare is installed as shipped
// (`kubectl apply -k`, only the image overridden). Then a second node joins with `--register-with-taints`
// carrying the bootstrap taint and waits, held by nodecare, until its GPU device plugin has registered with its
// kubelet; the GPU workload that was pending runs there. Then the device plugin stops (runtime taint) and comes
// back (cleared). Root only: kubelets need it.
//
// With --once it runs without the live screen, checks every phase and exits 0, or 1 naming the phase that was
// not reached; otherwise it keeps the cluster until Ctrl-C.

import { PhaseError } from './observer.ts';
import {
  askForGpu,
  buildAndStart,
  gpuWorkloadRuns,
  install,
  joinHeldReleased,
  pluginLostAndBack,
} from './real-nodes-acts.ts';
import { RealNodesStage } from './real-nodes-stage.ts';

export { REAL_NODE_PHASES } from './real-nodes-stage.ts';

export interface RealNodesOptions {
  once: boolean;
}

/** The one line that says why the real-node demo cannot run here, or undefined. */
export function realNodesDemoRefusal(): string | undefined {
  const uid = process.getuid?.();
  return uid === 0
    ? undefined
    : `demo: --real-nodes needs root (it runs kubelets and containerd, with namespaces, cgroups and addresses on lo); this is uid ${uid}. Without --real-nodes the demo runs on KWOK nodes as any user.`;
}

export async function runRealNodesDemo(options: RealNodesOptions): Promise<never> {
  const refusal = realNodesDemoRefusal();
  if (refusal) {
    process.stderr.write(`${refusal}\n`);
    process.exit(2);
  }
  const { once } = options;
  const stage = new RealNodesStage(once);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => void stage.shutdown(once ? 1 : 0, `${signal}: stopping the demo.`));
  process.stdout.on('error', () => undefined);
  try {
    const images = await buildAndStart(stage);
    await install(stage, images);
    await askForGpu(stage);
    await joinHeldReleased(stage, images);
    await gpuWorkloadRuns(stage);
    await pluginLostAndBack(stage);
  } catch (err) {
    if (stage.signal.aborted) return stage.shutdown(1);
    const failed = err instanceof PhaseError ? err.phase : 'setup';
    stage.reportFailure(failed, err instanceof Error ? err.message : String(err));
    return stage.shutdown(1);
  }
  for (const line of stage.summary()) stage.out.say(line);
  const took = Math.floor((Date.now() - stage.startMs) / 1000);
  if (once) return stage.shutdown(0, `Every phase reached in ${took} s.`);
  stage.out.say(
    'The story is over; the cluster keeps running for a look with kubectl. Ctrl-C stops everything.',
  );
  return new Promise<never>(() => undefined);
}
