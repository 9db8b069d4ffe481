import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isKubeError, KubeErrorCode } from './errors.ts';
import { listAll } from './list.ts';
import { FakeApiServer } from './testing.ts';

const PATH = '/api/v1/nodes';
const nodes = (n: number) => Array.from({ length: n }, (_, i) => ({ metadata: { name: `node-${i}` } }));
const names = (items: Array<{ metadata?: { name?: string } }>) => items.map((item) => item.metadata?.name);

/** Each LIST page asked for: its limit and continue token. */
const pagesAsked = (api: FakeApiServer) =>
  api.listRequests(PATH).map((r) => [r.query.get('limit'), r.query.get('continue')]);

describe('listAll', () => {
  let api: FakeApiServer;
  beforeEach(async () => {
    api = await FakeApiServer.start();
  });
  afterEach(async () => {
    await api.close();
  });

  it('follows the continue tokens to the last page, in order', async () => {
    api.serve(PATH, nodes(7));
    const client = api.client();
    const items = await listAll<{ metadata?: { name?: string } }>(client, PATH, { pageSize: 3 });
    await client.close();
    expect(names(items)).toEqual(names(nodes(7)));
    expect(pagesAsked(api)).toEqual([
      ['3', null],
      ['3', Buffer.from('3').toString('base64url')],
      ['3', Buffer.from('6').toString('base64url')],
    ]);
  });

  it('sends its query with every page, and pages of 500 by default', async () => {
    api.serve(PATH, nodes(2));
    const client = api.client();
    const items = await listAll(client, PATH, { query: { labelSelector: 'a=b' } });
    await client.close();
    expect(items).toHaveLength(2);
    const [page] = api.listRequests(PATH);
    expect(page?.query.get('labelSelector')).toBe('a=b');
    expect(page?.query.get('limit')).toBe('500');
  });

  it('lists the whole collection again, in one request, when a continue token expired while paging (410)', async () => {
    api.serve(PATH, nodes(7));
    api.expireContinueTokens = 1;
    const client = api.client();
    const items = await listAll<{ metadata?: { name?: string } }>(client, PATH, {
      pageSize: 3,
      query: { labelSelector: 'a=b' },
    });
    await client.close();
    // Every item once: the first page's are not kept beside the whole list's.
    expect(names(items)).toEqual(names(nodes(7)));
    expect(pagesAsked(api)).toEqual([
      ['3', null],
      ['3', Buffer.from('3').toString('base64url')],
      [null, null],
    ]);
    expect(api.listRequests(PATH).every((r) => r.query.get('labelSelector') === 'a=b')).toBe(true);
  });

  it('gives an empty collection as no items, and a failed page as its error', async () => {
    api.serve(PATH, []);
    const client = api.client();
    expect(await listAll(client, PATH)).toEqual([]);
    const err = await listAll(client, '/api/v1/absent').catch((e: unknown) => e);
    await client.close();
    expect(isKubeError(err, KubeErrorCode.NotFound)).toBe(true);
  });
});
