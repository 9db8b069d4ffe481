import { describe, expect, it } from 'vitest';
import { withoutManagedFields } from './managed-fields.ts';

/** A Lease as the API server sends it, managedFields included (one written by the agent). */
const lease = {
  kind: 'Lease',
  apiVersion: 'coordination.k8s.io/v1',
  metadata: {
    name: 'cni-agent.node-1',
    namespace: 'nodecare-leases',
    resourceVersion: '5438',
    labels: { 'nodecare.io/extension': 'cni-agent', 'nodecare.io/role': 'extension' },
    annotations: { 'nodecare.io/message': 'connected to 127.0.0.1:9099', 'nodecare.io/state': 'Healthy' },
    ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: 'd11a555f' }],
    managedFields: [
      {
        manager: 'nodecare-agent',
        operation: 'Update',
        apiVersion: 'coordination.k8s.io/v1',
        time: '2026-11-28T18:23:48Z',
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': {
            'f:annotations': { '.': {}, 'f:nodecare.io/state': {} },
            'f:ownerReferences': { '.': {}, 'k:{"uid":"d11a555f"}': {} },
          },
          'f:spec': { 'f:renewTime': {} },
        },
      },
    ],
  },
  spec: {
    holderIdentity: 'agent-node-1',
    leaseDurationSeconds: 40,
    renewTime: '2026-11-28T18:23:47.154000Z',
  },
};

function stripped<T extends { metadata: object }>(obj: T): T {
  const { managedFields: _, ...metadata } = obj.metadata as { managedFields?: unknown };
  return { ...obj, metadata };
}

describe('withoutManagedFields', () => {
  it('leaves a Lease as it parses, less its managedFields', () => {
    expect(JSON.parse(withoutManagedFields(JSON.stringify(lease)))).toEqual(stripped(lease));
  });

  it('leaves them out of every item of a list, and out of a watch event', () => {
    const list = { kind: 'LeaseList', metadata: { resourceVersion: '9' }, items: [lease, lease, lease] };
    expect(JSON.parse(withoutManagedFields(JSON.stringify(list)))).toEqual({
      ...list,
      items: [stripped(lease), stripped(lease), stripped(lease)],
    });
    const event = { type: 'MODIFIED', object: lease };
    expect(JSON.parse(withoutManagedFields(JSON.stringify(event)))).toEqual({
      ...event,
      object: stripped(lease),
    });
  });

  it.each([
    ['the first member', '{"managedFields":[{"a":1}],"name":"x"}', { name: 'x' }],
    ['a middle member', '{"name":"x","managedFields":[],"uid":"u"}', { name: 'x', uid: 'u' }],
    ['the last member', '{"name":"x","managedFields":[{"a":[1,{"b":2}]}]}', { name: 'x' }],
    ['the only member', '{"managedFields":[{}]}', {}],
    [
      'brackets and braces inside its strings',
      '{"managedFields":[{"k":"]}]}{[","l":"\\\\"}],"n":1}',
      { n: 1 },
    ],
    [
      'escaped quotes inside its strings',
      '{"managedFields":[{"k:{\\"uid\\":\\"1\\"}":{},"m":"say \\"]\\""}],"n":1}',
      { n: 1 },
    ],
  ])('removes %s', (_, json, expected) => {
    expect(JSON.parse(withoutManagedFields(json))).toEqual(expected);
  });

  it.each([
    ['a string value that spells the member', { a: '"managedFields":[1]', b: ',"managedFields":[2]' }],
    ['a key that ends in the member', { 'x"managedFields': [1], 'y,"managedFields': [2] }],
    ['an annotation named managedFields (its value is a string)', { annotations: { managedFields: '[1]' } }],
    ['no managedFields at all', { metadata: { name: 'x' } }],
  ])('keeps %s', (_, obj) => {
    const json = JSON.stringify(obj);
    expect(withoutManagedFields(json)).toBe(json);
  });

  it.each([
    ['cut short inside the array', '{"managedFields":[{"a":1}'],
    ['cut short inside a string', '{"managedFields":[{"a":"]}'],
  ])('returns text that does not scan unchanged (%s), for JSON.parse to refuse', (_, json) => {
    expect(withoutManagedFields(json)).toBe(json);
    expect(() => JSON.parse(withoutManagedFields(json))).toThrow(SyntaxError);
  });

  it('parses any object the same, less metadata.managedFields (generated, with awkward strings)', () => {
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const awkward = ['"', '\\', ']', '[', '{', '}', ',', ':', '"managedFields":[', '\\"', 'é', '\n', 'a'];
    const text = (): string =>
      Array.from({ length: random(6) }, () => awkward[random(awkward.length)]).join('');
    const value = (depth: number): unknown => {
      const kind = random(depth > 2 ? 3 : 5);
      if (kind === 0) return text();
      if (kind === 1) return random(1000);
      if (kind === 2) return random(2) === 0;
      if (kind === 3) return Array.from({ length: random(4) }, () => value(depth + 1));
      return Object.fromEntries(Array.from({ length: random(4) }, () => [text(), value(depth + 1)]));
    };
    for (let i = 0; i < 500; i++) {
      const metadata: Record<string, unknown> = { name: text(), labels: value(1) };
      if (random(4) > 0) metadata.managedFields = [value(1), value(1)];
      metadata.annotations = value(1);
      const obj = { kind: text(), metadata, spec: value(0) };
      expect(JSON.parse(withoutManagedFields(JSON.stringify(obj)))).toEqual(stripped(obj));
    }
  });
});
