// ClusterHealth status.eviction (issue 54): what the leading controller's evictor publishes of its guards
// (controller/eviction/published.ts writes it), so that `kubectl nodecare status` shows them: the settings, the
// budgets in use, the parallel cap, the zones stopped (a storm cooldown with its end), the nodes waiting on a
// budget or held by another owner, and the skips of this leadership term. Absent while eviction is off.
// readPublishedEviction is the reader's side: it keeps what it can use of a status another version wrote.

/** Lists are capped (a status is not a log): the first of each, by name, and how many there were. */
export const PUBLISHED_LIST_MAX = 50;

export interface PublishedEviction {
  evictAfterSeconds: number;
  dryRun: boolean;
  groupLabel: string;
  groupBudgetPercent: number;
  maxParallelNodes: number;
  maxParallelPercent: number;
  stormCooldownSeconds: number;
  /** Nodes being evicted in the cluster, and how many may be (absent: no cap). */
  parallel: { evicting: number; allowed?: number };
  /** Groups with a node being evicted or waiting on their budget. */
  groups: Array<{ group: string; nodes: number; allowed: number; evicting: number }>;
  /** Zones that evict nothing now and hold a Degraded node; a StormCooldown's end as RFC 3339. */
  stoppedZones: Array<{ zone: string; reason: string; until?: string }>;
  /** Every zone cools down until then (the breaker stopped tripping), RFC 3339. */
  cooldownUntil?: string;
  waiting: Array<{ node: string; group: string; reason: string }>;
  held: Array<{ node: string; reason: string }>;
  /** Nodes (or pods) left alone this term, per reason (nodecare_controller_eviction_skipped_total's view). */
  skipped: Array<{ subject: 'node' | 'pod'; reason: string; count: number }>;
  /** How many waiting or held nodes the capped lists leave out. */
  omitted?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
function list<T>(v: unknown, item: (o: Record<string, unknown>) => T | undefined): T[] {
  return Array.isArray(v)
    ? v.flatMap((o) => {
        const got = isObject(o) ? item(o) : undefined;
        return got === undefined ? [] : [got];
      })
    : [];
}

/** ClusterHealth status.eviction as a reader can use it, or undefined when absent or not an object. */
export function readPublishedEviction(value: unknown): PublishedEviction | undefined {
  if (!isObject(value)) return undefined;
  const parallel = isObject(value.parallel) ? value.parallel : {};
  const allowed = num(parallel.allowed);
  const until = str(value.cooldownUntil);
  return {
    evictAfterSeconds: num(value.evictAfterSeconds) ?? 0,
    dryRun: value.dryRun === true,
    groupLabel: str(value.groupLabel) ?? '',
    groupBudgetPercent: num(value.groupBudgetPercent) ?? 0,
    maxParallelNodes: num(value.maxParallelNodes) ?? 0,
    maxParallelPercent: num(value.maxParallelPercent) ?? 100,
    stormCooldownSeconds: num(value.stormCooldownSeconds) ?? 0,
    parallel: { evicting: num(parallel.evicting) ?? 0, ...(allowed !== undefined ? { allowed } : {}) },
    groups: list(value.groups, (o) => {
      const group = str(o.group);
      return group === undefined
        ? undefined
        : { group, nodes: num(o.nodes) ?? 0, allowed: num(o.allowed) ?? 0, evicting: num(o.evicting) ?? 0 };
    }),
    stoppedZones: list(value.stoppedZones, (o) => {
      const zone = str(o.zone);
      const u = str(o.until);
      return zone === undefined
        ? undefined
        : { zone, reason: str(o.reason) ?? '', ...(u ? { until: u } : {}) };
    }),
    ...(until ? { cooldownUntil: until } : {}),
    waiting: list(value.waiting, (o) => {
      const node = str(o.node);
      return node === undefined
        ? undefined
        : { node, group: str(o.group) ?? '', reason: str(o.reason) ?? '' };
    }),
    held: list(value.held, (o) => {
      const node = str(o.node);
      return node === undefined ? undefined : { node, reason: str(o.reason) ?? '' };
    }),
    skipped: list(value.skipped, (o) => {
      const reason = str(o.reason);
      const subject = o.subject === 'pod' ? 'pod' : 'node';
      return reason === undefined ? undefined : { subject, reason, count: num(o.count) ?? 0 };
    }),
    ...(num(value.omitted) ? { omitted: num(value.omitted) } : {}),
  };
}
