// The Helm chart (charts/nodecare) against the kustomize base and the real API server: with its default
// values it renders exactly the objects `kubectl kustomize manifests/` renders (one source of truth, no
// drift); its values change what they say and nothing else; and `helm install` and `helm upgrade` succeed on
// the real API server. helm is built from the Go module proxy by test/tools/build-helm.sh (cached).

import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { loadAll } from 'js-yaml';
import { beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import {
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
} from '../../api/index.ts';
import { chartMemoryLimitBytes } from '../../bench/controller-only/chart-limit.ts';
import { kubernetesMinor } from './helpers.ts';
import { applyBaseManifests, kubectl } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const CHART = join(ROOT, 'charts', 'nodecare');
const kubeconfig = inject('kubeconfig');

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: Record<string, unknown>;
  [key: string]: unknown;
}

interface PodSpec {
  hostPID?: boolean;
  serviceAccountName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Array<Record<string, string>>;
  containers: Array<{ image: string; args: string[]; resources: unknown }>;
}

function run(
  command: string,
  args: string[],
  onStderr?: (line: string) => void,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      for (const line of d.toString().split('\n')) if (line.trim()) onStderr?.(line);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let helmBin = '';

async function helm(...args: string[]): Promise<string> {
  const result = await run(helmBin, [...args, `--kubeconfig=${kubeconfig}`]);
  if (result.code !== 0) throw new Error(`helm ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
}

function parse(text: string): K8sObject[] {
  return (loadAll(text) as Array<K8sObject | null>).filter((doc): doc is K8sObject => doc !== null);
}

const key = (o: K8sObject): string => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;

async function renderChart(...set: string[]): Promise<Map<string, K8sObject>> {
  const out = await helm(
    'template',
    'nodecare',
    CHART,
    '--include-crds',
    // The release namespace: the kustomize base's, unless the test names another (--namespace=...).
    ...(set.some((s) => s.startsWith('--namespace=')) ? [] : ['--namespace=nodecare-system']),
    // The helm test objects (templates/tests/) exist only while `helm test` runs: not part of an install.
    ...(set.includes('--with-tests') ? [] : ['--skip-tests']),
    ...set.filter((s) => s !== '--with-tests').flatMap((s) => (s.startsWith('--') ? [s] : ['--set', s])),
  );
  return new Map(parse(out).map((o) => [key(o), o]));
}

/** The kustomize base's Namespace, which the chart does not render (the release namespace is Helm's). */
const SYSTEM_NAMESPACE = 'Namespace /nodecare-system';

/** What `helm template` is told for a cluster that serves MutatingAdmissionPolicy v1 (helm install asks it). */
const SERVES_MAP = '--api-versions=admissionregistration.k8s.io/v1/MutatingAdmissionPolicy';
const TOLERATIONS_POLICY = 'nodecare-extension-daemonset-tolerations';

function podSpec(objects: Map<string, K8sObject>, kind: 'DaemonSet' | 'Deployment'): PodSpec {
  const name = kind === 'DaemonSet' ? 'nodecare-agent' : 'nodecare-controller';
  const obj = objects.get(`${kind} nodecare-system/${name}`);
  if (!obj) throw new Error(`the chart renders no ${kind} ${name}`);
  return (obj.spec as { template: { spec: PodSpec } }).template.spec;
}

/** The labels Helm's conventions give every object the chart renders (templates/_helpers.tpl), release `nodecare`. */
const STANDARD_LABELS = {
  'helm.sh/chart': 'nodecare-0.1.0',
  'app.kubernetes.io/instance': 'nodecare',
  'app.kubernetes.io/version': '0.1.0',
  'app.kubernetes.io/managed-by': 'Helm',
} as const;

/** The selectors the first chart version shipped: immutable, so no later version may change them. */
const SELECTORS = {
  'DaemonSet nodecare-system/nodecare-agent': { 'app.kubernetes.io/name': 'nodecare-agent' },
  'Deployment nodecare-system/nodecare-controller': { 'app.kubernetes.io/name': 'nodecare-controller' },
  'PodDisruptionBudget nodecare-system/nodecare-controller': {
    'app.kubernetes.io/name': 'nodecare-controller',
  },
  'Service nodecare-system/nodecare-agent-metrics': { 'app.kubernetes.io/name': 'nodecare-agent' },
  'Service nodecare-system/nodecare-controller-metrics': { 'app.kubernetes.io/name': 'nodecare-controller' },
} as const;

/**
 * A kustomize object as the chart renders it: the same object with the standard labels, and
 * app.kubernetes.io/name: nodecare where it has no name label, on the object and on a workload's pod template
 * (never in a selector). The CRDs come from crds/, which Helm does not template: as they are.
 */
function asChartRenders(object: K8sObject): K8sObject {
  if (object.kind === 'CustomResourceDefinition') return object;
  const labeled = structuredClone(object);
  const add = (metadata: { labels?: Record<string, string> }): void => {
    metadata.labels = { 'app.kubernetes.io/name': 'nodecare', ...STANDARD_LABELS, ...metadata.labels };
  };
  add(labeled.metadata);
  const template = (
    labeled.spec as { template?: { metadata: { labels?: Record<string, string> } } } | undefined
  )?.template;
  if (template) add(template.metadata);
  return labeled;
}

/**
 * The chart as it was before the standard labels (issue 51 item 2), from the repository's history: an
 * upgrade from it must change no selector (immutable: the API server refuses, and helm upgrade fails).
 */
const PREVIOUS_CHART_COMMIT = 'ddcd5a02a15f35accb4c531d7c817fafbbe79155';

async function previousChart(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'nodecare-previous-chart-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const archive = await run('bash', [
    '-c',
    'set -o pipefail; git -C "$1" archive "$2" charts manifests | tar -x -C "$3"',
    'bash',
    ROOT,
    PREVIOUS_CHART_COMMIT,
    dir,
  ]);
  if (archive.code !== 0)
    throw new Error(
      `git archive ${PREVIOUS_CHART_COMMIT} failed (a shallow clone lacks the previous chart): ${archive.stderr}`,
    );
  return join(dir, 'charts', 'nodecare');
}

/** The names of `kubectl get sx`'s columns, from the live CRD. */
async function printerColumns(): Promise<string[]> {
  const crd = JSON.parse(await kubectl('get', 'crd', 'systemextensions.nodecare.io', '-o', 'json')) as {
    spec: { versions: Array<{ additionalPrinterColumns?: Array<{ name: string }> }> };
  };
  return crd.spec.versions.flatMap((v) => (v.additionalPrinterColumns ?? []).map((c) => c.name));
}

/** Creates `object` with a server-side apply, from a file (kubectl apply -f). */
async function applyObject(object: object): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'nodecare-object-'));
  try {
    writeFileSync(join(dir, 'object.json'), JSON.stringify(object));
    await kubectl('apply', '--server-side', '-f', join(dir, 'object.json'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The Prometheus Operator's ServiceMonitor and PrometheusRule CRD files (test/tools/prometheus-operator-crds.sh). */
async function prometheusOperatorCrds(): Promise<string[]> {
  const result = await run('bash', [join(ROOT, 'test', 'tools', 'prometheus-operator-crds.sh')]);
  if (result.code !== 0) throw new Error(`test/tools/prometheus-operator-crds.sh failed:\n${result.stderr}`);
  return result.stdout.trim().split('\n');
}

beforeAll(async () => {
  // Builds helm on first use (a few minutes cold); progress goes to stderr.
  const built = await run('bash', [join(ROOT, 'test', 'tools', 'build-helm.sh')], (line) =>
    process.stderr.write(`${line}\n`),
  );
  if (built.code !== 0) throw new Error(`test/tools/build-helm.sh failed:\n${built.stderr}`);
  helmBin = built.stdout.trim().split('\n').pop() ?? '';
  // The release is recorded in nodecare-system, which must exist before helm install creates anything.
  await applyBaseManifests();
}, 900_000);

describe('charts/nodecare', () => {
  it('renders with its defaults exactly the objects of the kustomize base', async () => {
    const chart = await renderChart();
    const base = new Map(parse(await kubectl('kustomize', join(ROOT, 'manifests'))).map((o) => [key(o), o]));
    // The differences: the standard labels (asChartRenders), and the base's Namespace nodecare-system, which
    // the chart does not render: the release namespace is Helm's (helm install --create-namespace).
    expect(chart.has(SYSTEM_NAMESPACE)).toBe(false);
    base.delete(SYSTEM_NAMESPACE);
    expect([...chart.keys()].sort()).toEqual([...base.keys()].sort());
    // A template that renders a base file must add the chart's labels: include "nodecare.fromFile" (_helpers.tpl).
    for (const [k, object] of base) expect(chart.get(k), k).toEqual(asChartRenders(object));
  });

  it("labels every object it renders with Helm's standard labels, whatever the values, and keeps the selectors the first version shipped (issue 51 item 2)", async () => {
    const objects = await renderChart(
      SERVES_MAP,
      'bootstrapTaintPolicy.enabled=true',
      'agent.podReady.apiServerFallback=true',
      'eviction.evictAfterSeconds=600',
      'agent.podLabels.app\\.kubernetes\\.io/name=other',
      'controller.podLabels.team=nodes',
    );
    expect(objects.has(`MutatingAdmissionPolicy /${TOLERATIONS_POLICY}`)).toBe(true);
    const templated = [...objects.values()].filter((o) => o.kind !== 'CustomResourceDefinition');
    expect(templated.length).toBeGreaterThan(30);
    for (const object of templated) {
      const metadata = object.metadata as { labels?: Record<string, string> };
      expect(
        metadata.labels,
        `${key(object)} (templates/_helpers.tpl: nodecare.labels, nodecare.fromFile)`,
      ).toMatchObject({
        ...STANDARD_LABELS,
        'app.kubernetes.io/part-of': 'nodecare',
        'app.kubernetes.io/name': expect.stringMatching(/^nodecare/),
      });
    }
    for (const [k, selector] of Object.entries(SELECTORS)) {
      const spec = objects.get(k)!.spec as {
        selector: Record<string, unknown>;
        template?: { metadata: { labels: Record<string, string> } };
      };
      expect(spec.selector.matchLabels ?? spec.selector, k).toEqual(selector);
      // A pod keeps its selector's label, whatever podLabels say.
      if (spec.template)
        expect(spec.template.metadata.labels, k).toMatchObject({ ...STANDARD_LABELS, ...selector });
    }
    // The release's name is the instance label.
    const other = parse(await helm('template', 'other', CHART, '--show-only=templates/static.yaml'));
    for (const object of other)
      expect(
        (object.metadata as { labels: Record<string, string> }).labels['app.kubernetes.io/instance'],
      ).toBe('other');
  });

  it('installs into the release namespace with the names fullnameOverride gives, every reference following; the lease namespace and the cluster-scoped names stay (issue 51 item 2)', async () => {
    const objects = await renderChart(
      '--namespace=ops-node-health',
      'fullnameOverride=ops-nodecare',
      'priorityClassQuota.enabled=true',
      'eviction.evictAfterSeconds=600',
      'monitoring.serviceMonitor.enabled=true',
      'monitoring.prometheusRule.enabled=true',
      '--with-tests',
    );
    const defaults = await renderChart(
      'priorityClassQuota.enabled=true',
      'eviction.evictAfterSeconds=600',
      'monitoring.serviceMonitor.enabled=true',
      'monitoring.prometheusRule.enabled=true',
      '--with-tests',
    );
    // No trace of the kustomize base's namespace, nor of its component names, anywhere in what is rendered.
    const text = JSON.stringify([...objects.values()].filter((o) => o.kind !== 'CustomResourceDefinition'));
    expect(text).not.toContain('nodecare-system');
    for (const object of objects.values())
      if (object.metadata.namespace === 'ops-node-health')
        expect(object.metadata.name, key(object)).toMatch(/^ops-nodecare(-|$)/);
    // The same objects as the default install, each moved: nodecare-system/nodecare-<rest> is
    // ops-node-health/ops-nodecare-<rest>; the lease namespace and cluster-scoped objects keep their keys.
    const moved = (k: string): string =>
      k
        .replace(/ nodecare-system\/nodecare(-|$)/, ' ops-node-health/ops-nodecare$1')
        // helm test's own bindings are named after the fullname too.
        .replace(/\/nodecare-test$/, '/ops-nodecare-test');
    expect([...objects.keys()].sort()).toEqual([...defaults.keys()].map(moved).sort());
    const namespaces = new Set([...objects.values()].map((o) => o.metadata.namespace ?? ''));
    // (default: the controller's events about cluster-scoped objects, Nodes and SystemExtensions, go there.)
    expect([...namespaces].sort()).toEqual(['', 'default', 'nodecare-leases', 'ops-node-health']);
    // The workloads run as their own ServiceAccounts; the controller elects its leader with a Lease its Role
    // may write, in the release namespace.
    const agent = objects.get('DaemonSet ops-node-health/ops-nodecare-agent')!.spec as {
      template: { spec: PodSpec };
    };
    expect(agent.template.spec.serviceAccountName).toBe('ops-nodecare-agent');
    const controller = objects.get('Deployment ops-node-health/ops-nodecare-controller')!.spec as {
      template: { spec: PodSpec };
    };
    expect(controller.template.spec.serviceAccountName).toBe('ops-nodecare-controller');
    expect(controller.template.spec.containers[0]!.args).toEqual(
      expect.arrayContaining([
        '--leader-election-namespace=ops-node-health',
        '--leader-election-name=ops-nodecare-controller',
      ]),
    );
    const leaderRules = (
      objects.get('Role ops-node-health/ops-nodecare-controller-leader-election') as unknown as {
        rules: Array<{ resources: string[]; resourceNames?: string[] }>;
      }
    ).rules;
    expect(leaderRules.flatMap((r) => r.resourceNames ?? [])).toContain('ops-nodecare-controller');
    // Every binding names the release's ServiceAccounts, and the Role of its own namespace.
    for (const object of objects.values()) {
      if (object.kind !== 'RoleBinding' && object.kind !== 'ClusterRoleBinding') continue;
      const { subjects = [], roleRef } = object as unknown as {
        subjects?: Array<{ kind: string; name: string; namespace?: string }>;
        roleRef: { kind: string; name: string };
      };
      for (const subject of subjects.filter((s) => s.kind === 'ServiceAccount')) {
        expect(subject.namespace, key(object)).toBe('ops-node-health');
        expect(objects.has(`ServiceAccount ops-node-health/${subject.name}`), key(object)).toBe(true);
      }
      if (roleRef.kind === 'Role')
        expect(objects.has(`Role ${object.metadata.namespace}/${roleRef.name}`), key(object)).toBe(true);
    }
    // The lease admission policy knows the agent by its token's username in this release.
    const policy = JSON.stringify(
      [...objects.values()].filter((o) => o.kind === 'ValidatingAdmissionPolicy'),
    );
    expect(policy).toContain('system:serviceaccount:ops-node-health:ops-nodecare-agent');
    // nameOverride alone names the objects and the name label; the selectors the first version shipped stay.
    const renamed = await renderChart('nameOverride=health');
    expect(renamed.has('DaemonSet nodecare-system/health-agent')).toBe(true);
    expect(
      (
        renamed.get('ServiceAccount nodecare-system/health-agent')!.metadata as {
          labels: Record<string, string>;
        }
      ).labels['app.kubernetes.io/name'],
    ).toBe('nodecare-agent');
    expect(
      (renamed.get('Namespace /nodecare-leases')!.metadata as { labels: Record<string, string> }).labels[
        'app.kubernetes.io/name'
      ],
    ).toBe('health');
    // A name Kubernetes cannot take is refused by the schema, naming the value.
    const refused = await run(helmBin, ['template', 'x', CHART, '--set', 'fullnameOverride=Ops_Nodecare']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('fullnameOverride');
  });

  it('imagePullSecrets, podAnnotations, podLabels, priorityClassName and affinity render in both workloads (issue 51 item 2)', async () => {
    const affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'pool', operator: 'In', values: ['system'] }] }],
        },
      },
    };
    const objects = await renderChart(
      'imagePullSecrets[0].name=registry-a',
      'imagePullSecrets[1].name=registry-b',
      'agent.podAnnotations.example\\.com/scrape=agent',
      'controller.podAnnotations.example\\.com/scrape=controller',
      'agent.podLabels.team=nodes',
      'controller.podLabels.tier=control',
      'agent.priorityClassName=nodecare-node',
      'controller.priorityClassName=',
      `--set-json=agent.affinity=${JSON.stringify(affinity)}`,
      `--set-json=controller.affinity.podAntiAffinity=null`,
    );
    type Template = {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: { imagePullSecrets?: unknown; priorityClassName?: string; affinity?: unknown };
    };
    const template = (k: string): Template => (objects.get(k)!.spec as { template: Template }).template;
    const agent = template('DaemonSet nodecare-system/nodecare-agent');
    const controller = template('Deployment nodecare-system/nodecare-controller');
    for (const pod of [agent, controller])
      expect(pod.spec.imagePullSecrets).toEqual([{ name: 'registry-a' }, { name: 'registry-b' }]);
    expect(agent.metadata.annotations).toEqual({ 'example.com/scrape': 'agent' });
    expect(controller.metadata.annotations).toEqual({ 'example.com/scrape': 'controller' });
    expect(agent.metadata.labels).toMatchObject({
      team: 'nodes',
      'app.kubernetes.io/name': 'nodecare-agent',
    });
    expect(agent.metadata.labels.tier).toBeUndefined();
    expect(controller.metadata.labels).toMatchObject({
      tier: 'control',
      'app.kubernetes.io/name': 'nodecare-controller',
    });
    expect(agent.spec.priorityClassName).toBe('nodecare-node');
    // '' sets none (a cluster that quotas system-cluster-critical outside kube-system).
    expect('priorityClassName' in controller.spec).toBe(false);
    expect(agent.spec.affinity).toEqual(affinity);
    expect('affinity' in controller.spec).toBe(false);
    // The defaults: what the kustomize base has (the equivalence test above), no pull secret, no annotation.
    const defaults = await renderChart();
    for (const k of [
      'DaemonSet nodecare-system/nodecare-agent',
      'Deployment nodecare-system/nodecare-controller',
    ]) {
      const pod = (defaults.get(k)!.spec as { template: Template }).template;
      expect(pod.spec.imagePullSecrets, k).toBeUndefined();
      expect(pod.metadata.annotations, k).toBeUndefined();
    }
    // Adding to the agent's affinity keeps its default node affinity (Helm merges maps).
    const podAntiAffinity = {
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 1, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: {} } },
      ],
    };
    const added = podSpec(
      await renderChart(`--set-json=agent.affinity.podAntiAffinity=${JSON.stringify(podAntiAffinity)}`),
      'DaemonSet',
    ) as unknown as { affinity: Record<string, unknown> };
    const fallback = podSpec(defaults, 'DaemonSet') as unknown as { affinity: Record<string, unknown> };
    expect(added.affinity).toEqual({ ...fallback.affinity, podAntiAffinity });
    expect(Object.keys(fallback.affinity)).toEqual(['nodeAffinity']);
  });

  it('refuses the new values of the wrong type or shape, naming them (issue 51 item 2)', async () => {
    for (const [set, path] of [
      ['imagePullSecrets=registry-a', '/imagePullSecrets'],
      ['imagePullSecrets[0].nam=registry-a', '/imagePullSecrets/0'],
      ['agent.podLabels.team=1', '/agent/podLabels/team'],
      ['controller.podAnnotations.a=true', '/controller/podAnnotations/a'],
      ['agent.priorityClassName=Not_A_Name', '/agent/priorityClassName'],
      ['controller.priorityClassName=1', '/controller/priorityClassName'],
      ['controller.affinity=close', '/controller/affinity'],
      ['agent.affinity.nodeAfinity.x=y', '/agent/affinity'],
    ] as const) {
      const result = await run(helmBin, ['template', 'nodecare', CHART, '--set', set]);
      expect(result.code, set).not.toBe(0);
      expect(result.stderr, set).toContain("values don't meet the specifications of the schema");
      expect(result.stderr, set).toContain(path);
    }
  });

  it('helm show readme prints the chart README (issue 51 item 2)', async () => {
    const readme = await helm('show', 'readme', CHART);
    expect(readme).toMatch(/^# nodecare Helm chart/);
    expect(readme).toContain('kubectl nodecare status');
  });

  it('helm test: a Pod that runs kubectl nodecare status with only the rights of nodecare-view and nodecare-view-leases, created only by helm test (issue 51 item 2)', async () => {
    const installed = await renderChart();
    const all = await renderChart('--with-tests', 'imagePullSecrets[0].name=registry-a');
    const tests = [...all.values()].filter((o) => !installed.has(key(o)));
    expect(tests.map(key).sort()).toEqual([
      'ClusterRoleBinding /nodecare-test',
      'Pod nodecare-system/nodecare-test',
      'RoleBinding nodecare-leases/nodecare-test',
      'ServiceAccount nodecare-system/nodecare-test',
    ]);
    for (const object of tests) {
      const metadata = object.metadata as {
        labels: Record<string, string>;
        annotations: Record<string, string>;
      };
      expect(metadata.annotations['helm.sh/hook'], key(object)).toBe('test');
      expect(metadata.labels, key(object)).toMatchObject(STANDARD_LABELS);
    }
    const roles = tests
      .filter((o) => o.kind.endsWith('Binding'))
      .map((o) => (o as unknown as { roleRef: { name: string } }).roleRef.name)
      .sort();
    expect(roles).toEqual(['nodecare-view', 'nodecare-view-leases']);
    // The roles it binds are the chart's own.
    for (const role of roles) expect(installed.has(`ClusterRole /${role}`), role).toBe(true);
    const pod = all.get('Pod nodecare-system/nodecare-test')!.spec as {
      serviceAccountName: string;
      imagePullSecrets: unknown;
      containers: Array<{ command: string[]; image: string }>;
    };
    expect(pod.serviceAccountName).toBe('nodecare-test');
    expect(pod.imagePullSecrets).toEqual([{ name: 'registry-a' }]);
    expect(pod.containers[0]!.command).toEqual(['kubectl-nodecare', 'status']);
    expect(pod.containers[0]!.image).toBe('nodecare:0.1.0');
  });

  it('passes helm lint --strict, with its defaults and with every opt-in on in another namespace', async () => {
    expect(await helm('lint', CHART, '--strict')).toContain('0 chart(s) failed');
    const everything = await helm(
      'lint',
      CHART,
      '--strict',
      '--namespace=ops-node-health',
      '--set=fullnameOverride=ops-nodecare',
      '--set=imagePullSecrets[0].name=registry-credentials',
      '--set=eviction.evictAfterSeconds=600',
      '--set=priorityClassQuota.enabled=true',
      '--set=bootstrapTaintPolicy.enabled=true',
      '--set=extensionTolerationsPolicy.install=always',
      '--set=agent.podReady.kubeletPodsApi=true',
      '--set=agent.podReady.apiServerFallback=true',
      '--set=agent.hostPID=true',
      '--set=monitoring.serviceMonitor.enabled=true',
      '--set=monitoring.prometheusRule.enabled=true',
    );
    expect(everything).toContain('0 chart(s) failed');
  });

  it('refuses values its schema does not allow, naming them: a flag the program does not have, a misspelt value', async () => {
    const refused = async (...set: string[]): Promise<string> => {
      const result = await run(helmBin, ['template', 'nodecare', CHART, ...set.flatMap((s) => ['--set', s])]);
      expect(result.code, set.join(' ')).not.toBe(0);
      expect(result.stderr).toContain("values don't meet the specifications of the schema");
      return result.stderr;
    };
    expect(await refused('controller.extraArgs={--worker=4}')).toContain('/controller/extraArgs/0');
    expect(await refused('agent.extraArgs={--allowed-paths=/run/x}')).toContain('/agent/extraArgs/0');
    expect(await refused('agent.hostDirectorys={/run/x}')).toContain('hostDirectorys');
    expect(await refused('taints.runtimeKey=not a key')).toContain('/taints/runtimeKey');
    // The flags the programs have, with or without a value, and a boolean's --no- form, render.
    const objects = await renderChart(
      'controller.extraArgs={--workers=4,--no-leader-elect,--node-selector,kubernetes.io/os=linux}',
      'agent.extraArgs={--allowed-path=/run/x}',
    );
    expect(podSpec(objects, 'Deployment').containers[0]?.args).toEqual(
      expect.arrayContaining([
        '--workers=4',
        '--no-leader-elect',
        '--node-selector',
        'kubernetes.io/os=linux',
      ]),
    );
  });

  it("refuses taint keys Kubernetes owns, except the Cluster Autoscaler's prefixes (issue 50 item 10)", async () => {
    for (const key of [
      'node.kubernetes.io/not-ready',
      'node-role.kubernetes.io/control-plane',
      'kubernetes.io/arch',
      'node.k8s.io/x',
    ]) {
      for (const value of ['bootstrapKey', 'runtimeKey']) {
        const result = await run(helmBin, ['template', 'nodecare', CHART, '--set', `taints.${value}=${key}`]);
        expect(result.code, `taints.${value}=${key}`).not.toBe(0);
        expect(result.stderr).toContain(`/taints/${value}`);
      }
    }
    const objects = await renderChart(
      'taints.bootstrapKey=ignore-taint.cluster-autoscaler.kubernetes.io/nodecare',
      'taints.runtimeKey=example.com/broken',
    );
    expect(podSpec(objects, 'Deployment').containers[0]!.args).toContain(
      '--bootstrap-taint-key=ignore-taint.cluster-autoscaler.kubernetes.io/nodecare',
    );
  });

  it('agent.hostDirectories: rendered quoted, exactly as given; only absolute paths without ".." (issue 50 item 13)', async () => {
    // YAML would read an unquoted `#` after a space as a comment, and `: ` as a mapping.
    const odd = ['/run/odd #dir', '/run/key: value', "/run/it's"];
    const objects = await renderChart(`--set-json=agent.hostDirectories=${JSON.stringify(odd)}`);
    const pod = podSpec(objects, 'DaemonSet') as unknown as {
      volumes: Array<{ name: string; hostPath?: { path: string; type: string } }>;
      containers: Array<{ volumeMounts: Array<{ name: string; mountPath: string }> }>;
    };
    const added = pod.volumes.filter((v) => v.name.startsWith('host-directory-'));
    expect(added.map((v) => v.hostPath)).toEqual(odd.map((path) => ({ path, type: 'Directory' })));
    const mounts = pod.containers[0]!.volumeMounts.filter((m) => m.name.startsWith('host-directory-'));
    expect(mounts.map((m) => m.mountPath)).toEqual(odd);
    for (const path of ['run/relative', '/var/lib/kubelet/../../etc', '/run/..', '../etc', '/run/a\nb']) {
      const result = await run(helmBin, [
        'template',
        'nodecare',
        CHART,
        `--set-json=agent.hostDirectories=${JSON.stringify([path])}`,
      ]);
      expect(result.code, path).not.toBe(0);
      expect(result.stderr, path).toContain('/agent/hostDirectories/0');
    }
    // A name with dots that is not a '..' segment is a path like any other.
    expect(podSpec(await renderChart('agent.hostDirectories={/run/a..b/x}'), 'DaemonSet')).toBeDefined();
  });

  it('values set the taint keys, eviction, dry-run, resources, node selectors, tolerations and the image', async () => {
    const objects = await renderChart(
      'taints.bootstrapKey=example.com/booting',
      'taints.runtimeKey=example.com/broken',
      'dryRun=true',
      'eviction.evictAfterSeconds=600',
      'eviction.dryRun=true',
      'agent.resources.limits.memory=300Mi',
      'agent.nodeSelector.pool=gpu',
      'agent.hostPID=true',
      'controller.nodeSelector.role=infra',
      'controller.tolerations[0].key=dedicated',
      'controller.tolerations[0].operator=Exists',
      'controller.replicas=3',
      'image.repository=registry.example/nodecare',
      'image.tag=1.2.3',
    );
    const agent = podSpec(objects, 'DaemonSet');
    const controller = podSpec(objects, 'Deployment');
    expect(controller.containers[0]!.args).toEqual(
      expect.arrayContaining([
        '--bootstrap-taint-key=example.com/booting',
        '--runtime-taint-key=example.com/broken',
        '--dry-run=true',
        '--evict-after-seconds=600',
        '--eviction-dry-run=true',
      ]),
    );
    expect(controller.tolerations?.map((t) => t.key)).toEqual([
      'example.com/booting',
      'example.com/broken',
      'dedicated',
    ]);
    expect(controller.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux', role: 'infra' });
    expect(
      (objects.get('Deployment nodecare-system/nodecare-controller')!.spec as { replicas: number }).replicas,
    ).toBe(3);
    expect(agent.nodeSelector).toEqual({ pool: 'gpu' });
    expect(agent.hostPID).toBe(true);
    expect(agent.containers[0]!.resources).toEqual({
      requests: { cpu: '10m', memory: '96Mi' },
      limits: { cpu: '200m', memory: '300Mi' },
    });
    expect(agent.containers[0]!.image).toBe('registry.example/nodecare:1.2.3');
    expect(controller.containers[0]!.image).toBe('registry.example/nodecare:1.2.3');
    expect(objects.has('MutatingAdmissionPolicy /nodecare-bootstrap-taint')).toBe(false);
  });

  it("eviction's guards beyond zones render as the controller's flags only when set, '' included (issue 54)", async () => {
    const args = async (...set: string[]): Promise<string[]> =>
      podSpec(await renderChart(...set), 'Deployment').containers[0]!.args.filter((a) =>
        /^--eviction-(group|max|storm)/.test(a),
      );
    expect(await args()).toEqual([]);
    expect(
      await args(
        'eviction.groupLabel=',
        'eviction.groupBudgetPercent=20',
        'eviction.maxParallelNodes=3',
        'eviction.maxParallelPercent=5',
        'eviction.stormCooldownSeconds=600',
      ),
    ).toEqual([
      '--eviction-group-budget-percent=20',
      '--eviction-group-label=',
      '--eviction-max-parallel-nodes=3',
      '--eviction-max-parallel-percent=5',
      '--eviction-storm-cooldown-seconds=600',
    ]);
    const refused = await run(helmBin, ['template', 'x', CHART, '--set', 'eviction.maxParallelPercent=0']);
    expect(refused.stderr).toContain('maxParallelPercent');
  });

  it('controller.fleetSize sizes the memory request and limit: steady at most 70% of the limit at every measured size (issue 53 item 2)', async () => {
    const memory = async (nodes: number): Promise<{ request: string; limit: string }> => {
      const resources = podSpec(await renderChart(`controller.fleetSize=${nodes}`), 'Deployment')
        .containers[0]!.resources as { requests: { memory: string }; limits: { memory: string } };
      return { request: resources.requests.memory, limit: resources.limits.memory };
    };
    // 0, the default: the values' own.
    expect(await memory(0)).toEqual({ request: '192Mi', limit: '512Mi' });
    // The steady RSS measured by the controller-only benchmark (docs/install.md, "Controller memory by fleet
    // size"): each at most 70% of the limit the chart sets, and under the request.
    for (const [nodes, steadyMiB] of [
      [1_000, 116],
      [5_000, 177],
      [10_000, 226],
      [20_000, 388],
      [50_000, 803],
      [100_000, 1287],
    ] as const) {
      const { request, limit } = await memory(nodes);
      expect(steadyMiB / parseInt(limit, 10), `${nodes} nodes: ${limit}`).toBeLessThanOrEqual(0.7);
      expect(parseInt(request, 10), `${nodes} nodes`).toBeGreaterThanOrEqual(steadyMiB);
    }
    expect(await memory(50_000)).toEqual({ request: '896Mi', limit: '1280Mi' });
    expect(await memory(100_000)).toEqual({ request: '1664Mi', limit: '2304Mi' });
    // The controller-only benchmark runs the controller under the limit the chart gives its fleet.
    for (const nodes of [200, 1_000, 10_000, 20_000, 33_333, 50_000, 100_000]) {
      const { limit } = await memory(nodes);
      expect(`${chartMemoryLimitBytes(nodes) / 1048576}Mi`, `${nodes} nodes`).toBe(limit);
    }
    const refused = await run(helmBin, ['template', 'x', CHART, '--set', 'controller.fleetSize=-1']);
    expect(refused.stderr).toContain('fleetSize');
  });

  it('agent.hostPID renders what the kustomize component agent-host-pid does', async () => {
    // A kustomization outside the repository that composes the base with the component, as a user's would.
    const dir = mkdtempSync(join(tmpdir(), 'nodecare-kustomize-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const manifests = relative(dir, join(ROOT, 'manifests'));
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        `resources: [${manifests}/base]`,
        `components: [${manifests}/components/agent-host-pid]`,
      ].join('\n'),
    );
    const withComponent = new Map(parse(await kubectl('kustomize', dir)).map((o) => [key(o), o]));
    const daemonSet = 'DaemonSet nodecare-system/nodecare-agent';
    expect(podSpec(withComponent, 'DaemonSet').hostPID).toBe(true);
    expect((await renderChart('agent.hostPID=true')).get(daemonSet)).toEqual(
      asChartRenders(withComponent.get(daemonSet)!),
    );
  });

  it("the opt-ins the default install leaves out render what their kustomize components do: podReady's kubelet Pods API mount and API-server fallback, eviction's rights, the priority-class quota, the monitoring objects and the pod-template knobs (issue 50 items 6, 11; issue 51 item 2)", async () => {
    const composed = async (component: string): Promise<Map<string, K8sObject>> => {
      const dir = mkdtempSync(join(tmpdir(), 'nodecare-kustomize-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const manifests = relative(dir, join(ROOT, 'manifests'));
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        [
          'apiVersion: kustomize.config.k8s.io/v1beta1',
          'kind: Kustomization',
          `resources: [${manifests}/base]`,
          `components: [${manifests}/components/${component}]`,
        ].join('\n'),
      );
      return new Map(parse(await kubectl('kustomize', dir)).map((o) => [key(o), o]));
    };
    const base = new Map(parse(await kubectl('kustomize', join(ROOT, 'manifests'))).map((o) => [key(o), o]));
    for (const [component, values] of [
      ['agent-kubelet-pods-api', ['agent.podReady.kubeletPodsApi=true']],
      ['agent-pods-from-api-server', ['agent.podReady.apiServerFallback=true']],
      ['controller-eviction', ['eviction.evictAfterSeconds=600']],
      ['critical-priority-quota', ['priorityClassQuota.enabled=true']],
      ['monitoring', ['monitoring.serviceMonitor.enabled=true', 'monitoring.prometheusRule.enabled=true']],
      // The pod-template knobs (issue 51 item 2: the same knobs in kustomize as components).
      ['image-pull-secrets', ['imagePullSecrets[0].name=registry-credentials']],
      [
        'pod-metadata',
        [
          'agent.podAnnotations.example\\.com/owner=node-platform',
          'controller.podAnnotations.example\\.com/owner=node-platform',
          'agent.podLabels.team=nodes',
          'controller.podLabels.team=nodes',
        ],
      ],
      ['no-critical-priority', ['agent.priorityClassName=', 'controller.priorityClassName=']],
      [
        'controller-affinity',
        [
          `--set-json=controller.affinity.nodeAffinity=${JSON.stringify({
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'node-pool', operator: 'In', values: ['system'] }] },
              ],
            },
          })}`,
        ],
      ],
    ] as const) {
      const withComponent = await composed(component);
      const chart = await renderChart(...values);
      withComponent.delete(SYSTEM_NAMESPACE);
      expect([...chart.keys()].sort(), component).toEqual([...withComponent.keys()].sort());
      // Every object the component adds or changes, as the chart renders it.
      for (const [k, object] of withComponent) {
        if (JSON.stringify(base.get(k)) === JSON.stringify(object)) continue;
        expect(chart.get(k), `${component}: ${k}`).toEqual(asChartRenders(object));
      }
    }
    // The default install: no Pods API mount (nothing created on the node) and no Pod read for either.
    const agent = podSpec(base, 'DaemonSet') as unknown as {
      volumes: Array<{ hostPath?: { path: string; type: string } }>;
    };
    expect(agent.volumes.map((v) => v.hostPath?.path)).not.toContain('/var/lib/kubelet/pods-api');
    expect(
      agent.volumes.filter((v) => v.hostPath?.type === 'DirectoryOrCreate').map((v) => v.hostPath!.path),
    ).toEqual(['/run/nodecare']);
    const podRules = [...base.values()]
      .filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')
      .flatMap((o) =>
        ((o as unknown as { rules: Array<{ resources: string[] }> }).rules ?? []).map((r) => [
          o.metadata.name,
          r.resources,
        ]),
      )
      .filter(([, resources]) => (resources as string[]).some((r) => r.startsWith('pods')));
    expect(podRules).toEqual([]);
  });

  it('agent.hostDirectories renders what the kustomize component agent-host-directory does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nodecare-kustomize-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const manifests = relative(dir, join(ROOT, 'manifests'));
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        `resources: [${manifests}/base]`,
        `components: [${manifests}/components/agent-host-directory]`,
      ].join('\n'),
    );
    const path = '/var/lib/kubelet/plugins/ebs.csi.aws.com';
    // The volume's name is the one thing a user picks: compare by path.
    const byPath = (spec: PodSpec) => {
      const pod = spec as unknown as {
        volumes: Array<{ name: string; hostPath?: { path: string; type: string } }>;
        containers: Array<{ volumeMounts: Array<{ name: string; mountPath: string }> }>;
      };
      const volume = pod.volumes.find((v) => v.hostPath?.path === path);
      const mount = pod.containers[0]!.volumeMounts.find((m) => m.mountPath === path);
      return {
        volume: { ...volume, name: '' },
        mount: { ...mount, name: '' },
        same: volume?.name === mount?.name,
      };
    };
    const component = byPath(
      podSpec(new Map(parse(await kubectl('kustomize', dir)).map((o) => [key(o), o])), 'DaemonSet'),
    );
    const chart = byPath(podSpec(await renderChart(`agent.hostDirectories={${path}}`), 'DaemonSet'));
    expect(component.volume).toEqual({ name: '', hostPath: { path, type: 'Directory' } });
    expect(component.mount).toEqual({
      name: '',
      mountPath: path,
      readOnly: true,
      recursiveReadOnly: 'IfPossible',
    });
    expect(chart).toEqual(component);
    expect(chart.same).toBe(true);
  });

  it('bootstrapTaintPolicy.enabled renders the kustomize component, with the configured key', async () => {
    const overlay = parse(
      await kubectl('kustomize', join(ROOT, 'manifests', 'overlays', 'bootstrap-taint-at-registration')),
    ).filter((o) => o.kind.startsWith('MutatingAdmissionPolicy'));
    expect(overlay).toHaveLength(2);
    const enabled = await renderChart('bootstrapTaintPolicy.enabled=true');
    for (const object of overlay) expect(enabled.get(key(object))).toEqual(asChartRenders(object));
    const custom = await renderChart(
      'bootstrapTaintPolicy.enabled=true',
      'taints.bootstrapKey=example.com/booting',
    );
    const text = JSON.stringify(custom.get('MutatingAdmissionPolicy /nodecare-bootstrap-taint'));
    expect(text).toContain("'example.com/booting'");
    expect(text).not.toContain(BOOTSTRAP);
  });

  it('extensionTolerationsPolicy renders the kustomize component where MutatingAdmissionPolicy is served (auto), always or never, with the configured keys', async () => {
    const overlay = parse(
      await kubectl('kustomize', join(ROOT, 'manifests', 'overlays', 'extension-daemonset-tolerations')),
    ).filter((o) => o.kind.startsWith('MutatingAdmissionPolicy'));
    expect(overlay.map(key).sort()).toEqual([
      `MutatingAdmissionPolicy /${TOLERATIONS_POLICY}`,
      `MutatingAdmissionPolicyBinding /${TOLERATIONS_POLICY}`,
    ]);
    const rendered = (objects: Map<string, K8sObject>): K8sObject[] =>
      [...objects.values()].filter((o) => o.metadata.name === TOLERATIONS_POLICY);
    // auto: only where the API server serves it (Kubernetes >= 1.36), as helm install asks it.
    expect(rendered(await renderChart())).toEqual([]);
    const served = await renderChart(SERVES_MAP);
    for (const object of overlay)
      expect(served.get(key(object)), key(object)).toEqual(asChartRenders(object));
    expect(rendered(await renderChart('extensionTolerationsPolicy.install=always'))).toHaveLength(2);
    expect(rendered(await renderChart(SERVES_MAP, 'extensionTolerationsPolicy.install=never'))).toEqual([]);
    // The keys are the controller's, even swapped (each replaced once, never the other's).
    const swapped = await renderChart(
      SERVES_MAP,
      `taints.bootstrapKey=${RUNTIME}`,
      `taints.runtimeKey=${BOOTSTRAP}`,
    );
    const text = JSON.stringify(swapped.get(`MutatingAdmissionPolicy /${TOLERATIONS_POLICY}`));
    expect(text.indexOf(`'${RUNTIME}'`)).toBeLessThan(text.indexOf(`'${BOOTSTRAP}'`));
    const custom = JSON.stringify(
      (await renderChart(SERVES_MAP, 'taints.runtimeKey=example.com/broken')).get(
        `MutatingAdmissionPolicy /${TOLERATIONS_POLICY}`,
      ),
    );
    expect(custom).toContain(`['${BOOTSTRAP}', 'example.com/broken']`);
    expect(custom).not.toContain(RUNTIME);
    // A misspelt choice is refused with its path.
    const refused = await run(helmBin, [
      'template',
      'nodecare',
      CHART,
      '--set',
      'extensionTolerationsPolicy.install=yes',
    ]);
    expect(refused.stderr).toContain('/extensionTolerationsPolicy/install');
  });

  it('helm install of the previous chart version and helm upgrade to this one succeed on the real API server, selectors unchanged', async () => {
    // The workloads as on a cluster that never had them (another test file may have applied them with kubectl).
    await kubectl(
      'delete',
      '--ignore-not-found',
      '-n',
      'nodecare-system',
      'deployment/nodecare-controller',
      'daemonset/nodecare-agent',
    );
    // Other test files apply the same objects with kubectl, as someone moving from the kustomize base to the
    // chart has: --take-ownership adopts them, --force-conflicts takes over the fields kubectl's server-side
    // apply owns (atomic fields such as a FlowSchema's rules differ from the applied ones by server defaults).
    const previous = await previousChart();
    // The cluster as the previous version left it: its CRDs (helm install creates CRDs only where none exist).
    await kubectl('apply', '--server-side', '--force-conflicts', '-f', realpathSync(join(previous, 'crds')));
    expect(await printerColumns()).not.toContain('Valid');
    const installed = await helm(
      'install',
      'nodecare',
      previous,
      '--namespace=nodecare-system',
      '--take-ownership',
      '--force-conflicts',
      '--timeout=2m',
    );
    expect(installed).toContain('STATUS: deployed');
    // The objects this version adds, as on a cluster that only ever had the previous version (other test files
    // apply them with kubectl, which helm upgrade would refuse to adopt).
    const before = new Set(parse(await helm('template', 'nodecare', previous, '--skip-tests')).map(key));
    const added = [...(await renderChart()).values()].filter(
      (o) => !before.has(key(o)) && o.kind !== 'CustomResourceDefinition',
    );
    for (const object of added) {
      // kind.group/name (the core group has none): one resource, whatever other groups have the same kind.
      const group = object.apiVersion.includes('/') ? `.${object.apiVersion.split('/')[0]}` : '';
      const namespace = object.metadata.namespace ? ['-n', object.metadata.namespace] : [];
      await kubectl(
        'delete',
        '--ignore-not-found',
        ...namespace,
        `${object.kind}${group}/${object.metadata.name}`,
      );
    }
    // What the previous version made, and what it holds: a SystemExtension and a node its taint holds.
    const manifest = join(mkdtempSync(join(tmpdir(), 'nodecare-previous-manifest-')), 'manifest.yaml');
    onTestFinished(() => rmSync(join(manifest, '..'), { recursive: true, force: true }));
    writeFileSync(manifest, await helm('get', 'manifest', 'nodecare', '--namespace=nodecare-system'));
    const uids = async (): Promise<Map<string, string>> =>
      new Map(
        (
          JSON.parse(await kubectl('get', '-f', manifest, '-o', 'json')) as {
            items: Array<K8sObject & { metadata: { uid: string } }>;
          }
        ).items.map((o) => [key(o), o.metadata.uid]),
      );
    const made = await uids();
    expect(made.has(SYSTEM_NAMESPACE)).toBe(true);
    const held = `chart-upgrade-held-${process.pid}`;
    const extension = `chart-upgrade-${process.pid}`;
    await applyObject({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: held, labels: { 'nodecare.io/status': 'Bootstrapping' } },
      spec: { taints: [{ key: BOOTSTRAP, effect: 'NoSchedule' }] },
    });
    await applyObject({
      apiVersion: 'nodecare.io/v1alpha1',
      kind: 'SystemExtension',
      metadata: { name: extension },
      spec: { probe: { tcp: { port: 9 } } },
    });
    onTestFinished(async () => {
      await kubectl('delete', '--ignore-not-found', `node/${held}`, `systemextension/${extension}`);
    });
    try {
      const args = async (): Promise<string[]> =>
        (
          JSON.parse(
            await kubectl('get', 'deployment', '-n', 'nodecare-system', 'nodecare-controller', '-o', 'json'),
          ) as {
            spec: { template: { spec: PodSpec } };
          }
        ).spec.template.spec.containers[0]!.args;
      expect(await args()).toContain(`--runtime-taint-key=${RUNTIME}`);
      // On a cluster that serves MutatingAdmissionPolicy v1 (1.36+), install renders the tolerations policy.
      const policies = await kubectl('get', 'mutatingadmissionpolicies', '-o', 'name').catch(() => '');
      expect(policies.includes(`/${TOLERATIONS_POLICY}`)).toBe(kubernetesMinor() >= 36);
      // The Prometheus Operator's CRDs, so that the upgrade can create the ServiceMonitor and the PrometheusRule
      // (issue 51 items 2 and 6).
      for (const crd of await prometheusOperatorCrds()) await kubectl('apply', '--server-side', '-f', crd);
      // Helm never upgrades a chart's crds/: the new version's CRDs first, as docs/install.md says.
      const crds = join(manifest, '..', 'crds.yaml');
      writeFileSync(crds, await helm('show', 'crds', CHART));
      await kubectl('apply', '--server-side', '--force-conflicts', '-f', crds);
      expect(await printerColumns()).toContain('Valid');
      const upgraded = await helm(
        'upgrade',
        'nodecare',
        CHART,
        '--namespace=nodecare-system',
        '--set=eviction.evictAfterSeconds=900',
        '--set=priorityClassQuota.enabled=true',
        '--set=monitoring.serviceMonitor.enabled=true',
        '--set=monitoring.prometheusRule.enabled=true',
        '--set=monitoring.runbookBaseURL=https://docs.example.org/nodecare',
        '--timeout=2m',
      );
      expect(upgraded).toContain('STATUS: deployed');
      // NOTES that guide: what got installed, how to verify it (issue 51 item 2).
      for (const line of ['DaemonSet nodecare-agent', 'kubectl nodecare status', 'kubectl get sx'])
        expect(upgraded).toContain(line);
      expect(await args()).toContain('--evict-after-seconds=900');
      // The standard labels are on the live objects now, and the selectors are the ones the previous version made.
      for (const [k, selector] of Object.entries(SELECTORS)) {
        const [kind, name] = k.split(' ') as [string, string];
        const live = JSON.parse(
          await kubectl(
            'get',
            kind.toLowerCase(),
            '-n',
            'nodecare-system',
            name.split('/')[1]!,
            '-o',
            'json',
          ),
        ) as K8sObject & {
          spec: { selector: { matchLabels?: Record<string, string> } & Record<string, string> };
        };
        expect(live.metadata.labels, k).toMatchObject(STANDARD_LABELS);
        expect(live.spec.selector.matchLabels ?? live.spec.selector, k).toEqual(selector);
      }
      // The API server takes the quota for the system-*-critical classes (issue 51 item 2, GKE).
      expect(
        (
          await kubectl(
            'get',
            'resourcequota',
            '-n',
            'nodecare-system',
            'nodecare-critical-pods',
            '-o',
            'name',
          )
        ).trim(),
      ).toBe('resourcequota/nodecare-critical-pods');
      // The API server took both monitoring objects, the alerts with their runbook URLs under the base.
      const rule = JSON.parse(
        await kubectl('get', 'prometheusrule', '-n', 'nodecare-system', 'nodecare', '-o', 'json'),
      ) as {
        spec: { groups: Array<{ rules: Array<{ alert: string; annotations: Record<string, string> }> }> };
      };
      const alerts = rule.spec.groups.flatMap((g) => g.rules);
      expect(alerts.map((r) => r.alert)).toContain('NodecareClusterHealthFalse');
      for (const { alert, annotations } of alerts)
        expect(annotations.runbook_url, alert).toMatch(
          /^https:\/\/docs\.example\.org\/nodecare\/docs\/operations\.md#runbook-/,
        );
      expect(
        (await kubectl('get', 'servicemonitor', '-n', 'nodecare-system', 'nodecare', '-o', 'name')).trim(),
      ).toBe('servicemonitor.monitoring.coreos.com/nodecare');
      const status = JSON.parse(
        await helm('status', 'nodecare', '--namespace=nodecare-system', '-o', 'json'),
      ) as {
        version: number;
        info: { status: string };
      };
      expect(status).toMatchObject({ version: 2, info: { status: 'deployed' } });
      // Every object the previous version made is still there, the same object (no delete and create),
      // the namespace nodecare-system among them though this version no longer renders it (it carried
      // helm.sh/resource-policy: keep); the SystemExtension and the held node are as they were.
      expect(await uids()).toEqual(made);
      expect(await kubectl('get', `systemextension/${extension}`, '-o', 'name')).toContain(extension);
      const node = JSON.parse(await kubectl('get', `node/${held}`, '-o', 'json')) as {
        metadata: { labels: Record<string, string> };
        spec: { taints?: Array<{ key: string }> };
      };
      expect(node.spec.taints?.map((t) => t.key)).toContain(BOOTSTRAP);
      expect(node.metadata.labels['nodecare.io/status']).toBe('Bootstrapping');
    } finally {
      // Leave the cluster as the kustomize base has it, owned by kubectl, for the test files that follow (no
      // helm uninstall: it would delete the namespaces every other test file works in).
      await kubectl('apply', '--server-side', '--force-conflicts', '-k', join(ROOT, 'manifests'));
      // ...without the priority-class quota the upgrade added, which the base does not have,
      await kubectl(
        'delete',
        '--ignore-not-found',
        '-n',
        'nodecare-system',
        'resourcequota/nodecare-critical-pods',
      );
      // ...and without the tolerations policy helm added, which the base does not have either.
      if (kubernetesMinor() >= 36) {
        await kubectl(
          'delete',
          '--ignore-not-found',
          `mutatingadmissionpolicybinding/${TOLERATIONS_POLICY}`,
          `mutatingadmissionpolicy/${TOLERATIONS_POLICY}`,
        );
      }
      // ...and without the monitoring objects and their CRDs.
      await kubectl(
        'delete',
        '--ignore-not-found',
        'crd/servicemonitors.monitoring.coreos.com',
        'crd/prometheusrules.monitoring.coreos.com',
      );
    }
  });
});
