// The stories every upstream extension's test runs on the real nodes (issue 49; docs/extensions.md): nodecare
// installed as shipped, the extension installed from its upstream manifest, then a new node joins held by
// the bootstrap taint, the extension starts there, the node is released; the extension is broken, the
// runtime taint goes on; it recovers, the taint comes off. Each step is printed, so the suite's output tells
// the story. The test files (../upstream-*.test.ts) say how their extension is installed, broken and mended.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  LeaseAnnotation,
  LEASE_NAMESPACE,
  extensionLeaseName,
} from '../../../api/index.ts';
import { addNode, kubectl, realNodes, removeNode, waitNodesReady, type TestNode } from '../client.ts';
import {
  applyShipped,
  describeView,
  getNode,
  getPods,
  healthyView,
  kustomizationWithImage,
  podReady,
  until,
  untilView,
  viewOf,
  type NodecareView,
  type Pod,
} from '../cluster.ts';
import type { UpstreamBuild } from './upstream.ts';

/** The node that joins in every story (the suite's nodes are node-1..3; shipped.test.ts removes its node-4). */
export const JOINING = 'node-4';

/** The tolerations of nodecare's two taints, as docs/install.md gives them for extension DaemonSets. */
export const NODECARE_TOLERATIONS = [
  { key: BOOTSTRAP, operator: 'Exists', effect: 'NoSchedule' },
  { key: RUNTIME, operator: 'Exists', effect: 'NoSchedule' },
];

/** One story line on stderr, `[upstream-<class>] …`, so the suite's output shows each step. */
export function storyLog(name: string): (line: string) => void {
  return (line) => process.stderr.write(`[upstream-${name}] ${line}\n`);
}

/** One annotation of the extension's Lease on `node` (`state`, `message`, …), undefined while it has none. */
export async function leaseAnnotation(
  node: string,
  extension: string,
  key: keyof typeof LeaseAnnotation,
): Promise<string | undefined> {
  const out = await kubectl([
    'get',
    'lease',
    '-n',
    LEASE_NAMESPACE,
    extensionLeaseName(node, extension),
    '-o',
    `jsonpath={.metadata.annotations.${LeaseAnnotation[key].replaceAll('.', '\\.')}}`,
    '--ignore-not-found',
  ]);
  return out.trim() || undefined;
}

export function leaseState(node: string, extension: string): Promise<string | undefined> {
  return leaseAnnotation(node, extension, 'state');
}

/** nodecare as shipped (the image overridden, the given components listed), in a scratch directory. */
export class NodecareInstall {
  readonly scratch = mkdtempSync(join(tmpdir(), 'nodecare-upstream-'));
  private joined: TestNode | undefined;

  private readonly imageRef: string;
  private readonly log: (line: string) => void;

  constructor(imageRef: string, log: (line: string) => void = storyLog('install')) {
    this.imageRef = imageRef;
    this.log = log;
  }

  async install(components: string[] = []): Promise<void> {
    await applyShipped(kubectl, kustomizationWithImage(this.imageRef, components, this.scratch), 180);
  }

  /** The suite's nodes get the image too, so that a DaemonSet without a node selector runs everywhere. */
  async importEverywhere(build: UpstreamBuild): Promise<void> {
    for (const node of realNodes()) await node.importImage(build.archive);
  }

  /** A new node joins with the bootstrap taint (`--register-with-taints`), the images pre-loaded. */
  async join(labels: Record<string, string>, archives: string[]): Promise<TestNode> {
    this.joined = await addNode({
      name: JOINING,
      registerWithTaints: [`${BOOTSTRAP}=:NoSchedule`],
      labels,
      images: archives,
    });
    return this.joined;
  }

  /**
   * Whatever the stories got to: the joined node leaves, the extension's objects go, the scratch is removed.
   * nodecare stays installed for the next upstream file (../sequencer.ts runs them last, one after another);
   * the suite's teardown removes the cluster.
   */
  async teardown(deleteExtension: () => Promise<unknown>): Promise<void> {
    const started = Date.now();
    const joined = this.joined;
    if (joined) await removeNode(joined.name).catch(() => undefined);
    await deleteExtension().catch(() => undefined);
    rmSync(this.scratch, { recursive: true, force: true });
    this.log(
      `cleaned up (${joined ? `${joined.name} removed, ` : ''}the extension's objects deleted; nodecare stays for the next upstream file) in ${((Date.now() - started) / 1000).toFixed(1)}s`,
    );
  }
}

/** The pod of `selector` in `namespace` on `node`, once Ready. */
export async function readyPodOn(
  namespace: string,
  selector: string,
  node: string,
  timeoutMs = 180_000,
): Promise<Pod> {
  return until(
    `a Ready pod of ${namespace}/${selector} on ${node}`,
    async () => {
      const pod = (await getPods(namespace, selector)).find((p) => p.spec.nodeName === node);
      return pod && podReady(pod) ? pod : undefined;
    },
    { timeoutMs },
  );
}

export interface JoinStory {
  extension: string;
  log: (line: string) => void;
  /** Joins the node (NodecareInstall.join). */
  join: () => Promise<TestNode>;
  /** Resolves when the extension runs on the node (its pod Ready, its socket there, …); says what it saw. */
  started: (node: TestNode) => Promise<string>;
}

/**
 * The node joins held; the extension starts; the node is released. Samples nodecare's view of the node from
 * before it exists, and checks that it was held (the bootstrap taint, not healthy) until the extension's
 * lease was Healthy.
 */
export async function joinsHeldUntilHealthy(story: JoinStory): Promise<TestNode> {
  const { log, extension } = story;
  const samples: { view: NodecareView; lease: string | undefined }[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const node = await getNode(JOINING).catch(() => undefined);
      if (node)
        samples.push({
          view: viewOf(node),
          lease: await leaseState(JOINING, extension).catch(() => undefined),
        });
      await sleep(250);
    }
  })();
  const joined = Date.now();
  const at = (): string => `${((Date.now() - joined) / 1000).toFixed(1)}s`;
  let node: TestNode;
  try {
    log(`${JOINING} joins with --register-with-taints=${BOOTSTRAP}=:NoSchedule`);
    node = await story.join();
    await waitNodesReady([JOINING]);
    // On a loaded machine the sampler's kubectl may not have caught the node between its registration and
    // now: the node as it is now counts too (it cannot have been released yet: its agent reports later).
    if (samples.length === 0)
      samples.push({ view: viewOf(await getNode(JOINING)), lease: await leaseState(JOINING, extension) });
    const held = samples.find((s) => s.view.bootstrapTaint);
    expect(held, `${JOINING} never seen with the bootstrap taint`).toBeDefined();
    log(
      `${at()} ${JOINING} Ready and held: ${describeView(viewOf(await getNode(JOINING)))}, lease ${extension}=${(await leaseState(JOINING, extension)) ?? 'none yet'}`,
    );
    log(`${at()} extension started: ${await story.started(node)}`);
    const released = await untilView(JOINING, 'released (healthy, no bootstrap taint)', healthyView, 180_000);
    log(
      `${at()} ${JOINING} released: ${describeView(released)}, lease ${extension}=${await leaseState(JOINING, extension)}`,
    );
  } finally {
    sampling = false;
    await sampler;
  }
  // One more sample after the release: on a loaded machine the sampler's slow reads may have slept through
  // the second between the lease turning Healthy and the release, and the last sample must be the node as
  // released (as watchView in ../cluster.ts does).
  samples.push({ view: viewOf(await getNode(JOINING)), lease: await leaseState(JOINING, extension) });
  // Held until the extension was Healthy: no sample without the bootstrap taint before its lease was Healthy.
  const firstHealthy = samples.findIndex((s) => s.lease === 'Healthy');
  expect(firstHealthy, 'the lease was never seen Healthy while sampling').toBeGreaterThanOrEqual(0);
  const early = samples.slice(0, firstHealthy).filter((s) => !s.view.bootstrapTaint);
  expect(early.map((s) => describeView(s.view))).toEqual([]);
  expect(samples[0]!.view.bootstrapTaint, `${JOINING} at first sight`).toBe(true);
  return node;
}

export interface BreakStory {
  extension: string;
  log: (line: string) => void;
  /** Breaks the extension; says how. */
  breakIt: () => Promise<string>;
  /** Mends it; says how. */
  mend: () => Promise<string>;
  timeoutMs?: number;
}

/** The extension breaks, the runtime taint goes on; it recovers, the taint comes off. */
export async function breaksAndRecovers(story: BreakStory): Promise<void> {
  const { log, extension } = story;
  const timeoutMs = story.timeoutMs ?? 120_000;
  let started = Date.now();
  const at = (): string => `${((Date.now() - started) / 1000).toFixed(1)}s`;
  log(`broken: ${await story.breakIt()}`);
  const failed = await untilView(
    JOINING,
    'the runtime taint after the extension broke',
    (v) => v.runtimeTaint,
    timeoutMs,
  );
  const lease = await leaseState(JOINING, extension);
  log(`${at()} runtime taint on: ${describeView(failed)}, lease ${extension}=${lease}`);
  expect(lease).toBe('Unhealthy');
  expect(failed.condition?.status).toBe('False');
  started = Date.now();
  log(`mended: ${await story.mend()}`);
  const back = await untilView(
    JOINING,
    'the runtime taint cleared after the extension recovered',
    healthyView,
    timeoutMs,
  );
  log(
    `${at()} runtime taint off: ${describeView(back)}, lease ${extension}=${await leaseState(JOINING, extension)}`,
  );
  expect(await leaseState(JOINING, extension)).toBe('Healthy');
}

/**
 * The host PID of a pod's container (`container` by name, else the first), from the node's containerd
 * (containers share the host's PIDs).
 */
export async function containerPid(node: TestNode, pod: Pod, container?: string): Promise<number> {
  const statuses = pod.status.containerStatuses ?? [];
  const status = container ? statuses.find((s) => s.name === container) : statuses[0];
  if (!status?.containerID)
    throw new Error(`no container ${container ?? '(first)'} in pod ${pod.metadata.name} yet`);
  const id = status.containerID.replace(/^containerd:\/\//, '');
  const tasks = await node.ctr(['tasks', 'ls']);
  const line = tasks.stdout.split('\n').find((l) => l.startsWith(id));
  const pid = Number(/^\S+\s+(\d+)/.exec(line ?? '')?.[1]);
  if (!pid) throw new Error(`no task for container ${id} on ${node.name}: ${tasks.stdout}`);
  return pid;
}
