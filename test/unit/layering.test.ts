// The layering rules of eslint.config.js (LAYERING), run by `npm run lint`: each fails on a file that breaks it
// and lets the imports the architecture allows through. Linted as text at a path in the room, nothing written.
// Then the shape's rules (issue 52 item 5): the sizes of eslint.config.js (SIZES), and the import circles of
// .dependency-cruiser.js, cruised in a tree of a few files written to a temporary directory.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { cruise, type IConfiguration, type ICruiseResult } from 'dependency-cruiser';
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

/** The messages of `rule` ESLint gives `source` as the file `path`. */
async function broken(rule: string, path: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: join(ROOT, path) });
  return (result?.messages ?? []).filter((m) => m.ruleId === rule).map((m) => m.message);
}

/** A file of `lines` lines. */
const fileOf = (lines: number): string =>
  Array.from({ length: lines }, (_, i) => `export const line${i} = ${i};`).join('\n') + '\n';

/** A file whose one function is `lines` lines long, from its `function` to its closing brace. */
const functionOf = (lines: number): string =>
  [
    'export function long(): number {',
    '  let n = 0;',
    ...Array(lines - 4).fill('  n += 1;'),
    '  return n;',
    '}',
    '',
  ].join('\n');

describe('the size of the product is held by npm run lint (issue 52 item 5)', () => {
  it.each(['api/x.ts', 'lib/kube/x.ts', 'agent/x.ts', 'controller/x.ts', 'cli/verbs/x.ts'])(
    '%s: a file of 401 lines is refused, one of 400 is not',
    async (path) => {
      expect(await broken('max-lines', path, fileOf(401))).toEqual([
        'File has too many lines (401). Maximum allowed is 400.',
      ]);
      expect(await broken('max-lines', path, fileOf(400))).toEqual([]);
    },
  );

  it.each(['lib/x.ts', 'agent/probes/x.ts', 'controller/decide/x.ts', 'cli/x.ts', 'api/x.ts'])(
    '%s: a function of 81 lines is refused, one of 80 is not',
    async (path) => {
      expect(await broken('max-lines-per-function', path, functionOf(81))).toEqual([
        "Function 'long' has too many lines (81). Maximum allowed is 80.",
      ]);
      expect(await broken('max-lines-per-function', path, functionOf(80))).toEqual([]);
    },
  );

  it.each([
    'lib/x.test.ts',
    'controller/testing.ts',
    'lib/kube/testing.ts',
    'bench/x.ts',
    'test/integration/x.ts',
  ])('%s: tests, testing.ts and what is not the product are not held to it', async (path) => {
    expect(await broken('max-lines', path, fileOf(401))).toEqual([]);
    expect(await broken('max-lines-per-function', path, functionOf(81))).toEqual([]);
  });
});

/** The circles dependency-cruiser finds, with the rules of .dependency-cruiser.js, in a tree of `files`. */
async function circles(files: Record<string, string>): Promise<string[][]> {
  const dir = await mkdtemp(join(tmpdir(), 'nodecare-circles-'));
  try {
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(dir, path)), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    const config = join(ROOT, '.dependency-cruiser.js');
    const { options, forbidden } = ((await import(config)) as { default: IConfiguration }).default;
    const result = await cruise(['.'], { ...options, baseDir: dir, ruleSet: { forbidden }, validate: true });
    const { summary } = result.output as ICruiseResult;
    return summary.violations
      .filter((v) => v.rule.name === 'no-circular')
      .map((v) => [v.from, ...(v.cycle ?? []).map((step) => step.name)]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('import circles are refused by npm run lint (issue 52 item 5)', () => {
  it('a circle of type-only imports is a circle', async () => {
    const found = await circles({
      'lib/kube/a.ts': "import type { B } from './b.ts';\nexport type A = B[];\n",
      'lib/kube/b.ts': "import type { A } from './a.ts';\nexport interface B {\n  a?: A;\n}\n",
    });
    expect(found).toContainEqual(['lib/kube/a.ts', 'lib/kube/b.ts', 'lib/kube/a.ts']);
  });

  it('so is one through a dynamic import and three files', async () => {
    const found = await circles({
      'bench/a.ts': "import { b } from './b.ts';\nexport const a = (): number => b;\n",
      'bench/b.ts': "import type { C } from './phases/c.ts';\nexport const b = 1;\nexport type B = C;\n",
      'bench/phases/c.ts':
        "export type C = number;\nexport const c = async () => (await import('../a.ts')).a();\n",
    });
    expect(found).toContainEqual(['bench/a.ts', 'bench/b.ts', 'bench/phases/c.ts', 'bench/a.ts']);
  });

  it('imports that do not come back are not', async () => {
    const found = await circles({
      'lib/kube/a.ts':
        "import type { B } from './b.ts';\nimport { c } from './c.ts';\nexport type A = B[];\nexport const a = c;\n",
      'lib/kube/b.ts': "import { c } from './c.ts';\nexport interface B {\n  c: typeof c;\n}\n",
      'lib/kube/c.ts': 'export const c = 1;\n',
    });
    expect(found).toEqual([]);
  });
});
