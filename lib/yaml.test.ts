// js-yaml is loaded for a parse and released after (lib/yaml.ts, docs/adr/0006): the modules that read YAML
// files do not load it by being imported, and nothing keeps it once a file is read.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseYaml } from './yaml.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('parseYaml', () => {
  it("parses a document and reports js-yaml's own error, with its position, for a broken one", () => {
    expect(parseYaml('clusters:\n- name: a\n  cluster: {server: "https://127.0.0.1:6443"}\n')).toEqual({
      clusters: [{ name: 'a', cluster: { server: 'https://127.0.0.1:6443' } }],
    });
    expect(() => parseYaml('a: [1, 2\nb: 3\n')).toThrow(/deficient indentation \(2:1\)/);
  });

  it('is not loaded by importing the kubeconfig or agent config readers, and not kept after reading a kubeconfig', () => {
    const dir = mkdtempSync(join(tmpdir(), 'nodecare-yaml-'));
    try {
      const kubeconfig = join(dir, 'config');
      writeFileSync(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]',
          'users: [{name: u, user: {token: t}}]',
          'contexts: [{name: x, context: {cluster: c, user: u}}]',
          'current-context: x',
        ].join('\n'),
      );
      // A child process, so that this worker's own imports do not count: every module js-yaml's name is
      // resolved for (ES imports and require alike go through the hook) before and after reading the file.
      const script = `
        import { registerHooks, createRequire } from 'node:module';
        const resolved = [];
        registerHooks({ resolve(specifier, context, next) { if (specifier === 'js-yaml') resolved.push(specifier); return next(specifier, context); } });
        const { loadConnection } = await import(${JSON.stringify(join(ROOT, 'lib/kube/config.ts'))});
        await import(${JSON.stringify(join(ROOT, 'agent/config.ts'))});
        const atImport = resolved.length;
        const connection = await loadConnection(${JSON.stringify(kubeconfig)});
        const require = createRequire(${JSON.stringify(join(ROOT, 'lib/yaml.ts'))});
        const kept = Object.keys(require.cache).filter((path) => path.includes('js-yaml'));
        console.log(JSON.stringify({ atImport, afterRead: resolved.length, kept, server: connection.server }));
      `;
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(child.stderr).toBe('');
      expect(JSON.parse(child.stdout)).toEqual({
        atImport: 0,
        afterRead: 1,
        kept: [],
        server: 'https://127.0.0.1:6443',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
