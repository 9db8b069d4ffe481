// The real-node harness itself: 3 upstream kubelets with containerd joined to the local control plane
// (global-setup.ts), pods on them from locally built images, in-cluster API access with kubelet-issued
// tokens, the node lifecycle controller, a reboot, and teardown (also of a killed run) leaving nothing behind.

import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { kubectl, realNodes, waitNodesReady } from './client.ts';
import { podReady, until } from './cluster.ts';
import { writeOciArchive } from './oci.ts';
import { PAUSE_IMAGE } from './realnodes.ts';

const notRun = inject('realNodesNotRun');
const NS = 'realnodes-test';

interface Pod {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { nodeName?: string; hostNetwork?: boolean };
  status: {
    phase?: string;
    podIP?: string;
    containerStatuses?: { containerID?: string }[];
    conditions?: { type: string; status: string }[];
  };
}

interface Node {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { taints?: { key: string; value?: string; effect: string }[] };
  status: {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

async function getNodes(): Promise<Node[]> {
  return (JSON.parse(await kubectl(['get', 'nodes', '-o', 'json'])) as { items: Node[] }).items;
}

async function getPods(selector: string): Promise<Pod[]> {
  return (
    JSON.parse(await kubectl(['get', 'pods', '-n', NS, '-l', selector, '-o', 'json'])) as { items: Pod[] }
  ).items;
}

function inCidr(ip: string, cidr: string): boolean {
  const toInt = (a: string): number => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);
  const [base, bits] = cidr.split('/');
  const mask = 2 ** 32 - 2 ** (32 - Number(bits));
  return (toInt(ip) & mask) >>> 0 === (toInt(base!) & mask) >>> 0;
}

function daemonSet(name: string, image: string, hostNetwork: boolean, args: string[] = []): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name, namespace: NS },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          hostNetwork,
          ...(hostNetwork ? { dnsPolicy: 'ClusterFirstWithHostNet' } : {}),
          // On every node, node-3's registration taint included.
          tolerations: [{ operator: 'Exists' }],
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'main', image, imagePullPolicy: 'Never', args }],
        },
      },
    },
  };
}

async function rolledOut(selector: string, count: number): Promise<Pod[]> {
  return until(`${count} ready pods ${selector}`, async () => {
    const pods = await getPods(selector);
    return pods.length === count && pods.every(podReady) ? pods : undefined;
  });
}

describe.skipIf(notRun !== '')(`real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`, () => {
  const nodes = notRun ? [] : realNodes();

  it('3 kubelets registered Ready with their IPs and labels, the not-ready taint gone, node-3 with its registration taint', async () => {
    const items = await getNodes();
    expect(items.map((n) => n.metadata.name).sort()).toEqual(['node-1', 'node-2', 'node-3']);
    for (const node of nodes) {
      const item = items.find((n) => n.metadata.name === node.name)!;
      expect(item.status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(item.status.addresses).toContainEqual({ type: 'InternalIP', address: node.ip });
      expect(item.metadata.labels?.['nodecare.test/node']).toBeDefined();
      const taints = item.spec.taints ?? [];
      expect(taints.map((t) => t.key)).not.toContain('node.kubernetes.io/not-ready');
      if (node.name === 'node-3')
        expect(taints).toContainEqual({
          key: 'nodecare.test/registered',
          value: 'true',
          effect: 'NoSchedule',
        });
      else expect(taints).toEqual([]);
    }
  });

  it('runs a hostNetwork and a pod-network pod on every node from the local pause image (DaemonSets)', async () => {
    await kubectl(['create', 'namespace', NS]);
    await until('the default ServiceAccount', async () =>
      (await kubectl(['get', 'serviceaccount', 'default', '-n', NS, '-o', 'name']).catch(() => ''))
        ? true
        : undefined,
    );
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [daemonSet('pause-host', PAUSE_IMAGE, true), daemonSet('pause-pod', PAUSE_IMAGE, false)],
      }),
    );
    const host = await rolledOut('app=pause-host', 3);
    const pod = await rolledOut('app=pause-pod', 3);
    for (const node of nodes) {
      const h = host.find((p) => p.spec.nodeName === node.name)!;
      const p = pod.find((x) => x.spec.nodeName === node.name)!;
      expect(h.status.podIP).toBe(node.ip);
      expect(inCidr(p.status.podIP!, node.podCIDR)).toBe(true);
      // The sandbox and the container are in this node's containerd, not another's.
      const listed = await node.ctr(['containers', 'ls', '-q']);
      expect(listed.stdout.trim().split('\n').length).toBeGreaterThanOrEqual(4);
    }
  });

  it("pods reach the API server through in-cluster config with the kubelet's projected token (node-name claim)", async () => {
    const dir = join(inject('realNodesSlotDir'), 'images');
    await mkdir(dir, { recursive: true });
    const archive = join(dir, 'incluster.oci.tar');
    const image = await writeOciArchive(archive, {
      ref: 'localhost/nodecare-incluster:test',
      files: [{ path: '/incluster', source: inject('realNodesIncluster'), mode: 0o755 }],
      entrypoint: ['/incluster'],
    });
    for (const node of nodes) {
      await node.importImage(archive);
      expect((await node.ctr(['images', 'ls', '-q'])).stdout.split('\n')).toContain(image.name);
    }
    await kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [daemonSet('incluster-pod', image.name, false), daemonSet('incluster-host', image.name, true)],
      }),
    );
    const pods = [
      ...(await rolledOut('app=incluster-pod', 3)),
      ...(await rolledOut('app=incluster-host', 3)),
    ];
    for (const pod of pods) {
      // The line comes over API server -> kubelet (logs), which proves that path too.
      const line = await until(`the answer of ${pod.metadata.name}`, async () => {
        const logs = await kubectl(['logs', '-n', NS, pod.metadata.name]);
        return logs.split('\n').find((l) => l.startsWith('{'));
      });
      const answer = JSON.parse(line) as {
        server: string;
        userInfo: { username: string; extra?: Record<string, string[]> };
      };
      expect(answer.server).toBe(`${inject('realNodesApiAddress')}:443`);
      expect(answer.userInfo.username).toBe(`system:serviceaccount:${NS}:default`);
      expect(answer.userInfo.extra?.['authentication.kubernetes.io/node-name']).toEqual([pod.spec.nodeName]);
    }
  });

  it('a stopped kubelet turns its node NotReady and unreachable (node lifecycle controller); started again, Ready', async () => {
    const node = nodes.find((n) => n.name === 'node-2')!;
    await node.stopKubelet();
    const item = await until('node-2 not ready', async () => {
      const n = (await getNodes()).find((x) => x.metadata.name === 'node-2')!;
      const ready = n.status.conditions?.find((c) => c.type === 'Ready');
      const unreachable = n.spec.taints?.some((t) => t.key === 'node.kubernetes.io/unreachable');
      return ready?.status === 'Unknown' && unreachable ? n : undefined;
    });
    expect(item.status.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('NodeStatusUnknown');
    await node.startKubelet();
    await waitNodesReady(['node-2']);
    const after = (await getNodes()).find((x) => x.metadata.name === 'node-2')!;
    expect((after.spec.taints ?? []).map((t) => t.key)).toEqual([]);
  });

  it('a reboot (every process of the node killed, /run emptied) brings the node and its pods back', async () => {
    const node = nodes.find((n) => n.name === 'node-1')!;
    const before = await node.pids();
    const containerIds = async (): Promise<string[]> =>
      (await getPods('app in (pause-pod, pause-host)'))
        .filter((p) => p.spec.nodeName === 'node-1' && podReady(p))
        .map((p) => p.status.containerStatuses?.[0]?.containerID ?? '');
    const oldIds = await containerIds();
    expect(oldIds).toHaveLength(2);
    const bootId = async (): Promise<string> =>
      (await kubectl(['get', 'node', 'node-1', '-o', 'jsonpath={.status.nodeInfo.bootID}'])).trim();
    const bootBefore = await bootId();
    expect(bootBefore).toMatch(/^[0-9a-f-]{36}$/);
    await node.exec(['sh', '-c', 'echo booted-before > /run/nodecare-marker']);
    expect(existsSync(node.hostPath('/run/nodecare-marker'))).toBe(true);
    await node.restart();
    const after = await node.pids();
    expect(after.kubelet).not.toBe(before.kubelet);
    expect(existsSync(node.hostPath('/run/nodecare-marker'))).toBe(false);
    // The kubelet found its pods' sandboxes gone and made new ones.
    await until('new containers for the pods of node-1', async () => {
      const ids = await containerIds();
      return ids.length === 2 && ids.every((id) => id && !oldIds.includes(id)) ? ids : undefined;
    });
    await waitNodesReady(['node-1']);
    // A new boot ID, as after a machine's reboot; the kubelet's own state survived on the node's /var/lib.
    await until('a new boot ID on node-1', async () => {
      const id = await bootId();
      return id !== bootBefore ? id : undefined;
    });
    expect(existsSync(node.hostPath('/var/lib/kubelet/pki'))).toBe(true);
  });

  it("a killed run's processes, mounts, addresses and cgroups are cleaned by the next run, and only those; a stopped run leaves nothing", async () => {
    const suitePids = await Promise.all(nodes.map((n) => n.pids()));
    const script = join(import.meta.dirname, 'one-cluster.ts');
    const startRun = async (): Promise<{
      child: ReturnType<typeof spawn>;
      info: { slotDir: string; apiAddress: string; kubeconfig: string; nodes: { pids: number[] }[] };
    }> => {
      const child = spawn(process.execPath, [script, '1'], { stdio: ['pipe', 'pipe', 'inherit'] });
      const lines = createInterface({ input: child.stdout! });
      const first = await new Promise<string>((resolve, reject) => {
        lines.once('line', resolve);
        child.once('exit', (code) => reject(new Error(`one-cluster.ts exited ${code} before it was up`)));
      });
      return { child, info: JSON.parse(first) };
    };
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };

    // A run killed with SIGKILL leaves its kubelet, containerd and control plane running.
    const dead = await startRun();
    const deadPids = dead.info.nodes.flatMap((n) => n.pids);
    const planeDir = dirname(dead.info.kubeconfig);
    const planePids = (await readFile(join(planeDir, 'pids'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map(Number);
    dead.child.kill('SIGKILL');
    await new Promise((resolve) => dead.child.once('exit', resolve));
    expect(deadPids.every(alive)).toBe(true);

    // The next run cleans exactly that, and takes the same slot.
    const next = await startRun();
    expect(next.info.slotDir).toBe(dead.info.slotDir);
    expect(deadPids.filter(alive)).toEqual([]);
    expect(planePids.filter(alive)).toEqual([]);
    expect(existsSync(planeDir)).toBe(false);
    // The suite's own nodes were not touched.
    expect(await Promise.all(nodes.map((n) => n.pids()))).toEqual(suitePids);

    // Stopped properly, it leaves nothing behind.
    const nextPids = next.info.nodes.flatMap((n) => n.pids);
    next.child.stdin!.end();
    expect(await new Promise((resolve) => next.child.once('exit', resolve))).toBe(0);
    expect(nextPids.filter(alive)).toEqual([]);
    expect(existsSync(next.info.slotDir)).toBe(false);
    const { stdout: lo } = await promisify(execFile)('ip', ['-4', 'addr', 'show', 'dev', 'lo']);
    expect(lo).not.toContain(`${next.info.apiAddress}/`);
    // The slot the second run had (1 when the suite has slot 0; 0 when another run held slot 0 at the suite's start).
    const slot = /slot-(\d+)$/.exec(next.info.slotDir)?.[1];
    expect(slot, next.info.slotDir).toBeDefined();
    expect(await readdir('/sys/class/net')).not.toContain(`ncs${slot}n0`);
    expect(
      (await readdir('/sys/fs/cgroup/pids')).filter((d) => d.startsWith(`nodecare-realnodes-s${slot}-`)),
    ).toEqual([]);
    for (const proc of (await readdir('/proc')).filter((p) => /^\d+$/.test(p))) {
      const info = await readFile(`/proc/${proc}/mountinfo`, 'utf8').catch(() => '');
      expect(info.includes(next.info.slotDir), `a mount under ${next.info.slotDir} in process ${proc}`).toBe(
        false,
      );
    }
    // And the suite still has its 3 nodes.
    await waitNodesReady();
  });
});
