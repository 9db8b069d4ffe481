// `npm start -- --kubeconfig <path>`: the demo's cluster is the user's (kind, k3d, a cloud test cluster), so
// the demo builds no control plane and runs no autoscaler. It checks first that it may play there (reachable,
// nodecare not installed, allowed to create what it needs), then installs nodecare's namespaces and CRDs,
// creates one KWOK node of its own (labelled DEMO_NODE_LABEL, with the bootstrap taint) and scopes every part
// it runs to that label: KWOK, the controller (--node-selector), the SystemExtensions. Everything it created is
// remembered, and stop() removes it again, newest first; what it did not create it never writes.

import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  VersionApi,
  loadAllYaml,
  type KubernetesObject,
} from '@kubernetes/client-node';
import {
  API_GROUP,
  API_VERSION,
  BOOTSTRAP_TAINT_VALUE,
  CLUSTER_HEALTH,
  COMPONENT_NAMESPACE,
  DEFAULT_BOOTSTRAP_TAINT_KEY,
  LEASE_NAMESPACE,
  SYSTEM_EXTENSION,
} from '../api/index.ts';
import { DemoCluster } from './cluster.ts';
import { startDemoKwok, type DemoKwok } from './existing-kwok.ts';

const ROOT = join(import.meta.dirname, '..');

/** The label of the demo's node: KWOK, the controller and the SystemExtensions see only nodes with it. */
export const DEMO_NODE_LABEL = 'demo.nodecare.io/node';
export const DEMO_NODE_SELECTOR = `${DEMO_NODE_LABEL}=true`;
/** The demo's nodes are named `nodecare-demo-<random>`. */
export const DEMO_NODE_PREFIX = 'nodecare-demo-';
/** How long the first request may take before the cluster counts as unreachable. */
const REACH_TIMEOUT_MS = 5_000;

/** A reason not to play on this cluster (the demo exits 2 with its message and has created nothing). */
export class Refusal extends Error {}

/** What the demo needs to be allowed: create and remove its namespaces, CRDs and node, write the node's status. */
const NEEDED = [
  ['create', 'apiextensions.k8s.io', 'customresourcedefinitions'],
  ['delete', 'apiextensions.k8s.io', 'customresourcedefinitions'],
  ['create', '', 'namespaces'],
  ['delete', '', 'namespaces'],
  ['create', '', 'nodes'],
  ['delete', '', 'nodes'],
  ['patch', '', 'nodes/status'],
] as const;

function errorText(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  let message: string | undefined;
  try {
    message = (JSON.parse(typeof e.body === 'string' ? e.body : '{}') as { message?: string }).message;
  } catch {
    message = undefined;
  }
  if (typeof e.code === 'number') return `HTTP ${e.code}${message ? `: ${message}` : ''}`;
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return [e.message ?? String(err), cause?.code ?? cause?.message].filter(Boolean).join(': ');
}

const notFound = (err: unknown): void => {
  if ((err as { code?: number }).code !== 404) throw err;
};

/** Resolves once `read` answers 404; throws if the object is still there after 60 s (say, Terminating). */
async function gone(what: string, read: () => Promise<unknown>): Promise<void> {
  for (let tries = 0; tries < 240; tries++) {
    const there = await read().then(
      () => true,
      (err: unknown) => {
        notFound(err);
        return false;
      },
    );
    if (!there) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} still there 60 s after it was deleted`);
}

function within<T>(ms: number, work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s (${what})`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export class ExistingCluster extends DemoCluster {
  /** The API server and the context the demo plays on. */
  server = '';
  contextName = '';
  /** The demo's node. */
  readonly nodeName = `${DEMO_NODE_PREFIX}${randomBytes(3).toString('hex')}`;
  private kubeconfigFile = '';
  private kc = new KubeConfig();
  /** What the demo created, with how to remove it, oldest first. */
  private readonly created: Array<{ what: string; remove: () => Promise<unknown> }> = [];
  private readonly steps = new Set<Promise<unknown>>();
  private kwok: DemoKwok | undefined;
  /** KWOK's process from its spawn on (killNow reaches it also while it starts). */
  private kwokChild: ChildProcess | undefined;

  override get kubeconfigPath(): string {
    if (!this.kubeconfigFile) throw new Error('not connected to the cluster');
    return this.kubeconfigFile;
  }

  /**
   * Reads the kubeconfig (its `context`, or its current one) and checks the cluster: reachable, no nodecare
   * on it, the identity allowed what the demo does. Throws Refusal, having created nothing there.
   */
  async connect(path: string, context: string | undefined, dir: string): Promise<void> {
    const kc = this.kc;
    try {
      kc.loadFromFile(path);
    } catch (err) {
      throw new Refusal(`cannot read the kubeconfig ${path}: ${errorText(err)}`);
    }
    if (context !== undefined) {
      if (!kc.getContextObject(context)) {
        const known = kc.getContexts().map((c) => c.name);
        throw new Refusal(
          `no context "${context}" in ${path} (it has ${known.length ? known.join(', ') : 'none'})`,
        );
      }
      kc.setCurrentContext(context);
    }
    const cluster = kc.getCurrentCluster();
    if (!kc.getCurrentContext() || !cluster) throw new Refusal(`${path} names no current context or cluster`);
    this.server = cluster.server;
    this.contextName = kc.getCurrentContext();
    this.dir = dir;
    // One file for every program the demo runs: the chosen context as the current one.
    this.kubeconfigFile = join(dir, 'kubeconfig');
    await writeFile(this.kubeconfigFile, kc.exportConfig(), { mode: 0o600 });
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
    const where = `the cluster at ${this.server} (context ${this.contextName})`;
    await within(REACH_TIMEOUT_MS, kc.makeApiClient(VersionApi).getCode(), 'GET /version').catch(
      (err: unknown) => {
        throw new Refusal(`cannot reach ${where}: ${errorText(err)}`);
      },
    );
    await this.checkAccess(where);
    await this.checkNotInstalled(where);
  }

  private async checkAccess(where: string): Promise<void> {
    const auth = this.kc.makeApiClient(AuthorizationV1Api);
    const denied = await Promise.all(
      NEEDED.map(async ([verb, group, resource]) => {
        const [plural, subresource] = resource.split('/');
        const review = await auth
          .createSelfSubjectAccessReview({
            body: { spec: { resourceAttributes: { verb, group, resource: plural, subresource } } },
          })
          .catch((err: unknown) => {
            throw new Refusal(`${where} did not answer an access review: ${errorText(err)}`);
          });
        return review.status?.allowed ? [] : [`${verb} ${resource}`];
      }),
    );
    const missing = denied.flat();
    if (missing.length)
      throw new Refusal(
        `the identity of context ${this.contextName} may not ${missing.join(', ')} on ${where}; the demo ` +
          'creates its namespaces, CRDs and node there and removes them after: use a context with these rights',
      );
  }

  private async checkNotInstalled(where: string): Promise<void> {
    const crds = await this.kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition();
    const ours = crds.items.map((c) => c.metadata?.name ?? '').filter((n) => n.endsWith(`.${API_GROUP}`));
    const namespaces = (await this.clients().core.listNamespace()).items
      .map((n) => n.metadata?.name ?? '')
      .filter((n) => n === COMPONENT_NAMESPACE || n === LEASE_NAMESPACE);
    const found = [
      ...ours.map((n) => `CustomResourceDefinition ${n}`),
      ...namespaces.map((n) => `Namespace ${n}`),
    ];
    if (found.length)
      throw new Refusal(
        `nodecare is already on ${where} (${found.join(', ')}); the demo installs its own and removes it ` +
          'afterwards, so it does not play beside it. Pick another cluster or context, or remove nodecare first ' +
          `(kubectl delete crd ${ours.length ? ours.join(' ') : '…'}; kubectl delete namespace ${COMPONENT_NAMESPACE} ${LEASE_NAMESPACE}).`,
      );
  }

  /** Applies nodecare's namespaces and CRDs (manifests/base), each remembered for removal; waits until served. */
  async install(say: (line: string) => void): Promise<void> {
    const base = join(ROOT, 'manifests', 'base');
    const files = [
      join(base, 'namespaces.yaml'),
      ...(await readdir(join(base, 'crds'))).sort().map((f) => join(base, 'crds', f)),
    ];
    // Typed by client-node's own loader: its serializer keeps the schema's x-kubernetes-* keys only so.
    const objects = (
      await Promise.all(files.map(async (f) => loadAllYaml(await readFile(f, 'utf8')) as unknown[]))
    )
      .flat()
      .filter((o): o is KubernetesObject => typeof o === 'object' && o !== null);
    const api = KubernetesObjectApi.makeApiClient(this.kc);
    for (const object of objects) {
      const what = `${object.kind} ${object.metadata?.name}`;
      await this.creating(async () => {
        await api.create(object).catch((err: unknown) => {
          throw new Error(`could not create ${what}: ${errorText(err)}`);
        });
        // Namespaces and CRDs go in the background (their contents first): wait, so that "removed" is true.
        this.remember(what, async () => {
          await api.delete(object);
          await gone(what, () => api.read({ ...object, metadata: { name: object.metadata?.name ?? '' } }));
        });
      });
    }
    say(`Created ${objects.map((o) => `${o.kind} ${o.metadata?.name}`).join(', ')}.`);
    const crds = this.kc.makeApiClient(ApiextensionsV1Api);
    for (const object of objects.filter((o) => o.kind === 'CustomResourceDefinition')) {
      const name = object.metadata?.name ?? '';
      for (let tries = 0; ; tries++) {
        const crd = await crds.readCustomResourceDefinition({ name });
        if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
        if (tries > 120) throw new Error(`CustomResourceDefinition ${name} not Established within 60 s`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private remember(what: string, remove: () => Promise<unknown>): void {
    this.created.push({ what, remove });
  }

  /**
   * A creation and its remember() as one step: stop() waits for the steps under way, so that what one of
   * them creates while the demo stops (Ctrl-C) is removed too; none starts once stopping.
   */
  private async creating<T>(step: () => Promise<T>): Promise<T> {
    if (this.stopped) throw new Error('stopping');
    const running = step();
    this.steps.add(running);
    try {
      return await running;
    } finally {
      this.steps.delete(running);
    }
  }

  /** KWOK (built into the tool cache if missing, `log` its progress), managing only the demo's nodes. */
  async startKwok(log: (line: string) => void): Promise<void> {
    this.kwok = await startDemoKwok(
      this.dir,
      this.kubeconfigPath,
      DEMO_NODE_SELECTOR,
      log,
      (child) => (this.kwokChild = child),
    );
    if (this.stopped) await this.kwok.stop();
  }

  /** Starts the controller on the demo's nodes only. */
  async startScopedController(): Promise<void> {
    await this.startController([`--node-selector=${DEMO_NODE_SELECTOR}`]);
  }

  protected override extensionSelectors(): { every: object; gpu: object } {
    const demo = { matchLabels: { [DEMO_NODE_LABEL]: 'true' } };
    return { every: demo, gpu: demo };
  }

  override registerExtensions(): ReturnType<DemoCluster['registerExtensions']> {
    return this.creating(() => this.registerAndRemember());
  }

  private async registerAndRemember(): ReturnType<DemoCluster['registerExtensions']> {
    const endpoints = await super.registerExtensions();
    for (const endpoint of endpoints.all) {
      const name = endpoint.name;
      this.remember(`SystemExtension ${name}`, () =>
        this.clients().custom.deleteClusterCustomObject({
          group: API_GROUP,
          version: API_VERSION,
          plural: SYSTEM_EXTENSION.plural,
          name,
        }),
      );
    }
    return endpoints;
  }

  /**
   * The demo's node, as a cloud's machine registers with `--register-with-taints`: the bootstrap taint from
   * its first moment, and a NoSchedule taint of the demo's own that keeps the cluster's pods off a node
   * nobody runs (KWOK plays its kubelet).
   */
  createNode(): Promise<void> {
    return this.creating(() => this.createAndRememberNode());
  }

  private async createAndRememberNode(): Promise<void> {
    const name = this.nodeName;
    const resources = { cpu: '4', memory: '16Gi', pods: '110' };
    await this.clients().core.createNode({
      body: {
        metadata: {
          name,
          labels: {
            [DEMO_NODE_LABEL]: 'true',
            'kubernetes.io/hostname': name,
            'kubernetes.io/os': 'linux',
            'kubernetes.io/arch': 'amd64',
            type: 'kwok',
          },
        },
        spec: {
          taints: [
            { key: DEFAULT_BOOTSTRAP_TAINT_KEY, value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' },
            { key: DEMO_NODE_LABEL, value: 'true', effect: 'NoSchedule' },
          ],
        },
        status: { capacity: resources, allocatable: resources },
      },
    });
    const { core } = this.clients();
    const coordination = this.kc.makeApiClient(CoordinationV1Api);
    this.remember(`Node ${name}`, async () => {
      await core.deleteNode({ name });
      // KWOK's heartbeat Lease for the node (owned by the node; the garbage collector is not waited for).
      await coordination.deleteNamespacedLease({ namespace: 'kube-node-lease', name }).catch(notFound);
    });
    // The controller's events about the node and about the roll-up (namespace default, controller/writes/events.ts).
    this.remember('the Events nodecare-controller recorded', async () => {
      for (const fieldSelector of [
        `involvedObject.kind=Node,involvedObject.name=${name}`,
        `involvedObject.kind=${CLUSTER_HEALTH.kind},reportingComponent=nodecare.io/controller`,
      ])
        await core.deleteCollectionNamespacedEvent({ namespace: 'default', fieldSelector });
    });
  }

  /** Everything the demo created, as a list (what stop() removes). */
  get createdObjects(): string[] {
    return this.created.map((c) => c.what);
  }

  /**
   * Stops what runs (agents, controller, endpoints, KWOK), then removes what the demo created, newest first:
   * the node (with KWOK's Lease for it and the events about it), the SystemExtensions, the namespaces (the
   * Leases in them go along) and the CRDs (the ClusterHealth and any SystemExtension go along).
   */
  override async stop(): Promise<void> {
    this.stopped = true;
    const dir = this.dir;
    this.dir = ''; // super.stop() removes the directory; it holds the kubeconfig, needed until the end
    await super.stop();
    await this.kwok?.stop();
    await Promise.allSettled([...this.steps]);
    const problems: string[] = [];
    for (const { what, remove } of [...this.created].reverse()) {
      await remove()
        .catch(notFound)
        .catch((err: unknown) => problems.push(`${what}: ${errorText(err)}`));
    }
    this.created.length = 0;
    if (dir) await rm(dir, { recursive: true, force: true });
    if (problems.length) throw new Error(`could not remove ${problems.join('; ')}`);
  }

  override killNow(): void {
    super.killNow();
    this.kwokChild?.kill('SIGKILL');
  }
}
