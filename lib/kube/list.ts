// A LIST, page by page: the shape of a page as the readers take it, its continue token read ahead of the
// parse, the size of the next page, and `listAll` for a caller that wants every item of a small collection.
// The reflector (reflector.ts) pages on its own, one page ahead and bounded in bytes. Nothing here imports
// the client: client.ts → protobuf.ts → list.ts would be a circle.

import { isKubeError, KubeErrorCode } from './errors.ts';

/** A LIST response as its readers take it (JSON's shape; protobuf.ts decodes Leases into the same). */
export interface ListBody<R> {
  metadata?: { resourceVersion?: string; continue?: string };
  items?: R[];
  /** Objects of the page its decoder could not read (protobuf.ts), by key, with why: skipped. */
  skipped?: Array<{ key: string; err: unknown }>;
}

/** How a LIST of one built-in type is read as protobuf: the whole page, and its continue token alone. */
export interface ProtobufList<R> {
  decode(bytes: Buffer, what: string): ListBody<R>;
  continueToken(bytes: Buffer): string | undefined;
}

/** Items asked for in one page by listAll unless told otherwise. */
export const LIST_PAGE_SIZE = 500;

/** What listAll asks of the request it is given (KubeClient.request and its RequestOptions). */
export interface ListRequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  timeoutMs?: number;
  signal?: AbortSignal;
  withoutManagedFields?: boolean;
}

/** The one call of a client listAll makes (KubeClient fits it). */
export interface ListClient {
  request<T>(method: 'GET', path: string, options: ListRequestOptions): Promise<T>;
}

export interface ListAllOptions extends ListRequestOptions {
  /** Items per page (LIST_PAGE_SIZE). */
  pageSize?: number;
}

/**
 * Every item of the collection at `path`, asked for `pageSize` at a time and followed through the continue
 * tokens: `query` goes with every page (`limit` and `continue` are listAll's). A failed page fails the list,
 * but for one: a continue token that expired while paging (410: the resourceVersion it lists at was
 * compacted) is answered as client-go's pager answers it, with the whole collection listed again in one
 * request, so the list stays consistent (the 410's own token would continue an inconsistent one).
 */
export async function listAll<T>(
  client: ListClient,
  path: string,
  options: ListAllOptions = {},
): Promise<T[]> {
  const { pageSize = LIST_PAGE_SIZE, query, ...request } = options;
  const items: T[] = [];
  let token: string | undefined;
  do {
    let page: ListBody<T>;
    try {
      page = await client.request<ListBody<T>>('GET', path, {
        ...request,
        query: { ...query, limit: pageSize, continue: token },
      });
    } catch (err) {
      if (token === undefined || !isKubeError(err, KubeErrorCode.Gone)) throw err;
      const whole = await client.request<ListBody<T>>('GET', path, { ...request, query });
      return whole.items ?? [];
    }
    items.push(...(page.items ?? []));
    token = page.metadata?.continue || undefined;
  } while (token);
  return items;
}

/**
 * How many items to ask for after a page of `limit` items in `bytes`: as many as fit a quarter of
 * `maxBytes` at that page's bytes per item, from 1 to `pageSize`.
 */
export function nextPageLimit(limit: number, bytes: number, maxBytes: number, pageSize: number): number {
  const perItem = Math.max(1, bytes / Math.max(1, limit));
  return Math.max(1, Math.min(pageSize, Math.floor(maxBytes / 4 / perItem)));
}

/**
 * The continue token of a LIST response, read from its text before it is parsed: the list's metadata comes
 * before its items (as the API server writes it) and its continue token is plain (base64). Undefined when the
 * text says otherwise; then the next page is asked for after the parse.
 */
export function listContinueToken(text: string): string | undefined {
  const metadata = text.indexOf('"metadata":{');
  if (metadata === -1 || metadata > 1024 || text.lastIndexOf('"items":', metadata) !== -1) return undefined;
  const end = text.indexOf('}', metadata);
  const key = text.indexOf('"continue":"', metadata);
  if (end === -1 || key === -1 || key > end) return undefined;
  const start = key + '"continue":"'.length;
  const close = text.indexOf('"', start);
  if (close === -1 || close > end) return undefined;
  const token = text.slice(start, close);
  return token === '' || token.includes('\\') ? undefined : token;
}
