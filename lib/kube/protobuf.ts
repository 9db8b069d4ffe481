// Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf) of a Lease list and of a Status, read
// into the same objects the JSON would parse to. The API server encodes a LIST of Leases as protobuf in about
// half the CPU JSON takes (docs/adr/0018), and a controller start lists every Lease of the fleet while the API
// server also takes the fleet's renewals on the same cores. Only the built-in types the API server encodes
// this way are read, and of them only the fields nodecare reads (api/lease.ts LeaseObject); everything else,
// managedFields first of all, is stepped over unread. The wire format is read with protobufjs's Reader; the
// field numbers are those of k8s.io/api's and k8s.io/apimachinery's generated.proto.
//
// The body is the 4 bytes `k8s\0` and a runtime.Unknown: its TypeMeta (apiVersion, kind) and the object's
// own bytes (`raw`). Anything else (another magic, another kind, a cut or inconsistent message) is refused
// with a Malformed KubeError naming what was read.
//
// One Lease that cannot be read never fails its page (issue 50 item 1): each item of a list is a message of
// its own length, so a Lease whose fields do not read (a time the API server stores but no RFC 3339 text
// can say, such as year 10000) or whose bytes exceed MAX_LEASE_BYTES is stepped over whole, its name read
// if it can be, and returned in the list's `skipped`. Only a body whose list structure itself is broken
// (cut short, a length past its end) is refused as a whole.

import protobuf from 'protobufjs/minimal.js';
import type { LeaseObject } from '../../api/lease.ts';
import { KubeError, KubeErrorCode, type StatusBody } from './errors.ts';
import type { ListBody } from './list.ts';

/**
 * The most bytes of one Lease that are decoded: a Lease nodecare's agent writes is about 1.5 KB with its
 * managedFields, and admission keeps what an agent may write well below this (docs/install.md, "Threat
 * model"). A larger one (the API server takes up to 1.5 MB) is skipped, not decoded, so its strings are
 * never made.
 */
export const MAX_LEASE_BYTES = 64 * 1024;

type Reader = protobuf.Reader;
type Long = protobuf.Long;

const MAGIC = [0x6b, 0x38, 0x73, 0x00]; // "k8s\0"

// Wire types (the low three bits of a tag).
const VARINT = 0;
const LENGTH = 2;
const tag = (field: number, wire: number): number => (field << 3) | wire;

class Malformed extends Error {}

function malformed(what: string): never {
  throw new Malformed(what);
}

/** Reads one embedded message: its length, then `visit` for each tag until its end (which must match). */
function embedded(r: Reader, visit: (t: number) => void): void {
  const length = r.uint32();
  const end = r.pos + length;
  if (end > r.len) malformed(`a message of ${length} bytes at ${r.pos} runs past the end (${r.len})`);
  while (r.pos < end) visit(r.uint32());
  if (r.pos !== end) malformed(`a message read past its end (${r.pos} of ${end})`);
}

const toNumber = (v: number | Long): number => protobuf.util.LongBits.from(v).toNumber();

/** A Time or MicroTime (seconds, nanos) as its JSON text: RFC 3339 in UTC, six fractional digits if micro. */
function time(r: Reader, micro: boolean): string {
  let seconds = 0;
  let nanos = 0;
  embedded(r, (t) => {
    if (t === tag(1, VARINT)) seconds = toNumber(r.int64());
    else if (t === tag(2, VARINT)) nanos = r.int32();
    else r.skipType(t & 7);
  });
  const iso = new Date(seconds * 1000).toISOString();
  if (iso.length !== 24) malformed(`a time of ${seconds} seconds is out of range`);
  const whole = iso.slice(0, 19);
  if (!micro) return `${whole}Z`;
  const micros = Math.floor(nanos / 1000);
  if (micros < 0 || micros > 999_999) malformed(`a time's nanos ${nanos} are out of range`);
  return `${whole}.${String(micros).padStart(6, '0')}Z`;
}

/** A map<string, string> entry, added to `map`. */
function mapEntry(r: Reader, map: Record<string, string>): void {
  let key = '';
  let value = '';
  embedded(r, (t) => {
    if (t === tag(1, LENGTH)) key = r.string();
    else if (t === tag(2, LENGTH)) value = r.string();
    else r.skipType(t & 7);
  });
  map[key] = value;
}

type OwnerReference = NonNullable<LeaseObject['metadata']['ownerReferences']>[number] & {
  controller?: boolean;
  blockOwnerDeletion?: boolean;
};

function ownerReference(r: Reader): OwnerReference {
  const ref: OwnerReference = { apiVersion: '', kind: '', name: '', uid: '' };
  embedded(r, (t) => {
    if (t === tag(5, LENGTH)) ref.apiVersion = r.string();
    else if (t === tag(1, LENGTH)) ref.kind = r.string();
    else if (t === tag(3, LENGTH)) ref.name = r.string();
    else if (t === tag(4, LENGTH)) ref.uid = r.string();
    else if (t === tag(6, VARINT)) ref.controller = r.bool();
    else if (t === tag(7, VARINT)) ref.blockOwnerDeletion = r.bool();
    else r.skipType(t & 7);
  });
  return ref;
}

/** ObjectMeta, the fields a LeaseObject has; managedFields (17) and the rest are skipped. */
function objectMeta(r: Reader): LeaseObject['metadata'] {
  const meta: LeaseObject['metadata'] = {};
  embedded(r, (t) => {
    if (t === tag(1, LENGTH)) meta.name = r.string();
    else if (t === tag(3, LENGTH)) meta.namespace = r.string();
    else if (t === tag(5, LENGTH)) meta.uid = r.string();
    else if (t === tag(6, LENGTH)) meta.resourceVersion = r.string();
    else if (t === tag(9, LENGTH)) meta.deletionTimestamp = time(r, false);
    else if (t === tag(11, LENGTH)) mapEntry(r, (meta.labels ??= {}));
    else if (t === tag(12, LENGTH)) mapEntry(r, (meta.annotations ??= {}));
    else if (t === tag(13, LENGTH)) (meta.ownerReferences ??= []).push(ownerReference(r));
    else r.skipType(t & 7);
  });
  return meta;
}

function leaseSpec(r: Reader): NonNullable<LeaseObject['spec']> {
  const spec: NonNullable<LeaseObject['spec']> = {};
  embedded(r, (t) => {
    if (t === tag(1, LENGTH)) spec.holderIdentity = r.string();
    else if (t === tag(2, VARINT)) spec.leaseDurationSeconds = r.int32();
    else if (t === tag(3, LENGTH)) spec.acquireTime = time(r, true);
    else if (t === tag(4, LENGTH)) spec.renewTime = time(r, true);
    else if (t === tag(5, VARINT)) spec.leaseTransitions = r.int32();
    else r.skipType(t & 7);
  });
  return spec;
}

/** ListMeta's resourceVersion and continue token. */
function listMeta(r: Reader): NonNullable<ListBody<unknown>['metadata']> {
  const meta: NonNullable<ListBody<unknown>['metadata']> = {};
  embedded(r, (t) => {
    if (t === tag(2, LENGTH)) meta.resourceVersion = r.string();
    else if (t === tag(3, LENGTH)) meta.continue = r.string();
    else r.skipType(t & 7);
  });
  return meta;
}

/** The envelope: checks the magic and the kind, and returns a reader over the object's own bytes. */
function unwrap(bytes: Uint8Array, kind: string): Reader {
  if (bytes.length < MAGIC.length || MAGIC.some((b, i) => bytes[i] !== b))
    malformed('the body does not start with the protobuf magic "k8s\\0"');
  const r = protobuf.Reader.create(bytes.subarray(MAGIC.length));
  let seen = '';
  let raw: Uint8Array | undefined;
  let encoding = '';
  while (r.pos < r.len) {
    const t = r.uint32();
    if (t === tag(1, LENGTH))
      embedded(r, (u) => {
        if (u === tag(2, LENGTH)) seen = r.string();
        else r.skipType(u & 7);
      });
    else if (t === tag(2, LENGTH)) raw = r.bytes();
    else if (t === tag(3, LENGTH)) encoding = r.string();
    else r.skipType(t & 7);
  }
  if (seen !== kind) malformed(`the body is a ${seen || 'object of no kind'}, not a ${kind}`);
  if (encoding !== '') malformed(`the body's content encoding ${encoding} is not read`);
  // A body cut right after its TypeMeta would otherwise read as an empty list.
  if (raw === undefined) malformed(`the body has no ${kind} in it`);
  return protobuf.Reader.create(raw);
}

/** Runs a decode, turning what the reader or the checks refuse into a Malformed KubeError about `what`. */
function decoding<T>(what: string, decode: () => T): T {
  try {
    return decode();
  } catch (err) {
    // Malformed from the checks here, RangeError ("index out of range") or Error from the reader.
    if (err instanceof Error)
      throw new KubeError(KubeErrorCode.Malformed, 0, `${what}: protobuf not readable: ${err.message}`);
    throw err;
  }
}

/** What can be read of a Lease's name and namespace, for naming one that is skipped ('' where nothing reads). */
function leaseKey(bytes: Uint8Array): string {
  let name = '';
  let namespace = '';
  try {
    const r = protobuf.Reader.create(bytes);
    while (r.pos < r.len) {
      const t = r.uint32();
      if (t !== tag(1, LENGTH)) {
        r.skipType(t & 7);
        continue;
      }
      embedded(r, (u) => {
        if (u === tag(1, LENGTH)) name = r.string();
        else if (u === tag(3, LENGTH)) namespace = r.string();
        else r.skipType(u & 7);
      });
      break;
    }
  } catch {
    // A name is only what reads before the first fault.
  }
  // The key names the object in a log line: a name the API server accepted is at most 253 characters.
  return (namespace ? `${namespace}/${name}` : name).slice(0, 2 * 253 + 1);
}

/** Reads one Lease item of a list into `list.items`, or into `list.skipped` when it cannot or may not be read. */
function listItem(r: Reader, list: ListBody<LeaseObject>, what: string, maxItemBytes: number): void {
  const length = r.uint32();
  const start = r.pos;
  const end = start + length;
  if (end > r.len) malformed(`a message of ${length} bytes at ${start} runs past the end (${r.len})`);
  r.pos = end;
  // The length prefix is the item's own: the next item starts at `end` whatever this one holds.
  if (length > maxItemBytes) {
    const bytes = r.buf.subarray(start, Math.min(end, start + 4096));
    (list.skipped ??= []).push({
      key: leaseKey(bytes),
      err: new KubeError(
        KubeErrorCode.Malformed,
        0,
        `${what}: a Lease of ${length} bytes is over the ${maxItemBytes} bytes read of one; skipped`,
      ),
    });
    return;
  }
  const bytes = r.buf.subarray(start, end);
  try {
    const item = protobuf.Reader.create(bytes);
    const obj: LeaseObject = { metadata: {} };
    while (item.pos < item.len) {
      const t = item.uint32();
      if (t === tag(1, LENGTH)) obj.metadata = objectMeta(item);
      else if (t === tag(2, LENGTH)) obj.spec = leaseSpec(item);
      else item.skipType(t & 7);
    }
    list.items?.push(obj);
  } catch (err) {
    if (!(err instanceof Error)) throw err;
    (list.skipped ??= []).push({
      key: leaseKey(bytes),
      err: new KubeError(
        KubeErrorCode.Malformed,
        0,
        `${what}: a Lease's protobuf is not readable: ${err.message}`,
      ),
    });
  }
}

/**
 * A LeaseList's items and metadata, as its JSON parses (less managedFields and fields nodecare never reads);
 * Leases that cannot be read, or are over `maxItemBytes`, in `skipped` instead of `items`.
 */
export function decodeLeaseList(
  bytes: Uint8Array,
  what = 'LeaseList',
  maxItemBytes = MAX_LEASE_BYTES,
): ListBody<LeaseObject> {
  return decoding(what, () => {
    const r = unwrap(bytes, 'LeaseList');
    const list: ListBody<LeaseObject> = { items: [] };
    while (r.pos < r.len) {
      const t = r.uint32();
      if (t === tag(1, LENGTH)) list.metadata = listMeta(r);
      else if (t === tag(2, LENGTH)) listItem(r, list, what, maxItemBytes);
      else r.skipType(t & 7);
    }
    return list;
  });
}

/**
 * The continue token of a protobuf list, read before its items are (the API server writes the list's metadata
 * first); undefined when there is none or the bytes do not say, as listContinueToken does for JSON text.
 */
export function protobufListContinue(bytes: Uint8Array): string | undefined {
  try {
    const r = unwrap(bytes, 'LeaseList');
    if (r.pos >= r.len || r.uint32() !== tag(1, LENGTH)) return undefined;
    return listMeta(r).continue || undefined;
  } catch {
    return undefined;
  }
}

/** A Status (an error's body) as its JSON parses, as much as errors.ts reads. */
export function decodeStatus(bytes: Uint8Array): StatusBody {
  return decoding('Status', () => {
    const r = unwrap(bytes, 'Status');
    const status: StatusBody = {};
    while (r.pos < r.len) {
      const t = r.uint32();
      if (t === tag(3, LENGTH)) status.message = r.string();
      else if (t === tag(4, LENGTH)) status.reason = r.string();
      else if (t === tag(5, LENGTH))
        embedded(r, (u) => {
          if (u === tag(5, VARINT)) status.details = { retryAfterSeconds: r.int32() };
          else r.skipType(u & 7);
        });
      else r.skipType(t & 7);
    }
    return status;
  });
}
