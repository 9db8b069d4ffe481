// The docs cite the code: files, links, metrics, flags, objects. Each citation must name something that exists,
// so a rename in the code fails here instead of leaving a page that sends the reader to nothing.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter((file) => file && existsSync(join(ROOT, file)) && statSync(join(ROOT, file)).isFile());
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

const DOCS = tracked.filter((file) => file.endsWith('.md') && !file.startsWith('test/'));
/** Everything the docs may cite: the code, manifests, chart and scripts (not the docs themselves). */
const SOURCE = tracked
  .filter((file) => !file.endsWith('.md') && !file.endsWith('.json') && !file.startsWith('bench/results/'))
  .map(read)
  .join('\n');

/** The programs' own code, where their option tables live. */
const PROGRAMS = tracked
  .filter(
    (file) => /^(agent|controller|cli|demo|bench|lib)\/.*\.ts$/.test(file) && !file.endsWith('.test.ts'),
  )
  .map(read)
  .join('\n');

/** Flags of programs other than ours that the docs show in commands (kubectl, helm, kubelet, node, autoscalers). */
const OTHER_PROGRAMS_FLAGS = new Set([
  // release/release.sh (docs/release.md), and npm sbom's --omit that it runs
  'allow-dirty',
  'omit',
  // kubectl and helm
  'server-side',
  'force-conflicts',
  'field-selector',
  'ignore-not-found',
  'create-namespace',
  'take-ownership',
  'reuse-values',
  'namespace',
  'selector',
  'all-namespaces',
  'output',
  'set',
  'values',
  'dry-run',
  'wait',
  'api-versions',
  'for', // kubectl wait --for=condition=… (the CRDs' condition descriptions, docs/api-reference.md)
  // krew install (docs/release.md)
  'manifest',
  'manifest-url',
  'archive',
  // npm
  'global',
  'prefix',
  // vitest; an exec probe's example program (docs/agent.md)
  'project',
  'quick',
  // the kubelet and the Cluster Autoscaler
  'register-with-taints',
  'node-labels',
  'root-dir',
  'startup-taint',
  'status-taint',
  'node-taints',
  'cloud-provider',
  'max-node-startup-time',
  'max-total-unready-percentage',
  // node-driver-registrar's, which the CSI section's registrar follows (docs/extensions.md)
  'kubelet-registration-path',
  'http-endpoint',
  // kube-controller-manager (docs/adr/0010: when Kubernetes notices a gone kubelet)
  'node-monitor-grace-period',
  // Node.js and V8 (docs/adr on the agent's and controller's footprint)
  'max-semi-space-size',
  'max-old-space-size',
  'semi-space-growth-factor',
  'optimize-for-size',
  'heap-growing-percent',
  'v8-pool-size',
  'cpu-prof',
  'cpu-prof-interval',
  'jitless',
  'no-opt',
  'no-maglev',
  'max-opt',
  'no-wasm-tier-up',
  'single-threaded',
  'single-threaded-gc',
  'lite-mode',
  'bytecode-old-age',
  'flush-code-based-on-time',
  'bytecode-old-time',
  'with-intl',
  'trace-gc',
  'enable-experimental-regexp-engine-on-excessive-backtracks',
]);

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** Inline code spans outside fenced blocks, with the file they are in. */
function codeSpans(markdown: string): string[] {
  return [...markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
}

/** Kinds of the objects the manifests and the chart ship, by name. */
function shippedObjects(): Map<string, Set<string>> {
  const kinds = new Map<string, Set<string>>();
  for (const file of tracked.filter((f) => /^manifests\/.*\.ya?ml$/.test(f))) {
    for (const doc of loadAll(read(file))) {
      const object = doc as { kind?: string; metadata?: { name?: string } } | null;
      if (!object?.kind || !object.metadata?.name) continue;
      if (!kinds.has(object.kind)) kinds.set(object.kind, new Set());
      kinds.get(object.kind)!.add(object.metadata.name);
    }
  }
  return kinds;
}

describe('the docs cite what exists', () => {
  it('finds the pages to check', () => {
    // The front door and the pages it links (issue 51 item 3): every one is tracked, so every check here reads it.
    for (const page of [
      'README.md',
      'CONTRIBUTING.md',
      'SECURITY.md',
      'docs/install.md',
      'docs/troubleshooting.md',
      'docs/faq.md',
      'docs/api-reference.md',
    ])
      expect(DOCS).toContain(page);
    expect(DOCS.length).toBeGreaterThan(15);
  });

  it("the README's first command is on its first screen (24 lines), and it states the test command CI runs", () => {
    const lines = read('README.md').split('\n');
    const fence = lines.findIndex((line) => /^```(sh|console)$/.test(line));
    expect(fence).toBeGreaterThan(0);
    expect(fence + 2, `first command: ${lines[fence + 1]}`).toBeLessThanOrEqual(24);
    // .ci/run runs exactly the README's test command, nothing less.
    expect(read('README.md')).toMatch(/^npm ci && npm test$/m);
    expect(read('.ci/run')).toMatch(/^npm ci && npm test \|\| exit$/m);
  });

  it('every `kubectl get` output of our CRDs shows the columns the CRD prints by default', () => {
    const columns = new Map<string, string>();
    for (const file of tracked.filter((f) => /^manifests\/base\/crds\/.*\.yaml$/.test(f))) {
      const crd = loadAll(read(file))[0] as {
        spec: {
          names: { plural: string; singular: string; shortNames?: string[] };
          versions: Array<{ additionalPrinterColumns?: Array<{ name: string; priority?: number }> }>;
        };
      };
      const { names, versions } = crd.spec;
      const header = ['NAME']
        .concat((versions[0]!.additionalPrinterColumns ?? []).filter((c) => !c.priority).map((c) => c.name))
        .join(' ')
        .toUpperCase();
      for (const name of [names.plural, names.singular, ...(names.shortNames ?? [])])
        columns.set(name, header);
    }
    const stale: string[] = [];
    for (const doc of DOCS) {
      const lines = read(doc).split('\n');
      lines.forEach((line, i) => {
        const get = /^\$ kubectl get (\S+)(?: \S+)?$/.exec(line);
        const expected = get && columns.get(get[1]!);
        const next = lines[i + 1] ?? '';
        if (!expected || !next.startsWith('NAME ')) return;
        const shown = next.trim().split(/\s+/).join(' ');
        if (shown !== expected) stale.push(`${doc}:${i + 2}: ${shown} (the CRD prints ${expected})`);
      });
    }
    expect(columns.size).toBeGreaterThan(3);
    expect(stale).toEqual([]);
  });

  it('every relative link reaches a file, and its #anchor a heading of that page', () => {
    const broken: string[] = [];
    for (const doc of DOCS) {
      // Code is not a link: a schema pattern such as `^[a-z]([-a-z0-9]*)$` reads like one.
      const text = read(doc)
        .replace(/^```[\s\S]*?^```/gm, '')
        .replace(/`[^`\n]+`/g, '');
      for (const [, target = '', anchor] of text.matchAll(/\]\(([^)#\s]*)(?:#([^)\s]+))?\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue;
        const file = target ? normalize(join(dirname(doc), target)) : doc;
        if (file.startsWith('..') || !existsSync(join(ROOT, file))) {
          broken.push(`${doc}: (${target}${anchor ? `#${anchor}` : ''}) — no file ${file}`);
          continue;
        }
        if (anchor && file.endsWith('.md') && !anchors(read(file)).has(anchor))
          broken.push(`${doc}: (${target}#${anchor}) — no heading with that anchor in ${file}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('every repository path in `code` exists', () => {
    const missing: string[] = [];
    for (const doc of DOCS)
      for (const span of codeSpans(read(doc)))
        if (/^(agent|api|cli|controller|lib|manifests|charts|docs|test|bench|demo)\/[\w./-]*$/.test(span)) {
          const path = span.replace(/\/$/, '');
          if (
            !existsSync(join(ROOT, path)) &&
            !existsSync(join(ROOT, relative('.', join(dirname(doc), path))))
          )
            missing.push(`${doc}: \`${span}\``);
        }
    expect(missing).toEqual([]);
  });

  it('every metric named is one the code registers', () => {
    const missing: string[] = [];
    for (const doc of DOCS)
      for (const span of codeSpans(read(doc)))
        for (const [name] of span.matchAll(/\bnodecare_[a-z_]+[a-z]/g)) {
          const family = name.replace(/_(bucket|sum|count)$/, '');
          if (!SOURCE.includes(`'${family}'`) && !SOURCE.includes(`${family}`))
            missing.push(`${doc}: ${name}`);
        }
    expect(missing).toEqual([]);
  });

  it('every nodecare name in `code` (object, label, annotation, file) appears in the code or manifests', () => {
    const missing: string[] = [];
    for (const doc of DOCS)
      for (const span of codeSpans(read(doc)))
        if (/^nodecare[-a-z0-9./]*[a-z0-9]$/.test(span) && !SOURCE.includes(span))
          missing.push(`${doc}: \`${span}\``);
    expect(missing).toEqual([]);
  });

  it('every object cited as <Kind> `name` is shipped with that kind and name', () => {
    const shipped = shippedObjects();
    const wrong: string[] = [];
    for (const doc of DOCS) {
      const text = read(doc).replace(/^```[\s\S]*?^```/gm, '');
      for (const [, kind = '', name = ''] of text.matchAll(/\b([A-Z][A-Za-z]+) `(nodecare[-a-z0-9.]*)`/g)) {
        if (!shipped.has(kind)) continue; // a kind we do not ship (for example a Node or a Pod of the demo)
        if (!shipped.get(kind)!.has(name)) wrong.push(`${doc}: ${kind} \`${name}\``);
      }
    }
    expect(shipped.get('FlowSchema')?.size).toBeGreaterThan(0);
    expect(wrong).toEqual([]);
  });

  it('every --flag is an option of one of our programs or a flag of a named other program', () => {
    const unknown = new Map<string, string>();
    for (const doc of DOCS) {
      const text = read(doc);
      for (const match of text.matchAll(/(?<![\w-])--([a-z][a-z0-9-]+)/g)) {
        const flag = match[1]!;
        if (OTHER_PROGRAMS_FLAGS.has(flag)) continue;
        const key = new RegExp(`(^|[\\s{,])'?${flag.replace(/-/g, '\\-')}'?\\??\\s*:`, 'm');
        if (!key.test(PROGRAMS)) unknown.set(flag, doc);
      }
    }
    expect([...unknown].map(([flag, doc]) => `${doc}: --${flag}`)).toEqual([]);
  });
});
