// One pino logger per process, passed down as child loggers (docs/conventions.md 13). JSON by default (what the
// manifests use and log pipelines parse); `text` renders each line for a person at a terminal.
//
// Errors go under `err`. A KubeError is an expected, already classified failure (refused, reset, timeout,
// 429, 5xx, ...) that the caller retries: it is logged as its code, status and message, without a stack
// trace (the stack only ever points into the client). Any other error keeps its stack: it is a bug; so does
// a KubeError of code Client (a failure in this process, its cause's stack included).
// The program's name is pino's `name`; child loggers bind other keys (a key bound twice would appear twice
// in one JSON line).

import { pino, stdSerializers, type DestinationStream, type Logger } from 'pino';
import { escapeControls, escapeForTerminal } from '../api/text.ts';
import { KubeError, KubeErrorCode } from './kube/errors.ts';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

function serializeError(err: unknown): unknown {
  if (err instanceof KubeError && err.code !== KubeErrorCode.Client) {
    return { type: err.name, code: err.code, status: err.status, message: err.message };
  }
  return err instanceof Error ? stdSerializers.err(err) : err;
}

export function createLogger(
  options: { level: string; name: string; format?: LogFormat },
  destination?: DestinationStream,
): Logger {
  const out = destination ?? pino.destination({ fd: 1, sync: false });
  return pino(
    {
      name: options.name,
      level: options.level,
      base: {},
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: serializeError },
    },
    options.format === 'text' ? textDestination(out) : out,
  );
}

/** Keys every line has; the text format shows them first, in its own way. */
const FIXED_KEYS = new Set(['time', 'level', 'msg', 'name']);

/** A value as the text format shows it: bare when plain, else quoted; never with a raw control character. */
function textValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return escapeControls(/^[^\s"=]+$/.test(text) ? text : JSON.stringify(text));
}

/**
 * One JSON log line as text: `<time> <LEVEL> <msg> key=value ...`; an error shows its code and message, and
 * the stack (of an unexpected error) on the indented lines after it.
 */
export function formatTextLine(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return `${escapeControls(line.replace(/\n$/, ''))}\n`;
  }
  const fields: string[] = [];
  let stack = '';
  for (const [key, value] of Object.entries(entry)) {
    if (FIXED_KEYS.has(key)) continue;
    if (key === 'err' && typeof value === 'object' && value !== null) {
      const err = value as { code?: unknown; message?: unknown; stack?: unknown };
      const code = typeof err.code === 'string' ? `${err.code}: ` : '';
      fields.push(`err=${textValue(`${code}${String(err.message ?? '')}`)}`);
      if (typeof err.stack === 'string') stack = `\n${escapeForTerminal(err.stack).replace(/^/gm, '    ')}`;
      continue;
    }
    fields.push(`${key}=${textValue(value)}`);
  }
  const level = String(entry.level ?? '').toUpperCase();
  const head = escapeControls(`${String(entry.time ?? '')} ${level.padEnd(5)} ${String(entry.msg ?? '')}`);
  return `${[head, ...fields].join(' ')}${stack}\n`;
}

function textDestination(out: DestinationStream): DestinationStream {
  const stream = out as DestinationStream & { flush?(cb?: (err?: Error) => void): void; flushSync?(): void };
  return {
    write: (line: string) => stream.write(formatTextLine(line)),
    // logger.flush() reaches the real destination through these.
    ...(stream.flush ? { flush: (cb?: (err?: Error) => void) => stream.flush?.(cb) } : {}),
    ...(stream.flushSync ? { flushSync: () => stream.flushSync?.() } : {}),
  } as DestinationStream;
}
