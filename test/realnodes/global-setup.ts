// vitest globalSetup of the realnodes project: one control plane with the real-node profile and 3 real
// kubelet nodes for the whole suite, torn down at its end. The nodes are processes of this (the main vitest)
// process; test files run in workers, so they drive the nodes (stop a kubelet, reboot, import an image, run a
// command in a node) through a small HTTP server on a unix socket in the slot directory (client.ts).
//
// Root is required. As another user nothing starts: one line says the suite did not run and why, and the
// test files report themselves skipped with that reason; with CI=true not running is a failure.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildImage, describeImage, type BuiltImage } from '../image/image.ts';
import { writeTestbinArchive } from './install.ts';
import {
  startNodes,
  startRealNodeControlPlane,
  mountsUnder,
  type NodeSpec,
  type RealNodes,
} from './realnodes.ts';

export interface RealNodeInfo {
  name: string;
  ip: string;
  podCIDR: string;
  dir: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Why the real-node suite did not run (not root); empty when it runs. */
    realNodesNotRun: string;
    kubeconfig: string;
    server: string;
    binDir: string;
    kubernetesVersion: string;
    realNodes: RealNodeInfo[];
    realNodesSocket: string;
    realNodesSlotDir: string;
    realNodesApiAddress: string;
    /** The API server's audit log (requests of nodecare-system's ServiceAccounts, Metadata level). */
    realNodesAuditLog: string;
    /** The pause image's archive and the static in-cluster client, for test images. */
    realNodesPauseArchive: string;
    realNodesIncluster: string;
    /** The nodecare image built from the Dockerfile (test/image), imported into every node. */
    nodecareImage: BuiltImage;
    /** The test workloads' image (testbin: device plugin, readiness stand-in), imported into every node. */
    testbinArchive: string;
  }
}

export { TESTBIN_IMAGE } from './install.ts';

/** The one-line notice when the suite cannot run here, or undefined. Throws under CI=true. */
export function realNodesNotRunReason(): string | undefined {
  const uid = process.getuid?.();
  if (uid === 0) return undefined;
  const reason = `the real-node suite did NOT run: it needs root (kubelets, containerd, namespaces, cgroups, addresses on lo) and this is uid ${uid}`;
  if (process.env.CI === 'true') throw new Error(`${reason}; with CI=true that is a failure`);
  return reason;
}

/** Node names, the 3rd registered with a taint as `--register-with-taints` gives it (the test checks it). */
export const NODE_SPECS = [
  { name: 'node-1', labels: { 'nodecare.test/node': 'one' } },
  { name: 'node-2', labels: { 'nodecare.test/node': 'two' } },
  {
    name: 'node-3',
    labels: { 'nodecare.test/node': 'three' },
    registerWithTaints: ['nodecare.test/registered=true:NoSchedule'],
  },
];

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const reason = realNodesNotRunReason();
  project.provide('realNodesNotRun', reason ?? '');
  if (reason) {
    process.stderr.write(`[realnodes] ${reason}\n`);
    return undefined;
  }
  const started = Date.now();
  // The image first: a broken Dockerfile fails the suite before any node starts.
  const image = await buildImage();
  process.stderr.write(`[realnodes] ${describeImage(image)}\n`);
  // KEP-5683's lifecycle conditions (alpha in 1.37): the maintenance test sets DrainInProgress as a drain tool does.
  const plane = await startRealNodeControlPlane({
    apiserverFlags: ['--feature-gates=NodeLifecycleConditions=true'],
  });
  let cluster;
  try {
    cluster = await startNodes(plane, { nodes: NODE_SPECS });
  } catch (err) {
    await plane.stop();
    throw err;
  }
  const testbinArchive = join(plane.slot.dir, 'testbin.oci.tar');
  try {
    await writeTestbinArchive(testbinArchive, cluster.parts);
    for (const node of cluster.nodes) {
      await node.importImage(image.archive);
      await node.importImage(testbinArchive);
    }
  } catch (err) {
    await cluster.stop();
    await plane.stop();
    throw err;
  }
  process.stderr.write(
    `[realnodes] control plane + ${cluster.nodes.length} Ready nodes with the images in ${((Date.now() - started) / 1000).toFixed(1)}s\n`,
  );
  const socket = join(plane.slot.dir, 'control.sock');
  const server = createServer((req, res) => void handle(cluster, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, resolve);
  });

  project.provide('kubeconfig', plane.kubeconfigPath);
  project.provide('server', plane.server);
  project.provide('binDir', plane.binDir);
  project.provide('kubernetesVersion', plane.version);
  project.provide(
    'realNodes',
    cluster.nodes.map((n) => ({ name: n.name, ip: n.ip, podCIDR: n.podCIDR, dir: n.dir })),
  );
  project.provide('realNodesSocket', socket);
  project.provide('realNodesSlotDir', plane.slot.dir);
  project.provide('realNodesApiAddress', plane.slot.apiAddress);
  project.provide('realNodesAuditLog', plane.auditLogPath ?? '');
  project.provide('realNodesPauseArchive', cluster.parts.pauseArchive);
  project.provide('realNodesIncluster', cluster.parts.incluster);
  project.provide('nodecareImage', image);
  project.provide('testbinArchive', testbinArchive);

  return async () => {
    const stopping = Date.now();
    await new Promise((resolve) => server.close(resolve));
    const slotDir = plane.slot.dir;
    await cluster.stop();
    await plane.stop();
    const left = await mountsUnder(slotDir);
    process.stderr.write(
      `[realnodes] torn down in ${((Date.now() - stopping) / 1000).toFixed(1)}s` +
        (left.length ? ` — MOUNTS LEFT: ${left.join(' ')}` : '') +
        '\n',
    );
  };
}

/** POST /<node>/<action> with a JSON body; answers JSON ({ result } or { error }). */
async function handle(cluster: RealNodes, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const nodes = cluster.nodes;
  const reply = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  try {
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    const body = (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
    const [, target, action] = (req.url ?? '').split('/');
    if (target === '_' && action === 'waitReady') {
      await cluster.waitReady(body.names as string[] | undefined, body.timeoutMs as number | undefined);
      return reply(200, { result: null });
    }
    if (target === '_' && action === 'removeNode') {
      await cluster.remove(body.name as string);
      return reply(200, { result: null });
    }
    if (target === '_' && action === 'addNode') {
      const node = await cluster.add(body as unknown as NodeSpec);
      const info: RealNodeInfo = { name: node.name, ip: node.ip, podCIDR: node.podCIDR, dir: node.dir };
      return reply(200, { result: info });
    }
    const node = nodes.find((n) => n.name === target);
    if (!node) return reply(404, { error: `no node ${target}` });
    switch (action) {
      case 'exec':
        return reply(200, {
          result: await node.exec(body.command as string[], body.input as string | undefined),
        });
      case 'ctr':
        return reply(200, { result: await node.ctr(body.args as string[]) });
      case 'importImage':
        await node.importImage(body.archive as string);
        return reply(200, { result: null });
      case 'pids':
        return reply(200, {
          result: { holder: node.holderPid, kubelet: node.kubeletPid, containerd: node.containerdPid },
        });
      case 'stopKubelet':
      case 'startKubelet':
      case 'killForGood':
      case 'stopContainerd':
      case 'startContainerd':
      case 'restart':
        await node[action]();
        return reply(200, { result: null });
      default:
        return reply(404, { error: `no action ${action}` });
    }
  } catch (err) {
    reply(500, { error: (err as Error).message });
  }
}
