// Byte limits of the real API server against non-ASCII text (issue 50 item 7). The API server counts an
// events.k8s.io Event's note in UTF-8 bytes (at most 1 KiB): a note cut at 1,024 characters let a message in
// Japanese, or with emoji, over it, the Event was refused (422) and lost (RuntimeTaintAdded, BootstrapTimeout).
// The controller's own event writer (controller/writes/events.ts) and the roll-up's message cap
// (controller/rollup/pairs.ts) write here through the real port, with the admin's credentials.

import { CustomObjectsApi, EventsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EventReason } from '../../api/reasons.ts';
import { capMessage } from '../../controller/rollup/pairs.ts';
import { KubePort } from '../../controller/port.ts';
import { eventWriter } from '../../controller/writes/index.ts';
import { loadConnection } from '../../lib/kube/config.ts';
import { KubeClient } from '../../lib/kube/client.ts';
import { adminKubeConfig, uniqueName } from './helpers.ts';
import { applyBaseManifests } from './setup.ts';

const kubeconfig = inject('kubeconfig');
const admin = adminKubeConfig();
const eventsApi = admin.makeApiClient(EventsV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const GROUP = { group: 'nodecare.io', version: 'v1alpha1' } as const;

/** 600 characters of Japanese and emoji: within 1,024 characters, about 1.9 KB of UTF-8. */
const MESSAGE = `gpu-plugin Unhealthy (ProbeFailed): ${'デバイスが見つかりません😀'.repeat(46)}`;

let client: KubeClient;

beforeAll(async () => {
  await applyBaseManifests();
  client = new KubeClient(await loadConnection(kubeconfig), { userAgent: 'nodecare-text-limits-test' });
});

afterAll(async () => {
  await client?.close();
});

describe('non-ASCII text within the API server byte limits', () => {
  it('an event with a long Japanese and emoji message is recorded, its note cut on a character boundary within 1 KiB', async () => {
    expect(MESSAGE.length).toBeLessThan(1024);
    expect(Buffer.byteLength(MESSAGE, 'utf8')).toBeGreaterThan(1024);
    const node = uniqueName('text-limits-node');
    const clock = { now: () => Date.now(), monotonic: () => performance.now() };
    const write = eventWriter(
      new KubePort(client, { timeoutMs: 10_000 }),
      'text-limits-test',
      clock,
      () => undefined,
    );
    // Rejects with the API server's 422 when the note is over its limit.
    await write(
      { apiVersion: 'v1', kind: 'Node', name: node, uid: 'uid-text-limits' },
      { type: 'Warning', reason: EventReason.RuntimeTaintAdded, message: MESSAGE },
    );
    const events = await eventsApi.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `regarding.name=${node}`,
    });
    expect(events.items).toHaveLength(1);
    const note = events.items[0]!.note ?? '';
    expect(Buffer.byteLength(note, 'utf8')).toBeLessThanOrEqual(1024);
    expect(MESSAGE.startsWith(note.replace(/…$/, ''))).toBe(true);
    expect(note).not.toContain('\ufffd');
  });

  it('a long non-ASCII ClusterHealth condition message, capped by the roll-up, is within 32 KiB and accepted', async () => {
    const message = capMessage('障害😀'.repeat(20_000));
    expect(Buffer.byteLength(message, 'utf8')).toBeLessThanOrEqual(32 * 1024);
    await custom
      .deleteClusterCustomObject({ ...GROUP, plural: 'clusterhealths', name: 'cluster' })
      .catch(() => undefined);
    const created = (await custom.createClusterCustomObject({
      ...GROUP,
      plural: 'clusterhealths',
      body: { apiVersion: 'nodecare.io/v1alpha1', kind: 'ClusterHealth', metadata: { name: 'cluster' } },
    })) as { metadata: { resourceVersion: string } };
    try {
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const written = (await custom.replaceClusterCustomObjectStatus({
        ...GROUP,
        plural: 'clusterhealths',
        name: 'cluster',
        body: {
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'ClusterHealth',
          metadata: { name: 'cluster', resourceVersion: created.metadata.resourceVersion },
          status: {
            conditions: [
              {
                type: 'EveryNodeReady',
                status: 'False',
                lastTransitionTime: now,
                lastUpdateTime: now,
                reason: 'NodesUnhealthy',
                message,
              },
            ],
          },
        },
      })) as { status: { conditions: Array<{ message: string }> } };
      expect(written.status.conditions[0]!.message).toBe(message);
    } finally {
      await custom
        .deleteClusterCustomObject({ ...GROUP, plural: 'clusterhealths', name: 'cluster' })
        .catch(() => undefined);
    }
  });
});
