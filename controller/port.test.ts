// The controller's one port (port.ts) against a real loopback server: every write asks the fence first and does
// not go out when this replica no longer leads; reads are never fenced; requests carry the term's signal.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeApiServer } from '../lib/kube/testing.ts';
import { KubePort } from './port.ts';
import { NotLeaderError } from './writes/index.ts';

describe('KubePort', () => {
  let server: FakeApiServer;
  let leading: boolean;
  let term: AbortController;
  let port: KubePort;
  const fence = (): void => {
    if (!leading) throw new NotLeaderError();
  };
  const sent = (method: string) => server.requests.filter((r) => r.method === method).map((r) => r.path);

  beforeEach(async () => {
    server = await FakeApiServer.start();
    leading = true;
    term = new AbortController();
    port = new KubePort(server.client(), { timeoutMs: 5_000, signal: () => term.signal, fence });
  });
  afterEach(() => server.close());

  it('sends a write while this replica leads', async () => {
    // The loopback server answers writes 404; what matters is that the write reached it.
    await expect(port.patchNode('n1', { spec: {} })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(port.createEvent('default', {})).rejects.toMatchObject({ code: 'NotFound' });
    expect(sent('PATCH')).toEqual(['/api/v1/nodes/n1']);
    expect(sent('POST')).toEqual(['/apis/events.k8s.io/v1/namespaces/default/events']);
  });

  it.each([
    ['patchNode', (p: KubePort) => p.patchNode('n1', {})],
    ['patchNodeStatus', (p: KubePort) => p.patchNodeStatus('n1', {})],
    ['createEvent', (p: KubePort) => p.createEvent('default', {})],
    ['patchEvent', (p: KubePort) => p.patchEvent('default', 'e1', {})],
    ['createClusterHealth', (p: KubePort) => p.createClusterHealth({ name: 'cluster' })],
    ['patchSystemExtensionStatus', (p: KubePort) => p.patchSystemExtensionStatus('sx', '1', counts())],
    ['an eviction', (p: KubePort) => p.request('POST', '/api/v1/namespaces/a/pods/b/eviction', { body: {} })],
  ])('refuses %s unsent once this replica stopped leading', async (_name, write) => {
    leading = false;
    await expect(write(port)).rejects.toBeInstanceOf(NotLeaderError);
    expect(server.requests).toEqual([]);
  });

  it('reads without asking the fence', async () => {
    leading = false;
    server.serveDocument('/api/v1/nodes/n1', { metadata: { name: 'n1' } });
    await expect(port.getNode('n1')).resolves.toMatchObject({ metadata: { name: 'n1' } });
    await expect(port.getClusterHealth()).resolves.toBeUndefined(); // 404: not there
    expect(sent('GET')).toEqual(['/api/v1/nodes/n1', '/apis/nodecare.io/v1alpha1/clusterhealths/cluster']);
  });

  it("cuts a request off when its term's signal aborts", async () => {
    term.abort();
    await expect(port.getNode('n1')).rejects.toThrow();
    expect(server.requests).toEqual([]);
  });
});

function counts() {
  return { nodes: 0, healthy: 0, progressing: 0, unhealthy: 0, unknown: 0, failing: 0 };
}
