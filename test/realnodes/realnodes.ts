// Real test nodes: upstream kubelets with their own containerd, joined to the local test control plane
// (../controlplane), on one machine without Docker or systemd. Parts come from build.sh (cached by version).
//
// What a node is here. Each node is a set of namespaces held open by a `sleep` process ("the holder"):
// - a mount namespace (private propagation) in which the node's own directories are bind-mounted over /run,
//   /var/lib and /var/log, so its containerd and kubelet run with the default paths (/run/containerd,
//   /var/lib/kubelet, /var/lib/kubelet/device-plugins, /var/log/pods, /var/lib/cni) and a DaemonSet's hostPath
//   (/var/lib/kubelet/plugins_registry, /run/nodecare, ...) means THIS node's directory; a test reaches them on
//   the real filesystem through `node.hostPath()`. Three sysctl files the kubelet insists on changing
//   (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops) are shadowed there by files holding the values
//   it wants, so the host's kernel settings are never changed;
// - a network namespace: the node's "host network". hostNetwork pods of different nodes (nodecare's agent on
//   its health port, a stand-in CNI agent) would otherwise collide on one port, and probes of the node's
//   loopback would see another node's;
// - a UTS namespace with the node's name as hostname.
// Every process of a node (holder, containerd, its shims, kubelet, every container) lives in one cgroup subtree
// (`nodecare-realnodes-s<slot>-<n>`: the kubelet's cgroupRoot, with containerd and the kubelet in `system`), which
// is how teardown and the cleanup after a killed run find them: freeze, kill everything in it, remove it.
//
// Networking, without kube-proxy and with documentation addresses only (slot s = 0 or 1, node n = 0..3):
// - the API server binds 203.0.113.(128s+1):443 on `lo`, the first address of the service CIDR
//   203.0.113.(128s)/25, so the `kubernetes` Service's ClusterIP:443 (what the kubelet injects into pods as
//   KUBERNETES_SERVICE_HOST/PORT) is the API server itself: in-cluster config works with no service proxy.
//   Other Services' ClusterIPs lead nowhere (nodecare's pods do not need them);
// - node n has 198.51.100.(128s+10+n)/32 on `eth0`, one end of a veth pair whose other end (`ncs<s>n<n>`) stays
//   in the root namespace with a /32 route to it; the node's default route is that link, so it reaches the API
//   server (a local address of the root namespace) and the API server reaches its kubelet (logs, exec);
// - pods that are not hostNetwork sit on a bridge `cni0` inside the node's namespace (Debian's bridge +
//   host-local CNI plugins), in 198.51.100.(128s+16(n+1))/28, routed by the root namespace through the node's
//   IP. (Not 192.0.2.0/24: this kind of machine has its own eth0 there; claimSlot refuses ranges that overlap
//   the host's own networks.)
//   No NAT, no iptables (not installed here), no forwarding in the root namespace: pods reach the API
//   server and their own node; pod-to-pod across nodes is not provided.
// Nothing is reachable beyond this machine: the root namespace does not forward.
//
// Two runs can share the machine (slots 0 and 1). A slot directory records its owner (pid + start time) and
// what it made; the next run cleans a slot whose owner is dead, and only that.

import { randomUUID } from 'node:crypto';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, rmdir, writeFile, open } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import {
  startControlPlane,
  type ControlPlane,
  type ControlPlaneOptions,
} from '../controlplane/controlplane.ts';
import { writeOciArchive } from './oci.ts';

const HERE = import.meta.dirname;
const execFileAsync = promisify(execFile);
/** Where slots live (node state, containerd content): on disk, not /dev/shm (images are unpacked there). */
const ROOT = process.env.NODECARE_REALNODES_DIR ?? '/var/tmp/nodecare-realnodes';
const SLOTS = 2;
const MAX_NODES = 4;
const CGROUP_FS = '/sys/fs/cgroup';
export const PAUSE_IMAGE = 'localhost/nodecare-pause:1';
const READY_TIMEOUT_MS = 240_000;

export class RealNodeError extends Error {
  constructor(step: string, message: string) {
    super(`real nodes ${step}: ${message}`);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Parts

export interface NodeParts {
  dir: string;
  kubelet: string;
  containerd: string;
  ctr: string;
  runc: string;
  /** Directory holding the shim, runc and ctr (on containerd's PATH). */
  binDir: string;
  cniBinDir: string;
  /** OCI archive of the pause image (PAUSE_IMAGE). */
  pauseArchive: string;
  /** The static in-cluster client (incluster/main.go), to put into test images. */
  incluster: string;
  /** The test workloads (testbin/main.go: device plugin, readiness stand-in, pause), to put into test images. */
  testbin: string;
}

/** Builds (or reuses) the node parts with build.sh and the pause image archive; progress goes to `log`. */
export async function ensureNodeParts(log: (line: string) => void = defaultLog): Promise<NodeParts> {
  const dir = await new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [join(HERE, 'build.sh')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      for (const line of d.toString().split('\n')) if (line.trim()) log(line);
    });
    child.on('error', (err) => reject(new RealNodeError('build', err.message)));
    child.on('close', (code) => {
      const out = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && out && existsSync(join(out, 'bin', 'kubelet'))) return resolve(out);
      reject(new RealNodeError('build', `build.sh exited ${code}\n${tail(stderr, 30)}`));
    });
  });
  const pauseArchive = join(dir, 'pause.oci.tar');
  // Written by the first caller; writeOciArchive renames into place, so a concurrent reader never sees half.
  if (!existsSync(pauseArchive)) {
    await writeOciArchive(pauseArchive, {
      ref: PAUSE_IMAGE,
      files: [{ path: '/pause', source: join(dir, 'pause'), mode: 0o755 }],
      entrypoint: ['/pause'],
    });
    log(`[realnodes] pause image ${PAUSE_IMAGE} written to ${pauseArchive}`);
  }
  const bin = join(dir, 'bin');
  return {
    dir,
    kubelet: join(bin, 'kubelet'),
    containerd: join(bin, 'containerd'),
    ctr: join(bin, 'ctr'),
    runc: join(bin, 'runc'),
    binDir: bin,
    cniBinDir: join(dir, 'cni'),
    pauseArchive,
    incluster: join(dir, 'incluster'),
    testbin: join(dir, 'testbin'),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Slots: addresses, ownership, cleanup of dead runs

interface NodeRecord {
  name: string;
  index: number;
  dir: string;
  cgroup: string;
  hostVeth: string;
  ip: string;
  podCIDR: string;
}

interface SlotState {
  slot: number;
  owner: { pid: number; start: string };
  apiAddress: string;
  nodes: NodeRecord[];
}

export interface Slot {
  index: number;
  dir: string;
  apiAddress: string;
  serviceCIDR: string;
  state: SlotState;
  save(): Promise<void>;
  /** Removes everything the slot holds (nodes, address, directory). */
  release(): Promise<void>;
}

function slotAddresses(slot: number): { apiAddress: string; serviceCIDR: string } {
  return { apiAddress: `203.0.113.${128 * slot + 1}`, serviceCIDR: `203.0.113.${128 * slot}/25` };
}

function nodeAddresses(slot: number, index: number): { ip: string; podCIDR: string; gateway: string } {
  const pod = 128 * slot + 16 * (index + 1);
  return {
    ip: `198.51.100.${128 * slot + 10 + index}`,
    podCIDR: `198.51.100.${pod}/28`,
    gateway: `198.51.100.${pod + 1}`,
  };
}

/** The ranges a slot uses: its nodes' and pods' addresses, and its service CIDR (the API server's address). */
function slotRanges(slot: number): string[] {
  return [`198.51.100.${128 * slot}/25`, slotAddresses(slot).serviceCIDR];
}

const toInt = (address: string): number => address.split('.').reduce((n, o) => n * 256 + Number(o), 0) >>> 0;

function overlaps(a: string, b: string): boolean {
  const [ba, la] = a.split('/');
  const [bb, lb] = b.split('/');
  const bits = Math.min(Number(la ?? 32), Number(lb ?? 32));
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (toInt(ba!) & mask) >>> 0 === (toInt(bb!) & mask) >>> 0;
}

/**
 * The host's own networks (interface addresses with their prefixes) that a slot's ranges would shadow; the
 * slot's own API server address on `lo` is not counted. Some machines put their own network in a
 * documentation range (one of ours used 192.0.2.0/24 on eth0): a node or pod address there would capture the
 * host's traffic.
 */
async function hostConflicts(slot: number): Promise<string[]> {
  const { stdout } = await execFileAsync('ip', ['-j', '-4', 'addr', 'show']);
  const links = JSON.parse(stdout) as {
    ifname: string;
    addr_info?: { local: string; prefixlen: number }[];
  }[];
  const own = new Set([0, 1].map((s) => slotAddresses(s).apiAddress));
  const conflicts: string[] = [];
  for (const link of links) {
    if (/^ncs\d+n\d+$/.test(link.ifname)) continue; // a node of ours (this or a dead run's slot)
    for (const a of link.addr_info ?? []) {
      if (link.ifname === 'lo' && own.has(a.local)) continue;
      const net = `${a.local}/${a.prefixlen}`;
      for (const range of slotRanges(slot))
        if (overlaps(net, range)) conflicts.push(`${net} on ${link.ifname}`);
    }
  }
  return conflicts;
}

async function processStart(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

async function ownerAlive(state: SlotState | undefined): Promise<boolean> {
  if (!state) return false;
  return (await processStart(state.owner.pid)) === state.owner.start;
}

async function readState(dir: string): Promise<SlotState | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as SlotState;
  } catch {
    return undefined;
  }
}

/**
 * Cleans every slot whose owner is dead (what a killed run left) and claims a free one for this process,
 * adding its API server address on `lo`.
 */
export async function claimSlot(log: (line: string) => void = defaultLog): Promise<Slot> {
  if (process.getuid?.() !== 0) throw new RealNodeError('claim', 'real nodes need root');
  await mkdir(ROOT, { recursive: true, mode: 0o700 });
  const owner = { pid: process.pid, start: (await processStart(process.pid)) ?? '' };
  const busy: string[] = [];
  for (let index = 0; index < SLOTS; index++) {
    const dir = join(ROOT, `slot-${index}`);
    if (existsSync(dir)) {
      const previous = await readState(dir);
      if (await ownerAlive(previous)) {
        busy.push(`slot ${index} (pid ${previous?.owner.pid})`);
        continue;
      }
      log(`[realnodes] cleaning what a dead run left in slot ${index} (${dir})`);
      await cleanSlot(dir, previous, index);
    }
  }
  for (let index = 0; index < SLOTS; index++) {
    const dir = join(ROOT, `slot-${index}`);
    try {
      await mkdir(dir, { mode: 0o700 }); // atomic: the first of two racing runs wins
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    const { apiAddress, serviceCIDR } = slotAddresses(index);
    const conflicts = await hostConflicts(index);
    if (conflicts.length > 0) {
      await rm(dir, { recursive: true, force: true });
      throw new RealNodeError(
        'claim',
        `slot ${index}'s addresses (${slotRanges(index).join(', ')}) overlap this machine's own network: ${conflicts.join(', ')}`,
      );
    }
    const state: SlotState = { slot: index, owner, apiAddress, nodes: [] };
    const save = (): Promise<void> => writeFile(join(dir, 'state.json'), JSON.stringify(state, null, 2));
    await save();
    await ip(['addr', 'replace', `${apiAddress}/32`, 'dev', 'lo']);
    await ip(['link', 'set', 'lo', 'up']);
    log(`[realnodes] slot ${index}: API server address ${apiAddress} on lo, service CIDR ${serviceCIDR}`);
    return {
      index,
      dir,
      apiAddress,
      serviceCIDR,
      state,
      save,
      release: () => cleanSlot(dir, state, index),
    };
  }
  throw new RealNodeError('claim', `no free slot: ${busy.join(', ')} in use by live runs`);
}

/** Removes a slot: the processes in its nodes' cgroups, their veths and cgroups, its address, its directory. */
async function cleanSlot(dir: string, state: SlotState | undefined, index: number): Promise<void> {
  const nodes: NodeRecord[] = [...(state?.nodes ?? [])];
  // A run killed before it recorded a node still named its cgroups and veths after the slot: find those too.
  for (let n = 0; n < MAX_NODES; n++) {
    if (!nodes.some((r) => r.index === n))
      nodes.push({
        ...nodeRecordNames(index, n),
        name: `#${n}`,
        index: n,
        dir: '',
        ...nodeAddresses(index, n),
      });
  }
  for (const node of nodes) await destroyNode(node);
  const { apiAddress } = slotAddresses(index);
  await ip(['addr', 'del', `${apiAddress}/32`, 'dev', 'lo']).catch(() => undefined);
  await unmountUnder(dir);
  await rm(dir, { recursive: true, force: true });
}

function nodeRecordNames(slot: number, index: number): { cgroup: string; hostVeth: string } {
  return { cgroup: `nodecare-realnodes-s${slot}-${index}`, hostVeth: `ncs${slot}n${index}` };
}

/** Kills every process of a node (by its cgroup), removes its veth and its cgroups. Idempotent. */
async function destroyNode(node: { cgroup: string; hostVeth: string }): Promise<void> {
  await killCgroup(node.cgroup);
  if (existsSync(`/sys/class/net/${node.hostVeth}`))
    await ip(['link', 'del', node.hostVeth]).catch(() => undefined);
  await removeCgroup(node.cgroup);
}

async function hierarchies(): Promise<string[]> {
  const entries = await readdir(CGROUP_FS).catch(() => [] as string[]);
  return entries.map((e) => join(CGROUP_FS, e)).filter((d) => existsSync(join(d, 'cgroup.procs')));
}

async function cgroupPids(cgroup: string): Promise<number[]> {
  const pids = new Set<number>();
  const walk = async (path: string): Promise<void> => {
    const procs = await readFile(join(path, 'cgroup.procs'), 'utf8').catch(() => '');
    for (const line of procs.split('\n')) if (line) pids.add(Number(line));
    const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory()) await walk(join(path, e.name));
  };
  for (const h of await hierarchies()) await walk(join(h, cgroup));
  return [...pids];
}

/** Freezes the subtree (so nothing forks while we kill), SIGKILLs every process in it, thaws, waits. */
async function killCgroup(cgroup: string): Promise<void> {
  const freezer = join(CGROUP_FS, 'freezer', cgroup, 'freezer.state');
  const deadline = Date.now() + 20_000;
  for (;;) {
    const pids = await cgroupPids(cgroup);
    if (pids.length === 0) return;
    const frozen =
      existsSync(freezer) &&
      (await writeFile(freezer, 'FROZEN').then(
        () => true,
        () => false,
      ));
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (frozen) await writeFile(freezer, 'THAWED').catch(() => undefined);
    if (Date.now() > deadline)
      throw new RealNodeError('teardown', `processes ${pids.join(' ')} in cgroup ${cgroup} will not die`);
    await sleep(100);
  }
}

async function removeCgroup(cgroup: string): Promise<void> {
  const remove = async (path: string): Promise<void> => {
    const entries = await readdir(path, { withFileTypes: true }).catch(() => undefined);
    if (!entries) return;
    for (const e of entries) if (e.isDirectory()) await remove(join(path, e.name));
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(path);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return;
        if (attempt > 50) throw new RealNodeError('teardown', `cannot remove cgroup ${path}: ${code}`);
        await sleep(100);
      }
    }
  };
  for (const h of await hierarchies()) await remove(join(h, cgroup));
}

/** Unmounts (lazily) anything still mounted under `dir` in this mount namespace. */
async function unmountUnder(dir: string): Promise<void> {
  const mounts = await mountsUnder(dir);
  for (const m of mounts.reverse()) await execFileAsync('umount', ['-l', m]).catch(() => undefined);
}

export async function mountsUnder(dir: string, pid: number | 'self' = 'self'): Promise<string[]> {
  const info = await readFile(`/proc/${pid}/mountinfo`, 'utf8').catch(() => '');
  return info
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((m): m is string => !!m && (m === dir || m.startsWith(`${dir}/`)));
}

// ---------------------------------------------------------------------------------------------------------
// A control plane for real nodes

export type RealNodeControlPlane = ControlPlane & { slot: Slot };

/** Claims a slot and starts the control plane with the real-node profile on the slot's address. */
export async function startRealNodeControlPlane(
  options: Omit<ControlPlaneOptions, 'realNodes'> & { nodeMonitorGracePeriod?: string } = {},
): Promise<RealNodeControlPlane> {
  const log = options.log ?? defaultLog;
  const slot = await claimSlot(log);
  try {
    const plane = await startControlPlane({
      ...options,
      realNodes: {
        address: slot.apiAddress,
        serviceCIDR: slot.serviceCIDR,
        nodeMonitorGracePeriod: options.nodeMonitorGracePeriod,
      },
    });
    const stop = plane.stop.bind(plane);
    return Object.assign(plane, {
      slot,
      async stop() {
        await stop();
        await slot.release();
      },
    });
  } catch (err) {
    await slot.release();
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Nodes

export interface NodeSpec {
  name: string;
  /** The kubelet's --register-with-taints, e.g. `nodecare.io/bootstrap=true:NoSchedule`. */
  registerWithTaints?: string[];
  labels?: Record<string, string>;
  /**
   * Image archives (oci.ts) in the node's containerd before its kubelet first starts: the images a new
   * machine has pre-pulled (its pods start at once instead of waiting on a pull that cannot happen here).
   */
  images?: string[];
}

export interface StartNodesOptions {
  /** Nodes named node-1..node-<count> (default 3), unless `nodes` names them. */
  count?: number;
  nodes?: NodeSpec[];
  /** Wait until every node is Ready and untainted by the node lifecycle controller (default true). */
  waitReady?: boolean;
  log?: (line: string) => void;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number;
}

export interface RealNode {
  name: string;
  /** The node's InternalIP (its "host network" address). */
  ip: string;
  /** The node's pod subnet (pods that are not hostNetwork). */
  podCIDR: string;
  /** The node's state directory on the real filesystem. */
  dir: string;
  /**
   * Where a path as the node sees it lives on the real filesystem: /run/..., /var/lib/... and /var/log/...
   * are the node's own (e.g. hostPath('/var/lib/kubelet/device-plugins')); any other path is the host's.
   */
  hostPath(path: string): string;
  /** Runs a command inside the node's mount, network and UTS namespaces (as root). */
  exec(command: string[], input?: string): Promise<ExecResult>;
  /** `ctr -n k8s.io <args>` against the node's containerd. */
  ctr(args: string[]): Promise<ExecResult>;
  /** Imports an OCI image archive (see oci.ts) into the node's containerd; throws if it imported nothing. */
  importImage(archive: string): Promise<void>;
  /** PID of the holder process whose namespaces are the node's (`nsenter -t <pid> -m -n -u`). */
  readonly holderPid: number;
  readonly kubeletPid: number | undefined;
  readonly containerdPid: number | undefined;
  stopKubelet(): Promise<void>;
  startKubelet(): Promise<void>;
  /** Stops the kubelet with SIGKILL and never starts it again (teardown still cleans the node). */
  killForGood(): Promise<void>;
  stopContainerd(): Promise<void>;
  startContainerd(): Promise<void>;
  /**
   * A reboot as far as we can make one: every process of the node dies (kubelet, containerd, shims,
   * containers), its namespaces and mounts go, /run is emptied; /var/lib (kubelet and containerd state,
   * images) stays; then containerd and the kubelet start again in fresh namespaces.
   */
  restart(): Promise<void>;
  /** Tears the node down: processes, namespaces, mounts, veth, cgroups, directory. */
  stop(): Promise<void>;
}

export interface RealNodes {
  nodes: RealNode[];
  parts: NodeParts;
  /** Waits until each named node (default: all) is Ready and without the not-ready/unreachable taints. */
  waitReady(names?: string[], timeoutMs?: number): Promise<void>;
  /** A further node joins the cluster now (a new machine booting), up to 4 nodes in all. */
  add(spec: NodeSpec): Promise<RealNode>;
  /** A node leaves for good: its machine is torn down and its Node object deleted. */
  remove(name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startNodes(
  plane: RealNodeControlPlane,
  options: StartNodesOptions = {},
): Promise<RealNodes> {
  const log = options.log ?? defaultLog;
  const pki = plane.realNodes;
  if (!pki) throw new RealNodeError('start', 'the control plane was not started with the realNodes profile');
  const specs =
    options.nodes ?? Array.from({ length: options.count ?? 3 }, (_, i) => ({ name: `node-${i + 1}` }));
  if (specs.length === 0 || specs.length > MAX_NODES)
    throw new RealNodeError('start', `between 1 and ${MAX_NODES} nodes, not ${specs.length}`);
  for (const spec of specs) checkNodeName(spec.name);
  if (new Set(specs.map((s) => s.name)).size !== specs.length)
    throw new RealNodeError('start', 'node names must be unique');
  const parts = await ensureNodeParts(log);
  const slot = plane.slot;
  const started = Date.now();
  const nodes: RealNode[] = [];
  const stopAll = async (): Promise<void> => {
    for (const node of [...nodes].reverse())
      await node.stop().catch((err: Error) => log(`[realnodes] ${err.message}`));
  };
  try {
    for (const [index, spec] of specs.entries()) {
      nodes.push(await createNode(plane, parts, slot, index, spec, log));
    }
    const handle: RealNodes = {
      nodes,
      parts,
      waitReady: (names, timeoutMs) =>
        waitNodesReady(plane, nodes, names, timeoutMs ?? READY_TIMEOUT_MS, log),
      async add(spec) {
        checkNodeName(spec.name);
        if (nodes.some((n) => n.name === spec.name))
          throw new RealNodeError('add', `node ${spec.name} exists already`);
        if (nodes.length >= MAX_NODES) throw new RealNodeError('add', `at most ${MAX_NODES} nodes`);
        const node = await createNode(plane, parts, slot, nodes.length, spec, log);
        nodes.push(node);
        return node;
      },
      async remove(name) {
        const node = nodes.find((n) => n.name === name);
        if (!node) throw new RealNodeError('remove', `no node ${name}`);
        await node.stop();
        nodes.splice(nodes.indexOf(node), 1);
        const deleted = await plane.kubectl(['delete', 'node', name, '--ignore-not-found']);
        if (deleted.code !== 0)
          throw new RealNodeError('remove', `kubectl delete node ${name}: ${deleted.stderr}`);
      },
      stop: stopAll,
    };
    if (options.waitReady !== false) {
      await handle.waitReady();
      log(`[realnodes] ${nodes.length} nodes Ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);
    }
    return handle;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

function checkNodeName(name: string): void {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name))
    throw new RealNodeError('start', `node name ${JSON.stringify(name)} is not a DNS label`);
}

async function createNode(
  plane: RealNodeControlPlane,
  parts: NodeParts,
  slot: Slot,
  index: number,
  spec: NodeSpec,
  log: (line: string) => void,
): Promise<RealNode> {
  const pki = plane.realNodes!;
  const { ip: nodeIP, podCIDR, gateway } = nodeAddresses(slot.index, index);
  const { cgroup, hostVeth } = nodeRecordNames(slot.index, index);
  const dir = join(slot.dir, 'nodes', spec.name);
  const record: NodeRecord = { name: spec.name, index, dir, cgroup, hostVeth, ip: nodeIP, podCIDR };
  slot.state.nodes.push(record);
  await slot.save();
  for (const sub of ['run', 'var-lib', 'var-log', 'sysctl', 'cni-net.d'])
    await mkdir(join(dir, sub), { recursive: true });
  // The values the kubelet wants (container_manager_linux.go setupKernelTunables), shadowing the host's.
  const sysctls: Record<string, string> = {
    'vm/overcommit_memory': '1',
    'kernel/panic': '10',
    'kernel/panic_on_oops': '1',
  };
  for (const [key, value] of Object.entries(sysctls))
    await writeFile(join(dir, 'sysctl', key.replace('/', '.')), `${value}\n`);

  const cert = await pki.issueClientCert(`node-${spec.name}`, `system:node:${spec.name}`, ['system:nodes']);
  const serverCa = await readFile(pki.serverCaPath, 'utf8');
  await writeFile(
    join(dir, 'kubelet.kubeconfig'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'local',
          cluster: {
            server: plane.server,
            'certificate-authority-data': Buffer.from(serverCa).toString('base64'),
          },
        },
      ],
      users: [{ name: 'kubelet', user: { 'client-certificate': cert.certPath, 'client-key': cert.keyPath } }],
      contexts: [{ name: 'local', context: { cluster: 'local', user: 'kubelet' } }],
      'current-context': 'local',
    }),
    { mode: 0o600 },
  );
  await writeFile(
    join(dir, 'kubelet.yaml'),
    JSON.stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      // This host: cgroup v1, no systemd, swap allowed.
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupRoot: `/${cgroup}`,
      failSwapOn: false,
      containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
      // Served on the node's own address; healthz on its own loopback (own network namespace).
      address: nodeIP,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      // The API server authenticates with its client certificate (this CA) and every request is authorized
      // by the API server (SubjectAccessReview), as on a kubeadm node.
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: pki.caCertPath },
      },
      authorization: { mode: 'Webhook' },
      // Inside the node's /var/lib (the default /usr/libexec/... would be created on the host).
      volumePluginDir: '/var/lib/kubelet/volumeplugins',
      resolvConf: '/etc/resolv.conf',
      // The disk is shared with builds: never garbage-collect the imported images (no registry to pull them
      // back from) and evict only when truly out of space.
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: {
        'memory.available': '100Mi',
        'nodefs.available': '1%',
        'imagefs.available': '1%',
        'nodefs.inodesFree': '1%',
      },
      // The pod subnet (/28) has 13 addresses for pods off the host network; host-network pods count too.
      maxPods: 16,
      clusterDomain: 'cluster.local',
    }),
  );
  await writeFile(
    join(dir, 'cni-net.d', '10-nodecare-test.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'nodecare-test',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          ipMasq: false,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: podCIDR, gateway }]],
            routes: [{ dst: '0.0.0.0/0' }],
          },
        },
      ],
    }),
  );
  await writeFile(
    join(dir, 'containerd.toml'),
    `version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
[grpc]
  address = "/run/containerd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # No CAP_SYS_RESOURCE here: never lower a container's oom_score_adj below containerd's own.
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "${parts.runc}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${parts.cniBinDir}"
    conf_dir = "${join(dir, 'cni-net.d')}"
`,
  );

  let holder: ChildProcess | undefined;
  let containerd: ChildProcess | undefined;
  let kubelet: ChildProcess | undefined;
  let deadForGood = false;
  const pathEnv = `${parts.binDir}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`;

  const nsenter = (): string[] => ['nsenter', '-t', String(holder?.pid), '-m', '-n', '-u', '--'];
  const exec = async (command: string[], input?: string): Promise<ExecResult> => {
    if (!holder?.pid || holder.exitCode !== null)
      throw new RealNodeError(spec.name, 'the node is not running');
    return run([...nsenter(), ...command], input, { PATH: pathEnv });
  };
  const must = async (what: string, command: string[]): Promise<string> => {
    const result = await exec(command);
    if (result.code !== 0)
      throw new RealNodeError(
        spec.name,
        `${what} failed (${result.code}): ${result.stderr || result.stdout}`,
      );
    return result.stdout;
  };

  /** sh that moves itself into the node's cgroup (pids, freezer) and then execs the command. */
  const inNodeCgroup = async (argv: string[]): Promise<string[]> => {
    const targets: string[] = [];
    for (const h of ['pids', 'freezer', 'memory', 'cpu', 'cpuacct', 'blkio', 'systemd']) {
      const path = join(CGROUP_FS, h, cgroup, 'system');
      if (existsSync(join(CGROUP_FS, h, 'cgroup.procs'))) {
        await mkdir(path, { recursive: true });
        targets.push(path);
      }
    }
    return [
      'sh',
      '-c',
      `for cg in ${targets.map((t) => `'${t}'`).join(' ')}; do echo $$ > "$cg/cgroup.procs" || exit 97; done; exec "$@"`,
      'sh',
      ...argv,
    ];
  };

  const launch = async (name: string, argv: string[]): Promise<ChildProcess> => {
    const out = await open(join(dir, `${name}.log`), 'a');
    const [cmd, ...args] = await inNodeCgroup(argv);
    const child = spawn(cmd!, args, {
      stdio: ['ignore', out.fd, out.fd],
      env: { ...process.env, PATH: pathEnv },
    });
    await out.close();
    child.on('error', () => undefined);
    return child;
  };

  const stopChild = async (
    child: ChildProcess | undefined,
    signal: NodeJS.Signals = 'SIGTERM',
  ): Promise<void> => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(killer);
  };

  const failWithLog = async (what: string, logName: string, message: string): Promise<never> => {
    const text = await readFile(join(dir, `${logName}.log`), 'utf8').catch(() => '');
    throw new RealNodeError(
      spec.name,
      `${what}: ${message}\n--- last lines of ${join(dir, `${logName}.log`)} ---\n${tail(text, 25)}`,
    );
  };

  const boot = async (): Promise<void> => {
    // The cgroup subtree: the kubelet's cgroupRoot must exist in every hierarchy; cpuset needs cpus and mems.
    for (const h of await hierarchies()) {
      await mkdir(join(h, cgroup), { recursive: true });
      if (h.endsWith('/cpuset')) {
        for (const f of ['cpuset.cpus', 'cpuset.mems'])
          await writeFile(join(h, cgroup, f), await readFile(join(h, f), 'utf8'));
      }
    }
    // /run is a tmpfs on a real node: empty at every boot.
    await rm(join(dir, 'run'), { recursive: true, force: true });
    await mkdir(join(dir, 'run'));
    holder = await launch('holder', [
      'unshare',
      '--mount',
      '--propagation',
      'private',
      '--net',
      '--uts',
      '--',
      'sleep',
      'infinity',
    ]);
    // unshare execs sleep in the same process once the namespaces exist; wait for that.
    const holderPid = holder.pid;
    if (!holderPid) throw new RealNodeError(spec.name, 'could not start the namespace holder (unshare)');
    const deadline = Date.now() + 10_000;
    for (;;) {
      const comm = (await readFile(`/proc/${holderPid}/comm`, 'utf8').catch(() => '')).trim();
      if (comm === 'sleep') break;
      if (holder.exitCode !== null || Date.now() > deadline)
        await failWithLog('start', 'holder', `unshare exited with ${holder.exitCode}`);
      await sleep(20);
    }
    // A boot ID of its own, new at every boot, as a machine has (the kubelet reports it as
    // status.nodeInfo.bootID; nodecare treats a new one as a reboot).
    await writeFile(join(dir, 'sysctl', 'boot_id'), `${randomUUID()}\n`);
    const binds = [
      ['run', '/run'],
      ['var-lib', '/var/lib'],
      ['var-log', '/var/log'],
    ];
    const script = [
      'set -e',
      ...binds.map(([from, to]) => `mount --bind '${join(dir, from!)}' '${to}'`),
      ...Object.keys(sysctls).map(
        (key) => `mount --bind '${join(dir, 'sysctl', key.replace('/', '.'))}' '/proc/sys/${key}'`,
      ),
      `mount --bind '${join(dir, 'sysctl', 'boot_id')}' /proc/sys/kernel/random/boot_id`,
      `hostname '${spec.name}'`,
      'ip link set lo up',
    ].join('\n');
    await must('mounts', ['sh', '-c', script]);
    // The node's link to the root namespace.
    await ip(['link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', String(holderPid)]);
    await ip(['link', 'set', hostVeth, 'up']);
    await must('node address', ['ip', 'addr', 'add', `${nodeIP}/32`, 'dev', 'eth0']);
    await must('node link', ['ip', 'link', 'set', 'eth0', 'up']);
    await must('node route', ['ip', 'route', 'add', 'default', 'dev', 'eth0']);
    await ip(['route', 'replace', `${nodeIP}/32`, 'dev', hostVeth, 'src', slot.apiAddress]);
    await ip(['route', 'replace', podCIDR, 'via', nodeIP, 'dev', hostVeth]);
    await startContainerd();
    await importImage(parts.pauseArchive);
    for (const archive of spec.images ?? []) await importImage(archive);
    await startKubelet();
  };

  const startContainerd = async (): Promise<void> => {
    if (containerd && containerd.exitCode === null && containerd.signalCode === null) return;
    containerd = await launch('containerd', [
      ...nsenter(),
      parts.containerd,
      '--config',
      join(dir, 'containerd.toml'),
    ]);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (containerd.exitCode !== null)
        await failWithLog('start containerd', 'containerd', `exited ${containerd.exitCode}`);
      const r = await exec([parts.ctr, '--address', '/run/containerd/containerd.sock', 'version']);
      if (r.code === 0) return;
      if (Date.now() > deadline) await failWithLog('start containerd', 'containerd', 'not serving after 30s');
      await sleep(200);
    }
  };

  const startKubelet = async (): Promise<void> => {
    if (deadForGood) throw new RealNodeError(spec.name, 'the kubelet was killed for good');
    if (kubelet && kubelet.exitCode === null && kubelet.signalCode === null) return;
    const labels = Object.entries(spec.labels ?? {}).map(([k, v]) => `${k}=${v}`);
    kubelet = await launch('kubelet', [
      ...nsenter(),
      parts.kubelet,
      `--config=${join(dir, 'kubelet.yaml')}`,
      `--kubeconfig=${join(dir, 'kubelet.kubeconfig')}`,
      `--hostname-override=${spec.name}`,
      `--node-ip=${nodeIP}`,
      ...(spec.registerWithTaints?.length
        ? [`--register-with-taints=${spec.registerWithTaints.join(',')}`]
        : []),
      ...(labels.length ? [`--node-labels=${labels.join(',')}`] : []),
      '--v=1',
    ]);
  };

  const importImage = async (archive: string): Promise<void> => {
    const before = await exec([
      parts.ctr,
      '--address',
      '/run/containerd/containerd.sock',
      '-n',
      'k8s.io',
      'images',
      'import',
      archive,
    ]);
    if (before.code !== 0)
      throw new RealNodeError(spec.name, `ctr images import ${archive}: ${before.stderr || before.stdout}`);
    if (!/unpacking /.test(before.stdout + before.stderr))
      throw new RealNodeError(
        spec.name,
        `ctr images import ${archive} imported nothing (an archive without the io.containerd.image.name annotation?)`,
      );
  };

  const shutdown = async (): Promise<void> => {
    await stopChild(kubelet, 'SIGKILL');
    await killCgroup(cgroup);
    if (existsSync(`/sys/class/net/${hostVeth}`)) await ip(['link', 'del', hostVeth]).catch(() => undefined);
    await removeCgroup(cgroup);
    holder = containerd = kubelet = undefined;
  };

  try {
    log(`[realnodes] starting ${spec.name}: ${nodeIP}, pods ${podCIDR}, dir ${dir}`);
    await boot();
  } catch (err) {
    await shutdown().catch(() => undefined);
    throw err;
  }

  return {
    name: spec.name,
    ip: nodeIP,
    podCIDR,
    dir,
    hostPath: (path) => hostPathOf(dir, path),
    exec,
    ctr: (args) => exec([parts.ctr, '--address', '/run/containerd/containerd.sock', '-n', 'k8s.io', ...args]),
    importImage,
    get holderPid() {
      return holder?.pid ?? 0;
    },
    get kubeletPid() {
      return kubelet?.exitCode === null ? kubelet.pid : undefined;
    },
    get containerdPid() {
      return containerd?.exitCode === null ? containerd.pid : undefined;
    },
    stopKubelet: () => stopChild(kubelet),
    startKubelet,
    async killForGood() {
      deadForGood = true;
      await stopChild(kubelet, 'SIGKILL');
    },
    stopContainerd: () => stopChild(containerd),
    startContainerd,
    async restart() {
      log(`[realnodes] rebooting ${spec.name}`);
      await shutdown();
      await boot();
    },
    async stop() {
      await shutdown();
      await rm(dir, { recursive: true, force: true });
      slot.state.nodes = slot.state.nodes.filter((r) => r !== record);
      await slot.save();
    },
  };
}

interface NodeJson {
  metadata: { name: string };
  spec: { taints?: { key: string; effect: string }[] };
  status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] };
}

async function waitNodesReady(
  plane: ControlPlane,
  nodes: RealNode[],
  names: string[] | undefined,
  timeoutMs: number,
  log: (line: string) => void,
): Promise<void> {
  const wanted = names ?? nodes.map((n) => n.name);
  const deadline = Date.now() + timeoutMs;
  let lastReport = Date.now();
  for (;;) {
    const result = await plane.kubectl(['get', 'nodes', '-o', 'json']);
    const items = result.code === 0 ? (JSON.parse(result.stdout) as { items: NodeJson[] }).items : [];
    const states = wanted.map((name) => {
      const node = items.find((n) => n.metadata.name === name);
      if (!node) return { name, ok: false, why: 'not registered' };
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      // The node lifecycle controller's taints: on at registration, or after a kubelet went silent.
      const lifecycleTaint = node.spec.taints?.find(
        (t) => t.key === 'node.kubernetes.io/not-ready' || t.key === 'node.kubernetes.io/unreachable',
      );
      if (ready?.status !== 'True')
        return { name, ok: false, why: `Ready=${ready?.status ?? '?'} (${ready?.message ?? ''})` };
      if (lifecycleTaint) return { name, ok: false, why: `Ready, ${lifecycleTaint.key} taint still on` };
      return { name, ok: true, why: 'Ready' };
    });
    const status = states.map((s) => `${s.name}: ${s.why}`).join('; ');
    if (states.every((s) => s.ok)) return;
    if (Date.now() > deadline) {
      const logs: string[] = [];
      for (const node of nodes.filter((n) => states.some((s) => s.name === n.name && !s.ok))) {
        const text = await readFile(join(node.dir, 'kubelet.log'), 'utf8').catch(() => '');
        logs.push(`--- last lines of ${join(node.dir, 'kubelet.log')} ---\n${tail(text, 15)}`);
      }
      throw new RealNodeError(
        'wait ready',
        `not Ready after ${timeoutMs / 1000}s: ${status}\n${logs.join('\n')}`,
      );
    }
    if (Date.now() - lastReport > 15_000) {
      log(`[realnodes] waiting for nodes: ${status}`);
      lastReport = Date.now();
    }
    await sleep(500);
  }
}

/** Where a path as a node sees it lives on the real filesystem (the node's /run, /var/lib, /var/log). */
export function hostPathOf(dir: string, path: string): string {
  for (const [prefix, sub] of [
    ['/var/run', 'run'],
    ['/run', 'run'],
    ['/var/lib', 'var-lib'],
    ['/var/log', 'var-log'],
  ] as const) {
    if (path === prefix || path.startsWith(`${prefix}/`)) return join(dir, sub, path.slice(prefix.length));
  }
  return path;
}

// ---------------------------------------------------------------------------------------------------------

async function ip(args: string[]): Promise<void> {
  try {
    await execFileAsync('ip', args);
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new RealNodeError('network', `ip ${args.join(' ')}: ${e.stderr?.trim() || e.message}`);
  }
}

function run(argv: string[], input: string | undefined, env: Record<string, string>): Promise<ExecResult> {
  return new Promise((resolve) => {
    const [cmd, ...args] = argv;
    const child = spawn(cmd!, args, {
      env: { ...process.env, ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => resolve({ stdout, stderr: stderr + err.message, code: 127 }));
    child.on('close', (code) => resolve({ stdout, stderr, code: code ?? 1 }));
    if (input !== undefined) {
      child.stdin!.on('error', () => undefined); // a command that does not read its input
      child.stdin!.end(input);
    }
  });
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function defaultLog(line: string): void {
  process.stderr.write(`${line}\n`);
}
