// The demo's cluster: a real local control plane with nodecare's CRDs, the real controller, Karpenter with its
// KWOK cloud provider (KWOK drives the nodes Karpenter launches: Ready, heartbeats, pods Running), one real
// agent per node Karpenter launches (a local process, as in the integration tests), the GPU node's extension
// endpoints, and the part of its kubelet that KWOK does not play: the device manager that counts the GPUs
// into the node's status (kubelet.ts). Everything it starts is tracked, so stop() ends all of it — also while
// things still start.

import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { API_GROUP, API_VERSION, SYSTEM_EXTENSION } from '../api/index.ts';
import {
  CPU_INSTANCE_TYPE,
  GPU_INSTANCE_TYPE,
  POOL_LABEL,
  createKarpenterObjects,
  startKarpenterStack,
  writeGpuInstanceTypes,
  type KarpenterStack,
} from '../test/autoscalers/karpenter.ts';
import { startControlPlane, type ControlPlane } from '../test/controlplane/controlplane.ts';
import { startProgram, type LogLine, type ProgramProcess } from '../test/integration/processes.ts';
import {
  devicePluginEndpoint,
  heartbeatFileEndpoint,
  httpEndpoint,
  type DevicePluginEndpoint,
  type Endpoint,
} from './endpoints.ts';
import { DeviceManager } from './kubelet.ts';

const ROOT = join(import.meta.dirname, '..');

/** A short heartbeat (the minimum), so a killed agent is noticed in seconds rather than 60 s. */
export const HEARTBEAT_SECONDS = 8;
const AGENT_ARGS = [
  `--heartbeat-duration-seconds=${HEARTBEAT_SECONDS}`,
  '--extension-renew-seconds=10',
  '--log-level=info',
];

/** The Karpenter NodePool (and KWOKNodeClass) of the demo; it lists nodecare's bootstrap taint in startupTaints. */
export const GPU_POOL = 'gpu';
/** The workload: one pod asking for a GPU. */
export const WORKLOAD = {
  namespace: 'default',
  name: 'gpu-workload',
  labels: { app: 'gpu-workload' },
} as const;
export const WORKLOAD_SELECTOR = `app=${WORKLOAD.labels.app}`;

/** A node Karpenter launched, with the agent the demo runs for it. */
export interface DemoNode {
  name: string;
  agent: ProgramProcess | undefined;
  /** When its agent last started (the extensions' startup grace runs from there). */
  agentStartedMs?: number;
  /** Whether the simulated kubelet posted the node's boot ID yet. */
  bootPosted?: boolean;
  /** The simulated kubelet's device manager (the GPU node's). */
  deviceManager?: DeviceManager;
}

/** What runs on the GPU node: its extensions' endpoints (one GPU node, so one set). */
export interface GpuNodeEndpoints {
  kubeProxy: Endpoint;
  logAgent: Endpoint;
  devicePlugin: DevicePluginEndpoint;
  all: Endpoint[];
}

export class DemoCluster {
  plane: ControlPlane | undefined;
  controller: ProgramProcess | undefined;
  autoscaler: KarpenterStack | undefined;
  /** A kubectl for this demo's cluster: a script running the bundled kubectl with the admin kubeconfig. */
  kubectlPath = '';
  readonly nodes: DemoNode[] = [];
  endpoints: GpuNodeEndpoints | undefined;
  protected dir = '';
  protected core: CoreV1Api | undefined;
  protected custom: CustomObjectsApi | undefined;
  protected readonly programs = new Set<ProgramProcess>();
  protected stopped = false;
  private starting: Promise<ControlPlane> | undefined;
  private startingAutoscaler: Promise<KarpenterStack> | undefined;

  /** Starts the control plane and applies nodecare's namespaces and CRDs. */
  async start(log: (line: string) => void): Promise<ControlPlane> {
    this.dir = await mkdtemp(join(tmpdir(), 'nodecare-demo-'));
    this.starting = startControlPlane({ log });
    const plane = await this.starting;
    this.plane = plane;
    if (this.stopped) throw new Error('stopped while the control plane was starting');
    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    const base = join(ROOT, 'manifests', 'base');
    const manifests = ['namespaces.yaml', 'crds'].flatMap((file) => ['-f', join(base, file)]);
    await this.kubectl(['apply', '--server-side', ...manifests]);
    await this.kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/systemextensions.nodecare.io',
      'crd/clusterhealths.nodecare.io',
    ]);
    this.kubectlPath = join(this.dir, 'kubectl');
    const quote = (text: string): string => `'${text.replaceAll("'", `'\\''`)}'`;
    // kubectl-nodecare on the wrapper's PATH, so `$K nodecare status` runs this checkout's plugin; the
    // kubeconfig goes in KUBECONFIG because kubectl takes no flags before a plugin's name.
    const bin = join(this.dir, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(
      join(bin, 'kubectl-nodecare'),
      `#!/bin/sh\nexec ${quote(process.execPath)} ${quote(join(ROOT, 'cli', 'main.ts'))} "$@"\n`,
      { mode: 0o755 },
    );
    await writeFile(
      this.kubectlPath,
      `#!/bin/sh\nexport KUBECONFIG=${quote(plane.kubeconfigPath)}\nexport PATH=${quote(bin)}:"$PATH"\n` +
        `exec ${quote(join(plane.binDir, 'kube-testenv'))} kubectl "$@"\n`,
      { mode: 0o755 },
    );
    return plane;
  }

  private async kubectl(args: string[]): Promise<void> {
    if (!this.plane) throw new Error('the control plane is not running');
    const result = await this.plane.kubectl(args);
    if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${result.stderr.trim()}`);
  }

  get kubeconfigPath(): string {
    if (!this.plane) throw new Error('the control plane is not running');
    return this.plane.kubeconfigPath;
  }

  protected clients(): { core: CoreV1Api; custom: CustomObjectsApi } {
    if (!this.core || !this.custom) throw new Error('the control plane is not running');
    return { core: this.core, custom: this.custom };
  }

  protected track(program: ProgramProcess): ProgramProcess {
    this.programs.add(program);
    void program.exited.then(() => this.programs.delete(program));
    if (this.stopped) void program.stop(5_000);
    return program;
  }

  /**
   * Starts KWOK and Karpenter (KWOK provider, offering a CPU and a GPU instance type) and creates the GPU
   * NodePool with nodecare's bootstrap taint in its startupTaints. `onExit` is called if either process ends
   * while the demo runs.
   */
  async startAutoscaler(
    onExit: (message: string) => void,
    log: (line: string) => void,
  ): Promise<KarpenterStack> {
    this.startingAutoscaler = (async () => {
      const instanceTypesFile = await writeGpuInstanceTypes(this.dir);
      return startKarpenterStack({
        kubeconfig: this.kubeconfigPath,
        logDir: join(this.dir, 'logs'),
        kubectl: (args) => this.kubectl(args),
        instanceTypesFile,
        log,
      });
    })();
    const stack = await this.startingAutoscaler;
    this.autoscaler = stack;
    if (this.stopped) throw new Error('stopped while the autoscaler was starting');
    for (const tool of [stack.kwok, stack.karpenter])
      void tool.exited.then(async (how) => {
        if (!this.stopped)
          onExit(`${tool.name} ${how}; the last lines of its log:\n${await tool.logTail(15)}`);
      });
    await createKarpenterObjects(this.clients().custom, GPU_POOL, {
      startupTaint: true,
      instanceTypes: [CPU_INSTANCE_TYPE, GPU_INSTANCE_TYPE],
    });
    return stack;
  }

  /**
   * Starts nodecare-controller (one replica, no leader election) and waits until it runs; `extraArgs` narrow
   * it (the existing-cluster demo's --node-selector).
   */
  async startController(extraArgs: string[] = []): Promise<void> {
    const controller = this.track(
      startProgram('controller', [
        `--kubeconfig=${this.kubeconfigPath}`,
        '--health-port=0',
        '--health-address=127.0.0.1',
        '--log-level=info',
        '--no-leader-elect',
        '--identity=nodecare-demo-controller',
        ...extraArgs,
      ]),
    );
    this.controller = controller;
    await controller.waitForLog('Started nodecare-controller', 60_000);
  }

  /**
   * The GPU node's extensions, registered for the NodePool's nodes with SystemExtensions (as a cluster admin
   * would): kube-proxy and a logging agent on every node, the GPU device plugin on the GPU pool's nodes.
   * The endpoints are created, not started: they come up when the node boots.
   */
  async registerExtensions(): Promise<GpuNodeEndpoints> {
    const { custom } = this.clients();
    const dir = join(this.dir, 'node');
    await mkdir(dir, { recursive: true });
    const endpoints: GpuNodeEndpoints = {
      kubeProxy: await httpEndpoint('kube-proxy'),
      logAgent: heartbeatFileEndpoint('log-agent', dir),
      devicePlugin: devicePluginEndpoint('gpu-plugin', dir),
      all: [],
    };
    endpoints.all = [endpoints.kubeProxy, endpoints.logAgent, endpoints.devicePlugin];
    this.endpoints = endpoints;
    const selectors = this.extensionSelectors();
    for (const endpoint of endpoints.all) {
      const nodeSelector = endpoint === endpoints.devicePlugin ? selectors.gpu : selectors.every;
      await custom.createClusterCustomObject({
        group: API_GROUP,
        version: API_VERSION,
        plural: SYSTEM_EXTENSION.plural,
        body: {
          apiVersion: `${API_GROUP}/${API_VERSION}`,
          kind: SYSTEM_EXTENSION.kind,
          metadata: { name: endpoint.name },
          spec: { nodeSelector, ...endpoint.spec },
        },
      });
    }
    return endpoints;
  }

  /** The nodes the SystemExtensions select: every node, and the GPU pool's for the device plugin. */
  protected extensionSelectors(): { every: object; gpu: object } {
    return { every: {}, gpu: { matchLabels: { [POOL_LABEL]: GPU_POOL } } };
  }

  /** The workload: a pod asking for one `nvidia.com/gpu`, which only the GPU instance type offers. */
  async createWorkload(): Promise<void> {
    await this.clients().core.createNamespacedPod({
      namespace: WORKLOAD.namespace,
      body: {
        metadata: { name: WORKLOAD.name, labels: { ...WORKLOAD.labels } },
        spec: {
          terminationGracePeriodSeconds: 0,
          containers: [
            {
              name: 'cuda',
              // Never pulled: KWOK runs the pods of its nodes without a container runtime.
              image: 'registry.invalid/cuda-workload:1',
              resources: {
                requests: { cpu: '1', 'nvidia.com/gpu': '1' },
                limits: { 'nvidia.com/gpu': '1' },
              },
            },
          ],
        },
      },
    });
  }

  /** A node appeared: the demo runs its agent (as the agent DaemonSet would schedule a pod on it). */
  adopt(name: string): DemoNode {
    const known = this.nodes.find((n) => n.name === name);
    if (known) return known;
    const node: DemoNode = { name, agent: undefined };
    this.nodes.push(node);
    return node;
  }

  /** Starts the node's agent and waits until it serves. */
  async startAgent(node: DemoNode): Promise<void> {
    const agent = this.track(
      startProgram(
        'agent',
        [
          `--kubeconfig=${this.kubeconfigPath}`,
          `--node-name=${node.name}`,
          '--health-port=0',
          '--health-address=127.0.0.1',
          `--allowed-path=${this.dir}`,
          ...AGENT_ARGS,
        ],
        { POD_NAME: `nodecare-agent-${node.name}` },
      ),
    );
    node.agent = agent;
    node.agentStartedMs = Date.now();
    await agent.waitForLog('Started nodecare-agent', 60_000);
    if (!node.bootPosted) {
      await agent.waitForLog('Registered extension', 30_000);
      await this.postBootId(node);
    }
  }

  /**
   * The simulated kubelet reports its node's boot ID (KWOK leaves it empty). The agent starts each
   * extension's startup grace at the node's boot (docs/agent.md, "Startup grace"), which it takes from the
   * machine's uptime — for the demo's simulated node that is the host's boot, long past. A boot ID it sees
   * appear starts the grace afresh, so the node gets its grace from its (simulated) boot: a normal boot shows
   * Progressing, not ✗.
   */
  private async postBootId(node: DemoNode): Promise<void> {
    await this.clients().core.patchNodeStatus(
      { name: node.name, body: { status: { nodeInfo: { bootID: randomUUID() } } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    node.bootPosted = true;
  }

  /**
   * The GPU node's kubelet, as far as the demo plays it: its device manager (kubelet.ts), writing the
   * plugin's GPUs to the node's status subresource, a strategic merge patch of `capacity` and `allocatable`
   * for the plugin's resource. Resolves once it has zeroed them (a kubelet's start); from then on they follow
   * the plugin.
   */
  async startKubelet(node: DemoNode, say: (line: string) => void): Promise<void> {
    const plugin = this.endpoints?.devicePlugin;
    if (!plugin) throw new Error("the GPU node's extensions are not registered");
    const { core } = this.clients();
    const manager = new DeviceManager({
      socket: plugin.socket,
      write: async ({ capacity, allocatable }) => {
        await core.patchNodeStatus(
          {
            name: node.name,
            body: {
              status: {
                capacity: { [plugin.resource]: String(capacity) },
                allocatable: { [plugin.resource]: String(allocatable) },
              },
            },
          },
          setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
        );
      },
      say: (line) => say(`kubelet on ${node.name} (played by the demo): ${plugin.resource} ${line}`),
    });
    node.deviceManager = manager;
    if (this.stopped) manager.stop();
    await manager.start();
  }

  /** SIGKILL, as when the agent's pod is lost: it writes nothing more, its leases simply stop renewing. */
  async killAgent(node: DemoNode): Promise<void> {
    const agent = node.agent;
    node.agent = undefined;
    await agent?.kill();
  }

  /** The last log lines of the controller, the agents and Karpenter, for a report when something did not happen. */
  async recentLogs(lines = 8): Promise<string[]> {
    const format = (who: string, log: LogLine): string => {
      const {
        level,
        msg,
        time: _t,
        pid: _p,
        hostname: _h,
        component: _c,
        name: _n,
        identity: _i,
        ...rest
      } = log;
      const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
      return `  ${who} ${String(level)} ${msg}${extra}`;
    };
    const out: string[] = [];
    const add = (who: string, program: ProgramProcess | undefined): void => {
      if (!program) return;
      for (const log of program.logs.slice(-lines)) out.push(format(who, log));
      for (const line of program.stderr.slice(-lines)) out.push(`  ${who} stderr ${line}`);
    };
    add('controller', this.controller);
    for (const node of this.nodes) add(`agent/${node.name}`, node.agent);
    if (this.autoscaler) {
      const karpenter = await this.autoscaler.karpenter.logTail(lines);
      for (const line of karpenter.split('\n')) out.push(`  karpenter ${line}`);
    }
    return out;
  }

  /** Stops Karpenter, agents and controller (SIGTERM, then SIGKILL), KWOK, the endpoints and the control plane. */
  async stop(): Promise<void> {
    this.stopped = true;
    const autoscaler = this.autoscaler ?? (await this.startingAutoscaler?.catch(() => undefined));
    await autoscaler?.karpenter.stop();
    for (const node of this.nodes) node.deviceManager?.stop();
    await Promise.all([...this.programs].map((p) => p.stop(5_000)));
    await autoscaler?.kwok.stop();
    await Promise.all((this.endpoints?.all ?? []).map((e) => e.stop().catch(() => undefined)));
    // A control plane still starting is stopped once it is up (it takes a few seconds when already built).
    const plane = this.plane ?? (await this.starting?.catch(() => undefined));
    await plane?.stop();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  /** Last resort on exit: no child process outlives the demo. */
  killNow(): void {
    for (const program of this.programs) program.child.kill('SIGKILL');
    for (const tool of [this.autoscaler?.karpenter, this.autoscaler?.kwok]) tool?.child.kill('SIGKILL');
  }
}
