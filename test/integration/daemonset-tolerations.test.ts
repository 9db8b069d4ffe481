// The MutatingAdmissionPolicy that adds nodecare's two tolerations to DaemonSets (issue 49 item 3; the
// kustomize overlay extension-daemonset-tolerations as shipped), on the real API server: a DaemonSet with
// NVIDIA's stock tolerations gets both; an existing toleration is not duplicated, on create or on any later
// update; the opt-out label on the DaemonSet or its namespace leaves it as written; Deployments and Pods are
// never touched; and a namespaced user's real ServiceAccount token gets the tolerations on its DaemonSets
// but can neither change the policy nor opt its namespace out. The binding is scoped to this file's objects
// (the control plane is shared with other test files); the policy is the shipped one. Then, on any
// version, `kubectl nodecare explain` names what nodecare's taint keeps off a held node: a DaemonSet with
// NVIDIA's stock tolerations (which the DaemonSet controller gives no pod there) and a Pending pod pinned
// to the node that the real scheduler found Unschedulable, with its owner; not a DaemonSet the policy gave
// the tolerations.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type V1DaemonSet,
  type V1PodTemplateSpec,
  type V1Toleration,
} from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  BOOTSTRAP_TAINT_VALUE,
  DEFAULT_BOOTSTRAP_TAINT_KEY as BOOTSTRAP,
  DEFAULT_RUNTIME_TAINT_KEY as RUNTIME,
  INJECT_TOLERATIONS_LABEL,
} from '../../api/index.ts';
import type { ExplainView } from '../../cli/verbs/explain.ts';
import { kubeConfigForToken, mintServiceAccountToken } from '../controlplane/tokens.ts';
import { adminKubeConfig, eventually, needsKubernetes, uniqueName } from './helpers.ts';
import { kubectl } from './setup.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const OVERLAY = join(ROOT, 'manifests', 'overlays', 'extension-daemonset-tolerations');
const POLICY = 'nodecare-extension-daemonset-tolerations';
const SCOPE_LABEL = 'nodecare-test/ds-tolerations';

const admin = adminKubeConfig();
const apps = admin.makeApiClient(AppsV1Api);
const core = admin.makeApiClient(CoreV1Api);
const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
const admission = admin.makeApiClient(AdmissionregistrationV1Api);

/** The tolerations of NVIDIA's k8s-device-plugin DaemonSet as shipped (nvidia-device-plugin.yml). */
const NVIDIA: V1Toleration[] = [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }];
const OURS: V1Toleration[] = [
  { key: BOOTSTRAP, operator: 'Exists', effect: 'NoSchedule' },
  { key: RUNTIME, operator: 'Exists', effect: 'NoSchedule' },
];

const scope = `s-${randomBytes(4).toString('hex')}`;
const namespace = uniqueName('ds-tolerations');
const optedOutNamespace = uniqueName('ds-opted-out');
const scratch = mkdtempSync(join(tmpdir(), 'nodecare-ds-tolerations-'));
const policyFile = join(scratch, 'policy.json');

function template(tolerations: V1Toleration[] | undefined): V1PodTemplateSpec {
  return {
    metadata: { labels: { app: 'device-plugin' } },
    spec: {
      ...(tolerations ? { tolerations } : {}),
      containers: [{ name: 'plugin', image: 'registry.invalid/device-plugin:stock' }],
    },
  };
}

function daemonSet(
  name: string,
  tolerations: V1Toleration[] | undefined,
  labels: Record<string, string> = {},
): V1DaemonSet {
  return {
    metadata: { name, labels: { [SCOPE_LABEL]: scope, ...labels } },
    spec: { selector: { matchLabels: { app: 'device-plugin' } }, template: template(tolerations) },
  };
}

async function created(ds: V1DaemonSet, ns = namespace, client = apps): Promise<V1Toleration[] | undefined> {
  const out = await client.createNamespacedDaemonSet({ namespace: ns, body: ds });
  return out.spec?.template.spec?.tolerations;
}

const noPolicy = needsKubernetes(
  36,
  'the MutatingAdmissionPolicy of the extension-daemonset-tolerations overlay',
);

describe.skipIf(noPolicy !== '')(
  `extension DaemonSets get nodecare's tolerations${noPolicy ? ` (NOT RUN: ${noPolicy})` : ''}`,
  () => {
    beforeAll(async () => {
      const rendered = (loadAll(await kubectl('kustomize', OVERLAY)) as Array<Record<string, any> | null>) // eslint-disable-line @typescript-eslint/no-explicit-any
        .filter((o) => o?.kind?.startsWith('MutatingAdmissionPolicy'));
      const policy = rendered.find((o) => o?.kind === 'MutatingAdmissionPolicy');
      const binding = rendered.find((o) => o?.kind === 'MutatingAdmissionPolicyBinding');
      if (!policy || !binding) throw new Error(`${OVERLAY}: expected the policy and its binding`);
      expect(policy.metadata.name).toBe(POLICY);
      binding.spec.matchResources = { objectSelector: { matchLabels: { [SCOPE_LABEL]: scope } } };
      writeFileSync(policyFile, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }));
      await kubectl('apply', '--server-side', '-f', policyFile);
      await core.createNamespace({ body: { metadata: { name: namespace } } });
      await core.createNamespace({
        body: { metadata: { name: optedOutNamespace, labels: { [INJECT_TOLERATIONS_LABEL]: 'false' } } },
      });
      // In force once the API server has loaded it: a dry-run creation shows the tolerations.
      await eventually(
        async () => {
          const probe = await apps.createNamespacedDaemonSet({
            namespace,
            body: daemonSet(uniqueName('probe'), NVIDIA),
            dryRun: 'All',
          });
          return (probe.spec?.template.spec?.tolerations?.length ?? 0) > 1 || undefined;
        },
        { what: 'the DaemonSet tolerations policy in force', timeoutMs: 30_000, intervalMs: 500 },
      );
    });

    afterAll(async () => {
      await kubectl('delete', '--ignore-not-found', '-f', policyFile).catch(() => undefined);
      for (const name of [namespace, optedOutNamespace])
        await core.deleteNamespace({ name }).catch(() => undefined);
      rmSync(scratch, { recursive: true, force: true });
    });

    it.each<{ name: string; tolerations: V1Toleration[] | undefined; expected: V1Toleration[] }>([
      {
        name: "NVIDIA's stock tolerations → both of nodecare's after them",
        tolerations: NVIDIA,
        expected: [...NVIDIA, ...OURS],
      },
      { name: 'no tolerations at all → both', tolerations: undefined, expected: OURS },
      {
        name: 'the bootstrap key tolerated already → only the runtime one, nothing duplicated',
        tolerations: [OURS[0]!],
        expected: OURS,
      },
      {
        name: 'every NoSchedule taint tolerated (no key, Exists) → untouched',
        tolerations: [{ operator: 'Exists', effect: 'NoSchedule' }],
        expected: [{ operator: 'Exists', effect: 'NoSchedule' }],
      },
      {
        name: 'every taint tolerated (the agent’s own) → untouched',
        tolerations: [{ operator: 'Exists' }],
        expected: [{ operator: 'Exists' }],
      },
      {
        name: 'our key with Equal (one value only) → both added',
        tolerations: [{ key: BOOTSTRAP, operator: 'Equal', value: 'x', effect: 'NoSchedule' }],
        expected: [{ key: BOOTSTRAP, operator: 'Equal', value: 'x', effect: 'NoSchedule' }, ...OURS],
      },
      {
        name: 'our key with NoExecute only → both added (NoSchedule is not covered)',
        tolerations: [{ key: RUNTIME, operator: 'Exists', effect: 'NoExecute' }],
        expected: [{ key: RUNTIME, operator: 'Exists', effect: 'NoExecute' }, ...OURS],
      },
    ])('$name', async ({ tolerations, expected }) => {
      expect(await created(daemonSet(uniqueName('ds'), tolerations))).toEqual(expected);
    });

    it('an update that drops them (an apply of the stock manifest) gets them back; later updates add nothing more', async () => {
      const name = uniqueName('ds-update');
      expect(await created(daemonSet(name, NVIDIA))).toEqual([...NVIDIA, ...OURS]);
      const current = await apps.readNamespacedDaemonSet({ name, namespace });
      current.spec!.template = template(NVIDIA);
      const replaced = await apps.replaceNamespacedDaemonSet({ name, namespace, body: current });
      expect(replaced.spec?.template.spec?.tolerations).toEqual([...NVIDIA, ...OURS]);
      replaced.metadata!.annotations = { touched: 'yes' };
      const again = await apps.replaceNamespacedDaemonSet({ name, namespace, body: replaced });
      expect(again.spec?.template.spec?.tolerations).toEqual([...NVIDIA, ...OURS]);
      // The policy changed nothing, so neither did the template: no new revision of the pod template.
      expect(again.metadata?.generation).toBe(replaced.metadata?.generation);
    });

    it(`the opt-out label ${INJECT_TOLERATIONS_LABEL}: "false" on the DaemonSet or its namespace leaves it as written`, async () => {
      expect(
        await created(daemonSet(uniqueName('ds-out'), NVIDIA, { [INJECT_TOLERATIONS_LABEL]: 'false' })),
      ).toEqual(NVIDIA);
      expect(await created(daemonSet(uniqueName('ds-in-out-ns'), NVIDIA), optedOutNamespace)).toEqual(NVIDIA);
      // Any other value is no opt-out.
      expect(
        await created(daemonSet(uniqueName('ds-true'), NVIDIA, { [INJECT_TOLERATIONS_LABEL]: 'true' })),
      ).toEqual([...NVIDIA, ...OURS]);
    });

    it('Deployments and Pods are never touched, even with the same pod template', async () => {
      const deployment = await apps.createNamespacedDeployment({
        namespace,
        body: {
          metadata: { name: uniqueName('deploy'), labels: { [SCOPE_LABEL]: scope } },
          spec: { selector: { matchLabels: { app: 'device-plugin' } }, template: template(NVIDIA) },
        },
      });
      expect(deployment.spec?.template.spec?.tolerations).toEqual(NVIDIA);
      // Retried: the namespace's default ServiceAccount, which Pod admission needs, may not exist yet.
      const pod = await eventually(
        () =>
          core.createNamespacedPod({
            namespace,
            body: {
              metadata: { name: uniqueName('pod'), labels: { [SCOPE_LABEL]: scope } },
              spec: { ...template(NVIDIA).spec!, automountServiceAccountToken: false },
            },
          }),
        { what: 'a Pod admitted' },
      );
      // The API server adds its own not-ready/unreachable NoExecute tolerations to every Pod; none of ours.
      expect(pod.spec?.tolerations?.filter((t) => t.key === BOOTSTRAP || t.key === RUNTIME)).toEqual([]);
      expect(pod.spec?.tolerations?.[0]).toEqual(NVIDIA[0]);
    });

    it("a namespaced user's real token: its DaemonSets get them; it can neither change the policy nor opt its namespace out", async () => {
      const user = 'ds-deployer';
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: user } } });
      await rbac.createNamespacedRole({
        namespace,
        body: {
          metadata: { name: user },
          rules: [
            {
              apiGroups: ['apps'],
              resources: ['daemonsets'],
              verbs: ['create', 'get', 'update', 'patch'],
            },
          ],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: user },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: user },
          subjects: [{ kind: 'ServiceAccount', name: user, namespace }],
        },
      });
      const kc = kubeConfigForToken(
        admin,
        await mintServiceAccountToken(admin, { namespace, serviceAccount: user }),
      );
      const asUser = kc.makeApiClient(AppsV1Api);
      // RBAC is cached for a moment after the binding appears: retry the first create until it is allowed.
      const tolerations = await eventually(
        () => created(daemonSet(uniqueName('ds-user'), NVIDIA), namespace, asUser),
        {
          what: 'the user allowed to create DaemonSets',
        },
      );
      expect(tolerations).toEqual([...NVIDIA, ...OURS]);
      const status = (err: unknown): number | undefined => (err as { code?: number }).code;
      const refused = async (what: string, call: () => Promise<unknown>): Promise<void> => {
        const outcome = await call().then(
          () => 'allowed',
          (err: unknown) => status(err),
        );
        expect(outcome, what).toBe(403);
      };
      await refused('delete the policy', () =>
        kc.makeApiClient(AdmissionregistrationV1Api).deleteMutatingAdmissionPolicy({ name: POLICY }),
      );
      await refused('delete the binding', () =>
        kc.makeApiClient(AdmissionregistrationV1Api).deleteMutatingAdmissionPolicyBinding({ name: POLICY }),
      );
      await refused('label its namespace out', () =>
        kc.makeApiClient(CoreV1Api).patchNamespace({
          name: namespace,
          body: [
            {
              op: 'add',
              path: `/metadata/labels/${INJECT_TOLERATIONS_LABEL.replace('/', '~1')}`,
              value: 'false',
            },
          ],
        }),
      );
      // The policy is still there and in force for the admin's DaemonSets too.
      expect((await admission.readMutatingAdmissionPolicy({ name: POLICY })).metadata?.name).toBe(POLICY);
    });
  },
);

/** `kubectl nodecare explain <node> [args]` as a user runs it, with the admin kubeconfig. */
function explain(
  node: string,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'cli', 'main.ts'), 'explain', node, ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, KUBECONFIG: inject('kubeconfig') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe("kubectl nodecare explain names what nodecare's taint keeps off a held node (any version)", () => {
  const ns = uniqueName('explain-kept-off');
  const nodeName = uniqueName('held-gpu');

  beforeAll(async () => {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNode({
      body: {
        metadata: {
          name: nodeName,
          labels: { 'kubernetes.io/os': 'linux', 'nvidia.com/gpu.present': 'true' },
        },
        spec: { taints: [{ key: BOOTSTRAP, value: BOOTSTRAP_TAINT_VALUE, effect: 'NoSchedule' }] },
      },
    });
  });

  afterAll(async () => {
    await core.deleteNode({ name: nodeName }).catch(() => undefined);
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  it("a stock DaemonSet and a Pending pod pinned to the node are named with nodecare's taint; one the policy gave the tolerations is not", async () => {
    const gpuOnly = { 'nvidia.com/gpu.present': 'true' };
    // No scope label: the policy (if any) leaves these as written, as on a cluster without it.
    const stock = await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'nvidia-device-plugin-daemonset' },
        spec: {
          selector: { matchLabels: { app: 'device-plugin' } },
          template: { ...template(NVIDIA), spec: { ...template(NVIDIA).spec!, nodeSelector: gpuOnly } },
        },
      },
    });
    const withPod = await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'csi-node' },
        spec: { selector: { matchLabels: { app: 'device-plugin' } }, template: template(NVIDIA) },
      },
    });
    // The pod the DaemonSet controller would create for the node (pinned by matchFields), scheduled by the
    // real scheduler, which leaves it Pending: the node's taint is not tolerated.
    const pod = await eventually(
      () =>
        core.createNamespacedPod({
          namespace: ns,
          body: {
            metadata: {
              name: 'csi-node-pinned',
              ownerReferences: [
                {
                  apiVersion: 'apps/v1',
                  kind: 'DaemonSet',
                  name: 'csi-node',
                  uid: withPod.metadata!.uid!,
                  controller: true,
                },
              ],
            },
            spec: {
              ...template(NVIDIA).spec!,
              automountServiceAccountToken: false,
              affinity: {
                nodeAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [
                      { matchFields: [{ key: 'metadata.name', operator: 'In', values: [nodeName] }] },
                    ],
                  },
                },
              },
            },
          },
        }),
      { what: 'the pinned pod admitted' },
    );
    await eventually(
      async () => {
        const read = await core.readNamespacedPod({ name: pod.metadata!.name!, namespace: ns });
        return (
          read.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable') ||
          undefined
        );
      },
      { what: 'the scheduler to find the pod Unschedulable', timeoutMs: 60_000 },
    );
    // Tolerations as the policy adds them: never named.
    await apps.createNamespacedDaemonSet({
      namespace: ns,
      body: {
        metadata: { name: 'tolerating-plugin' },
        spec: {
          selector: { matchLabels: { app: 'device-plugin' } },
          template: template([...NVIDIA, ...OURS]),
        },
      },
    });
    const json = await explain(nodeName, '-o', 'json');
    expect(json.stderr).toBe('');
    expect(json.code).toBe(1);
    const view = JSON.parse(json.stdout) as ExplainView;
    const mine = view.keptOff.filter((k) => k.namespace === ns);
    const taint = `${BOOTSTRAP}=${BOOTSTRAP_TAINT_VALUE}:NoSchedule`;
    expect(mine.map((k) => [k.kind, k.name, k.owner, k.untolerated])).toEqual([
      ['DaemonSet', stock.metadata!.name, undefined, [taint]],
      ['Pod', 'csi-node-pinned', `DaemonSet ${ns}/csi-node`, [taint]],
    ]);
    expect(mine[1]?.scheduler).toMatch(/^Unschedulable: .*untolerated taint/);
    const { stdout: text } = await explain(nodeName);
    expect(text).toContain(
      `DaemonSet ${ns}/nvidia-device-plugin-daemonset selects this node but does not tolerate ${taint}: the DaemonSet controller creates no pod for it here.`,
    );
    expect(text).toContain(
      `Pod ${ns}/csi-node-pinned (of DaemonSet ${ns}/csi-node) is Pending for this node`,
    );
  });
});
