// Text formatting shared by the plugin's verbs: kubectl-style ages, aligned tables, and -o json|yaml.

import { dump } from 'js-yaml';

/** kubectl's short human durations: 45s, 3m12s, 14m, 2h5m, 9h, 3d4h, 12d. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  return `${d}d`;
}

/** "12s ago" / "in 12s" relative to now, plus the absolute time for the record. */
export function relative(atMs: number, now: number): string {
  if (!Number.isFinite(atMs)) return 'unknown';
  const when = new Date(atMs).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return atMs >= now
    ? `in ${humanDuration(atMs - now)} (${when})`
    : `${humanDuration(now - atMs)} ago (${when})`;
}

/** Aligns rows under a header (kubectl's table printer: two spaces between columns, no trailing space). */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

export const OUTPUT_FORMATS = ['text', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export function structured(format: 'json' | 'yaml', value: unknown): string {
  return format === 'json'
    ? JSON.stringify(value, null, 2)
    : dump(value, { noRefs: true, lineWidth: -1 }).trimEnd();
}

/** Cuts one-line text to `max` characters (messages in a table cell). */
export function cut(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length <= max ? oneLine : `${oneLine.slice(0, max - 1)}…`;
}
