// The NodeHealthCheck hand-off end to end (issue 54 item 3), on the real control plane: the real medik8s
// node-healthcheck-operator v0.12.0 (built by test/remediators/build.sh; webhooks served from a throwaway self-signed
// certificate, never registered with the API server), the real nodecare controller and one real agent per node.
// The NodeHealthCheck is docs/controller.md's: unhealthyConditions on ExtensionsReady False, minHealthy 51%, with a
// remediation template of a test kind (a remediator's CRD pair, TestRemediationTemplate → TestRemediation).
// - A node whose critical extension fails past the duration gets one remediation object, named after it, and the
//   NodeHealthCheck lists it; the evictor's fresh read of it (readNodeHold with RemediatorReads, what an eviction
//   pass calls before it evicts) answers NodeHealthCheck. The controller here runs with eviction off:
//   eviction-remediators.test.ts runs the Evictor itself against the real CRDs.
// - A second node failing leaves 1 of 3 healthy, below minHealthy: NHC's storm guard holds, no second object.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi, type V1Node } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RemediatorReads, readNodeHold } from '../../controller/eviction/index.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import {
  adminKubeConfig,
  consistently,
  eventually,
  httpEndpoint,
  readyNodeWithAgent,
  uniqueName,
  type HttpEndpoint,
} from './helpers.ts';
import { startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests, kubectl } from './setup.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const kubeconfig = inject('kubeconfig');
const GROUP = 'remediation.test.nodecare.io';
const namespace = uniqueName('nhc');
const label = uniqueName('nhc-nodes');
/** controller-runtime's default webhook certificate directory: NHC serves its webhook there (nothing calls it). */
const CERT_DIR = '/tmp/k8s-webhook-server/serving-certs';

const processes: ProgramProcess[] = [];
const servers: Server[] = [];
const nodes: string[] = [];
let operator: ChildProcess | undefined;
let operatorLog = '';
let client: KubeClient;

function remediationCrds(): string {
  const crd = (kind: string, plural: string) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  });
  return [
    crd('TestRemediationTemplate', 'testremediationtemplates'),
    crd('TestRemediation', 'testremediations'),
  ]
    .map((o) => JSON.stringify(o))
    .join('\n---\n');
}

beforeAll(async () => {
  client = new KubeClient(await loadConnection(kubeconfig));
  await applyBaseManifests();
  const { stdout } = await run('bash', [join(ROOT, 'test', 'remediators', 'build.sh')], {
    maxBuffer: 16 << 20,
  });
  const nhcDir = stdout.trim().split('\n').pop() ?? '';
  await kubectl(
    'apply',
    '--server-side',
    '-f',
    join(nhcDir, 'crds', 'remediation.medik8s.io_nodehealthchecks.yaml'),
  );
  const crds = join(await import('node:os').then((os) => os.tmpdir()), `${namespace}-crds.json`);
  await import('node:fs/promises').then((fs) => fs.writeFile(crds, remediationCrds()));
  await kubectl('apply', '--server-side', '-f', crds);
  await kubectl(
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/nodehealthchecks.remediation.medik8s.io',
    `crd/testremediationtemplates.${GROUP}`,
    `crd/testremediations.${GROUP}`,
  );
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: 'v1alpha1',
    namespace,
    plural: 'testremediationtemplates',
    body: {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: 'TestRemediationTemplate',
      metadata: { name: 'reboot', namespace },
      spec: { template: { spec: { strategy: 'Reboot' } } },
    },
  });
  if (!existsSync(join(CERT_DIR, 'tls.crt'))) {
    mkdirSync(CERT_DIR, { recursive: true });
    await run('openssl', [
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=nhc-webhook'],
      ...['-keyout', join(CERT_DIR, 'tls.key'), '-out', join(CERT_DIR, 'tls.crt')],
    ]);
  }
  operator = spawn(
    join(nhcDir, 'manager'),
    ['--leader-elect=false', '--metrics-bind-address=0', '--health-probe-bind-address=127.0.0.1:0'],
    { env: { ...process.env, KUBECONFIG: kubeconfig, DEPLOYMENT_NAMESPACE: namespace } },
  );
  operator.stdout?.on('data', (d: Buffer) => (operatorLog += d.toString()));
  operator.stderr?.on('data', (d: Buffer) => (operatorLog += d.toString()));
}, 900_000);

afterAll(async () => {
  operator?.kill();
  await Promise.all(processes.map((p) => p.kill()));
  for (const name of nodes) await core.deleteNode({ name }).catch(() => undefined);
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  await client?.close();
});

async function nodeWithAgent(web: HttpEndpoint): Promise<string> {
  const name = uniqueName('nhc-node');
  nodes.push(name);
  processes.push(
    await readyNodeWithAgent(core, {
      kubeconfig,
      name,
      extension: 'device-plugin',
      web,
      labels: { 'nhc-test': label },
    }),
  );
  return name;
}

const extensionsReady = (node: V1Node) => node.status?.conditions?.find((c) => c.type === 'ExtensionsReady');

async function remediations(): Promise<string[]> {
  const list = (await custom.listNamespacedCustomObject({
    group: GROUP,
    version: 'v1alpha1',
    namespace,
    plural: 'testremediations',
  })) as { items: Array<{ metadata: { name: string } }> };
  return list.items.map((i) => i.metadata.name).sort();
}

describe('medik8s NodeHealthCheck v0.12.0 on nodecare ExtensionsReady', () => {
  it('one remediation object for the node whose critical extension fails past the duration; none for a second while minHealthy holds', async () => {
    const webs = await Promise.all([0, 1, 2].map(() => httpEndpoint(servers)));
    const [first, second, third] = await Promise.all(webs.map((w) => nodeWithAgent(w)));
    const controller = startProgram('controller', [
      `--kubeconfig=${kubeconfig}`,
      '--health-port=0',
      '--health-address=127.0.0.1',
      `--identity=${uniqueName('controller')}`,
      '--missing-lease-grace-seconds=20',
    ]);
    processes.push(controller);
    await controller.waitForLog('Started nodecare-controller');
    for (const name of [first!, second!, third!])
      await eventually(
        async () => (extensionsReady(await core.readNode({ name }))?.status === 'True' ? true : undefined),
        {
          what: `${name} ExtensionsReady True`,
          timeoutMs: 30_000,
        },
      );
    await custom.createClusterCustomObject({
      group: 'remediation.medik8s.io',
      version: 'v1alpha1',
      plural: 'nodehealthchecks',
      body: {
        apiVersion: 'remediation.medik8s.io/v1alpha1',
        kind: 'NodeHealthCheck',
        metadata: { name: namespace },
        spec: {
          selector: { matchLabels: { 'nhc-test': label } },
          minHealthy: '51%',
          remediationTemplate: {
            apiVersion: `${GROUP}/v1alpha1`,
            kind: 'TestRemediationTemplate',
            namespace,
            name: 'reboot',
          },
          unhealthyConditions: [{ type: 'ExtensionsReady', status: 'False', duration: '3s' }],
        },
      },
    });

    await webs[0]!.stop();
    const failed = await eventually(
      async () => {
        const c = extensionsReady(await core.readNode({ name: first! }));
        return c?.status === 'False' ? c : undefined;
      },
      { what: `${first} ExtensionsReady False`, timeoutMs: 30_000 },
    );
    expect(failed.reason).toBe('ExtensionsUnhealthy');
    await eventually(async () => ((await remediations()).includes(first!) ? true : undefined), {
      what: `a TestRemediation for ${first} (operator log:\n${operatorLog.slice(-3000)})`,
      timeoutMs: 60_000,
    });
    expect(await remediations()).toEqual([first]);
    // nodecare's eviction reads it as NHC's to act on.
    const remediators = new RemediatorReads({ client, log: pino({ level: 'silent' }), timeoutMs: 10_000 });
    await eventually(
      async () =>
        (await readNodeHold({ client, nodeName: first!, timeoutMs: 10_000, remediators })) ===
        'NodeHealthCheck'
          ? true
          : undefined,
      { what: 'the NHC status listing the remediation', timeoutMs: 30_000 },
    );

    // A second node fails: 1 of 3 healthy, under minHealthy. NHC's storm guard holds: no second object.
    await webs[1]!.stop();
    await eventually(
      async () =>
        extensionsReady(await core.readNode({ name: second! }))?.status === 'False' ? true : undefined,
      { what: `${second} ExtensionsReady False`, timeoutMs: 30_000 },
    );
    await consistently(async () => {
      expect(await remediations()).toEqual([first]);
    }, 10_000);
    const nhc = (await custom.getClusterCustomObject({
      group: 'remediation.medik8s.io',
      version: 'v1alpha1',
      plural: 'nodehealthchecks',
      name: namespace,
    })) as { status?: Record<string, unknown> };
    // NHC says why: it tracks the second node, remediates it not, and names minHealthy.
    expect(nhc.status).toMatchObject({ observedNodes: 3, healthyNodes: 1, phase: 'Remediating' });
    const unhealthy = nhc.status?.unhealthyNodes as Array<{ name: string; remediations?: unknown[] }>;
    expect(unhealthy.find((u) => u.name === second)?.remediations ?? []).toEqual([]);
    expect(operatorLog).toMatch(
      /Skipped remediation because the number of healthy nodes selected by the selector is 1/,
    );
    // And nodecare does not read a node NHC only tracks as NHC's to act on.
    expect(await readNodeHold({ client, nodeName: second!, timeoutMs: 10_000, remediators })).toBeUndefined();
  }, 300_000);
});
