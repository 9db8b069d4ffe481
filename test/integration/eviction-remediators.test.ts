// Never fight another remediator, from its objects (issue 54 item 2), on the real API server with the real CRDs:
// medik8s NodeHealthCheck v0.12.0's and Karpenter v1.15.0's NodeClaim, each from its Go module (no build). The
// evictor's fresh read (readNodeHold with RemediatorReads) finds a node a NodeHealthCheck lists with a
// remediation, and one whose NodeClaim Karpenter is disrupting, and the Evictor leaves such a node's pods alone
// until the remediator lets go.

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_RUNTIME_TAINT_KEY } from '../../api/names.ts';
import { loadControllerConfig } from '../../controller/config.ts';
import { NodeState } from '../../controller/decide/index.ts';
import { Evictor, RemediatorReads, evictNodePods, readNodeHold } from '../../controller/eviction/index.ts';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { systemClock } from '../../lib/clock.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { adminKubeConfig, eventually, uniqueName } from './helpers.ts';
import { kubectl } from './setup.ts';

const run = promisify(execFile);
const NHC_MODULE = 'github.com/medik8s/node-healthcheck-operator@v0.12.0';
/** test/autoscalers/build.sh's KARPENTER_VERSION. */
const KARPENTER_MODULE = 'sigs.k8s.io/karpenter@v1.15.0';
const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const namespace = uniqueName('evict-remediators');
const log = pino({ level: process.env.TEST_LOG ?? 'silent' });
let client: KubeClient;
const nodes: string[] = [];
const checks: string[] = [];
const claims: string[] = [];

/** A module's directory in the Go module cache (downloaded through the proxy once; no build). */
async function moduleDir(module: string): Promise<string> {
  const { stdout } = await run('go', ['mod', 'download', '-json', module], {
    // Karpenter v1.15 needs Go >= 1.26.9, as in build.sh: the go command fetches that toolchain.
    env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'go1.26.10' },
    cwd: '/tmp',
  });
  const dir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${module} gave no directory: ${stdout}`);
  return dir;
}

/** The real CRDs, from the modules' sources: the same files test/remediators/build.sh and build.sh karpenter copy. */
async function crdFiles(): Promise<string[]> {
  return [
    join(
      await moduleDir(NHC_MODULE),
      'config',
      'crd',
      'bases',
      'remediation.medik8s.io_nodehealthchecks.yaml',
    ),
    join(await moduleDir(KARPENTER_MODULE), 'kwok', 'charts', 'crds', 'karpenter.sh_nodeclaims.yaml'),
  ];
}

beforeAll(async () => {
  client = new KubeClient(await loadConnection(inject('kubeconfig')));
  const files = await crdFiles();
  await kubectl('apply', '--server-side', ...files.flatMap((f) => ['-f', f]));
  await kubectl(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/nodehealthchecks.remediation.medik8s.io',
    'crd/nodeclaims.karpenter.sh',
  );
  // Established is not served yet everywhere: wait until both lists answer.
  for (const path of [
    '/apis/remediation.medik8s.io/v1alpha1/nodehealthchecks',
    '/apis/karpenter.sh/v1/nodeclaims',
  ])
    await eventually(
      async () =>
        client.request('GET', path).then(
          () => true,
          () => undefined,
        ),
      {
        what: `${path} served`,
        timeoutMs: 30_000,
      },
    );
  await core.createNamespace({ body: { metadata: { name: namespace } } });
}, 600_000);

afterAll(async () => {
  for (const name of checks)
    await custom
      .deleteClusterCustomObject({
        group: 'remediation.medik8s.io',
        version: 'v1alpha1',
        plural: 'nodehealthchecks',
        name,
      })
      .catch(() => undefined);
  for (const name of claims)
    await custom
      .deleteClusterCustomObject({ group: 'karpenter.sh', version: 'v1', plural: 'nodeclaims', name })
      .catch(() => undefined);
  for (const name of nodes) await core.deleteNode({ name }).catch(() => undefined);
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  await client?.close();
});

async function createNode(owner?: { name: string; uid: string }): Promise<string> {
  const name = uniqueName('remediated');
  nodes.push(name);
  await core.createNode({
    body: {
      metadata: {
        name,
        labels: { 'kubernetes.io/hostname': name },
        ...(owner
          ? { ownerReferences: [{ apiVersion: 'karpenter.sh/v1', kind: 'NodeClaim', ...owner }] }
          : {}),
      },
      spec: { taints: [{ key: DEFAULT_RUNTIME_TAINT_KEY, effect: 'NoSchedule' }] },
    },
  });
  return name;
}

/** A NodeHealthCheck whose status lists the node with a SelfNodeRemediation (or with none). */
async function nodeHealthCheck(nodeName: string, remediating: boolean): Promise<string> {
  const name = uniqueName('nhc');
  checks.push(name);
  const body = {
    apiVersion: 'remediation.medik8s.io/v1alpha1',
    kind: 'NodeHealthCheck',
    metadata: { name },
    spec: {
      selector: { matchLabels: { 'kubernetes.io/hostname': nodeName } },
      unhealthyConditions: [{ type: 'ExtensionsReady', status: 'False', duration: '60s' }],
    },
  };
  const created = (await custom.createClusterCustomObject({
    group: 'remediation.medik8s.io',
    version: 'v1alpha1',
    plural: 'nodehealthchecks',
    body,
  })) as { metadata: { resourceVersion: string } };
  await setCheckStatus(name, created.metadata.resourceVersion, nodeName, remediating);
  return name;
}

async function setCheckStatus(
  name: string,
  resourceVersion: string | undefined,
  nodeName: string,
  remediating: boolean,
) {
  const current = (await custom.getClusterCustomObject({
    group: 'remediation.medik8s.io',
    version: 'v1alpha1',
    plural: 'nodehealthchecks',
    name,
  })) as Record<string, unknown> & { metadata: { resourceVersion: string } };
  const remediation = {
    resource: {
      apiVersion: 'self-node-remediation.medik8s.io/v1alpha1',
      kind: 'SelfNodeRemediation',
      name: nodeName,
      namespace: 'snr',
    },
    started: new Date().toISOString(),
  };
  await custom.replaceClusterCustomObjectStatus({
    group: 'remediation.medik8s.io',
    version: 'v1alpha1',
    plural: 'nodehealthchecks',
    name,
    body: {
      ...current,
      metadata: { ...current.metadata, resourceVersion: resourceVersion ?? current.metadata.resourceVersion },
      status: remediating ? { unhealthyNodes: [{ name: nodeName, remediations: [remediation] }] } : {},
    },
  });
}

/** A NodeClaim with the given conditions True; returns its name and UID. */
async function nodeClaim(conditions: string[]): Promise<{ name: string; uid: string }> {
  const name = uniqueName('claim');
  claims.push(name);
  const created = (await custom.createClusterCustomObject({
    group: 'karpenter.sh',
    version: 'v1',
    plural: 'nodeclaims',
    body: {
      apiVersion: 'karpenter.sh/v1',
      kind: 'NodeClaim',
      metadata: { name },
      spec: {
        nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
        requirements: [],
      },
    },
  })) as Record<string, unknown> & { metadata: { uid: string } };
  const now = new Date().toISOString();
  await custom.replaceClusterCustomObjectStatus({
    group: 'karpenter.sh',
    version: 'v1',
    plural: 'nodeclaims',
    name,
    body: {
      ...created,
      status: {
        conditions: conditions.map((type) => ({
          type,
          status: 'True',
          lastTransitionTime: now,
          reason: type,
          message: '',
        })),
      },
    },
  });
  return { name, uid: created.metadata.uid };
}

const read = (remediators: RemediatorReads, nodeName: string) =>
  readNodeHold({ client, nodeName, timeoutMs: 10_000, remediators });

describe('another remediator acting on a node, from its objects', () => {
  it('readNodeHold: a NodeHealthCheck remediating the node, a NodeClaim Karpenter disrupts; a candidate or a finished remediation is not', async () => {
    const remediators = new RemediatorReads({ client, log, timeoutMs: 10_000 });
    const plain = await createNode();
    expect(await read(remediators, plain)).toBeUndefined();

    const remediated = await createNode();
    const check = await nodeHealthCheck(remediated, true);
    expect(await read(remediators, remediated)).toBe('NodeHealthCheck');
    // NHC lists an unhealthy node it does not remediate (minHealthy, a storm): not held.
    await setCheckStatus(check, undefined, remediated, false);
    expect(await read(remediators, remediated)).toBeUndefined();

    const disrupted = await createNode(await nodeClaim(['Initialized', 'DisruptionReason']));
    expect(await read(remediators, disrupted)).toBe('NodeClaimDisruption');
    const drifted = await createNode(await nodeClaim(['Initialized', 'Drifted']));
    expect(await read(remediators, drifted)).toBeUndefined();
  });

  it('the Evictor leaves a node NodeHealthCheck remediates alone, and evicts once NHC lets go', async () => {
    const nodeName = await createNode();
    await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: `app-${nodeName}`, namespace },
        spec: { nodeName, containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    const check = await nodeHealthCheck(nodeName, true);
    const loaded = loadControllerConfig(['--evict-after-seconds=1', '--eviction-rate=10'], {});
    if (!('config' in loaded)) throw new Error('expected a config');
    const states = new Map<string, NodeState>([
      ...Array.from({ length: 9 }, (_, i): [string, NodeState] => [`ready-${i}`, NodeState.Ready]),
      [nodeName, NodeState.Degraded],
    ]);
    const metrics = new ControllerMetrics(new Registry());
    const remediators = new RemediatorReads({ client, log, timeoutMs: 10_000 });
    const evictor = new Evictor({
      evict: (name, dryRun) =>
        evictNodePods({
          client,
          nodeName: name,
          dryRun,
          runtimeTaintKey: DEFAULT_RUNTIME_TAINT_KEY,
          log,
          timeoutMs: 10_000,
        }),
      hold: (name) => read(remediators, name),
      clock: systemClock,
      log,
      metrics,
      events: { nodeEvent: async () => undefined },
      config: loaded.config,
      node: (name) => ({ name, uid: `uid-${name}`, zone: 'z' }),
      states: () => states,
      breakerTripped: () => false,
    });
    const accepted = async () => {
      try {
        const pod = await core.readNamespacedPod({ name: `app-${nodeName}`, namespace });
        return pod.metadata?.deletionTimestamp !== undefined;
      } catch (err) {
        if (err instanceof ApiException && err.code === 404) return true;
        throw err;
      }
    };
    evictor.start();
    try {
      await eventually(async () => (evictor.eviction()?.held.length ? true : undefined), {
        what: 'the node held by NodeHealthCheck',
        timeoutMs: 15_000,
      });
      expect(evictor.eviction()?.held).toEqual([{ node: nodeName, reason: 'NodeHealthCheck' }]);
      expect(await accepted()).toBe(false);
      const skipped = (await metrics.evictionSkipped.get()).values.map((v) => [
        v.labels.subject,
        v.labels.reason,
        v.value,
      ]);
      expect(skipped).toContainEqual(['node', 'NodeHealthCheck', 1]);
      // NHC lets go (its remediation deleted, the node healthy for it): the next read after the recheck evicts.
      await setCheckStatus(check, undefined, nodeName, false);
      await eventually(async () => ((await accepted()) ? true : undefined), {
        what: 'the pod evicted once NHC let go',
        timeoutMs: 45_000,
      });
    } finally {
      await evictor.stop();
    }
  }, 90_000);
});
