import { afterEach, describe, expect, it } from 'vitest';
import { Gauge, Registry } from '../prom.ts';
import { API_FEATURES, describeFeature, detectFeatures, recordFeatures, reportFeatures } from './features.ts';
import { FakeApiServer } from './testing.ts';

const servers: FakeApiServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function apiServer(documents: Record<string, string[]>): Promise<FakeApiServer> {
  const api = await FakeApiServer.start();
  servers.push(api);
  for (const [path, resources] of Object.entries(documents))
    api.serveDocument(path, { kind: 'APIResourceList', resources: resources.map((name) => ({ name })) });
  return api;
}

describe('detectFeatures: what the API server serves, from discovery', () => {
  it('a 1.37 API server: all available, one discovery read per group-version', async () => {
    const api = await apiServer({
      '/apis/resource.k8s.io/v1': ['resourceslices', 'resourceclaims'],
      '/apis/admissionregistration.k8s.io/v1': ['validatingadmissionpolicies', 'mutatingadmissionpolicies'],
    });
    const reports = await detectFeatures(api.client(), Object.values(API_FEATURES));
    expect(reports.map((r) => [r.feature.name, r.available])).toEqual([
      ['resourceSlices', true],
      ['validatingAdmissionPolicy', true],
      ['mutatingAdmissionPolicy', true],
    ]);
    expect(api.requests.map((r) => r.path).sort()).toEqual([
      '/apis/admissionregistration.k8s.io/v1',
      '/apis/resource.k8s.io/v1',
    ]);
  });

  it('a 1.33 API server: no resource.k8s.io/v1 (404) and no MutatingAdmissionPolicy; each says what is turned off', async () => {
    const api = await apiServer({ '/apis/admissionregistration.k8s.io/v1': ['validatingadmissionpolicies'] });
    const lines: Array<[string, object]> = [];
    const log = {
      info: (o: object, m: string) => lines.push([m, o]),
      warn: (o: object, m: string) => lines.push([m, o]),
    };
    const reports = await reportFeatures(api.client(), Object.values(API_FEATURES), log);
    expect(reports.map((r) => r.available)).toEqual([false, true, false]);
    expect(describeFeature(reports[0]!)).toBe(
      'resource.k8s.io/v1 resourceslices: not served (needs Kubernetes 1.34+): resourceSlices probes report Unknown (DRA ResourceSlices are not served)',
    );
    expect(lines.map(([m]) => m)).toEqual([
      'Feature check: turned off',
      'Feature check',
      'Feature check: turned off',
    ]);
  });

  it('a discovery failure (not a 404) is said as such, never as "available"', async () => {
    const api = await apiServer({});
    const client = api.client();
    await api.close();
    servers.splice(0);
    const [report] = await detectFeatures(client, [API_FEATURES.resourceSlices]);
    expect(report?.available).toBe(false);
    expect(describeFeature(report!)).toMatch(/could not be checked/);
  });

  it('recordFeatures: the gauge is 1 for served, 0 for not served, and unset where discovery failed', async () => {
    const api = await apiServer({ '/apis/admissionregistration.k8s.io/v1': ['validatingadmissionpolicies'] });
    const reports = await detectFeatures(api.client(), Object.values(API_FEATURES));
    const gauge = new Gauge({ name: 'f', help: 'h', labelNames: ['feature'], registers: [new Registry()] });
    recordFeatures(reports, gauge);
    recordFeatures(
      [{ feature: API_FEATURES.resourceSlices, available: false, error: new Error('timeout') }],
      gauge,
    );
    const values = (await gauge.get()).values.map((v) => [v.labels.feature, v.value]);
    expect(values).toEqual([
      ['resourceSlices', 0],
      ['validatingAdmissionPolicy', 1],
      ['mutatingAdmissionPolicy', 0],
    ]);
    const unchecked = new Gauge({
      name: 'g',
      help: 'h',
      labelNames: ['feature'],
      registers: [new Registry()],
    });
    recordFeatures(
      [{ feature: API_FEATURES.resourceSlices, available: false, error: new Error('timeout') }],
      unchecked,
    );
    expect((await unchecked.get()).values).toEqual([]);
  });
});
