// Constructors for the one result shape, so every probe words its outcomes the same way.

import { ProbeReason } from '../../api/reasons.ts';
import type { ProbeContext, ProbeResult } from './types.ts';

const MAX_MESSAGE_CHARS = 200;

/** Caps a message to a short single line (by code points, so no surrogate pair is split). */
export function shortMessage(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  const chars = [...line];
  return chars.length <= MAX_MESSAGE_CHARS ? line : `${chars.slice(0, MAX_MESSAGE_CHARS - 1).join('')}…`;
}

export function healthy(message: string): ProbeResult {
  return { outcome: 'Healthy', reason: ProbeReason.ProbeSucceeded, message: shortMessage(message) };
}

export function unhealthy(reason: ProbeReason, message: string): ProbeResult {
  return { outcome: 'Unhealthy', reason, message: shortMessage(message) };
}

export function unknown(reason: ProbeReason, message: string): ProbeResult {
  return { outcome: 'Unknown', reason, message: shortMessage(message) };
}

export function timedOut(ctx: Pick<ProbeContext, 'timeoutMs'>): ProbeResult {
  return unhealthy(ProbeReason.ProbeTimeout, `no answer within ${formatSeconds(ctx.timeoutMs)}`);
}

export function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))}s`;
}

/** The errno-style code of an error (`ECONNREFUSED`, `EACCES`, …), if it has one. */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The shortest useful description of an error: its code, else its message. */
export function describeError(err: unknown): string {
  return errorCode(err) ?? (err instanceof Error ? err.message : String(err));
}

/** A file-system error as a result: permission denied, or otherwise could not determine — both Unknown. */
export function fileError(what: string, err: unknown): ProbeResult {
  const code = describeError(err);
  if (code === 'EACCES' || code === 'EPERM') return unknown(ProbeReason.PermissionDenied, `${what}: ${code}`);
  return unknown(ProbeReason.ProbeError, `${what}: ${code}`);
}
