// The CRDs as `kubectl explain` shows them (issue 51 item 4): every property of both schemas has a description.

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

interface Crd {
  spec: {
    versions: Array<{
      name: string;
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
      const all = properties(version.schema.openAPIV3Schema);
      expect(all.length).toBeGreaterThan(20);
      expect(all.filter((p) => !p.described).map((p) => p.path)).toEqual([]);
    },
  );
});
