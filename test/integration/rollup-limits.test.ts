// One node cannot freeze the roll-up (issue 20 item 3), against the real API server and the real ClusterHealth
// CRD schema: a lease reason of 40 KB and 70 annotations naming distinct condition types once made the status
// write fail validation (message maxLength 32768, conditions maxItems 64), and the writer retried that 422 for
// ever while the SystemExtension counts behind it never landed. Leases are written directly (as an agent would:
// heartbeat plus one extension lease), so no agent process is needed.
//
// ClusterHealth is a cluster-wide singleton: this file starts from a cluster with no nodes, SystemExtensions or
// ClusterHealth left by earlier files (integration files run one after the other).

import {
  AdmissionregistrationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  EXTENSION_ANNOTATION_PREFIX,
  LEASE_NAMESPACE,
  buildLease,
  type LeaseObject,
} from '../../api/index.ts';
import { MAX_CONDITION_MESSAGE, MAX_CONDITIONS } from '../../controller/rollup/evaluate.ts';
import type { ClusterHealthObject } from '../../controller/rollup/store.ts';
import { adminKubeConfig, consistently, createSystemExtension, eventually, uniqueName } from './helpers.ts';
import { startProgram, type ProgramProcess } from './processes.ts';
import { applyBaseManifests } from './setup.ts';

const admin = adminKubeConfig();
const core = admin.makeApiClient(CoreV1Api);
const coordination = admin.makeApiClient(CoordinationV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const eventsApi = admin.makeApiClient(EventsV1Api);
const admission = admin.makeApiClient(AdmissionregistrationV1Api);
const kubeconfig = inject('kubeconfig');

const GROUP = { group: 'nodecare.io', version: 'v1alpha1' } as const;
const BOOT_ID = 'boot-1';
const HOSTILE_REASON = `Evil\u001b[2J${'x'.repeat(40_000)}`;
const CUSTOM_TYPES = Array.from({ length: 70 }, (_, i) => `Custom${String(i).padStart(2, '0')}`);
const REJECT_POLICY = 'nodecare-test-reject-clusterhealth-status';

const processes: ProgramProcess[] = [];
const createdNodes: string[] = [];
const createdSx: string[] = [];

function deleteClusterHealth(): Promise<unknown> {
  return custom
    .deleteClusterCustomObject({ ...GROUP, plural: 'clusterhealths', name: 'cluster' })
    .catch(() => undefined);
}

function deleteSx(name: string): Promise<unknown> {
  return custom
    .deleteClusterCustomObject({ ...GROUP, plural: 'systemextensions', name })
    .catch(() => undefined);
}

async function deleteRejectPolicy(): Promise<void> {
  await admission.deleteValidatingAdmissionPolicyBinding({ name: REJECT_POLICY }).catch(() => undefined);
  await admission.deleteValidatingAdmissionPolicy({ name: REJECT_POLICY }).catch(() => undefined);
}

async function deleteAll(): Promise<void> {
  const nodes = await core.listNode();
  await Promise.all(
    nodes.items.map((n) => core.deleteNode({ name: n.metadata!.name! }).catch(() => undefined)),
  );
  const sx = (await custom.listClusterCustomObject({ ...GROUP, plural: 'systemextensions' })) as {
    items: Array<{ metadata: { name: string } }>;
  };
  await Promise.all(sx.items.map((o) => deleteSx(o.metadata.name)));
  await deleteClusterHealth();
}

beforeAll(async () => {
  await applyBaseManifests();
  await deleteRejectPolicy();
  // Right after a CRD changes, its storage may answer 429 "storage is (re)initializing" for a moment.
  await eventually(async () => (await deleteAll(), true), { what: 'a clean cluster', timeoutMs: 30_000 });
});

afterEach(async () => {
  await Promise.all(processes.splice(0).map((p) => p.kill()));
  await deleteRejectPolicy();
  await Promise.all(createdNodes.splice(0).map((name) => core.deleteNode({ name }).catch(() => undefined)));
  await Promise.all(createdSx.splice(0).map(deleteSx));
  await deleteClusterHealth();
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
});

async function controller(extra: string[] = []): Promise<{ proc: ProgramProcess; port: number }> {
  const proc = startProgram('controller', [
    `--kubeconfig=${kubeconfig}`,
    '--health-port=0',
    '--health-address=127.0.0.1',
    '--log-level=debug',
    `--identity=${uniqueName('controller')}`,
    '--leader-election-lease-duration-seconds=6',
    '--leader-election-renew-deadline-seconds=4',
    '--leader-election-retry-period-seconds=1',
    ...extra,
  ]);
  processes.push(proc);
  const port = (await proc.waitForLog('Started nodecare-controller')).port as number;
  return { proc, port };
}

async function metric(port: number, line: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

/**
 * A node whose agent (simulated: its leases written directly) reports extension `gpu` Unhealthy with a 40 KB
 * reason, and which carries 70 annotations each naming its own condition type.
 */
async function hostileNode(labels: Record<string, string>): Promise<string> {
  const name = uniqueName('hostile');
  createdNodes.push(name);
  const annotations: Record<string, string> = {
    [`${EXTENSION_ANNOTATION_PREFIX}gpu`]: JSON.stringify({ probe: { tcp: { port: 1 } }, critical: false }),
  };
  CUSTOM_TYPES.forEach((type, i) => {
    annotations[`${EXTENSION_ANNOTATION_PREFIX}ext-${i}`] = JSON.stringify({
      probe: { tcp: { port: 1 } },
      critical: false,
      conditionType: type,
    });
  });
  const node = await core.createNode({
    body: {
      metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels }, annotations },
      status: {
        nodeInfo: { bootID: BOOT_ID } as never,
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'simulated' }],
      },
    },
  });
  const ref = { name, uid: node.metadata!.uid! };
  const base = {
    node: ref,
    holderIdentity: `agent-${name}`,
    leaseDurationSeconds: 3600,
    renewTime: new Date(),
    bootId: BOOT_ID,
  };
  const leases: LeaseObject[] = [
    buildLease({ ...base, extension: undefined, record: undefined }),
    buildLease({
      ...base,
      extension: 'gpu',
      record: { state: 'Unhealthy', reason: HOSTILE_REASON, message: 'm', since: new Date().toISOString() },
    }),
  ];
  for (const lease of leases)
    await coordination.createNamespacedLease({ namespace: LEASE_NAMESPACE, body: lease as never });
  return name;
}

async function readClusterHealth(): Promise<ClusterHealthObject | undefined> {
  try {
    return (await custom.getClusterCustomObject({
      ...GROUP,
      plural: 'clusterhealths',
      name: 'cluster',
    })) as ClusterHealthObject;
  } catch {
    return undefined;
  }
}

async function sxStatus(name: string): Promise<Record<string, number> | undefined> {
  const object = (await custom.getClusterCustomObject({ ...GROUP, plural: 'systemextensions', name })) as {
    status?: Record<string, number>;
  };
  return object.status;
}

/** A SystemExtension selecting the nodes of `group`, whose counts must land whatever ClusterHealth does. */
async function countedSx(group: string): Promise<string> {
  const name = uniqueName('counted');
  createdSx.push(name);
  await createSystemExtension(custom, name, {
    nodeSelector: { matchLabels: { 'test-group': group } },
    critical: false,
    probe: { tcp: { port: 1 } },
  });
  return name;
}

describe('the roll-up stays writable whatever one node writes', () => {
  it('a 40 KB lease reason and 70 annotation condition types: the status is written, bounded, and the SystemExtension counts land', async () => {
    const group = uniqueName('g');
    const sx = await countedSx(group);
    const node = await hostileNode({ 'test-group': group });
    await controller();
    const object = await eventually(
      async () => {
        const o = await readClusterHealth();
        return o?.status?.conditions?.some((c) => c.message.includes(node)) ? o : undefined;
      },
      { what: 'ClusterHealth written with the hostile node in it', timeoutMs: 45_000 },
    );
    // An annotation may feed only the Gardener types: the 70 custom types are invalid registrations of that
    // node, reported under EveryNodeReady.
    const conditions = object.status!.conditions!;
    expect(conditions.map((c) => c.type)).toEqual(['EveryNodeReady']);
    const everyNodeReady = conditions[0]!;
    expect(everyNodeReady.codes).toEqual(['ERR_CONFIGURATION_PROBLEM']);
    expect(everyNodeReady.message.length).toBeLessThanOrEqual(MAX_CONDITION_MESSAGE);
    expect(everyNodeReady.message).not.toContain('\u001b');
    expect(object.status!.extensions!.find((e) => e.name === 'ext-5')?.conditionType).toBe('EveryNodeReady');
    await eventually(async () => ((await sxStatus(sx))?.nodes === 1 ? true : undefined), {
      what: `${sx}'s counts`,
    });
  });

  it(`an administrator allowing all 70 types: at most ${MAX_CONDITIONS} conditions are written, Gardener types first`, async () => {
    const group = uniqueName('g');
    const sx = await countedSx(group);
    const node = await hostileNode({ 'test-group': group });
    const { proc } = await controller(CUSTOM_TYPES.map((t) => `--annotation-condition-type=${t}`));
    const object = await eventually(
      async () => {
        const o = await readClusterHealth();
        return o?.status?.conditions?.some((c) => c.type === 'EveryNodeReady' && c.message.includes(node))
          ? o
          : undefined;
      },
      { what: 'ClusterHealth written with the hostile node in it', timeoutMs: 45_000 },
    );
    const types = object.status!.conditions!.map((c) => c.type);
    expect(types).toHaveLength(MAX_CONDITIONS);
    expect(types).toContain('EveryNodeReady');
    expect(types).toContain('Custom62');
    expect(types).not.toContain('Custom63');
    const full = await proc.waitForLog(
      'ClusterHealth is full: condition types or extension rows beyond its limits are left out',
    );
    expect(full.droppedTypeCount).toBe(7);
    await eventually(async () => ((await sxStatus(sx))?.nodes === 1 ? true : undefined), {
      what: `${sx}'s counts`,
    });
  });

  it('a status write refused with 422 is reported once (event, log, metric), not retried, and the rest is written', async () => {
    // The API server refuses every ClusterHealth status write as Invalid (422), as it would a status outside
    // the CRD's schema: an admission policy stands in for the bug nodecare now guards against.
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: REJECT_POLICY },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: ['nodecare.io'],
                apiVersions: ['*'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['clusterhealths/status'],
              },
            ],
          },
          validations: [{ expression: 'false', message: 'test: status refused', reason: 'Invalid' }],
        },
      },
    });
    await admission.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name: REJECT_POLICY },
        spec: { policyName: REJECT_POLICY, validationActions: ['Deny'] },
      },
    });
    // The policy takes effect within a moment: wait until a dry-run status write is refused.
    await custom
      .createClusterCustomObject({
        ...GROUP,
        plural: 'clusterhealths',
        body: {
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'ClusterHealth',
          metadata: { name: 'cluster' },
          spec: {},
        },
      })
      .catch(() => undefined);
    await eventually(
      async () => {
        try {
          await custom.replaceClusterCustomObjectStatus({
            ...GROUP,
            plural: 'clusterhealths',
            name: 'cluster',
            dryRun: 'All',
            body: { ...(await readClusterHealth()), status: { conditions: [] } },
          });
          return undefined;
        } catch (err) {
          return (err as { code?: number }).code === 422 ? true : undefined;
        }
      },
      { what: 'the admission policy refusing ClusterHealth status writes with 422' },
    );

    const group = uniqueName('g');
    const sx = await countedSx(group);
    await hostileNode({ 'test-group': group });
    const { proc, port } = await controller();
    const invalid = 'nodecare_controller_rollup_writes_total{kind="clusterhealth",result="invalid"}';
    const errors = 'nodecare_controller_rollup_writes_total{kind="clusterhealth",result="error"}';
    await proc.waitForLog(
      'The API server refused the roll-up as invalid (a nodecare bug): not retrying; writing what can be written',
      45_000,
    );
    // What could be written was: the SystemExtension's counts, behind the refused write.
    await eventually(async () => ((await sxStatus(sx))?.nodes === 1 ? true : undefined), {
      what: `${sx}'s counts despite the refused ClusterHealth write`,
    });
    // The SystemExtension's own watch event re-evaluates once more (and is refused again: counted, not
    // reported); then nothing changes any more.
    await new Promise((r) => setTimeout(r, 3_000));
    const refusals = await metric(port, invalid);
    expect(refusals).toBeGreaterThanOrEqual(1);
    // Not a retry loop: with nothing changing, no further attempt is made (the old writer retried with
    // backoff from 2 s on, so it would have tried again several times in this window).
    await consistently(
      async () => {
        expect(await metric(port, invalid)).toBe(refusals);
        expect(await metric(port, errors)).toBe(0);
      },
      8_000,
      { intervalMs: 500, what: 'no further roll-up attempt' },
    );
    const rejected = await eventually(
      async () => {
        const list = await eventsApi.listNamespacedEvent({
          namespace: 'default',
          fieldSelector: 'regarding.name=cluster,reason=RollupRejected',
        });
        return list.items.length > 0 ? list.items : undefined;
      },
      { what: 'a RollupRejected event regarding ClusterHealth cluster' },
    );
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.type).toBe('Warning');
    expect(rejected[0]!.note).toContain('test: status refused');
    expect(rejected[0]!.series?.count ?? 1).toBe(1);
    expect(
      proc.logs.filter((l) => String(l.msg).startsWith('The API server refused the roll-up as invalid')),
    ).toHaveLength(1);
  });
});
