// The probe kinds' table drives every place a kind is listed: the docs' table of kinds says what the table says,
// each kind has its probe module, and no product file lists kinds on its own (a switch over the kinds, a list
// of kind names), so adding a kind is one entry in api/probe-kinds.ts and one module in agent/probes/.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { PROBES as PROBE_MODULES } from '../agent/probes/index.ts';
import {
  PROBE_KINDS,
  PROBES,
  describeProbe,
  kindEntry,
  parseAnnotationValue,
  parseExtensionSpec,
  watchesFor,
  type SpecParse,
} from './index.ts';

const ROOT = join(import.meta.dirname, '..');

/** The docs/design.md table of kinds: kind → "healthy when". */
function documentedKinds(): Map<string, string> {
  const design = readFileSync(join(ROOT, 'docs', 'design.md'), 'utf8');
  // The table whose header is `| kind | healthy when |`, up to the first line that is not a row.
  const start = design.search(/^\| kind\s+\| healthy when/m);
  expect(start, 'the table of kinds in docs/design.md').toBeGreaterThan(0);
  const table = design.slice(start).split('\n\n')[0]!;
  const rows = [...table.matchAll(/^\| `([A-Za-z]+)`\s*\| (.*?)\s*\|$/gm)];
  return new Map(rows.map(([, kind, text]) => [kind!, text!]));
}

/** docs/agent.md's section on each kind (`### \`kind\``) under "## Probe kinds": kind → the section's text. */
function agentDocSections(): Map<string, string> {
  const agent = readFileSync(join(ROOT, 'docs', 'agent.md'), 'utf8');
  const start = agent.indexOf('\n## Probe kinds\n');
  expect(start, 'the "Probe kinds" section of docs/agent.md').toBeGreaterThan(0);
  const end = agent.indexOf('\n## ', start + 1);
  const sections = agent.slice(start, end).split(/^### /m).slice(1);
  return new Map(sections.map((section) => [/^`(\w+)`/.exec(section)?.[1] ?? section, section]));
}

/**
 * Parses a docs example the way its reader would use it: a spec (JSON), a SystemExtension or the agent's config
 * file (YAML), an annotation's shorthand.
 */
function parseExample(language: string, text: string): SpecParse {
  if (language === 'json') return parseExtensionSpec(JSON.parse(text));
  if (language === 'yaml') {
    const doc = load(text) as { kind?: string; spec?: unknown; extensions?: Record<string, unknown> };
    const spec = doc.kind === 'SystemExtension' ? doc.spec : Object.values(doc.extensions ?? {})[0];
    return parseExtensionSpec(spec, ['nodeSelector']);
  }
  return parseAnnotationValue(text.trim());
}

type Schema = { properties?: Record<string, Schema>; default?: unknown };

/** The `default`s in the SystemExtension CRD's schema of `kind`, as a nested object like a table entry's. */
function crdDefaults(kind: string): Record<string, unknown> {
  const crd = load(
    readFileSync(join(ROOT, 'manifests', 'base', 'crds', 'systemextensions.nodecare.io.yaml'), 'utf8'),
  ) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Schema } }> } };
  const root = crd.spec.versions[0]!.schema.openAPIV3Schema;
  const collect = (node: Schema): Record<string, unknown> =>
    Object.fromEntries(
      Object.entries(node.properties ?? {}).flatMap(([field, child]) => {
        if (child.default !== undefined) return [[field, child.default]];
        const nested = collect(child);
        return Object.keys(nested).length > 0 ? [[field, nested]] : [];
      }),
    );
  return collect(root.properties!.spec!.properties!.probe!.properties![kind]!);
}

/** Each default as [its field's own name, its value], nested ones included. */
function leaves(defaults: object): Array<[string, unknown]> {
  return Object.entries(defaults).flatMap(([field, value]): Array<[string, unknown]> =>
    typeof value === 'object' ? leaves(value as object) : [[field, value]],
  );
}

function productFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return productFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && entry.name !== 'testing.ts'
      ? [path]
      : [];
  });
}

describe('the probe kinds table (api/probe-kinds.ts)', () => {
  it('docs/design.md lists exactly its kinds, each with its healthyWhen line', () => {
    const documented = documentedKinds();
    expect([...documented.keys()]).toEqual([...PROBE_KINDS]);
    for (const kind of PROBE_KINDS) expect(documented.get(kind), kind).toBe(PROBES[kind].healthyWhen);
  });

  it('docs/agent.md has a section per kind, in its order, whose example parses as that kind', () => {
    const sections = agentDocSections();
    expect([...sections.keys()]).toEqual([...PROBE_KINDS]);
    for (const [kind, section] of sections) {
      const example = /```(\w*)\n([\s\S]*?)```/.exec(section);
      expect(example, `an example in the ${kind} section`).not.toBeNull();
      const { result } = parseExample(example![1]!, example![2]!);
      expect(result, kind).toMatchObject({ ok: true, value: { probe: { kind } } });
    }
  });

  it.each(PROBE_KINDS)("%s: its defaults are the CRD schema's, and docs/agent.md names each", (kind) => {
    const defaults: object = kindEntry(kind).defaults ?? {};
    expect(defaults).toEqual(crdDefaults(kind));
    const section = agentDocSections().get(kind)!;
    for (const [field, value] of leaves(defaults)) {
      const shown = value === '' ? '""' : String(value);
      const escaped = shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      expect(section, `${kind}.${field}`).toMatch(
        new RegExp(`\`${field}\`[^.]*?default \`?${escaped}(?!\\w)`),
      );
    }
  });

  it.each([
    ['no probe', [], { pods: false, resourceSlices: false }],
    ['podReady → the pods on the node', ['podReady', 'http'], { pods: true, resourceSlices: false }],
    ["resourceSlices → the node's slices", ['resourceSlices'], { pods: false, resourceSlices: true }],
    ['both', ['resourceSlices', 'podReady'], { pods: true, resourceSlices: true }],
    [
      'kinds that read only the node',
      ['nodeResource', 'nodeCondition'],
      { pods: false, resourceSlices: false },
    ],
  ] as const)('the agent watches what the kinds need: %s', (_name, kinds, watches) => {
    expect(watchesFor(kinds)).toEqual(watches);
  });

  it('every kind has its probe module in agent/probes/', () => {
    expect(Object.keys(PROBE_MODULES).sort()).toEqual([...PROBE_KINDS].sort());
  });

  it('every kind parses a minimal spec through its entry and describes it in one line', () => {
    const minimal = {
      http: { url: 'http://127.0.0.1:1/' },
      tcp: { port: 1 },
      grpc: { address: '127.0.0.1:1' },
      csi: { socket: '/run/csi.sock' },
      devicePlugin: { resource: 'example.com/dev', socket: '/run/dp.sock' },
      resourceSlices: { driver: 'gpu.example.com' },
      nodeResource: { resource: 'nvidia.com/gpu' },
      nodeCondition: { type: 'Ready' },
      podReady: { namespace: 'kube-system', selector: { matchLabels: { app: 'x' } } },
      exec: { command: ['/bin/true'] },
      file: { path: '/run/x' },
      process: { name: 'x' },
      host: { memoryAvailableMiB: { min: 1 } },
    } satisfies Record<(typeof PROBE_KINDS)[number], object>;
    for (const kind of PROBE_KINDS) {
      const { result } = parseExtensionSpec({ probe: { [kind]: minimal[kind] } });
      expect(result.ok, kind).toBe(true);
      if (!result.ok) continue;
      expect(result.value.probe.kind).toBe(kind);
      expect(describeProbe(result.value.probe)).toMatch(/\S/);
      expect(describeProbe(result.value.probe)).not.toContain('\n');
    }
  });

  it('no product file lists the kinds on its own (a case per kind, or several kind names)', () => {
    const offenders: string[] = [];
    for (const dir of ['api', 'agent', 'controller', 'cli', 'lib']) {
      for (const file of productFiles(join(ROOT, dir))) {
        const path = relative(ROOT, file);
        if (path === join('api', 'probe-kinds.ts') || path === join('api', 'probe-spec.ts')) continue;
        let text = readFileSync(file, 'utf8');
        // The annotation shorthand switches over URL schemes (http://, tcp://, grpc://, unix://), not kinds.
        if (path === join('api', 'annotation.ts')) text = text.replace(/case '[a-z]+':/g, '');
        // A switch over a kind with a case per kind, or several kinds named as strings (a comparison, a
        // `has('…')`, a list). One kind named alone (`probe.kind === 'exec'` for its own rule, a probe module
        // naming its kind) is a rule, not a list.
        const switchesOnKind = /switch \((?:[\w.]*\.)?kind\)/.test(text);
        const cased = PROBE_KINDS.filter((kind) => switchesOnKind && text.includes(`case '${kind}'`));
        const named = PROBE_KINDS.filter((kind) => text.includes(`'${kind}'`));
        for (const listed of [cased, named])
          if (listed.length > 1) offenders.push(`${path}: ${listed.join(', ')}`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
