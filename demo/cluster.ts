// The demo's cluster: a real local control plane with nodecare's CRDs, the real controller and one real agent
// per simulated node (local processes, as in the integration tests), and each node's extension endpoints.
// Everything it starts is tracked, so stop() ends all of it — also when it is called while things still start.

import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { EXTENSION_ANNOTATION_PREFIX } from '../api/index.ts';
import { startControlPlane, type ControlPlane } from '../test/controlplane/controlplane.ts';
import { startProgram, type LogLine, type ProgramProcess } from '../test/integration/processes.ts';
import { devicePluginEndpoint, heartbeatFileEndpoint, httpEndpoint, type Endpoint } from './endpoints.ts';

const ROOT = join(import.meta.dirname, '..');

/** A short heartbeat (the minimum), so a killed agent is noticed in seconds rather than 40 s. */
export const HEARTBEAT_SECONDS = 8;
const AGENT_ARGS = [
  `--heartbeat-duration-seconds=${HEARTBEAT_SECONDS}`,
  '--extension-renew-seconds=10',
  '--log-level=info',
];

export interface SimulatedNode {
  name: string;
  endpoints: Endpoint[];
  agent: ProgramProcess | undefined;
  /** When its agent last started (the extensions' startup grace runs from there). */
  agentStartedMs?: number;
  /** Whether the simulated kubelet posted the node's boot ID yet. */
  bootPosted?: boolean;
}

export class DemoCluster {
  plane: ControlPlane | undefined;
  controller: ProgramProcess | undefined;
  /** A kubectl for this demo's cluster: a script running the bundled kubectl with the admin kubeconfig. */
  kubectlPath = '';
  readonly nodes: SimulatedNode[] = [];
  private dir = '';
  private core: CoreV1Api | undefined;
  private readonly programs = new Set<ProgramProcess>();
  private stopped = false;
  private starting: Promise<ControlPlane> | undefined;

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
    const base = join(ROOT, 'manifests', 'base');
    const kubectl = async (args: string[]): Promise<void> => {
      const result = await plane.kubectl(args);
      if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${result.stderr.trim()}`);
    };
    await kubectl(['apply', '--server-side', '-f', join(base, 'namespaces.yaml'), '-f', join(base, 'crds')]);
    await kubectl([
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

  get kubeconfigPath(): string {
    if (!this.plane) throw new Error('the control plane is not running');
    return this.plane.kubeconfigPath;
  }

  private track(program: ProgramProcess): ProgramProcess {
    this.programs.add(program);
    void program.exited.then(() => this.programs.delete(program));
    if (this.stopped) void program.stop(5_000);
    return program;
  }

  /** Starts nodecare-controller (one replica, no leader election) and waits until it runs. */
  async startController(): Promise<void> {
    const controller = this.track(
      startProgram('controller', [
        `--kubeconfig=${this.kubeconfigPath}`,
        '--health-port=0',
        '--health-address=127.0.0.1',
        '--log-level=info',
        '--no-leader-elect',
        '--identity=nodecare-demo-controller',
      ]),
    );
    this.controller = controller;
    await controller.waitForLog('Started nodecare-controller', 60_000);
  }

  /** The demo's nodes: each needs kube-proxy and a logging agent; the second one is a GPU node. */
  async defineNodes(count: number): Promise<SimulatedNode[]> {
    for (let i = 1; i <= count; i++) {
      const name = `demo-node-${i}`;
      const dir = join(this.dir, name);
      await mkdir(dir, { recursive: true });
      const endpoints = [await httpEndpoint('kube-proxy'), heartbeatFileEndpoint('log-agent', dir)];
      if (i === 2) endpoints.push(devicePluginEndpoint('gpu-plugin', dir));
      this.nodes.push({ name, endpoints, agent: undefined });
    }
    return this.nodes;
  }

  /** Registers the Node as a kubelet would, with one `extensions.nodecare.io/<name>` annotation per endpoint. */
  async createNode(node: SimulatedNode): Promise<void> {
    if (!this.core) throw new Error('the control plane is not running');
    const annotations = Object.fromEntries(
      node.endpoints.map((e) => [`${EXTENSION_ANNOTATION_PREFIX}${e.name}`, e.spec]),
    );
    const gpu = node.endpoints.some((e) => e.name === 'gpu-plugin');
    await this.core.createNode({
      body: {
        metadata: {
          name: node.name,
          annotations,
          labels: {
            'kubernetes.io/hostname': node.name,
            'kubernetes.io/os': 'linux',
            ...(gpu ? { 'nvidia.com/gpu.present': 'true' } : {}),
          },
        },
        status: {
          allocatable: { cpu: '4', memory: '16Gi', pods: '110' },
          capacity: { cpu: '4', memory: '16Gi', pods: '110' },
          nodeInfo: {
            architecture: 'amd64',
            // Posted once the node's agent runs (postBootId): see there.
            bootID: '',
            containerRuntimeVersion: 'containerd://2.1.0',
            kernelVersion: '6.12.0',
            kubeProxyVersion: '',
            kubeletVersion: this.plane?.version ?? 'v1.36.3',
            machineID: randomUUID().replaceAll('-', ''),
            operatingSystem: 'linux',
            osImage: 'nodecare demo (simulated node)',
            systemUUID: randomUUID(),
          },
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              message: 'simulated by the nodecare demo',
            },
          ],
        },
      },
    });
  }

  /** Starts the node's agent and waits until it serves. */
  async startAgent(node: SimulatedNode): Promise<void> {
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
   * The simulated kubelet reports its node's boot ID. The agent starts each extension's startup grace at the
   * node's boot (docs/agent.md, "Startup grace"), which it takes from the machine's uptime — for the demo's
   * simulated nodes that is the host's boot, long past. A boot ID it sees appear starts the grace afresh, so the
   * demo's nodes get their grace from their (simulated) boot: a normal boot shows Progressing, not ✗.
   */
  private async postBootId(node: SimulatedNode): Promise<void> {
    if (!this.core) throw new Error('the control plane is not running');
    await this.core.patchNodeStatus(
      { name: node.name, body: { status: { nodeInfo: { bootID: randomUUID() } } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    node.bootPosted = true;
  }

  /** SIGKILL, as when the agent's pod is lost: it writes nothing more, its leases simply stop renewing. */
  async killAgent(node: SimulatedNode): Promise<void> {
    const agent = node.agent;
    node.agent = undefined;
    await agent?.kill();
  }

  /** The last log lines of the controller and the agents, for a report when something did not happen. */
  recentLogs(lines = 8): string[] {
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
    return out;
  }

  /** Stops agents and controller (SIGTERM, then SIGKILL), the endpoints and the control plane. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.programs].map((p) => p.stop(5_000)));
    await Promise.all(this.nodes.flatMap((n) => n.endpoints.map((e) => e.stop().catch(() => undefined))));
    // A control plane still starting is stopped once it is up (it takes a few seconds when already built).
    const plane = this.plane ?? (await this.starting?.catch(() => undefined));
    await plane?.stop();
    if (this.dir) await rm(this.dir, { recursive: true, force: true });
  }

  /** Last resort on exit: no child process outlives the demo. */
  killNow(): void {
    for (const program of this.programs) program.child.kill('SIGKILL');
  }
}
