// The CRDs as `kubectl explain` and `kubectl get` show them (issue 51 item 4): every property of both schemas
// has a description (the root metadata excepted: ObjectMeta's own), and ClusterHealth's default printer
// columns fit a 120-column terminal.

import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';

const CRDS = new URL('../../manifests/base/crds/', import.meta.url);

interface SchemaNode {
  description?: string;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  additionalProperties?: SchemaNode | boolean;
}

interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  priority?: number;
}

interface Crd {
  spec: {
    names: { shortNames?: string[] };
    versions: Array<{
      name: string;
      additionalPrinterColumns?: PrinterColumn[];
      schema: { openAPIV3Schema: SchemaNode };
    }>;
  };
}

function loadCrd(file: string): Crd {
  return load(readFileSync(new URL(file, CRDS), 'utf8')) as Crd;
}

/** Every property path under `node` (`.spec.probe.http.url`, `[]` for array items), described or not. */
function properties(node: SchemaNode, path = ''): Array<{ path: string; described: boolean }> {
  const found: Array<{ path: string; described: boolean }> = [];
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    found.push({ path: `${path}.${key}`, described: (child.description ?? '').trim().length > 0 });
    found.push(...properties(child, `${path}.${key}`));
  }
  if (node.items) found.push(...properties(node.items, `${path}[]`));
  if (typeof node.additionalProperties === 'object')
    found.push(...properties(node.additionalProperties, `${path}{}`));
  return found;
}

const FILES = ['systemextensions.nodecare.io.yaml', 'clusterhealths.nodecare.io.yaml'];

describe.each(FILES)('%s', (file) => {
  const crd = loadCrd(file);

  it.each(crd.spec.versions.map((v) => [v.name, v] as const))(
    'every property of %s has a description (kubectl explain --recursive)',
    (_name, version) => {
      // The root metadata may carry nothing but type (the API server refuses a CRD otherwise) and explain
      // describes it as ObjectMeta.
      const all = properties(version.schema.openAPIV3Schema).filter((p) => p.path !== '.metadata');
      expect(all.length).toBeGreaterThan(20);
      expect(all.filter((p) => !p.described).map((p) => p.path)).toEqual([]);
    },
  );
});

/**
 * The widest line `kubectl get` prints for these columns: each column as wide as its header or its widest
 * value, three spaces between columns (kubectl's tabwriter padding).
 */
function tableWidth(columns: Array<{ header: string; widestValue: number }>): number {
  return (
    columns.reduce((sum, c) => sum + Math.max(c.header.length, c.widestValue), 0) + 3 * (columns.length - 1)
  );
}

/** The widest value each column type shows: statuses and labels as the controller writes them. */
function widestValue(column: PrinterColumn): number {
  if (column.type === 'date') return '999d'.length;
  if (column.type === 'integer') return '100000'.length;
  // Condition statuses (True, False, Unknown, Progressing) and the status label (healthy ... progressing).
  return 'Progressing'.length;
}

describe('ClusterHealth in kubectl get', () => {
  const crd = loadCrd('clusterhealths.nodecare.io.yaml');
  const [version] = crd.spec.versions;

  it('has a short name', () => {
    expect(crd.spec.names.shortNames?.length ?? 0).toBeGreaterThan(0);
  });

  it('its default columns fit 120 columns, and show every built-in condition', () => {
    const columns = (version?.additionalPrinterColumns ?? []).filter((c) => (c.priority ?? 0) === 0);
    const width = tableWidth([
      { header: 'NAME', widestValue: 'cluster'.length },
      ...columns.map((c) => ({ header: c.name.toUpperCase(), widestValue: widestValue(c) })),
    ]);
    expect(width).toBeLessThanOrEqual(120);
    const paths = columns.map((c) => c.jsonPath).join(' ');
    for (const type of [
      'EveryNodeReady',
      'SystemComponentsHealthy',
      'ObservabilityComponentsHealthy',
      'ControlPlaneHealthy',
    ])
      expect(paths).toContain(`"${type}"`);
  });
});
