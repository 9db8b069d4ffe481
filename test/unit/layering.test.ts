// The layering rules of eslint.config.js (LAYERING), run by `npm run lint`: each fails on a file that breaks it
// and lets the imports the architecture allows through. Linted as text at a path in the room, nothing written.

import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const eslint = new ESLint({ cwd: ROOT });

/** The no-restricted-imports messages ESLint gives `source` as the file `path`. */
async function refused(path: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: join(ROOT, path) });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the layering is enforced by npm run lint', () => {
  it.each([
    ['api/x.ts', "import { systemClock } from '../lib/clock.ts';", /api\/ is the contract/],
    ['lib/x.ts', "import { decideNode } from '../controller/decide/index.ts';", /lib\/ serves the programs/],
    ['agent/x.ts', "import { decideNode } from '../controller/decide/index.ts';", /The agent imports only/],
    ['controller/x.ts', "import { AGENT_OPTIONS } from '../agent/config.ts';", /The controller imports only/],
    ['controller/x.ts', "import { runCli } from '../cli/cli.ts';", /The controller imports only/],
    [
      'cli/x.ts',
      "import { ClusterCache } from '../controller/cache/index.ts';",
      /front doors|imports controller\/decide/,
    ],
    [
      'cli/verbs/x.ts',
      "import { hasTaint } from '../../controller/decide/decide.ts';",
      /controller\/decide\/index\.ts/,
    ],
    [
      'controller/decide/x.ts',
      "import { KubeClient } from '../../lib/kube/client.ts';",
      /no Kubernetes client/,
    ],
    ['controller/decide/x.ts', "import { readFileSync } from 'node:fs';", /Decisions are pure/],
    ['controller/rollup/evaluate.ts', "import { request } from 'undici';", /Decisions are pure/],
    [
      'agent/x.ts',
      "import { startControlPlane } from '../test/controlplane/controlplane.ts';",
      /The agent imports only/,
    ],
    // A decision file obeys the controller's rule too (ESLint replaces, not merges, a rule's options).
    [
      'controller/decide/x.ts',
      "import { AGENT_OPTIONS } from '../../agent/config.ts';",
      /The controller imports only/,
    ],
    ['agent/x.ts', "import { FakeLeaseStore } from '../lib/kube/testing.ts';", /stay out of the product/],
    ['controller/x.ts', "import { FakeCache } from './testing.ts';", /stay out of the product/],
    ['lib/kube/x.ts', "import { FakeClock } from '../testing.ts';", /stay out of the product/],
    // A room with an index.ts is entered through it.
    ['controller/x.ts', "import { nodePatch } from './writes/node-patch.ts';", /through its index\.ts/],
    ['controller/writes/x.ts', "import { hasTaint } from '../decide/decide.ts';", /through its index\.ts/],
    ['controller/decide/x.ts', "import { Evictor } from '../eviction/runner.ts';", /through its index\.ts/],
    ['agent/x.ts', "import { httpProbe } from './probes/http.ts';", /through its index\.ts/],
  ])('%s: %s is refused', async (path, source, message) => {
    const messages = await refused(path, `${source}\nexport const used = 1;\n`);
    expect(messages, messages.join('\n')).toHaveLength(1);
    expect(messages[0]).toMatch(message);
  });

  it.each([
    ['controller/x.ts', "import { decodeLease } from '../api/index.ts';"],
    ['controller/x.ts', "import { NodeWriter } from './writes/index.ts';"],
    ['controller/writes/x.ts', "import { nodePatch } from './node-patch.ts';"],
    ['agent/x.ts', "import { runProbe } from './probes/index.ts';"],
    ['controller/decide/x.ts', "import type { Clock } from '../../lib/clock.ts';"],
    ['cli/x.ts', "import { decideNode } from '../controller/decide/index.ts';"],
    ['cli/x.ts', "import { toCachedNode } from '../controller/ingest.ts';"],
    ['demo/x.ts', "import { startNodes } from '../test/realnodes/realnodes.ts';"],
    ['controller/x.test.ts', "import { FakeApiServer } from '../lib/kube/testing.ts';"],
    ['controller/testing.ts', "import { FakeClock } from '../lib/testing.ts';"],
  ])('%s: %s is allowed', async (path, source) => {
    expect(await refused(path, `${source}\nexport const used = 1;\n`)).toEqual([]);
  });
});
