// The kustomize component monitoring's PrometheusRule carries exactly the groups of the plain rule file that
// promtool checks and unit-tests (test/integration/monitoring.test.ts): one set of alerts in two wrappings.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';

const MANIFESTS = join(import.meta.dirname, '..', '..', 'manifests');
const read = (path: string): unknown => load(readFileSync(join(MANIFESTS, path), 'utf8'));

describe('manifests/components/monitoring', () => {
  it("the PrometheusRule's spec is manifests/monitoring/nodecare.rules.yaml", () => {
    const rule = read('components/monitoring/prometheusrule.yaml') as { kind: string; spec: unknown };
    expect(rule.kind).toBe('PrometheusRule');
    expect(rule.spec).toEqual(read('monitoring/nodecare.rules.yaml'));
  });

  it('every alert has a runbook_url naming a section of docs/operations.md', () => {
    const { groups } = read('monitoring/nodecare.rules.yaml') as {
      groups: Array<{ rules: Array<{ alert: string; annotations: Record<string, string> }> }>;
    };
    const anchors = new Set(
      [...readFileSync(join(MANIFESTS, '..', 'docs', 'operations.md'), 'utf8').matchAll(/^#+ (.+)$/gm)].map(
        (m) =>
          (m[1] as string)
            .toLowerCase()
            .replace(/[^a-z0-9 -]/g, '')
            .replace(/ /g, '-'),
      ),
    );
    const rules = groups.flatMap((g) => g.rules);
    expect(rules.length).toBe(7);
    for (const { alert, annotations } of rules) {
      const url = annotations.runbook_url ?? '';
      expect(url, alert).toMatch(/^docs\/operations\.md#/);
      expect(anchors, `${alert}: ${url}`).toContain(url.split('#')[1]);
    }
  });
});
