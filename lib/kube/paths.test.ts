import { describe, expect, it } from 'vitest';
import { leasesPath, requestKind } from './paths.ts';

describe('requestKind: a request in the API server audit log words', () => {
  it.each([
    ['GET', '/api/v1/namespaces/kube-system/pods', 'list', 'pods'],
    ['WATCH', '/api/v1/namespaces/kube-system/pods?fieldSelector=spec.nodeName%3Dn', 'watch', 'pods'],
    ['WATCH', '/api/v1/pods', 'watch', 'pods'],
    ['GET', '/api/v1/nodes/node-1', 'get', 'nodes'],
    ['PATCH', '/api/v1/nodes/node-1/status', 'patch', 'nodes/status'],
    ['PUT', leasesPath('nodecare-system', 'n.gpu'), 'update', 'leases'],
    ['POST', leasesPath('nodecare-system'), 'create', 'leases'],
    ['DELETE', leasesPath('nodecare-system', 'n.gpu'), 'delete', 'leases'],
    ['GET', '/apis/nodecare.io/v1alpha1/systemextensions', 'list', 'systemextensions'],
    ['GET', '/api/v1/namespaces', 'list', 'namespaces'],
    ['GET', '/api/v1/namespaces/kube-system', 'get', 'namespaces'],
    ['GET', '/apis/resource.k8s.io/v1', 'get', 'discovery'],
    ['GET', '/apis', 'get', 'discovery'],
  ])('%s %s is %s %s', (method, path, verb, resource) => {
    expect(requestKind(method, path)).toEqual({ verb, resource });
  });
});
