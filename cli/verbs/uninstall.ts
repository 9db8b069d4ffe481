// `kubectl nodecare uninstall`: removes everything nodecare wrote into a cluster outside its own objects, so
// that deleting the manifests afterwards leaves nothing behind (docs/design.md section 7, docs/install.md):
//   1. stops the workloads (controller Deployment, agent DaemonSet) and the bootstrap-taint admission
//      policy, and waits for their pods to go, so nothing writes again behind it;
//   2. removes from every Node nodecare's taints, its labels and annotations (`nodecare.io/…`,
//      `*.nodecare.io/…`, the extension registrations included) and the ExtensionsReady condition;
//   3. deletes the Leases the agents wrote (those with nodecare's role label, never another Lease) and the
//      controller's leader-election Lease;
//   4. checks that nothing is left, and says what is if something is.
// It first prints which cluster it is about to change, and changes nothing without --yes: by default it
// says what it would do.

import {
  COMPONENT_NAMESPACE,
  LEASE_NAMESPACE,
  LeaseLabel,
  LeaseRole,
  taintKeyProblem,
} from '../../api/index.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import type { Connection } from '../../lib/kube/config.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { listAll } from '../../lib/kube/list.ts';
import { leasesPath } from '../../lib/kube/paths.ts';
import type { OptionValues } from '../../lib/options.ts';
import type { CliIo, Verb } from '../verb.ts';
import {
  connect,
  connectError,
  CONNECTION_OPTIONS,
  connectionSettings,
  Exit,
  explainError,
  kubectlArgs,
  type ConnectionSettings,
} from './common.ts';
import {
  DEFAULT_TAINT_KEYS,
  describeCleanup,
  planNodeCleanup,
  type CleanupNode,
  type NodeCleanup,
} from '../cleanup.ts';

export const UNINSTALL_OPTIONS = {
  ...CONNECTION_OPTIONS,
  yes: {
    type: 'boolean',
    description:
      'Do it. Without --yes, uninstall prints the cluster and what it would remove, and changes nothing.',
    default: false,
  },
  namespace: {
    type: 'string',
    description: 'Namespace (-n) of the nodecare workloads and the leader-election Lease.',
    default: COMPONENT_NAMESPACE,
  },
  'lease-namespace': {
    type: 'string',
    description:
      "Namespace of the extension and agent Leases (only Leases with nodecare's role label are deleted).",
    default: LEASE_NAMESPACE,
  },
  'taint-key': {
    type: 'list',
    description:
      "A taint key to remove besides the two default keys and any nodecare.io key (give the controller's --bootstrap-taint-key and --runtime-taint-key if you changed them).",
    default: [],
  },
  'leader-election-name': {
    type: 'string',
    description: "Name of the controller's leader-election Lease.",
    default: 'nodecare-controller',
  },
  'keep-workloads': {
    type: 'boolean',
    description:
      'Do not delete the controller Deployment and agent DaemonSet (they must already be stopped, or they write again).',
    default: false,
  },
  'wait-timeout-seconds': {
    type: 'integer',
    description: 'How long to wait for the workload pods to terminate.',
    default: 120,
    min: 0,
    max: 3600,
  },
  'dry-run': {
    type: 'boolean',
    description: 'Print what would be removed; change nothing, even with --yes.',
    default: false,
  },
} as const satisfies Verb['options'];

export interface UninstallConfig {
  namespace: string;
  leaseNamespace: string;
  taintKeys: string[];
  leaderElectionName: string;
  keepWorkloads: boolean;
  waitTimeoutMs: number;
  /** Nothing is changed: --dry-run, or no --yes. */
  dryRun: boolean;
  /** --yes was given. */
  confirmed: boolean;
}

export interface UninstallDeps {
  client: Pick<KubeClient, 'request'>;
  out(line: string): void;
  sleep(ms: number): Promise<void>;
  now(): number;
}

const WORKLOADS = [
  {
    kind: 'Deployment',
    path: (ns: string) => `/apis/apps/v1/namespaces/${ns}/deployments/nodecare-controller`,
  },
  { kind: 'DaemonSet', path: (ns: string) => `/apis/apps/v1/namespaces/${ns}/daemonsets/nodecare-agent` },
] as const;
const WORKLOAD_POD_SELECTOR = 'app.kubernetes.io/name in (nodecare-agent,nodecare-controller)';
const ADMISSION_POLICY = [
  '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings/nodecare-bootstrap-taint',
  '/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies/nodecare-bootstrap-taint',
];
/** Only the Leases an agent wrote: every one carries the role label with one of these values. */
const LEASE_SELECTOR = `${LeaseLabel.role} in (${LeaseRole.agent},${LeaseRole.extension})`;
const CONFLICT_RETRIES = 5;
/** What uninstall cannot undo: the bootstrap taint given to new nodes from outside the cluster's objects. */
const OUTSIDE_NODECARE =
  'then stop what adds the bootstrap taint to new nodes outside nodecare, or they stay tainted: a kubelet ' +
  "--register-with-taints, a node pool's taints, a Karpenter NodePool's startupTaints";

export const uninstallVerb: Verb = {
  summary:
    "Remove nodecare's taints, condition, labels, annotations and Leases from the cluster (run before deleting the manifests; without --yes it only says what it would do); exit 0 done, 1 something left behind, 2 error.",
  options: UNINSTALL_OPTIONS,
  normalizeArgs: (argv) => kubectlArgs(argv, undefined, { '-n': '--namespace', '-s': '--server' }),
  async run(values: OptionValues, io: CliIo): Promise<number> {
    // Removing a key Kubernetes owns (node.kubernetes.io/not-ready) from every node would undo the node
    // lifecycle controller: refused before any I/O, as the controller refuses such keys (api/taint-key.ts).
    const reserved = (values['taint-key'] as string[])
      .map((key) => ({ key, problem: taintKeyProblem(key) }))
      .filter((k) => k.problem);
    for (const { key, problem } of reserved)
      io.err(`kubectl nodecare uninstall: --taint-key "${key}" ${problem}`);
    if (reserved.length > 0) return Exit.error;
    const config = uninstallConfig(values);
    let settings: ConnectionSettings;
    let connection: Connection;
    try {
      settings = connectionSettings(values);
      connection = await connect(settings, io);
    } catch (err) {
      io.err(`kubectl nodecare uninstall: ${connectError(err)}`);
      return Exit.error;
    }
    const client = new KubeClient(connection, {
      userAgent: 'kubectl-nodecare/uninstall',
      requestTimeoutMs: settings.requestTimeoutMs,
    });
    io.out(`cluster: ${connection.server} (${connection.source})`);
    try {
      return await uninstall(config, {
        client,
        out: io.out,
        sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
        now: () => performance.now(),
      });
    } catch (err) {
      io.err(
        `kubectl nodecare uninstall: ${
          isKubeError(err, KubeErrorCode.Forbidden)
            ? `not allowed (${err.message}); uninstall needs what a cluster admin has: delete the nodecare workloads, admission policy and Leases, patch nodes and nodes/status`
            : explainError(err, connection.server, settings.requestTimeoutMs)
        }`,
      );
      if (!config.dryRun)
        io.err('kubectl nodecare uninstall: stopped part-way; run it again once the cause is fixed');
      return Exit.error;
    } finally {
      await client.close();
    }
  },
};

export function uninstallConfig(values: OptionValues): UninstallConfig {
  return {
    namespace: values.namespace as string,
    leaseNamespace: values['lease-namespace'] as string,
    taintKeys: [...DEFAULT_TAINT_KEYS, ...(values['taint-key'] as string[])],
    leaderElectionName: values['leader-election-name'] as string,
    keepWorkloads: values['keep-workloads'] as boolean,
    waitTimeoutMs: (values['wait-timeout-seconds'] as number) * 1000,
    dryRun: (values['dry-run'] as boolean) || !(values.yes as boolean),
    confirmed: values.yes as boolean,
  };
}

const notFound = (err: unknown): boolean => isKubeError(err, KubeErrorCode.NotFound);

/** Runs the whole uninstall; resolves with the exit code (1 when something is left behind). */
export async function uninstall(config: UninstallConfig, deps: UninstallDeps): Promise<number> {
  const { out } = deps;
  // 1. Nothing of nodecare's may keep writing.
  await stopWriters(config, deps);
  // 2. Nodes.
  const nodesCleaned = await cleanNodes(config, deps);
  // 3. Leases.
  await deleteLeases(config, deps);
  if (config.dryRun) {
    out(
      `dry run: ${nodesCleaned} node(s) to clean; nothing was changed` +
        (!config.confirmed ? ' (run again with --yes to do it)' : ''),
    );
    out(OUTSIDE_NODECARE);
    return 0;
  }
  // 4. Nothing left? (Something is when a controller or agent still runs somewhere and wrote again.)
  const left = await leftBehind(config, deps);
  if (left.length > 0) {
    out(
      `left behind (is a nodecare controller or agent still running? stop it and run uninstall again):\n  ${left.join('\n  ')}`,
    );
    return 1;
  }
  out(`cleaned ${nodesCleaned} node(s); nodecare left nothing on nodes or in ${config.leaseNamespace}`);
  out(
    'now delete the manifests: kubectl delete -k <your overlay> --ignore-not-found (or helm uninstall and the CRDs)',
  );
  out(OUTSIDE_NODECARE);
  return 0;
}

/** Deletes the controller and the agents (or says it would), the admission policy, and waits for the pods. */
async function stopWriters(config: UninstallConfig, deps: UninstallDeps): Promise<void> {
  const { client, out } = deps;
  if (!config.keepWorkloads) {
    for (const workload of WORKLOADS) {
      const path = workload.path(encodeURIComponent(config.namespace));
      if (config.dryRun) {
        const exists = await client.request('GET', path).then(
          () => true,
          (err) => (notFound(err) ? false : Promise.reject(err)),
        );
        if (exists) out(`would delete ${workload.kind} ${config.namespace}/${path.split('/').pop()}`);
        continue;
      }
      await client.request('DELETE', path, { query: { propagationPolicy: 'Background' } }).then(
        () => out(`deleted ${workload.kind} ${config.namespace}/${path.split('/').pop()}`),
        (err) => (notFound(err) ? undefined : Promise.reject(err)),
      );
    }
  }
  for (const path of ADMISSION_POLICY) {
    if (config.dryRun) continue;
    // NotFound also when the API server does not serve MutatingAdmissionPolicy at all.
    await client.request('DELETE', path).then(
      () => out(`deleted ${path.split('/').slice(-2).join('/')}`),
      (err) => (notFound(err) ? undefined : Promise.reject(err)),
    );
  }
  if (!config.dryRun) await waitForWorkloadPods(config, deps);
}

/** Cleans every node of nodecare's marks (or says what it would clean); how many had any. */
async function cleanNodes(config: UninstallConfig, deps: UninstallDeps): Promise<number> {
  const { client, out } = deps;
  let nodesCleaned = 0;
  for (const node of await listAll<CleanupNode>(client, '/api/v1/nodes')) {
    const done = config.dryRun
      ? planNodeCleanup(node, config.taintKeys)
      : await cleanNode(node, config.taintKeys, client);
    const line = done && describeCleanup(done);
    if (line) {
      out(`${config.dryRun ? 'would ' : ''}clean ${line}`);
      nodesCleaned++;
    }
  }
  return nodesCleaned;
}

/** Deletes the agents' Leases and the leader-election Lease (or says it would). */
async function deleteLeases(config: UninstallConfig, deps: UninstallDeps): Promise<void> {
  const { client, out } = deps;
  const leases = await agentLeases(config, deps);
  for (const lease of leases) {
    if (!config.dryRun) await deleteIfPresent(client, leasesPath(config.leaseNamespace, lease.metadata.name));
  }
  const leaderPath = leasesPath(config.namespace, config.leaderElectionName);
  const leader = config.dryRun
    ? await client.request('GET', leaderPath).then(
        () => true,
        (err) => (notFound(err) ? false : Promise.reject(err)),
      )
    : await deleteIfPresent(client, leaderPath);
  out(
    `${config.dryRun ? 'would ' : ''}delete ${leases.length} nodecare Lease${leases.length === 1 ? '' : 's'} in ${config.leaseNamespace}` +
      (leader ? ` and the leader-election Lease ${config.namespace}/${config.leaderElectionName}` : ''),
  );
}

/** The nodes and Leases that still carry something of nodecare's, one line each. */
async function leftBehind(config: UninstallConfig, deps: UninstallDeps): Promise<string[]> {
  const left: string[] = [];
  for (const node of await listAll<CleanupNode>(deps.client, '/api/v1/nodes')) {
    const line = describeCleanup(planNodeCleanup(node, config.taintKeys));
    if (line) left.push(line);
  }
  for (const lease of await agentLeases(config, deps)) {
    left.push(`Lease ${config.leaseNamespace}/${lease.metadata.name}`);
  }
  return left;
}

/** The Leases the agents wrote; none when their namespace does not exist. */
function agentLeases(
  config: UninstallConfig,
  deps: UninstallDeps,
): Promise<Array<{ metadata: { name: string } }>> {
  return listAll<{ metadata: { name: string } }>(deps.client, leasesPath(config.leaseNamespace), {
    query: { labelSelector: LEASE_SELECTOR },
  }).catch((err) => (notFound(err) ? [] : Promise.reject(err)));
}

async function waitForWorkloadPods(config: UninstallConfig, deps: UninstallDeps): Promise<void> {
  const path = `/api/v1/namespaces/${encodeURIComponent(config.namespace)}/pods`;
  const deadline = deps.now() + config.waitTimeoutMs;
  for (let announced = false; ;) {
    const pods = await listAll<{ metadata: { name: string } }>(deps.client, path, {
      query: { labelSelector: WORKLOAD_POD_SELECTOR },
    }).catch((err) => (notFound(err) ? [] : Promise.reject(err)));
    if (pods.length === 0) return;
    if (deps.now() >= deadline) {
      throw new Error(
        `${pods.length} nodecare pod(s) still running after ${config.waitTimeoutMs / 1000} s: ${pods
          .slice(0, 5)
          .map((p) => p.metadata.name)
          .join(', ')}; nothing on the nodes was changed yet`,
      );
    }
    if (!announced) deps.out(`waiting for ${pods.length} nodecare pod(s) to terminate`);
    announced = true;
    await deps.sleep(1000);
  }
}

/** Patches `node` until nothing of nodecare's is left on it (re-reading on conflict); returns what was removed. */
async function cleanNode(
  node: CleanupNode,
  taintKeys: readonly string[],
  client: UninstallDeps['client'],
): Promise<NodeCleanup | undefined> {
  const path = `/api/v1/nodes/${encodeURIComponent(node.metadata.name)}`;
  let current = node;
  for (let attempt = 1; ; attempt++) {
    const plan = planNodeCleanup(current, taintKeys);
    try {
      if (plan.metadataPatch) {
        await client.request('PATCH', path, {
          body: plan.metadataPatch,
          contentType: 'application/merge-patch+json',
        });
      }
      if (plan.statusPatch) {
        await client.request('PATCH', `${path}/status`, {
          body: plan.statusPatch,
          contentType: 'application/strategic-merge-patch+json',
        });
      }
      return plan;
    } catch (err) {
      if (notFound(err)) return undefined;
      if (!isKubeError(err, KubeErrorCode.Conflict) || attempt >= CONFLICT_RETRIES) throw err;
      current = await client.request<CleanupNode>('GET', path);
    }
  }
}

async function deleteIfPresent(client: UninstallDeps['client'], path: string): Promise<boolean> {
  return client.request('DELETE', path).then(
    () => true,
    (err) => (notFound(err) ? false : Promise.reject(err)),
  );
}
