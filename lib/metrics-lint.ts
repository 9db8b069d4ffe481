// Lints Prometheus exposition text against our conventions (docs/conventions.md 12) and Prometheus naming practice:
// prefix, snake_case, base units, _total only (and always) on counters, bounded labels, no node-name label.

const FORBIDDEN_UNITS =
  /_(ms|millis|milliseconds|microseconds|us|ns|minutes|hours|days|kb|mb|gb|kib|mib|percent)(_|$)/;
const STANDARD_RUNTIME = /^(process|nodejs)_/;
const FORBIDDEN_LABELS = new Set(['node', 'node_name', 'nodename', 'hostname', 'pod']);

export function lintMetrics(exposition: string, prefix: string): string[] {
  const problems: string[] = [];
  const types = new Map<string, string>();
  for (const line of exposition.split('\n')) {
    const typeLine = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (typeLine) types.set(typeLine[1] as string, typeLine[2] as string);
  }
  for (const [name, type] of types) {
    if (STANDARD_RUNTIME.test(name)) continue; // prom-client's default collectors, named by Prometheus convention
    if (!name.startsWith(prefix)) problems.push(`${name}: does not start with ${prefix}`);
    if (!/^[a-z][a-z0-9_]*$/.test(name)) problems.push(`${name}: not snake_case`);
    if (FORBIDDEN_UNITS.test(name)) problems.push(`${name}: use base units (seconds, bytes, ratio)`);
    if (type === 'counter' && !name.endsWith('_total'))
      problems.push(`${name}: counter without _total suffix`);
    if (type !== 'counter' && name.endsWith('_total')) problems.push(`${name}: _total on a ${type}`);
  }
  for (const line of exposition.split('\n')) {
    if (line.startsWith('#') || !line.includes('{') || STANDARD_RUNTIME.test(line)) continue;
    const labels = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}'));
    for (const match of labels.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) {
      if (FORBIDDEN_LABELS.has(match[1] as string))
        problems.push(`${line.split('{')[0]}: label "${match[1]}" is unbounded or added by the scraper`);
    }
  }
  return [...new Set(problems)];
}
