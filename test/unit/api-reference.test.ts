// docs/api-reference.md is generated from the CRD schemas (test/tools/api-reference.ts): a schema change without
// `npm run docs:api` fails here, so the reference never describes a field the API server no longer has.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REFERENCE, renderApiReference } from '../tools/api-reference.ts';

const ROOT = join(import.meta.dirname, '..', '..');

describe('docs/api-reference.md', () => {
  it('is what the generator writes from manifests/base/crds (run npm run docs:api when this fails)', async () => {
    expect(readFileSync(join(ROOT, REFERENCE), 'utf8')).toBe(await renderApiReference(ROOT));
  });

  it('lists every field of both CRDs, nested ones by their full path', async () => {
    const page = await renderApiReference(ROOT);
    expect(page).toContain('## SystemExtension');
    expect(page).toContain('## ClusterHealth');
    expect(page).toContain('- `spec.probe.http.url` (string; required;');
    expect(page).toContain(
      '- `spec.nodeSelector.matchExpressions[].operator` (string; required; one of `In`',
    );
    expect(page).toContain('- `status.conditions[].status` (string; required;');
  });
});
