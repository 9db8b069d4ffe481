// docs/api-reference.md, generated from the CRD schemas (manifests/base/crds/*.yaml), so the reference says
// what the API server validates and `kubectl explain` prints, and nothing else. test/unit/api-reference.test.ts
// fails when the committed page differs from what this writes.
//   node test/tools/api-reference.ts          (npm run docs:api) writes docs/api-reference.md
//   node test/tools/api-reference.ts --check  exits 1 when it is out of date

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { format, resolveConfig } from 'prettier';

const ROOT = join(import.meta.dirname, '..', '..');
export const CRD_DIR = 'manifests/base/crds';
export const REFERENCE = 'docs/api-reference.md';

/** The part of an OpenAPI v3 schema a CRD uses and this page shows. */
interface Schema {
  type?: string;
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  required?: string[];
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  pattern?: string;
  format?: string;
  anyOf?: Schema[];
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
}

interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  priority?: number;
}

interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; shortNames?: string[] };
    versions: Array<{
      name: string;
      additionalPrinterColumns?: PrinterColumn[];
      subresources?: Record<string, unknown>;
      schema: { openAPIV3Schema: Schema };
    }>;
  };
}

/** Text from a schema, safe in Markdown: one line, no HTML, no table or code breaks. */
function text(value: string): string {
  return value
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\|/g, '\\|')
    .replace(/([*`[\]])/g, '\\$1')
    .replace(/(^|\s)_|_(?=\s|$)/g, (m) => m.replace('_', '\\_'));
}

/** A value in a code span (backticks inside are doubled around). */
function code(value: string): string {
  return value.includes('`') ? `\`\` ${value} \`\`` : `\`${value}\``;
}

function typeOf(s: Schema): string {
  if (s['x-kubernetes-int-or-string']) return 'integer or string';
  if (s.anyOf) return s.anyOf.map(typeOf).join(' or ');
  if (s.type === 'array') return s.items ? `array of ${typeOf(s.items)}` : 'array';
  if (s.type === 'object' && typeof s.additionalProperties === 'object' && !s.properties)
    return `map of ${typeOf(s.additionalProperties)}`;
  if (s['x-kubernetes-preserve-unknown-fields'] && !s.type) return 'any';
  return (s.format ? `${s.type ?? 'any'}, ${s.format}` : s.type) ?? 'any';
}

function range(what: string, min: number | undefined, max: number | undefined): string | undefined {
  if (min !== undefined && max !== undefined) return `${what} ${min}–${max}`;
  if (min !== undefined) return `${what} ≥ ${min}`;
  if (max !== undefined) return `${what} ≤ ${max}`;
  return undefined;
}

/** The constraints the API server checks on this field, in words. */
function constraints(s: Schema, required: boolean): string[] {
  const out: string[] = [];
  if (required) out.push('required');
  if (s.default !== undefined) out.push(`default ${code(JSON.stringify(s.default))}`);
  if (s.enum) out.push(`one of ${s.enum.map((v) => code(String(v))).join(', ')}`);
  for (const part of [
    range('value', s.minimum, s.maximum),
    range('length', s.minLength, s.maxLength),
    range('items', s.minItems, s.maxItems),
    range('keys', s.minProperties, s.maxProperties),
  ])
    if (part) out.push(part);
  if (s.pattern) out.push(`pattern ${code(s.pattern)}`);
  return out;
}

/** One line per field, depth first, in the schema's order. */
function fields(schema: Schema, path: string, lines: string[]): void {
  const required = new Set(schema.required ?? []);
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    const at = path ? `${path}.${name}` : name;
    const facts = [typeOf(child), ...constraints(child, required.has(name))].join('; ');
    const description = child.description
      ? ` ${text(child.description)}`
      : name === 'metadata' && !path
        ? " Kubernetes' ObjectMeta."
        : ' (no description)';
    lines.push(`- ${code(at)} (${facts}).${description}`);
    if (name === 'metadata' && !path) continue; // ObjectMeta: Kubernetes documents it
    descend(child, at, lines);
  }
}

function descend(s: Schema, at: string, lines: string[]): void {
  if (s.properties) fields(s, at, lines);
  if (s.items) {
    if (s.items.properties) fields(s.items, `${at}[]`, lines);
    else if (s.items.items) descend(s.items, `${at}[]`, lines);
  }
  if (typeof s.additionalProperties === 'object' && s.additionalProperties.properties)
    fields(s.additionalProperties, `${at}.<key>`, lines);
}

function countFields(s: Schema): { all: number; described: number } {
  let all = 0;
  let described = 0;
  const walk = (schema: Schema, top: boolean): void => {
    for (const [name, child] of Object.entries(schema.properties ?? {})) {
      if (top && name === 'metadata') continue; // ObjectMeta: its fields are Kubernetes' own
      all++;
      if (child.description) described++;
      walk(child, false);
      if (child.items) walk(child.items, false);
      if (typeof child.additionalProperties === 'object') walk(child.additionalProperties, false);
    }
  };
  walk(s, true);
  return { all, described };
}

function meaning(c: PrinterColumn): string {
  if (c.description) return text(c.description);
  return c.jsonPath === '.metadata.creationTimestamp' ? 'Time since the object was created.' : '';
}

function section(crd: Crd, file: string): string[] {
  const { names, group, scope } = crd.spec;
  const lines: string[] = [];
  for (const version of crd.spec.versions) {
    const schema = version.schema.openAPIV3Schema;
    const count = countFields(schema);
    lines.push(`## ${names.kind}`, '');
    lines.push(
      `${code(`${group}/${version.name}`)}, ${scope === 'Cluster' ? 'cluster-scoped' : 'namespaced'}; plural ` +
        `${code(names.plural)}${names.shortNames?.length ? `, short name ${names.shortNames.map(code).join(', ')}` : ''}` +
        `${version.subresources?.status ? '; status subresource' : ''}. Schema: ${code(file)} ` +
        `(${count.described} of ${count.all} fields besides metadata described).`,
      '',
    );
    if (schema.description) lines.push(text(schema.description), '');
    const columns = version.additionalPrinterColumns ?? [];
    if (columns.length) {
      lines.push(`### ${code(`kubectl get ${names.plural}`)} columns`, '');
      lines.push(
        'NAME comes first; `-o wide` adds the columns marked wide.',
        '',
        '| column | type | shown | from | meaning |',
        '| --- | --- | --- | --- | --- |',
      );
      for (const c of columns)
        lines.push(
          `| ${c.name.toUpperCase()} | ${c.type} | ${c.priority ? 'wide' : 'always'} | ${code(c.jsonPath)} | ${meaning(c)} |`,
        );
      lines.push('');
    }
    lines.push('### Fields', '');
    fields(schema, '', lines);
    lines.push('');
  }
  return lines;
}

/** The page, formatted as `prettier --check` wants it. */
export async function renderApiReference(root = ROOT): Promise<string> {
  const files = readdirSync(join(root, CRD_DIR))
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  const lines = [
    '# API reference',
    '',
    'Generated from the CRD schemas in `manifests/base/crds/` by `test/tools/api-reference.ts`',
    '(`npm run docs:api`); `test/unit/api-reference.test.ts` fails when this page is out of date. Do not edit it',
    'by hand: change the schema, then run the generator. The same descriptions are what',
    '`kubectl explain systemextension.spec --recursive` prints. What the fields mean in practice:',
    '[extensions.md](extensions.md) (SystemExtension) and [rollup.md](rollup.md) (ClusterHealth).',
    '',
  ];
  for (const file of files) {
    const crd = load(readFileSync(join(root, CRD_DIR, file), 'utf8')) as Crd;
    lines.push(...section(crd, `${CRD_DIR}/${file}`));
  }
  const options = (await resolveConfig(join(root, REFERENCE))) ?? {};
  return format(lines.join('\n'), { ...options, parser: 'markdown' });
}

if (import.meta.main) {
  const page = await renderApiReference();
  const path = join(ROOT, REFERENCE);
  if (process.argv.includes('--check')) {
    const current = readFileSync(path, 'utf8');
    if (current !== page) {
      process.stderr.write(`${REFERENCE} is out of date: run npm run docs:api\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(path, page);
    process.stderr.write(`Wrote ${REFERENCE}\n`);
  }
}
