// A watch's stream as events, one a line (KubeClient.watch): its options, its events, and the reading.

import { LineSplitter, parseJson, UNREADABLE_LINE_PREFIX_BYTES } from './body.ts';
import { classifyResponse, KubeError, KubeErrorCode } from './errors.ts';

/** How a watch is read (KubeClient.watch). */
export interface WatchOptions {
  /** Read the stream in batches, at most this much later (TransportRequest.coalesceMs). */
  coalesceMs?: number;
  /** Parse each event without `metadata.managedFields` (managed-fields.ts). */
  withoutManagedFields?: boolean;
  /** A line (one event) longer than this is not buffered past its first bytes. Default: the client's. */
  maxLineBytes?: number;
  /**
   * Told of a line that is over `maxLineBytes` or is not JSON, with its first bytes (at most
   * UNREADABLE_LINE_PREFIX_BYTES), instead of the watch failing with Malformed: one object that cannot be
   * read then need not end the watch (reflector.ts). A throw from it fails the watch with what it threw.
   */
  unreadable?: (prefix: string, err: KubeError) => void;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T> {
  type: WatchEventType;
  object: T;
}

/**
 * A watch's stream read as events, one a line: each parsed (without managedFields when asked) and handed to
 * `onEvent`; an ERROR event fails the watch with its Status. A line that is not JSON, or longer than
 * `maxLineBytes`, fails it too, unless `options.unreadable` is told of it instead.
 */
export function watchLines<T>(
  what: string,
  maxLineBytes: number,
  options: WatchOptions,
  onEvent: (event: WatchEvent<T>) => void,
): LineSplitter {
  const unreadable = (prefix: Buffer, err: KubeError): void => {
    if (!options.unreadable) throw err;
    options.unreadable(prefix.subarray(0, UNREADABLE_LINE_PREFIX_BYTES).toString('utf8'), err);
  };
  const onLine = (line: Buffer): void => {
    if (line.length === 0) return;
    let event: WatchEvent<T>;
    try {
      event = parseJson(line.toString('utf8'), options.withoutManagedFields) as WatchEvent<T>;
    } catch {
      unreadable(line, new KubeError(KubeErrorCode.Malformed, 200, `${what}: a watch line is not JSON`));
      return;
    }
    if (event.type === 'ERROR') {
      const status = event.object as { code?: number };
      throw classifyResponse(status.code ?? 500, event.object, undefined, what);
    }
    onEvent(event);
  };
  return new LineSplitter(maxLineBytes, what, onLine, options.unreadable ? unreadable : undefined);
}
