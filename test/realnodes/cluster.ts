// What the real-node stories read and wait for: Nodes, Pods and Leases through the admin's kubectl, nodecare's
// view of a node (taints, condition, label) in one object, and an install as a user makes it (the image
// overridden, nothing else).

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  LEASE_NAMESPACE,
  NODE_CONDITION_TYPE,
  NODE_STATUS_LABEL,
} from '../../api/index.ts';
import { kubectl, type TestNode } from './client.ts';

export const ROOT = join(import.meta.dirname, '..', '..');
export const SYSTEM = 'nodecare-system';

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface Node {
  metadata: {
    name: string;
    creationTimestamp: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec: { taints?: { key: string; value?: string; effect: string; timeAdded?: string }[] };
  status: {
    conditions?: Condition[];
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    nodeInfo?: { bootID?: string };
  };
}

export interface Pod {
  metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string> };
  spec: { nodeName?: string };
  status: {
    phase?: string;
    conditions?: Condition[];
    containerStatuses?: { name: string; ready: boolean; restartCount: number; containerID?: string }[];
  };
}

export async function getJson<T>(args: string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, '-o', 'json'])) as T;
}

export async function getNode(name: string): Promise<Node> {
  return getJson<Node>(['get', 'node', name]);
}

export async function getPods(namespace: string, selector: string): Promise<Pod[]> {
  return (await getJson<{ items: Pod[] }>(['get', 'pods', '-n', namespace, '-l', selector])).items;
}

export const podReady = (pod: { status: Pick<Pod['status'], 'phase' | 'conditions'> }): boolean =>
  pod.status.phase === 'Running' &&
  !!pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/** nodecare's view of a node, in one line for messages: state label, condition, our taints. */
export interface NodecareView {
  label: string | undefined;
  condition: Condition | undefined;
  bootstrapTaint: boolean;
  runtimeTaint: boolean;
  ready: Condition | undefined;
}

export function viewOf(node: Node): NodecareView {
  const taints = node.spec.taints ?? [];
  return {
    label: node.metadata.labels?.[NODE_STATUS_LABEL],
    condition: node.status.conditions?.find((c) => c.type === NODE_CONDITION_TYPE),
    bootstrapTaint: taints.some((t) => t.key === BOOTSTRAP),
    runtimeTaint: taints.some((t) => t.key === RUNTIME),
    ready: node.status.conditions?.find((c) => c.type === 'Ready'),
  };
}

export function describeView(view: NodecareView): string {
  const taints = [view.bootstrapTaint && 'bootstrap', view.runtimeTaint && 'runtime'].filter(Boolean);
  return (
    `label=${view.label ?? '-'} ${NODE_CONDITION_TYPE}=${view.condition?.status ?? '-'}` +
    `/${view.condition?.reason ?? '-'} taints=[${taints.join(',')}] Ready=${view.ready?.status ?? '-'}`
  );
}

/** Polls `check` every `intervalMs` until it returns a value; the timeout message names `what`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined>,
  { timeoutMs = 180_000, intervalMs = 500 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs / 1000}s waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    await sleep(intervalMs);
  }
}

/** Waits until nodecare's view of `node` satisfies `want`; the timeout message shows the last view. */
export async function untilView(
  node: string,
  what: string,
  want: (view: NodecareView) => boolean,
  timeoutMs = 120_000,
): Promise<NodecareView> {
  let last: NodecareView | undefined;
  try {
    return await until(
      `${node}: ${what}`,
      async () => {
        last = viewOf(await getNode(node));
        return want(last) ? last : undefined;
      },
      { timeoutMs },
    );
  } catch (err) {
    throw new Error(`${(err as Error).message} (last seen: ${last ? describeView(last) : 'nothing'})`, {
      cause: err,
    });
  }
}

/**
 * Samples nodecare's view of `node` every 250 ms while `during` runs (and for `afterMs` after it), so a test
 * can prove something never happened (no flap), not only that the end state is right.
 */
export async function watchView(
  node: string,
  during: () => Promise<void>,
  afterMs = 0,
): Promise<NodecareView[]> {
  const seen: NodecareView[] = [];
  let done = false;
  const sampler = (async () => {
    while (!done) {
      seen.push(viewOf(await getNode(node)));
      await sleep(250);
    }
  })();
  try {
    await during();
    await sleep(afterMs);
  } finally {
    done = true;
    await sampler;
  }
  // One more view after `during` ended: the sampler may have slept through the change `during` waited for,
  // and the last view must be the node as `during` left it.
  seen.push(viewOf(await getNode(node)));
  return seen;
}

export const healthyView = (v: NodecareView): boolean =>
  v.label === 'healthy' && v.condition?.status === 'True' && !v.bootstrapTaint && !v.runtimeTaint;

export { applyShipped, kustomizationWithImage } from './install.ts';

/**
 * The ServiceAccount token the kubelet mounted into a pod. The kubelet keeps projected volumes on a tmpfs it
 * mounts in the node's mount namespace, so the file is read there.
 */
export async function podToken(node: TestNode, podUid: string): Promise<string> {
  const projected = `/var/lib/kubelet/pods/${podUid}/volumes/kubernetes.io~projected`;
  const found = await node.exec(['sh', '-c', `cat ${projected}/kube-api-access-*/token`]);
  if (found.code !== 0 || !found.stdout.trim())
    throw new Error(`no token in ${projected} on ${node.name}: ${found.stderr}`);
  return found.stdout.trim();
}

/** The claims of a JWT (not verified: the API server does that when the token is used). */
export function jwtClaims(token: string): Record<string, unknown> {
  const payload = token.split('.')[1];
  if (!payload) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Runs `command` with `args` (no shell) and resolves with its exit code and output; rejects if it cannot start. */
export function runCommand(
  command: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `kubectl nodecare …` from this checkout's sources, as the operator runs it. */
export function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return runCommand(process.execPath, [join(ROOT, 'cli', 'main.ts'), ...args]);
}

/** A Kubernetes object as the upstream manifests' tests read and edit them. */
export interface K8sObject {
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

/**
 * What an uninstall must leave (docs/install.md, "Uninstall"): on every Node no nodecare taint, label,
 * annotation or condition, and the kubelet's Ready untouched; no nodecare namespace, Lease, CRD or
 * cluster-wide object; and the kubelets of `nodes` still running.
 */
export async function expectNothingOfNodecareLeft(nodes: TestNode[]): Promise<void> {
  for (const n of (await getJson<{ items: Node[] }>(['get', 'nodes'])).items) {
    const view = viewOf(n);
    expect(view.bootstrapTaint || view.runtimeTaint, n.metadata.name).toBe(false);
    expect(view.label, n.metadata.name).toBeUndefined();
    expect(view.condition, n.metadata.name).toBeUndefined();
    const ours = Object.keys({ ...n.metadata.labels, ...n.metadata.annotations }).filter((k) =>
      /(^|\.)nodecare\.io\//.test(k),
    );
    expect(ours, n.metadata.name).toEqual([]);
    expect(view.ready?.status, n.metadata.name).toBe('True');
  }
  expect(await kubectl(['get', 'namespaces', '-o', 'name'])).not.toContain('nodecare-');
  expect(await kubectl(['get', 'leases', '-n', LEASE_NAMESPACE, '-o', 'name', '--ignore-not-found'])).toBe(
    '',
  );
  expect(await kubectl(['get', 'crd', '-o', 'name'])).not.toContain('nodecare.io');
  const leftovers = await kubectl([
    'get',
    'clusterroles,clusterrolebindings,validatingadmissionpolicies,flowschemas,prioritylevelconfigurations',
    '-o',
    'name',
  ]);
  expect(leftovers).not.toContain('nodecare');
  for (const node of nodes) expect((await node.pids()).kubelet, node.name).toBeGreaterThan(0);
}
