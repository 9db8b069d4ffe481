// What a node waited for while it bootstrapped, recorded once when the controller removes the bootstrap taint:
// on the BootstrapTaintRemoved Event, as an annotation (`nodecare.io/bootstrap`), so `kubectl nodecare explain`
// can split the time to schedulable by cause after the Leases have moved on (an extension that failed and
// recovered later has a newer `since`). Encoding and decoding live here together; the decoder trusts nothing
// (anyone allowed to create Events could write one).

import { validateExtensionName } from '../../api/naming.ts';

export const BOOTSTRAP_RECORD_ANNOTATION = 'nodecare.io/bootstrap';

/** Times in milliseconds since the epoch. */
export interface BootstrapRecord {
  /** The boot it is about (status.nodeInfo.bootID). */
  bootId: string;
  /** Node creation, or when the controller saw the reboot. */
  startedMs: number;
  /** When the controller first saw the agent report on this boot (its own clock), if it knows. */
  agentReportedMs: number | undefined;
  /** Each critical, enforced extension and when it turned Healthy (its Lease's `since`, the node's clock). */
  extensions: Array<{ name: string; healthyMs: number | undefined }>;
  /** When the controller decided to remove the taint (its own clock). */
  completedMs: number;
}

interface Encoded {
  bootId: string;
  started: string;
  agentReported?: string;
  extensions: Array<{ name: string; healthy?: string }>;
  completed: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export function encodeBootstrapRecord(r: BootstrapRecord): string {
  const encoded: Encoded = {
    bootId: r.bootId,
    started: iso(r.startedMs),
    ...(r.agentReportedMs !== undefined ? { agentReported: iso(r.agentReportedMs) } : {}),
    extensions: r.extensions.map((e) => ({
      name: e.name,
      ...(e.healthyMs !== undefined ? { healthy: iso(e.healthyMs) } : {}),
    })),
    completed: iso(r.completedMs),
  };
  return JSON.stringify(encoded);
}

/** The most the decoder reads: a record names at most this many extensions. */
const MAX_EXTENSIONS = 256;
const MAX_TEXT = 16_384;

function time(value: unknown): number | undefined {
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The record, or undefined for anything that is not a well-formed one. */
export function decodeBootstrapRecord(text: string | undefined): BootstrapRecord | undefined {
  if (text === undefined || text.length > MAX_TEXT) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const o = raw as Partial<Record<keyof Encoded, unknown>>;
  const startedMs = time(o.started);
  const completedMs = time(o.completed);
  if (startedMs === undefined || completedMs === undefined) return undefined;
  if (typeof o.bootId !== 'string' || o.bootId.length > 256) return undefined;
  if (!Array.isArray(o.extensions) || o.extensions.length > MAX_EXTENSIONS) return undefined;
  const extensions: BootstrapRecord['extensions'] = [];
  for (const e of o.extensions as unknown[]) {
    const name = (e as { name?: unknown } | null)?.name;
    if (typeof name !== 'string' || validateExtensionName(name) !== undefined) return undefined;
    extensions.push({ name, healthyMs: time((e as { healthy?: unknown }).healthy) });
  }
  return {
    bootId: o.bootId,
    startedMs,
    agentReportedMs: time(o.agentReported),
    extensions,
    completedMs,
  };
}
