// Reading an API server's answer: a whole body as bytes, bounded; JSON without managedFields; a watch's stream
// split into lines as it comes, a line too long never buffered whole (client.ts).

import { classifyResponse, classifyTransportError, KubeError, KubeErrorCode } from './errors.ts';
import { withoutManagedFields } from './managed-fields.ts';
import type { TransportResponse } from './transport-port.ts';

/** How much of an unreadable watch line WatchOptions.unreadable is shown: enough for the object's metadata. */
export const UNREADABLE_LINE_PREFIX_BYTES = 4096;

/**
 * A whole response body as bytes; over `maxBytes`, a TooLarge KubeError, and the rest is never read (leaving
 * the body early aborts the request).
 */
export async function readBytes(
  response: TransportResponse,
  maxBytes: number | undefined,
  what: string,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of response.body) {
    total += chunk.length;
    if (maxBytes !== undefined && total > maxBytes)
      throw new KubeError(
        KubeErrorCode.TooLarge,
        response.statusCode,
        `${what}: the answer is over ${maxBytes} bytes`,
      );
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** `JSON.parse` of a response or watch line, its managedFields left out first when asked (managed-fields.ts). */
export function parseJson(text: string, withoutManaged = false): unknown {
  return JSON.parse(withoutManaged ? withoutManagedFields(text) : text);
}

/** The KubeError of an error answer, from its status, its Status body and its Retry-After. */
export function answerError(response: TransportResponse, body: unknown, what: string): KubeError {
  const retryAfter = response.headers['retry-after'];
  return classifyResponse(
    response.statusCode,
    body,
    Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
    what,
  );
}

/** Why a watch failed: the inactivity timer's KubeError when it fired (it aborts), else the transport's. */
export function watchFailure(local: AbortSignal, err: unknown, what: string): KubeError {
  return local.reason instanceof KubeError ? local.reason : classifyTransportError(err, what);
}

/** The KubeError of a watch the API server answered with an error status. */
export async function watchRefused(response: TransportResponse, what: string): Promise<KubeError> {
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = { message: text.slice(0, 200) };
  }
  return classifyResponse(response.statusCode, body, undefined, what);
}

/**
 * Splits a byte stream into lines as its chunks come, handing each to `onLine` (newline never occurs inside a
 * UTF-8 multi-byte sequence). A line longer than `maxBytes` is never buffered whole: without `oversize` the
 * stream is refused; with it, `oversize` is told with the line's first UNREADABLE_LINE_PREFIX_BYTES as soon as
 * it crosses the limit, and the rest of the line is dropped as it comes.
 */
export class LineSplitter {
  private readonly maxBytes: number;
  private readonly what: string;
  private readonly onLine: (line: Buffer) => void;
  private readonly oversize: ((prefix: Buffer, err: KubeError) => void) | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The line in hand is over maxBytes: `oversize` was told, the rest of it is being dropped. */
  private dropping = false;

  constructor(
    maxBytes: number,
    what: string,
    onLine: (line: Buffer) => void,
    oversize?: (prefix: Buffer, err: KubeError) => void,
  ) {
    this.maxBytes = maxBytes;
    this.what = what;
    this.onLine = onLine;
    this.oversize = oversize;
  }

  push(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(10); end !== -1; end = chunk.indexOf(10, start)) {
      const part = chunk.subarray(start, end);
      start = end + 1;
      if (this.dropping) {
        this.endDropped();
        continue;
      }
      if (this.pendingBytes + part.length > this.maxBytes) {
        this.startDropping(part);
        this.endDropped();
        continue;
      }
      let line = part;
      if (this.pending.length > 0) {
        line = Buffer.concat([...this.pending, line]);
        this.pending = [];
        this.pendingBytes = 0;
      }
      this.onLine(line);
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (this.dropping) return;
      if (this.pendingBytes + rest.length > this.maxBytes) this.startDropping(rest);
      else {
        this.pendingBytes += rest.length;
        this.pending.push(rest);
      }
    }
  }

  /** The stream ended: a last line without its newline is a line too. */
  end(): void {
    if (this.dropping) {
      this.endDropped();
      return;
    }
    if (this.pendingBytes === 0) return;
    const line = Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    this.onLine(line);
  }

  /**
   * The line in hand (what is pending, then `part`) crossed maxBytes: `oversize` is told at once with its
   * first bytes, and the rest of the line is dropped as it comes.
   */
  private startDropping(part: Buffer): void {
    const bytes = this.pendingBytes + part.length;
    if (!this.oversize) throw this.tooLong(bytes);
    const prefix = Buffer.concat([...this.pending, part.subarray(0, UNREADABLE_LINE_PREFIX_BYTES)]);
    this.pending = [];
    this.pendingBytes = 0;
    this.dropping = true;
    this.oversize(prefix.subarray(0, UNREADABLE_LINE_PREFIX_BYTES), this.tooLong(bytes));
  }

  /** The dropped line ended: the next byte starts a new line. */
  private endDropped(): void {
    this.dropping = false;
  }

  private tooLong(bytes: number): KubeError {
    return new KubeError(
      KubeErrorCode.Malformed,
      200,
      `${this.what}: a watch line (${bytes} bytes so far) is longer than ${this.maxBytes} bytes`,
    );
  }
}
