// KWOK for the existing-cluster demo (demo/existing-cluster.ts): the binary and stages test/autoscalers/build.sh
// keeps in the tool cache (built there first if missing), managing only the nodes with the demo's label. The
// autoscaler tests' KWOK (test/autoscalers/tools.ts) manages every node with KWOK's own annotation, which on a
// user's cluster (a kwokctl one) may be nodes of theirs.

import { spawn, type ChildProcess } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePorts, tail } from '../test/controlplane/controlplane.ts';
import { ensureTool, kwokArgs, kwokStages } from '../test/autoscalers/tools.ts';

export interface DemoKwok {
  child: ChildProcess;
  /** SIGTERM, SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/**
 * Starts KWOK on `kubeconfig` for the nodes matching `nodeSelector`; resolves once its /healthz answers.
 * `spawned` has the process at once, so a demo stopped meanwhile can still kill it.
 */
export async function startDemoKwok(
  dir: string,
  kubeconfig: string,
  nodeSelector: string,
  log: (line: string) => void,
  spawned: (child: ChildProcess) => void,
): Promise<DemoKwok> {
  const tool = await ensureTool('kwok', log);
  const [port] = await freePorts(1);
  const logPath = join(dir, 'kwok.log');
  const out = await open(logPath, 'a');
  const args = kwokArgs(kubeconfig, await kwokStages(tool), port!, { label: nodeSelector });
  const child = spawn(join(tool, 'kwok'), args, { stdio: ['ignore', out.fd, out.fd] });
  spawned(child);
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`could not start: ${err.message}`));
    child.once('exit', (code, signal) => resolve(signal ? `killed by ${signal}` : `exited ${code}`));
  });
  await out.close();
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  let ended: string | undefined;
  void exited.then((how) => (ended = how));
  const deadline = Date.now() + 60_000;
  while (ended === undefined && Date.now() < deadline) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return { child, stop };
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  const logText = tail(await readFile(logPath, 'utf8').catch(() => ''), 15);
  throw new Error(`kwok ${ended ?? 'not healthy within 60 s'}; the last lines of its log:\n${logText}`);
}
