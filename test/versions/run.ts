// `npm run test:versions`: the integration suite against older Kubernetes versions too (issue 23 item 1), and
// the results written into docs/compatibility.md. Not part of `npm test` (each version is a control plane build
// of many minutes and a full integration run). For each version: its Kubernetes module is generated beside the
// cache (test/controlplane/kube/update-gomod.sh, never committed), built once by test/controlplane/build.sh
// (NODECARE_KUBE_DIR), and the integration suite runs on it; a file that fails or does not run is recorded as such.
//   node test/versions/run.ts [v1.35.4 v1.36.5 ...]

import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const DEFAULT_VERSIONS = ['v1.35.4', 'v1.36.5'];
const DOC = join(ROOT, 'docs', 'compatibility.md');
const BEGIN = '<!-- test:versions results: begin (written by npm run test:versions) -->';
const END = '<!-- test:versions results: end -->';

const versions = process.argv.slice(2).length > 0 ? process.argv.slice(2) : DEFAULT_VERSIONS;
for (const v of versions)
  if (!/^v1\.\d+\.\d+$/.test(v)) {
    process.stderr.write(`test:versions: "${v}" is not a Kubernetes version like v1.36.3\n`);
    process.exit(2);
  }

const say = (line: string): void => void process.stderr.write(`[versions] ${line}\n`);
const cache =
  process.env.NODECARE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nodecare');

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('close', (code) => resolve(code ?? 1));
  });
}

/** The Kubernetes module of `version`, generated once under the cache. */
async function kubeDir(version: string): Promise<string> {
  const dir = join(cache, 'versions', version, 'kube');
  if (existsSync(join(dir, 'go.sum'))) return dir;
  mkdirSync(dir, { recursive: true });
  for (const file of ['main.go', 'update-gomod.sh'])
    copyFileSync(join(ROOT, 'test', 'controlplane', 'kube', file), join(dir, file));
  say(`${version}: generating its go.mod (update-gomod.sh) in ${dir}`);
  const code = await run('bash', ['update-gomod.sh', version], {}, dir);
  if (code !== 0) throw new Error(`update-gomod.sh ${version} exited ${code}`);
  return dir;
}

interface FileResult {
  file: string;
  status: 'passed' | 'failed' | 'not run';
  passed: number;
  failed: number;
  skipped: number;
  firstFailure?: string;
}

interface VersionResult {
  version: string;
  build: 'ok' | 'failed';
  files: FileResult[];
  minutes: number;
}

async function runVersion(version: string): Promise<VersionResult> {
  const started = Date.now();
  const minutes = () => Math.round((Date.now() - started) / 6000) / 10;
  let dir: string;
  try {
    dir = await kubeDir(version);
  } catch (err) {
    say(`${version}: ${(err as Error).message}`);
    return { version, build: 'failed', files: [], minutes: minutes() };
  }
  const env = { NODECARE_KUBE_DIR: dir };
  say(`${version}: building the control plane (cached after the first time)`);
  if ((await run('bash', ['test/controlplane/build.sh'], env)) !== 0)
    return { version, build: 'failed', files: [], minutes: minutes() };
  const out = join(tmpdir(), `nodecare-versions-${version}-${process.pid}.json`);
  say(`${version}: running the integration suite`);
  await run(
    'npx',
    [
      'vitest',
      'run',
      '--project',
      'integration',
      '--reporter=default',
      '--reporter=json',
      `--outputFile=${out}`,
    ],
    env,
  );
  const files: FileResult[] = [];
  if (existsSync(out)) {
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      testResults: Array<{
        name: string;
        assertionResults: Array<{ status: string; failureMessages?: string[] }>;
        message?: string;
      }>;
    };
    for (const t of report.testResults) {
      const count = (s: string) => t.assertionResults.filter((a) => a.status === s).length;
      const failed = count('failed');
      const passed = count('passed');
      const firstFailure =
        t.assertionResults.find((a) => a.status === 'failed')?.failureMessages?.[0] ?? t.message ?? '';
      files.push({
        file: relative(ROOT, t.name),
        status: failed > 0 || (passed === 0 && firstFailure) ? 'failed' : passed > 0 ? 'passed' : 'not run',
        passed,
        failed,
        skipped: t.assertionResults.length - passed - failed,
        ...(firstFailure ? { firstFailure: firstFailure.split('\n')[0]!.slice(0, 160) } : {}),
      });
    }
  }
  return {
    version,
    build: 'ok',
    files: files.sort((a, b) => a.file.localeCompare(b.file)),
    minutes: minutes(),
  };
}

function table(results: VersionResult[]): string {
  const files = [...new Set(results.flatMap((r) => r.files.map((f) => f.file)))].sort();
  const cell = (r: VersionResult, file: string): string => {
    if (r.build === 'failed') return 'build failed';
    const f = r.files.find((x) => x.file === file);
    if (!f) return 'not run';
    const counts = `${f.passed} passed${f.failed ? `, ${f.failed} failed` : ''}${f.skipped ? `, ${f.skipped} not run` : ''}`;
    return f.status === 'failed' ? `**failed** (${counts})` : counts;
  };
  const lines = [
    `Run on ${new Date().toISOString().slice(0, 10)} with \`npm run test:versions -- ${results.map((r) => r.version).join(' ')}\`:`,
    '',
    `| integration file | ${results.map((r) => r.version).join(' | ')} |`,
    `| --- | ${results.map(() => '---').join(' | ')} |`,
    ...files.map((file) => `| \`${file}\` | ${results.map((r) => cell(r, file)).join(' | ')} |`),
    `| time | ${results.map((r) => `${r.minutes} min`).join(' | ')} |`,
  ];
  const failures = results.flatMap((r) =>
    r.files
      .filter((f) => f.status === 'failed')
      .map((f) => `- ${r.version} \`${f.file}\`: ${f.firstFailure ?? ''}`),
  );
  if (failures.length > 0) lines.push('', 'First failure of each failing file:', '', ...failures);
  return lines.join('\n');
}

const results: VersionResult[] = [];
for (const version of versions) results.push(await runVersion(version));
const doc = readFileSync(DOC, 'utf8');
const begin = doc.indexOf(BEGIN);
const end = doc.indexOf(END);
if (begin < 0 || end < begin) {
  process.stderr.write(`test:versions: ${DOC} has no results markers\n`);
  process.exit(1);
}
writeFileSync(DOC, `${doc.slice(0, begin + BEGIN.length)}\n\n${table(results)}\n\n${doc.slice(end)}`);
// Laid out as the rest of the docs, so `npm run lint` passes on the rewritten file.
await run('npx', ['prettier', '--write', relative(ROOT, DOC)], {});
say(`results written to ${relative(ROOT, DOC)}`);
const failed = results.some((r) => r.build === 'failed' || r.files.some((f) => f.status === 'failed'));
process.exit(failed ? 1 : 0);
