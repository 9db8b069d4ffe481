// `kubectl nodecare status`: every node (or those matching -l), worst first, with its state, taints, failing
// extensions and age, then the ClusterHealth conditions. Exit 0 when every shown node is healthy, 1 when
// some is not, 2 when the question could not be answered.

import { CLUSTER_HEALTH } from '../../api/index.ts';
import { ExtensionState } from '../../api/names.ts';
import { stateText } from '../../controller/decide/index.ts';
import { readPublishedEviction, type PublishedEviction } from '../../api/eviction.ts';
import type { OptionValues } from '../../lib/options.ts';
import type { CliIo, Verb } from '../verb.ts';
import { cut, humanDuration, structured, table } from '../format.ts';
import {
  failingCount,
  isHealthy,
  sortWorstFirst,
  type Analysis,
  type ClusterHealthObject,
  type NodeReport,
} from '../model.ts';
import { describeTaint } from '../taints.ts';
import {
  CONNECTION_OPTIONS,
  Exit,
  kubectlArgs,
  OUTPUT_OPTION,
  outputOf,
  POLICY_OPTIONS,
  readAnalysis,
  SELECTOR_OPTION,
  withClient,
} from './common.ts';

export const STATUS_OPTIONS = {
  ...CONNECTION_OPTIONS,
  ...SELECTOR_OPTION,
  ...OUTPUT_OPTION,
  ...POLICY_OPTIONS,
} as const;

/** A node in the JSON/YAML output (stable field names: scripts read them). */
export interface NodeStatusView {
  name: string;
  state: string;
  /** The state as every view shows it, with the condition's reason beside it: `Degraded (AgentNotReporting)`. */
  stateText: string;
  healthy: boolean;
  schedulable: boolean;
  condition: { status: string; reason: string; message: string };
  label: string;
  agent: string;
  taints: Array<{ key: string; value?: string; effect: string; owner: string }>;
  extensions: Array<{ name: string; state: string; reason: string; message: string; critical: boolean }>;
  failing: string[];
  createdAt: string;
  ageSeconds: number;
}

export interface StatusView {
  kind: 'NodecareStatus';
  observedAt: string;
  summary: { nodes: number; healthy: number; byState: Record<string, number> };
  nodes: NodeStatusView[];
  clusterHealth: { conditions: unknown[] } | null;
  breakerTripped: string[];
  /** The leading controller's eviction guards (ClusterHealth status.eviction); null: eviction off or unpublished. */
  eviction: PublishedEviction | null;
}

/** ClusterHealth status.eviction as the plugin can use it. */
export function evictionOf(ch: ClusterHealthObject | undefined): PublishedEviction | undefined {
  return readPublishedEviction((ch?.status as { eviction?: unknown } | undefined)?.eviction);
}

/** A timestamp and how far off it is: `2026-12-02T21:00:00.000Z (in 4m)`. */
function whenText(at: string, now: number): string {
  const ms = Date.parse(at) - now;
  if (!Number.isFinite(ms)) return at;
  return `${at} (${ms > 0 ? `in ${humanDuration(ms)}` : `${humanDuration(-ms)} ago`})`;
}

/** The eviction guards as `kubectl nodecare status` shows them (docs/controller.md, "Remediation"). */
export function renderEviction(ev: PublishedEviction | undefined, now: number): string[] {
  if (!ev) return ['Eviction: off (no guard state published in ClusterHealth).'];
  const cap = ev.parallel.allowed === undefined ? 'no parallel cap' : `parallel cap ${ev.parallel.allowed}`;
  const lines = [
    `Eviction: after ${ev.evictAfterSeconds}s Degraded${ev.dryRun ? ' (dry run)' : ''}; ${ev.parallel.evicting} node${ev.parallel.evicting === 1 ? '' : 's'} being evicted, ${cap}; group budget ${ev.groupBudgetPercent}% by ${ev.groupLabel || 'zone'}; storm cooldown ${ev.stormCooldownSeconds}s.`,
  ];
  if (ev.cooldownUntil)
    lines.push(
      `  Storm cooldown in every zone until ${whenText(ev.cooldownUntil, now)}: the breaker stopped tripping.`,
    );
  if (ev.groups.length > 0)
    lines.push(
      ...table(
        ['GROUP', 'NODES', 'ALLOWED', 'EVICTING'],
        ev.groups.map((g) => [g.group, String(g.nodes), String(g.allowed), String(g.evicting)]),
      ).map((l) => `  ${l}`),
    );
  for (const z of ev.stoppedZones)
    lines.push(
      `  Zone '${z.zone}' stopped: ${z.reason}${z.until ? ` until ${whenText(z.until, now)}` : ''}.`,
    );
  for (const w of ev.waiting) lines.push(`  Waiting: ${w.node} (${w.reason}, ${w.group}).`);
  for (const h of ev.held) lines.push(`  Held: ${h.node} (${h.reason}).`);
  if (ev.omitted) lines.push(`  ... and ${ev.omitted} more nodes waiting or held.`);
  if (ev.skipped.length > 0)
    lines.push(
      `  Skipped this term: ${ev.skipped.map((k) => `${k.count} ${k.subject} ${k.reason}`).join(', ')}.`,
    );
  return lines;
}

/** The agent's heartbeat as the decision judged it: reporting, awaiting its first report, or not reporting. */
export function agentSummary(report: NodeReport): string {
  const gone =
    report.decision.condition.reason === 'AgentNotReporting' ||
    report.decision.extensions.some((e) => e.reason === 'AgentNotReporting');
  if (gone) return 'not reporting';
  if (!report.agentLease || report.agentLease.bootId !== report.node.bootId) return 'awaiting first report';
  return 'reporting';
}

/** `Degraded (AgentNotReporting)`: the one text for a node's state (controller/decide/node-status.ts). */
export function shownState(report: NodeReport): string {
  return stateText(report.decision.state, report.decision.condition.reason);
}

function ownTaintShort(report: NodeReport, key: string): string {
  const { bootstrapTaintKey, runtimeTaintKey } = report.input.policy;
  if (key === bootstrapTaintKey) return 'bootstrap';
  if (key === runtimeTaintKey) return 'runtime';
  return key;
}

export function nodeView(report: NodeReport, now: number): NodeStatusView {
  const { decision, node } = report;
  const own = {
    bootstrap: report.input.policy.bootstrapTaintKey,
    runtime: report.input.policy.runtimeTaintKey,
  };
  return {
    name: report.name,
    state: decision.state,
    stateText: shownState(report),
    healthy: isHealthy(report),
    schedulable: !report.unschedulable,
    condition: { ...decision.condition },
    label: decision.label,
    agent: agentSummary(report),
    taints: (report.raw.spec?.taints ?? []).map((t) => ({
      key: t.key,
      ...(t.value ? { value: t.value } : {}),
      effect: t.effect,
      owner: describeTaint(t, own)?.owner ?? 'unknown',
    })),
    extensions: decision.extensions.map((e) => ({
      name: e.name,
      state: e.state,
      reason: e.reason,
      message: e.message,
      critical: e.critical,
    })),
    failing: decision.extensions.filter((e) => e.state !== ExtensionState.Healthy).map((e) => e.name),
    createdAt: new Date(node.creationTimestampMs).toISOString(),
    ageSeconds: Math.max(0, Math.floor((now - node.creationTimestampMs) / 1000)),
  };
}

export function statusView(
  analysis: Analysis,
  shown: readonly NodeReport[],
  ch: ClusterHealthObject | undefined,
): StatusView {
  const byState: Record<string, number> = {};
  for (const r of shown) byState[r.decision.state] = (byState[r.decision.state] ?? 0) + 1;
  return {
    kind: 'NodecareStatus',
    observedAt: new Date(analysis.now).toISOString(),
    summary: { nodes: shown.length, healthy: shown.filter(isHealthy).length, byState },
    nodes: shown.map((r) => nodeView(r, analysis.now)),
    clusterHealth: ch ? { conditions: ch.status?.conditions ?? [] } : null,
    breakerTripped: [...analysis.tripped].sort(),
    eviction: evictionOf(ch) ?? null,
  };
}

function failingCell(report: NodeReport, wide: boolean): string {
  const failing = report.decision.extensions.filter((e) => e.state !== ExtensionState.Healthy);
  if (failing.length === 0) return '<none>';
  const shown = failing.map((e) => `${e.name} ${e.state}${e.reason ? ` (${e.reason})` : ''}`);
  const max = wide ? failing.length : 2;
  return shown.slice(0, max).join(', ') + (failing.length > max ? `, +${failing.length - max} more` : '');
}

export function renderStatusText(
  analysis: Analysis,
  shown: readonly NodeReport[],
  ch: ClusterHealthObject | undefined,
  wide: boolean,
  notes: readonly string[],
): string[] {
  const lines: string[] = [];
  if (shown.length === 0) lines.push('No nodes found.');
  else {
    const header = wide
      ? ['NODE', 'STATE', 'CONDITION', 'LABEL', 'AGENT', 'EXTENSIONS', 'TAINTS', 'AGE', 'FAILING']
      : ['NODE', 'STATE', 'TAINTS', 'AGE', 'FAILING'];
    const rows = shown.map((r) => {
      // nodecare's own first (short names), then the others' keys.
      const all = (r.raw.spec?.taints ?? []).map((t) => ownTaintShort(r, t.key));
      const taints = [
        ...all.filter((t) => t === 'bootstrap' || t === 'runtime'),
        ...all.filter((t) => t !== 'bootstrap' && t !== 'runtime'),
      ];
      const taintCell = taints.length === 0 ? '<none>' : taints.join(',');
      const age = humanDuration(analysis.now - r.createdMs);
      const total = r.decision.extensions.length;
      const cells = wide
        ? [
            r.name,
            shownState(r),
            r.decision.condition.status,
            r.decision.label,
            agentSummary(r),
            `${total - failingCount(r)}/${total} healthy`,
            taintCell,
            age,
            failingCell(r, true),
          ]
        : [r.name, shownState(r), cut(taintCell, 60), age, failingCell(r, false)];
      return cells;
    });
    lines.push(...table(header, rows));
  }
  const counts = new Map<string, number>();
  for (const r of shown) counts.set(shownState(r), (counts.get(shownState(r)) ?? 0) + 1);
  const healthy = shown.filter(isHealthy).length;
  lines.push(
    '',
    `${shown.length} node${shown.length === 1 ? '' : 's'}: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}; ${healthy} healthy.`,
  );
  if (analysis.tripped.size > 0) {
    lines.push(
      `Correlated-failure breaker tripped for ${[...analysis.tripped].sort().join(', ')}: runtime taints held back (a faulty rollout, not faulty nodes).`,
    );
  }
  lines.push('');
  const conditions = ch?.status?.conditions ?? [];
  if (ch && conditions.length > 0) {
    lines.push(`ClusterHealth ${CLUSTER_HEALTH.name}:`);
    lines.push(
      ...table(
        ['TYPE', 'STATUS', 'REASON', 'SINCE', 'MESSAGE'],
        conditions.map((c) => [
          c.type,
          c.status,
          c.reason ?? '',
          c.lastTransitionTime ? humanDuration(analysis.now - Date.parse(c.lastTransitionTime)) : '',
          wide ? (c.message ?? '') : cut(c.message ?? '', 100),
        ]),
      ).map((l) => `  ${l}`),
    );
  } else if (ch) {
    lines.push(`ClusterHealth ${CLUSTER_HEALTH.name}: no conditions yet.`);
  }
  if (ch) lines.push(...renderEviction(evictionOf(ch), analysis.now));
  for (const note of notes) lines.push(`Note: ${note}.`);
  if (shown.some((r) => !isHealthy(r))) {
    const worst = shown.find((r) => !isHealthy(r));
    if (worst) lines.push(`Why is a node held? kubectl nodecare explain ${worst.name}`);
  }
  return lines;
}

export const statusVerb: Verb = {
  summary:
    'Every node worst first (state, taints, failing extensions, age) and the ClusterHealth conditions; exit 0 all healthy, 1 some not, 2 error.',
  options: STATUS_OPTIONS,
  normalizeArgs: (argv) => kubectlArgs(argv),
  run(values: OptionValues, io: CliIo): Promise<number> {
    return withClient('status', values, io, async (client) => {
      const { snapshot, notes, analysis } = await readAnalysis(client, values);
      let shown = analysis.nodes;
      const selector = values.selector as string | undefined;
      if (selector !== undefined) {
        // The API server parses the selector (and rejects a bad one); the breaker still saw every node.
        const page = await client.request<{ items?: Array<{ metadata?: { name?: string } }> }>(
          'GET',
          '/api/v1/nodes',
          { query: { labelSelector: selector } },
        );
        const names = new Set((page.items ?? []).map((n) => n.metadata?.name));
        shown = shown.filter((r) => names.has(r.name));
      }
      shown = sortWorstFirst(shown);
      const format = outputOf(values);
      if (format === 'json' || format === 'yaml') {
        io.out(structured(format, statusView(analysis, shown, snapshot.clusterHealth)));
      } else {
        for (const line of renderStatusText(
          analysis,
          shown,
          snapshot.clusterHealth,
          format === 'wide',
          notes.missing,
        ))
          io.out(line);
      }
      return shown.every(isHealthy) ? Exit.healthy : Exit.notHealthy;
    });
  },
};
