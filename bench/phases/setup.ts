// Setup: builds dist/, starts the control plane tuned for scale, applies the CRDs, creates the SystemExtensions
// every node requires and N Nodes, and starts the observer and the fleet simulator writing every node's Leases.
import { join } from 'node:path';
import { GROUP_VERSION, SYSTEM_EXTENSION } from '../../api/index.ts';
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { startControlPlane, type ControlPlane } from '../../test/controlplane/controlplane.ts';
import {
  build,
  createNode,
  extensionSpecs,
  pool,
  registeredNodeBody,
  say,
  type CreatedNode,
} from '../common.ts';
import type { SimState } from '../fleet.ts';
import { Observer } from '../observer.ts';
import { FLEET_REQUEST_TIMEOUT_MS, FLEET_START_CONCURRENCY, SCALE_FLAGS } from '../options.ts';
import { ROOT } from '../procs.ts';
import { fmtMs } from '../report.ts';
import type { BenchCluster, BenchRun } from '../run.ts';
import { Simulator, type SimulatorInit } from '../simulator.ts';

/**
 * The control plane tuned for scale (no scheduler, no controller-manager, no audit log), nodecare's namespaces
 * and CRDs applied and Established, and a client with 64 connections.
 */
export async function startScalePlane(): Promise<{ plane: ControlPlane; client: KubeClient }> {
  const plane = await startControlPlane({
    scheduler: false,
    controllerManager: false,
    apiserverFlags: SCALE_FLAGS,
    auditPolicy: false, // the benchmark reads no audit log; at 5,000 nodes it is 700 more lines a second
    log: (l) => say(l),
  });
  const base = join(ROOT, 'manifests', 'base');
  const applied = await plane.kubectl([
    'apply',
    '--server-side',
    '-f',
    join(base, 'namespaces.yaml'),
    '-f',
    join(base, 'crds'),
  ]);
  if (applied.code !== 0) throw new Error(`kubectl apply failed: ${applied.stderr}`);
  await plane.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/systemextensions.nodecare.io',
    'crd/clusterhealths.nodecare.io',
  ]);
  const client = new KubeClient(await loadConnection(plane.kubeconfigPath), {
    userAgent: 'nodecare-bench',
    connections: 64,
  });
  return { plane, client };
}

export async function setUp(run: BenchRun): Promise<BenchCluster> {
  const { opts, httpPort, heartbeatFile, fleetStartWrites } = run;
  const { nodes: N, extensions: E } = opts;
  say('building dist/ (the binaries measured)');
  await build();
  const { plane, client } = await startScalePlane();
  run.plane = plane;
  run.client = client;
  const specs = extensionSpecs(E, httpPort, heartbeatFile);
  const extensions = specs.map(([name]) => name);
  for (const [name, probe] of specs) {
    await client.request('POST', `/apis/${GROUP_VERSION}/${SYSTEM_EXTENSION.plural}`, {
      body: { apiVersion: GROUP_VERSION, kind: SYSTEM_EXTENSION.kind, metadata: { name }, spec: { probe } },
    });
  }

  say(`creating ${N} nodes`);
  const names = Array.from({ length: N }, (_, i) => `bench-node-${String(i).padStart(5, '0')}`);
  const created: CreatedNode[] = [];
  const c = client;
  // Registered as kubelets register them (with the bootstrap taint, about 9 KB each): the fresh fleet the
  // `conv` row starts the controller on (issue 53 item 5).
  await pool([...names.entries()], 32, async ([i, name]) => {
    created.push(await createNode(c, name, registeredNodeBody(name, i)));
  });
  created.sort((a, b) => (a.name < b.name ? -1 : 1));
  const S = opts.samples;
  const cohort = created.slice(0, S); // Bootstrapping at the start: their last extension is Progressing
  const others = created.slice(S);

  const observer = (run.observer = new Observer(client));
  await observer.start();

  say(
    `starting the fleet simulator: ${N} agents × (${E} extension leases + heartbeat) in ${opts.fleetProcesses} processes`,
  );
  const fleet = (run.fleet = new Simulator(opts.fleetProcesses, say));
  const allHealthy: SimState[] = extensions.map(() => 'Healthy');
  const init: SimulatorInit = {
    kubeconfig: plane.kubeconfigPath,
    nodes: created.map((n, i) => ({
      ...n,
      states: i < S ? [...allHealthy.slice(0, -1), 'Progressing'] : allHealthy,
    })),
    extensions,
    heartbeatDurationSeconds: AGENT_OPTIONS['heartbeat-duration-seconds'].default,
    extensionRenewSeconds: AGENT_OPTIONS['extension-renew-seconds'].default,
    requestTimeoutMs: FLEET_REQUEST_TIMEOUT_MS,
    startConcurrency: FLEET_START_CONCURRENCY,
  };
  const started = await fleet.start(init, 30 * 60_000);
  Object.assign(fleetStartWrites, await fleet.stats(60_000));
  say(
    `fleet created ${fleetStartWrites.create_ok ?? 0} of ${started.leases} leases in ${fmtMs(started.elapsedMs)} (${JSON.stringify(fleetStartWrites)})`,
  );
  return { plane, client, observer, fleet, init, extensions, cohort, others };
}
