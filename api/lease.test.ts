import { describe, expect, it } from 'vitest';
import {
  MAX_LEASE_DURATION_SECONDS,
  MAX_LEASE_MESSAGE,
  agentLeaseName,
  buildLease,
  decodeLease,
  extensionLeaseName,
  leaseNameOrUndefined,
  microTime,
  truncateMessage,
  withNote,
  type DesiredLease,
  type LeaseObject,
  type ProbeStateRecord,
} from './lease.ts';
import { LeaseAnnotation, isExtensionState } from './names.ts';

/** Kubernetes' IsDNS1123Subdomain: at most 253 characters of dot-separated DNS labels. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A valid node name (a DNS subdomain) of exactly `length` characters, with labels of at most 63. */
function nodeName(length: number, last = 'z'): string {
  const labels: string[] = [];
  let remaining = length;
  while (remaining > 0) {
    const size = Math.min(63, remaining);
    labels.push('n'.repeat(size));
    remaining -= size + 1;
  }
  const name = labels.join('.').slice(0, length).replace(/\.$/, 'n');
  return `${name.slice(0, -1)}${last}`;
}

describe('extensionLeaseName', () => {
  it('is <extension>.<node> when that fits', () => {
    expect(extensionLeaseName('node-a', 'gpu')).toBe('gpu.node-a');
    expect(extensionLeaseName('ip-10-0-0-5.ec2.internal', 'csi-ebs')).toBe(
      'csi-ebs.ip-10-0-0-5.ec2.internal',
    );
  });

  const UID_A = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b';
  const UID_B = '0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d';

  it('is deterministic', () => {
    const long = nodeName(253);
    expect(extensionLeaseName(long, 'gpu', UID_A)).toBe(extensionLeaseName(long, 'gpu', UID_A));
  });

  it.each([
    [1, 'gpu'],
    [63, 'gpu'],
    [249, 'gpu'],
    [250, 'gpu'],
    [251, 'gpu'],
    [253, 'gpu'],
    [190, 'x'.repeat(63)],
    [253, 'x'.repeat(63)],
  ])('node name of %d characters, extension %s → a valid DNS subdomain ≤ 253', (length, extension) => {
    const node = nodeName(length);
    expect(node).toHaveLength(length);
    expect(node).toMatch(DNS_SUBDOMAIN);
    const name = extensionLeaseName(node, extension, UID_A);
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(DNS_SUBDOMAIN);
    expect(name.startsWith(`${extension}.`)).toBe(true);
    // The UID only where `<extension>.<node>` does not fit.
    expect(name).toBe(`${extension}.${extension.length + 1 + length <= 253 ? node : UID_A}`);
  });

  it('past 253 characters: <extension>.<node UID>, which admission can check exactly (issue 20 item 5)', () => {
    expect(extensionLeaseName(nodeName(253), 'gpu', UID_A)).toBe(`gpu.${UID_A}`);
    expect(agentLeaseName(nodeName(253), UID_A)).toBe(`nodecare-agent.${UID_A}`);
  });

  it('two long node names that agree in all but their end, or in everything but their UID, never share a name', () => {
    // Before: a prefix of the pair and a hash admission could not check, so the first 242 characters decided.
    const a = extensionLeaseName(nodeName(253, 'a'), 'gpu', UID_A);
    const b = extensionLeaseName(nodeName(253, 'b'), 'gpu', UID_B);
    expect(a).not.toBe(b);
    expect(extensionLeaseName(nodeName(253), 'gpu', UID_A)).not.toBe(
      extensionLeaseName(nodeName(253), 'gpu', UID_B),
    );
  });

  it('does not collide for two extensions on one long node', () => {
    const node = nodeName(253);
    expect(extensionLeaseName(node, 'gpu-a', UID_A)).not.toBe(extensionLeaseName(node, 'gpu-b', UID_A));
  });

  it('gives no name to a long pair without a UID it can use, and says why', () => {
    expect(() => extensionLeaseName(nodeName(253), 'gpu')).toThrow(
      /named after the node's UID, and none is known/,
    );
    expect(() => extensionLeaseName(nodeName(253), 'gpu', 'Not/A.Uid')).toThrow(/is not one/);
    expect(leaseNameOrUndefined(nodeName(253), 'gpu')).toBeUndefined();
    expect(leaseNameOrUndefined('node-a', 'gpu')).toBe('gpu.node-a');
  });

  it("names the agent's heartbeat after the reserved extension name", () => {
    expect(agentLeaseName('node-a')).toBe('nodecare-agent.node-a');
  });
});

describe('microTime', () => {
  it('writes six fractional digits, as Kubernetes MicroTime does', () => {
    expect(microTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 67)))).toBe('2026-01-02T03:04:05.067000Z');
  });
});

describe('truncateMessage', () => {
  it.each([
    ['keeps a short message', 'connection refused', 'connection refused'],
    ['joins lines and collapses whitespace', '  line one\n\tline   two ', 'line one line two'],
    ['cuts at the cap with an ellipsis', 'x'.repeat(300), `${'x'.repeat(MAX_LEASE_MESSAGE - 1)}…`],
    ['escapes ESC and C1 controls', 'a\u001b[2Jb\u009bc', 'a\\u001b[2Jb\\u009bc'],
    [
      'escapes an ESC at the cut (regression: ESC survived truncation)',
      `${'x'.repeat(MAX_LEASE_MESSAGE - 3)}\u001b[2J`,
      `${'x'.repeat(MAX_LEASE_MESSAGE - 3)}\\u…`,
    ],
  ])('%s', (_name, message, expected) => {
    expect(truncateMessage(message)).toBe(expected);
    expect(truncateMessage(message).length).toBeLessThanOrEqual(MAX_LEASE_MESSAGE);
  });
});

describe('buildLease / decodeLease', () => {
  const renewTime = new Date(Date.UTC(2026, 0, 1, 12, 0, 0, 250));
  const record: ProbeStateRecord = {
    state: 'Unhealthy',
    reason: 'ConnectionRefused',
    message: 'connect ECONNREFUSED 127.0.0.1:9400',
    since: '2026-01-01T11:59:00.000Z',
  };
  const desired: DesiredLease = {
    node: { name: 'node-a', uid: 'uid-a' },
    extension: 'gpu',
    holderIdentity: 'nodecare-agent-x7k2p',
    leaseDurationSeconds: 40,
    renewTime,
    bootId: 'boot-1',
    record,
  };

  it('builds the whole Lease', () => {
    expect(buildLease(desired)).toEqual({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: 'gpu.node-a',
        namespace: 'nodecare-leases',
        labels: { 'nodecare.io/role': 'extension', 'nodecare.io/extension': 'gpu' },
        annotations: {
          'nodecare.io/node': 'node-a',
          'nodecare.io/boot-id': 'boot-1',
          'nodecare.io/state': 'Unhealthy',
          'nodecare.io/reason': 'ConnectionRefused',
          'nodecare.io/message': 'connect ECONNREFUSED 127.0.0.1:9400',
          'nodecare.io/since': '2026-01-01T11:59:00.000Z',
        },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-a' }],
      },
      spec: {
        holderIdentity: 'nodecare-agent-x7k2p',
        leaseDurationSeconds: 40,
        renewTime: '2026-01-01T12:00:00.250000Z',
      },
    });
  });

  it('round-trips an extension lease through decodeLease', () => {
    const lease = buildLease({ ...desired, resourceVersion: '42' });
    expect(decodeLease(lease)).toEqual({
      name: 'gpu.node-a',
      resourceVersion: '42',
      node: 'node-a',
      role: 'extension',
      extension: 'gpu',
      state: 'Unhealthy',
      reason: 'ConnectionRefused',
      message: 'connect ECONNREFUSED 127.0.0.1:9400',
      since: '2026-01-01T11:59:00.000Z',
      bootId: 'boot-1',
      holderIdentity: 'nodecare-agent-x7k2p',
      leaseDurationSeconds: 40,
      renewTime: '2026-01-01T12:00:00.250000Z',
    });
  });

  it.each(['Healthy', 'Unhealthy', 'Progressing', 'Unknown'] as const)('round-trips state %s', (state) => {
    const lease = buildLease({ ...desired, record: { ...record, state } });
    expect(decodeLease(lease)?.state).toBe(state);
    expect(isExtensionState(state)).toBe(true);
  });

  it.each([
    { name: 'the agent default', written: 40, decoded: 40 },
    { name: "the agent's longest (3 x 3600)", written: 10_800, decoded: MAX_LEASE_DURATION_SECONDS },
    { name: '25 days (past a timer)', written: 2_147_484, decoded: MAX_LEASE_DURATION_SECONDS },
    { name: 'int32 max', written: 2_147_483_647, decoded: MAX_LEASE_DURATION_SECONDS },
    { name: 'zero', written: 0, decoded: 0 },
    { name: 'negative', written: -5, decoded: 0 },
    { name: 'not a number', written: '40' as unknown as number, decoded: 0 },
    { name: 'absent', written: undefined, decoded: 0 },
  ])(
    'bounds leaseDurationSeconds: $name → $decoded (regression: a 25-day lease was a hot loop)',
    ({ written, decoded }) => {
      const lease = buildLease(desired);
      const spec = { ...lease.spec, leaseDurationSeconds: written };
      expect(decodeLease({ ...lease, spec })?.leaseDurationSeconds).toBe(decoded);
    },
  );

  it('decodes reason and message inert: control characters escaped, capped (regression: written raw into messages)', () => {
    const lease = buildLease(desired);
    lease.metadata.annotations = {
      ...lease.metadata.annotations,
      [LeaseAnnotation.reason]: `Bad\u001b[2J${'R'.repeat(1000)}`,
      [LeaseAnnotation.message]: `x\u009b31m${'m'.repeat(100_000)}`,
    };
    const decoded = decodeLease(lease);
    expect(decoded?.reason.startsWith('Bad\\u001b[2J')).toBe(true);
    expect(decoded?.reason.length).toBeLessThan(200);
    expect(decoded?.message.startsWith('x\\u009b31m')).toBe(true);
    expect(decoded?.message.length).toBeLessThanOrEqual(MAX_LEASE_MESSAGE);
  });

  it('round-trips the agent heartbeat, which carries no state', () => {
    const lease = buildLease({ ...desired, extension: undefined, record: undefined });
    expect(lease.metadata.name).toBe('nodecare-agent.node-a');
    expect(lease.metadata.labels).toEqual({ 'nodecare.io/role': 'agent' });
    expect(decodeLease(lease)).toMatchObject({
      name: 'nodecare-agent.node-a',
      role: 'agent',
      extension: undefined,
      state: undefined,
      reason: '',
      node: 'node-a',
    });
  });

  it('keeps the full node name in an annotation when the lease name is shortened', () => {
    const node = nodeName(253);
    const uid = '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b';
    const lease = buildLease({ ...desired, node: { name: node, uid } });
    expect(lease.metadata.name).not.toContain(node);
    expect(decodeLease(lease)).toMatchObject({
      node,
      extension: 'gpu',
      name: extensionLeaseName(node, 'gpu', uid),
    });
  });

  it('carries no resourceVersion unless one is given', () => {
    expect(buildLease(desired).metadata).not.toHaveProperty('resourceVersion');
    expect(buildLease({ ...desired, resourceVersion: '7' }).metadata.resourceVersion).toBe('7');
  });

  it('writes a capped single-line message', () => {
    const lease = buildLease({
      ...desired,
      record: { ...record, message: `a\nb ${'x'.repeat(400)}` },
    });
    const message = decodeLease(lease)?.message ?? '';
    expect(message.startsWith('a b x')).toBe(true);
    expect(message.length).toBe(MAX_LEASE_MESSAGE);
  });

  it('decodes a renewTime that the client handed over as a Date', () => {
    const lease = buildLease(desired);
    const fromClient: LeaseObject = { ...lease, spec: { ...lease.spec, renewTime: renewTime } };
    expect(decodeLease(fromClient)?.renewTime).toBe('2026-01-01T12:00:00.250Z');
  });

  it.each<[string, LeaseObject]>([
    [
      'a lease without the node annotation',
      { metadata: { name: 'x', labels: { 'nodecare.io/role': 'extension' } } },
    ],
    [
      'a lease without the role label',
      { metadata: { name: 'x', annotations: { 'nodecare.io/node': 'node-a' } } },
    ],
    [
      'a lease with an unknown role',
      {
        metadata: {
          name: 'x',
          labels: { 'nodecare.io/role': 'other' },
          annotations: { 'nodecare.io/node': 'node-a' },
        },
      },
    ],
    [
      'a kube-node-lease heartbeat',
      { metadata: { name: 'node-a', namespace: 'kube-node-lease' }, spec: { holderIdentity: 'node-a' } },
    ],
  ])('ignores %s (not ours)', (_name, lease) => {
    expect(decodeLease(lease)).toBeUndefined();
  });

  it('decodes an unknown state as undefined and tolerates a missing spec', () => {
    const lease: LeaseObject = {
      metadata: {
        name: 'gpu.node-a',
        labels: { 'nodecare.io/role': 'extension', 'nodecare.io/extension': 'gpu' },
        annotations: { 'nodecare.io/node': 'node-a', 'nodecare.io/state': 'Broken' },
      },
    };
    expect(decodeLease(lease)).toMatchObject({
      state: undefined,
      holderIdentity: '',
      leaseDurationSeconds: 0,
      renewTime: '',
    });
  });
});

describe('withNote', () => {
  const record = { state: 'Healthy', reason: 'ProbeSucceeded', message: 'HTTP 200', since: '' } as const;

  it('appends the note in brackets', () => {
    expect(withNote(record, 'conflict').message).toBe('HTTP 200 [conflict]');
  });

  it('cuts the message, not the note, to fit the Lease message cap', () => {
    const long = withNote({ ...record, message: 'x'.repeat(300) }, 'conflict');
    expect(long.message).toHaveLength(MAX_LEASE_MESSAGE);
    expect(long.message.endsWith('… [conflict]')).toBe(true);
    expect(
      buildLease({
        node: { name: 'n', uid: 'u' },
        extension: 'gpu',
        holderIdentity: 'h',
        leaseDurationSeconds: 40,
        renewTime: new Date(0),
        bootId: 'b',
        record: long,
      }).metadata.annotations?.['nodecare.io/message'],
    ).toBe(long.message);
  });
});
