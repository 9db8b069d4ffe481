// The protobuf reading of a Lease list and a Status (protobuf.ts), on bytes written here field by field
// (testing.ts, protobufjs's Writer) as the API server lays them out (k8s.io/api's generated.proto). What a
// real API server sends is compared with its JSON in test/integration/protobuf.test.ts.

import { describe, expect, it } from 'vitest';
import { isKubeError, KubeErrorCode } from './errors.ts';
import { decodeLeaseList, decodeStatus, protobufListContinue } from './protobuf.ts';
import {
  protobufBody as envelope,
  protobufMessage as message,
  type ProtobufField as Field,
} from './testing.ts';

const entry = (key: string, value: string): Uint8Array => message([1, 'string', key], [2, 'string', value]);
const time = (seconds: number, nanos = 0): Uint8Array =>
  message([1, 'varint', seconds], ...(nanos ? [[2, 'varint', nanos] as Field] : []));

// A time as the API server stores it, in seconds since the epoch.
const SECONDS = Date.parse('2026-11-29T13:25:59Z') / 1000;

const leaseBytes = message(
  [
    1,
    'message',
    message(
      [1, 'string', 'cni-agent.node-a'],
      [3, 'string', 'nodecare-leases'],
      [5, 'string', 'uid-lease'],
      [6, 'string', '5333'],
      [7, 'varint', 1], // generation: not read
      [8, 'message', time(SECONDS - 60)], // creationTimestamp: not read
      [11, 'message', entry('nodecare.io/role', 'extension')],
      [11, 'message', entry('nodecare.io/extension', 'cni-agent')],
      [12, 'message', entry('nodecare.io/node', 'node-a')],
      [12, 'message', entry('nodecare.io/message', 'π ok ✓')],
      [
        13,
        'message',
        message(
          [1, 'string', 'Node'],
          [3, 'string', 'node-a'],
          [4, 'string', 'uid-node'],
          [5, 'string', 'v1'],
          [6, 'varint', 1],
        ),
      ],
      [14, 'string', 'example.com/finalizer'], // finalizers: not read
      [
        17, // managedFields: stepped over unread
        'message',
        message(
          [1, 'string', 'nodecare-agent'],
          [2, 'string', 'Update'],
          [3, 'string', 'coordination.k8s.io/v1'],
        ),
      ],
      [9, 'message', time(SECONDS + 30)],
      [99, 'string', 'a field a later Kubernetes adds'],
    ),
  ],
  [
    2,
    'message',
    message(
      [1, 'string', 'agent-node-a'],
      [2, 'varint', 40],
      [3, 'message', time(SECONDS)],
      [4, 'message', time(SECONDS + 1, 832_000_000)],
      [5, 'varint', 3],
      [6, 'string', 'OldestEmulationVersion'], // strategy: not read
    ),
  ],
);

const listBytes = (continueToken?: string, ...items: Uint8Array[]): Uint8Array =>
  message(
    [
      1,
      'message',
      message([2, 'string', '53407'], ...(continueToken ? [[3, 'string', continueToken] as Field] : [])),
    ],
    ...items.map((item): Field => [2, 'message', item]),
  );

const expectMalformed = (decode: () => unknown, text: RegExp | string): void => {
  try {
    decode();
  } catch (err) {
    expect(isKubeError(err, KubeErrorCode.Malformed), String(err)).toBe(true);
    expect((err as Error).message).toMatch(text);
    return;
  }
  expect.fail('decoded without an error');
};

describe('decodeLeaseList', () => {
  it('reads a Lease into what its JSON parses to, without managedFields and the fields nodecare never reads', () => {
    const list = decodeLeaseList(envelope('LeaseList', listBytes('eyJydiI6NTM0MDd9', leaseBytes)));
    expect(list).toEqual({
      metadata: { resourceVersion: '53407', continue: 'eyJydiI6NTM0MDd9' },
      items: [
        {
          metadata: {
            name: 'cni-agent.node-a',
            namespace: 'nodecare-leases',
            uid: 'uid-lease',
            resourceVersion: '5333',
            labels: { 'nodecare.io/role': 'extension', 'nodecare.io/extension': 'cni-agent' },
            annotations: { 'nodecare.io/node': 'node-a', 'nodecare.io/message': 'π ok ✓' },
            ownerReferences: [
              { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: 'uid-node', controller: true },
            ],
            // Time: whole seconds, as its JSON; MicroTime: six fractional digits, as its JSON.
            deletionTimestamp: '2026-11-29T13:26:29Z',
          },
          spec: {
            holderIdentity: 'agent-node-a',
            leaseDurationSeconds: 40,
            acquireTime: '2026-11-29T13:25:59.000000Z',
            renewTime: '2026-11-29T13:26:00.832000Z',
            leaseTransitions: 3,
          },
        },
      ],
    });
  });

  it('reads an empty list, and a Lease with no spec', () => {
    expect(decodeLeaseList(envelope('LeaseList', listBytes()))).toEqual({
      metadata: { resourceVersion: '53407' },
      items: [],
    });
    const bare = message([1, 'message', message([1, 'string', 'x'])]);
    expect(decodeLeaseList(envelope('LeaseList', listBytes(undefined, bare))).items).toEqual([
      { metadata: { name: 'x' } },
    ]);
  });

  it('refuses a body that is cut short anywhere inside the list, naming what it was reading', () => {
    const whole = envelope('LeaseList', listBytes('token', leaseBytes, leaseBytes));
    // Every cut from just after the envelope's header to one byte short of the end.
    for (let cut = 12; cut < whole.length; cut += 7)
      expectMalformed(() => decodeLeaseList(whole.subarray(0, cut), 'LIST leases'), /^LIST leases: protobuf/);
  });

  it('refuses a body cut right after its TypeMeta, which would otherwise read as an empty list', () => {
    const typeMeta = message([
      1,
      'message',
      message([1, 'string', 'coordination.k8s.io/v1'], [2, 'string', 'LeaseList']),
    ]);
    expectMalformed(
      () => decodeLeaseList(Buffer.concat([Buffer.from('k8s\0', 'latin1'), typeMeta])),
      /no LeaseList in it/,
    );
  });

  it('refuses JSON, another kind, and an encoded body', () => {
    expectMalformed(() => decodeLeaseList(Buffer.from('{"kind":"LeaseList"}')), /magic/);
    expectMalformed(() => decodeLeaseList(envelope('Status', message())), /is a Status, not a LeaseList/);
    const gzipped = Buffer.concat([envelope('LeaseList', listBytes()), message([3, 'string', 'gzip'])]);
    expectMalformed(() => decodeLeaseList(gzipped), /content encoding gzip/);
  });

  it("skips a Lease whose fields run past the Lease's own end, or past the body, and reads the rest", () => {
    // A spec that says it is 2 bytes long, whose holderIdentity (5 bytes) runs on past it.
    const crossing = Buffer.from([0x12, 0x02, 0x0a, 0x05, ...Buffer.from('abcde')]);
    // A spec that says it is 200 bytes long, in a Lease of 4.
    const long = Buffer.from([0x12, 0xc8, 0x01, 0x0a, 0x01, 0x61]);
    const ok = message([1, 'message', message([1, 'string', 'ok'])]);
    const list = decodeLeaseList(envelope('LeaseList', listBytes(undefined, crossing, ok, long)));
    expect(list.items?.map((l) => l.metadata.name)).toEqual(['ok']);
    expect(list.skipped?.map((s) => String(s.err))).toEqual([
      expect.stringMatching(/read past its end/),
      expect.stringMatching(/runs past the end/),
    ]);
  });

  it('refuses a list whose item says it is longer than the body', () => {
    const whole = envelope('LeaseList', listBytes(undefined, leaseBytes));
    expectMalformed(() => decodeLeaseList(whole.subarray(0, whole.length - 3)), /not readable/);
  });

  it('skips a Lease over the bytes it reads of one without decoding it, and names it (issue 50 item 2)', () => {
    const big = message(
      [1, 'message', message([1, 'string', 'big.node-x'], [3, 'string', 'nodecare-leases'])],
      [2, 'message', message([1, 'string', 'h'.repeat(70_000)])],
    );
    const list = decodeLeaseList(envelope('LeaseList', listBytes(undefined, leaseBytes, big)), 'LIST');
    expect(list.items?.map((l) => l.metadata.name)).toEqual(['cni-agent.node-a']);
    expect(list.skipped).toEqual([
      { key: 'nodecare-leases/big.node-x', err: expect.objectContaining({ code: KubeErrorCode.Malformed }) },
    ]);
    expect(String(list.skipped?.[0]?.err)).toMatch(/a Lease of 700\d\d bytes is over the 65536 bytes/);
  });
});

describe('protobufListContinue', () => {
  it('reads the continue token from the list metadata, and nothing from what is not a list', () => {
    expect(protobufListContinue(envelope('LeaseList', listBytes('abc', leaseBytes)))).toBe('abc');
    expect(protobufListContinue(envelope('LeaseList', listBytes(undefined, leaseBytes)))).toBeUndefined();
    expect(protobufListContinue(Buffer.from('{"metadata":{"continue":"abc"}}'))).toBeUndefined();
    expect(protobufListContinue(envelope('Status', message()))).toBeUndefined();
  });
});

describe('decodeStatus', () => {
  it("reads an error's message, reason and retry-after", () => {
    const status = message(
      [1, 'message', message()],
      [2, 'string', 'Failure'],
      [3, 'string', 'the server is busy'],
      [4, 'string', 'TooManyRequests'],
      [5, 'message', message([1, 'string', 'x'], [5, 'varint', 7])],
      [6, 'varint', 429],
    );
    expect(decodeStatus(envelope('Status', status, 'v1'))).toEqual({
      message: 'the server is busy',
      reason: 'TooManyRequests',
      details: { retryAfterSeconds: 7 },
    });
  });
});

describe('decodeLeaseList keeps a page whole when one Lease in it cannot be read (issue 50 item 1)', () => {
  // The API server stores `acquireTime: "9999-12-31T23:59:59.000000-23:59"` as year 10000.
  const YEAR_10000 = Date.UTC(9999, 11, 31, 23, 59, 59) / 1000 + 23 * 3600 + 59 * 60;
  const named = (name: string, ...spec: Field[]): Uint8Array =>
    message(
      [1, 'message', message([1, 'string', name], [6, 'string', '1'])],
      [2, 'message', message(...spec)],
    );

  it('skips a Lease whose acquireTime is year 10000, names it, and reads the others', () => {
    const list = decodeLeaseList(
      envelope(
        'LeaseList',
        listBytes(
          'next',
          named('before'),
          named('poison.node-x', [3, 'message', time(YEAR_10000)]),
          named('after', [4, 'message', time(SECONDS)]),
        ),
      ),
      'LIST leases',
    );
    expect(list.items?.map((l) => l.metadata.name)).toEqual(['before', 'after']);
    expect(list.metadata?.continue).toBe('next');
    expect(list.skipped?.map((s) => s.key)).toEqual(['poison.node-x']);
    expect(String(list.skipped?.[0]?.err)).toMatch(/out of range/);
  });
});
