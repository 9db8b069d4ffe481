// The agent's modules load none of the Node.js built-ins it avoids for its memory (docs/design.md P6,
// docs/adr/0006). An ES import of a built-in evaluates every export: node:http's lazy ones load undici, and
// node:fs's lazy `promises` loads fs/promises and readline. So the agent takes those through
// process.getBuiltinModule (lib/fs.ts, lib/health.ts, lib/kube/node-transport.ts); one plain `import … from
// 'node:fs'` anywhere in its graph would put them back.

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Built-in modules the agent must not load, as process.moduleLoadList names them. */
const AVOIDED = [
  'NativeModule internal/deps/undici/undici',
  'NativeModule internal/fs/promises',
  'NativeModule internal/readline/interface',
];

/**
 * The agent's start-up graph and every probe module but the gRPC-based ones (grpc, csi, devicePlugin): those
 * load @grpc/grpc-js, which loads fs/promises itself, and only on a node with such an extension.
 */
const MODULES = [
  'agent/agent.ts',
  'agent/config.ts',
  'lib/kube/config.ts',
  'lib/kube/client.ts',
  'lib/kube/node-transport.ts',
  'lib/health.ts',
  'lib/log.ts',
  'lib/version.ts',
  ...[
    'http',
    'tcp',
    'file',
    'process',
    'host',
    'exec',
    'socket',
    'nodeCondition',
    'nodeResource',
    'podReady',
    'resourceSlices',
  ].map((probe) => `agent/probes/${probe}.ts`),
];

/**
 * Imports the agent's modules in a child process (so that this worker's own imports do not count), then
 * evaluates `expression` there and returns its value, sent back as JSON.
 */
function afterLoading(expression: string): unknown {
  const script = `
    for (const module of ${JSON.stringify(MODULES.map((m) => join(ROOT, m)))}) await import(module);
    const { default: Module } = await import('node:module');
    console.log(JSON.stringify(${expression}));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(child.stderr).toBe('');
  return JSON.parse(child.stdout);
}

describe("the agent's module graph", () => {
  it('loads none of the built-ins it avoids', () => {
    const avoided = JSON.stringify(AVOIDED);
    expect(afterLoading(`process.moduleLoadList.filter((name) => ${avoided}.includes(name))`)).toEqual([]);
  });

  it('loads no protobufjs (the controller reads its Lease lists with it, docs/adr/0018; the agent lists none)', () => {
    // CommonJS packages loaded through an import are in the CommonJS cache, by path.
    expect(afterLoading(`Object.keys(Module._cache).filter((path) => path.includes('protobufjs'))`)).toEqual(
      [],
    );
  });
});
