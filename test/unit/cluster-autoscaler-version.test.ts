// The version check of the Cluster Autoscaler test (test/autoscalers/cluster-autoscaler.test.ts), against the
// real start lines of the 1.36.1 binary and the real docs.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkVersion, documentedVersion, loggedVersion } from '../autoscalers/cluster-autoscaler-version.ts';

const DOCS = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'autoscalers.md'), 'utf8');
const start = (version: string) =>
  [
    `I1124 13:48:16.291483   15271 main.go:250] Cluster Autoscaler ${version}`,
    'I1124 13:48:16.291793   15271 client.go:48] Using kubeconfig file: /tmp/kubeconfig',
  ].join('\n');

describe('the Cluster Autoscaler version check', () => {
  it('reads the version from the start line, and nothing from a log without one', () => {
    expect(loggedVersion(start('1.36.1'))).toBe('1.36.1');
    expect(loggedVersion('I1124 13:48:16.291793   15271 client.go:48] Using kubeconfig file: /x')).toBe(
      undefined,
    );
    // A line that only mentions the name is not the start line.
    expect(loggedVersion('I1124 13:48:17.000000   15271 x.go:1] Cluster Autoscaler status written')).toBe(
      undefined,
    );
  });

  it('docs/autoscalers.md states one version, and the check passes for a binary of that version', () => {
    const documented = documentedVersion(DOCS);
    expect(documented).toMatch(/^\d+\.\d+\.\d+$/);
    expect(checkVersion(start(documented), DOCS)).toBe(documented);
  });

  it('fails for a binary of another version, naming both', () => {
    const documented = documentedVersion(DOCS);
    expect(() => checkVersion(start('1.35.4'), DOCS)).toThrow(
      `the Cluster Autoscaler binary is 1.35.4, docs/autoscalers.md states ${documented}`,
    );
  });

  it('fails when the log has no start line (verbosity below 1)', () => {
    expect(() =>
      checkVersion('F1124 13:48:16.291805   15271 client.go:52] Failed to build config', DOCS),
    ).toThrow(/logged no "Cluster Autoscaler <version>" line at start/);
  });

  it('fails when the docs state no version or two', () => {
    expect(() => documentedVersion('the Cluster Autoscaler, read in its 1.36 source')).toThrow(/found none/);
    expect(() => documentedVersion('Cluster Autoscaler 1.36.1 … Cluster Autoscaler 1.37.0')).toThrow(
      /found 1\.36\.1, 1\.37\.0/,
    );
  });
});
