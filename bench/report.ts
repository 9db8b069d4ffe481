// The benchmark's one table and its JSON record (bench/results/): goal, measured, pass/fail, scale, machine
// and the load average when each figure was taken.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface Row {
  id: string;
  measure: string;
  goal: string;
  measured: string;
  /** true/false against the goal; null for the figures docs/design.md sets no goal for. */
  pass: boolean | null;
  /** 1-minute load average when the figure was taken. */
  load: number;
  /** The raw numbers behind `measured`. */
  values: Record<string, number | string | null>;
}

/** The code a run measured: the commit checked out, and how many tracked files differed from it. */
export interface MeasuredCode {
  commit: string;
  uncommittedFiles: number;
}

export interface Results {
  startedAt: string;
  finishedAt: string;
  scale: { nodes: number; extensions: number; samples: number; steadySeconds: number };
  machine: string;
  /** The commit measured (absent outside a git checkout). */
  code?: MeasuredCode;
  settings: Record<string, unknown>;
  rows: Row[];
  /** Why the run stopped before measuring every row (absent when it did not). */
  failure?: string;
}

/** "code 8a954f0" or "code 8a954f0 with 2 files changed", for the line above a results table. */
export function fmtCode(code: MeasuredCode | undefined): string {
  if (code === undefined) return 'code: not a git checkout';
  const changed = code.uncommittedFiles > 0 ? ` with ${code.uncommittedFiles} files changed` : '';
  return `code ${code.commit.slice(0, 7)}${changed}`;
}

export const fmtMs = (ms: number | undefined | null): string =>
  ms === undefined || ms === null || !Number.isFinite(ms)
    ? 'n/a'
    : ms >= 10_000
      ? `${(ms / 1000).toFixed(1)} s`
      : `${Math.round(ms)} ms`;

export const fmtMiB = (bytes: number): string => `${(bytes / 1048576).toFixed(0)} MiB`;

export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export function renderTable(results: Results): string {
  const scale = `${results.scale.nodes} × ${results.scale.extensions}`;
  const header = ['id', 'measure', 'goal', 'measured', 'pass', 'scale', 'load'];
  const body = results.rows.map((r) => [
    r.id,
    r.measure,
    r.goal,
    r.measured,
    r.pass === null ? '—' : r.pass ? 'pass' : 'FAIL',
    scale,
    r.load.toFixed(2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]?.length ?? 0)));
  const line = (cells: string[]): string =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [
    `nodecare benchmark, ${scale} (nodes × extensions), ${results.startedAt}`,
    `machine: ${results.machine}; Kubernetes ${String(results.settings.kubernetes ?? 'unknown')}; ${fmtCode(results.code)}`,
    '',
    line(header),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

export async function writeResults(dir: string, results: Results): Promise<string> {
  await mkdir(dir, { recursive: true });
  const stamp = results.startedAt.replace(/[:]/g, '').replace(/\..*$/, 'Z');
  const path = join(dir, `${stamp}-${results.scale.nodes}x${results.scale.extensions}.json`);
  await writeFile(path, `${JSON.stringify(results, null, 2)}\n`);
  return path;
}
