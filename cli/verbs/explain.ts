// `kubectl nodecare explain <node>`: why this node is or is not schedulable, across every taint on it (not only
// nodecare's), then each required extension (registration source, lease state, reason, message, since, probe
// target, critical, DryRun) and what the controller will do next and when, computed with the controller's
// decision core (cli/model.ts). Exit 0 when pods can land and nodecare finds it healthy, 1 when not, 2 error.

import { EXTENSION_ANNOTATION_PREFIX, describeProbe, type Registration } from '../../api/index.ts';
import { keptOffByTaints, type KeptOff } from '../../api/scheduling.ts';
import { isKubeError } from '../../lib/kube/errors.ts';
import type { ExtensionState } from '../../api/names.ts';
import { Enforcement } from '../../api/extension.ts';
import type { OptionValues } from '../../lib/options.ts';
import type { CliIo, Verb } from '../verb.ts';
import { cut, humanDuration, relative, structured, table } from '../format.ts';
import {
  describeMaintenance,
  describePlanned,
  stateText,
  type NodeDecision,
} from '../../controller/decide/index.ts';
import { NODE_STATUS_LABEL, NodeOverrideAnnotation } from '../../api/names.ts';
import { describeRelease, type NodeRelease } from '../../controller/decide/index.ts';
import {
  bootstrapBreakdown,
  eventTimeMs,
  isHealthy,
  nextAction,
  pendingWrites,
  type BootstrapStep,
  type EventObject,
  type NextAction,
  type NodeReport,
} from '../model.ts';
import { readNodeEvents, readNodeWorkloads, type NodeWorkloads } from '../snapshot.ts';
import { blocksScheduling, describeTaint } from '../taints.ts';
import { agentSummary } from './status.ts';
import {
  CliError,
  CONNECTION_OPTIONS,
  Exit,
  kubectlArgs,
  OUTPUT_OPTION,
  outputOf,
  POLICY_OPTIONS,
  readAnalysis,
  withClient,
} from './common.ts';

export const EXPLAIN_OPTIONS = {
  node: { type: 'string', description: 'The node to explain (also the first argument).' },
  ...CONNECTION_OPTIONS,
  output: { ...OUTPUT_OPTION.output, description: 'Output format (-o): text, json or yaml (wide is text).' },
  events: {
    type: 'integer',
    description: 'How many of the most recent events regarding the node to show.',
    default: 10,
    min: 0,
    max: 1000,
  },
  ...POLICY_OPTIONS,
} as const;

/** ✓ Healthy, ✗ Unhealthy, … Progressing, ? Unknown (the legend printed under the list). */
export const STATE_SYMBOL: Record<ExtensionState, string> = {
  Healthy: '✓',
  Unhealthy: '✗',
  Progressing: '…',
  Unknown: '?',
};

export function describeSource(name: string, registration: Registration | undefined): string {
  switch (registration?.source) {
    case 'systemExtension':
      return `SystemExtension ${name} (kubectl get sx ${name} -o yaml)`;
    case 'annotation':
      return `node annotation ${EXTENSION_ANNOTATION_PREFIX}${name}`;
    case 'config':
      return "the agent's config file";
    default:
      return 'unknown';
  }
}

export interface ExplainView {
  kind: 'NodecareExplain';
  observedAt: string;
  node: string;
  schedulable: boolean;
  healthy: boolean;
  cordoned: boolean;
  state: string;
  /** The state as every view shows it, with the condition's reason beside it: `Degraded (AgentNotReporting)`. */
  stateText: string;
  condition: { status: string; reason: string; message: string; lastTransitionTime?: string };
  label: string;
  /** `in maintenance since … (DrainInProgress: …)` while the node is maintained (what nodecare then does: docs/design.md). */
  maintenance?: string;
  /** `maintenance planned since … (…)` while MaintenancePlanned is True (it changes nothing). */
  maintenancePlanned?: string;
  /** Extensions their SystemExtension's rollout holds back on this node, one line each. */
  rollouts?: string[];
  /** SystemExtensions whose spec.labelWait holds this new node for labels it lacks, one line each. */
  labelWaits?: string[];
  /** While a suspension holds the node's taint changes: by whom and what would change. */
  suspended?: { by: string[]; wouldChange: string[] };
  /** The node's release override (nodecare.io/release-until), judged as the controller does. */
  release?: NodeRelease;
  agent: { status: string; lease?: { name: string; renewTime: string; leaseDurationSeconds: number } };
  taints: Array<{
    key: string;
    value?: string;
    effect: string;
    blocksScheduling: boolean;
    owner: string;
    meaning: string;
    timeAdded?: string;
  }>;
  /**
   * Extension workloads nodecare's taints keep off the node: DaemonSets that select it but do not tolerate
   * the taint (so they have no pod for it) and Pending pods bound for it (api/scheduling.ts).
   */
  keptOff: KeptOff[];
  /** Why keptOff could not be checked (the credentials may not list DaemonSets or pods), if it could not. */
  keptOffProblem?: string;
  extensions: Array<{
    name: string;
    state: string;
    reason: string;
    message: string;
    since?: string;
    registeredBy: string;
    source?: string;
    probe?: string;
    problems?: string[];
    critical: boolean;
    enforcement: string;
    conditionType: string;
    blocking: boolean;
    breakerTripped: boolean;
    lease?: { name: string; renewTime: string; leaseDurationSeconds: number; expiresAt: string };
  }>;
  conflicts: string[];
  ignoredLeases: Array<{ name: string; problem: string }>;
  unregisteredLeases: string[];
  next: (Omit<NextAction, 'atMs'> & { at: string }) | null;
  /** What happens if the agent stops renewing now (its Leases expire). */
  ifAgentStops: (Omit<NextAction, 'atMs'> & { at: string }) | null;
  pendingWrites: string[];
  bootstrap: {
    startedAt: string;
    completedAt: string | null;
    heldSeconds: number | null;
    /** What the node waited for, in order; each wait after the step before (they add up to heldSeconds). */
    steps: Array<Omit<BootstrapStep, 'atMs' | 'waitedMs'> & { at: string; waitedSeconds: number }>;
    /** Critical extensions whose time to Healthy is not known (they changed state since). */
    notCounted: string[];
    source: 'record' | 'leases';
    /** What the bootstrap started with: the node's creation or a reboot. */
    after: 'creation' | 'reboot';
  } | null;
  events: Array<{ type: string; reason: string; message: string; time: string | null; count: number }>;
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
/** Seconds with a tenth (a controller's latency is well under a second). */
const tenths = (ms: number): number => Math.round(ms / 100) / 10;

function eventTime(e: EventObject): string | null {
  const ms = eventTimeMs(e);
  return Number.isFinite(ms) ? iso(ms) : null;
}

function actionView({ atMs, ...rest }: NextAction): Omit<NextAction, 'atMs'> & { at: string } {
  return { at: iso(atMs), ...rest };
}

export function explainView(
  report: NodeReport,
  tripped: ReadonlySet<string>,
  events: readonly EventObject[],
  maxEvents: number,
  now: number,
  workloads: NodeWorkloads | { problem: string } = { daemonSets: [], pods: [] },
): ExplainView {
  const { decision, raw } = report;
  const own = {
    bootstrap: report.input.policy.bootstrapTaintKey,
    runtime: report.input.policy.runtimeTaintKey,
  };
  const keptOff =
    'problem' in workloads
      ? []
      : keptOffByTaints(
          { name: report.name, labels: raw.metadata?.labels ?? {}, taints: raw.spec?.taints ?? [] },
          [own.bootstrap, own.runtime],
          workloads.daemonSets,
          workloads.pods,
        );
  const taints = (raw.spec?.taints ?? []).map((t) => {
    const info = describeTaint(t, own);
    return {
      key: t.key,
      ...(t.value ? { value: t.value } : {}),
      effect: t.effect,
      blocksScheduling: blocksScheduling(t),
      owner: info?.owner ?? 'unknown (not a well-known taint key)',
      meaning: info?.meaning ?? 'not known to nodecare; ask whoever added it',
      ...((t as { timeAdded?: string }).timeAdded
        ? { timeAdded: (t as { timeAdded?: string }).timeAdded }
        : {}),
    };
  });
  const extensions = decision.extensions.map((v) => {
    const registration = report.registrations.get(v.name);
    const lease = report.leases.get(v.name);
    const fromLease = lease && lease.state === v.state && lease.reason === v.reason;
    return {
      name: v.name,
      state: v.state,
      reason: v.reason,
      message: v.message,
      ...(fromLease && lease.since ? { since: lease.since } : {}),
      registeredBy: describeSource(v.name, registration),
      ...(v.source ? { source: v.source } : {}),
      ...(registration?.valid ? { probe: describeProbe(registration.spec.probe) } : {}),
      ...(registration && !registration.valid ? { problems: registration.problems } : {}),
      critical: v.critical,
      enforcement: registration?.policy.enforcement ?? Enforcement.Enforce,
      conditionType: v.conditionType,
      blocking: v.blocking,
      breakerTripped: tripped.has(v.name),
      ...(lease
        ? {
            lease: {
              name: lease.name,
              renewTime: lease.renewTime,
              leaseDurationSeconds: lease.leaseDurationSeconds,
              expiresAt: iso(Date.parse(lease.renewTime) + lease.leaseDurationSeconds * 1000),
            },
          }
        : {}),
    };
  });
  const next = nextAction(report, 'renewed');
  const stops = nextAction(report, 'stopped');
  const breakdown = bootstrapBreakdown(report, events);
  const condition = raw.status?.conditions?.find((c) => c.type === 'ExtensionsReady');
  // Oldest first, by time (not by the text of differently formatted timestamps); undated ones first.
  const sortedEvents = [...events].sort(
    (a, b) => (eventTimeMs(a) || -Infinity) - (eventTimeMs(b) || -Infinity) || 0,
  );
  return {
    kind: 'NodecareExplain',
    observedAt: iso(now),
    node: report.name,
    schedulable: !report.unschedulable,
    healthy: isHealthy(report),
    cordoned: raw.spec?.unschedulable === true,
    state: decision.state,
    stateText: stateText(decision.state, decision.condition.reason),
    condition: {
      ...decision.condition,
      ...(condition?.lastTransitionTime && condition.reason === decision.condition.reason
        ? { lastTransitionTime: condition.lastTransitionTime }
        : {}),
    },
    label: decision.label,
    ...(decision.maintenance ? { maintenance: describeMaintenance(decision.maintenance) } : {}),
    ...(decision.maintenancePlanned
      ? { maintenancePlanned: describePlanned(decision.maintenancePlanned) }
      : {}),
    ...(decision.suspended ? { suspended: decision.suspended } : {}),
    ...(decision.release ? { release: decision.release } : {}),
    ...rolloutLines(decision),
    ...labelWaitLines(decision),
    agent: {
      status: agentSummary(report),
      ...(report.agentLease
        ? {
            lease: {
              name: report.agentLease.name,
              renewTime: report.agentLease.renewTime,
              leaseDurationSeconds: report.agentLease.leaseDurationSeconds,
            },
          }
        : {}),
    },
    taints,
    keptOff,
    ...('problem' in workloads ? { keptOffProblem: workloads.problem } : {}),
    extensions,
    conflicts: report.conflicts.map((c) => c.message),
    ignoredLeases: report.ignoredLeases.map((l) => ({ name: l.name, problem: l.problem ?? 'OwnerMismatch' })),
    unregisteredLeases: [...report.leases.keys()].filter((name) => !report.registrations.has(name)).sort(),
    next: next ? actionView(next) : null,
    ifAgentStops: stops && (!next || stops.atMs < next.atMs) ? actionView(stops) : null,
    pendingWrites: pendingWrites(report),
    bootstrap: breakdown
      ? {
          startedAt: new Date(breakdown.startedMs).toISOString(),
          completedAt:
            breakdown.completedMs === undefined ? null : new Date(breakdown.completedMs).toISOString(),
          heldSeconds:
            breakdown.completedMs === undefined ? null : tenths(breakdown.completedMs - breakdown.startedMs),
          steps: breakdown.steps.map(({ atMs, waitedMs, ...step }) => ({
            ...step,
            at: new Date(atMs).toISOString(),
            waitedSeconds: tenths(waitedMs),
          })),
          notCounted: breakdown.unknown,
          source: breakdown.source,
          after: breakdown.startedMs > report.createdMs ? 'reboot' : 'creation',
        }
      : null,
    events: sortedEvents.slice(Math.max(0, sortedEvents.length - maxEvents)).map((e) => ({
      type: e.type ?? '',
      reason: e.reason ?? '',
      message: e.message ?? e.note ?? '',
      time: eventTime(e),
      count: e.series?.count ?? e.count ?? 1,
    })),
  };
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/** What a predicted decision changes, one statement a line. */
function actionLines(a: NonNullable<ExplainView['next']>): string[] {
  return [
    ...(a.from !== a.to ? [`  the node goes from ${a.from} to ${a.to}`] : []),
    ...(a.changes.length > 0 ? [`  the controller will ${listed(a.changes)}`] : []),
    ...a.because.map((b) => `  because ${b}`),
  ];
}

/** `22.0s` under two minutes (a controller's latency is a fraction of a second), else kubectl's `3m12s`. */
function waited(seconds: number): string {
  return seconds < 120 ? `${seconds.toFixed(1)}s` : humanDuration(seconds * 1000);
}

const STEP_TEXT: Record<BootstrapStep['kind'], (name: string) => string> = {
  agent: () => "the agent's first report",
  extension: (name) => `${name} Healthy`,
  controller: () => 'the controller removed the bootstrap taint',
};

/** The time to schedulable, split by what the node waited for; then what else still keeps pods off. */
function bootstrapLines(view: ExplainView): string[] {
  const b = view.bootstrap;
  if (!b) return [];
  if (b.heldSeconds === null) {
    return [
      '',
      'Bootstrap: completed; when is not known (no BootstrapTaintRemoved event regarding the node: events expire, after 1 h by default).',
    ];
  }
  const lines = [
    '',
    `Bootstrap: nodecare released the node ${waited(b.heldSeconds)} after its ${b.after} (${b.startedAt}); what it waited for, in order:`,
  ];
  const start = Date.parse(b.startedAt);
  const longest = Math.max(...b.steps.map((s) => s.waitedSeconds));
  lines.push(
    ...table(
      ['AFTER', 'WAITED', 'FOR'],
      b.steps.map((s) => [
        `+${waited(tenthsSince(start, s.at))}`,
        waited(s.waitedSeconds),
        `${STEP_TEXT[s.kind](s.name)}${s.waitedSeconds === longest && b.steps.length > 1 ? '  (the longest wait)' : ''}`,
      ]),
    ).map((l) => `  ${l}`),
  );
  if (b.notCounted.length > 0) {
    lines.push(`  Not counted (changed state since, and no controller record): ${b.notCounted.join(', ')}.`);
  }
  if (b.source === 'leases') {
    lines.push(
      "  (Reconstructed from the Leases as they are now: the controller's record on the BootstrapTaintRemoved event was not found.)",
    );
  }
  const others = view.taints.filter((t) => t.blocksScheduling && !t.owner.startsWith('nodecare'));
  if (others.length > 0) {
    lines.push(
      `  Other taints still keep pods off: ${others.map((t) => `${t.key}, owned by ${t.owner}`).join('; ')}.`,
    );
  }
  return lines;
}

function tenthsSince(startMs: number, at: string): number {
  return Math.round((Date.parse(at) - startMs) / 100) / 10;
}

/** `gpu-plugin is in its rollout grace until …: …`, for each extension a rollout holds back on the node. */
function rolloutLines(decision: NodeDecision): { rollouts?: string[] } {
  const lines = decision.extensions.flatMap((e) => {
    if (!e.rollout) return [];
    return e.rollout.mode === 'Grace'
      ? [
          `${e.name} is in its rollout grace until ${new Date(e.rollout.endsMs).toISOString()} (SystemExtension spec.rollout): its failures do not taint this node or count for the breaker until then.`,
        ]
      : [
          `${e.name} is observed, not enforced, on this node (SystemExtension spec.rollout.existingNodes Observe) until the SystemExtension says Enforce.`,
        ];
  });
  return lines.length > 0 ? { rollouts: lines } : {};
}

/** `gpu-plugin does not select this node yet: …`, for each label wait in force on the node. */
function labelWaitLines(decision: NodeDecision): { labelWaits?: string[] } {
  const lines = (decision.labelWaits ?? []).map(
    (w) =>
      `${w.name} does not select this node yet: it waits until ${new Date(w.endsMs).toISOString()} for node label${w.missingKeys.length === 1 ? '' : 's'} ${w.missingKeys.join(', ')} (SystemExtension spec.labelWait). ${
        w.holds
          ? `The node stays held until ${w.missingKeys.length === 1 ? 'it arrives' : 'they arrive'} and ${w.name} is Healthy, or until then.`
          : 'Enforcement DryRun: the wait does not hold the node.'
      }`,
  );
  return lines.length > 0 ? { labelWaits: lines } : {};
}

/** The extension workloads nodecare's taint keeps off the node, and what to do about it. */
function keptOffLines(view: ExplainView): string[] {
  if (view.keptOffProblem) {
    return ['', `Extension workloads kept off by nodecare's taints: not checked (${view.keptOffProblem}).`];
  }
  if (view.keptOff.length === 0) return [];
  const lines = ['', `Extension workloads kept off by nodecare's taints (${view.keptOff.length}):`];
  for (const k of view.keptOff) {
    const taints = listed(k.untolerated);
    lines.push(
      k.kind === 'DaemonSet'
        ? `  DaemonSet ${k.namespace}/${k.name} selects this node but does not tolerate ${taints}: the DaemonSet controller creates no pod for it here.`
        : `  Pod ${k.namespace}/${k.name}${k.owner ? ` (of ${k.owner})` : ''} is Pending for this node and does not tolerate ${taints}.`,
    );
    if (k.scheduler) lines.push(`      scheduler: ${cut(k.scheduler, 160)}`);
    if (k.alsoUntolerated.length > 0) {
      lines.push(`      it does not tolerate ${listed(k.alsoUntolerated)} either`);
    }
  }
  lines.push(
    "  If it is an extension this node needs, it can never start here while nodecare holds the node: give it nodecare's two tolerations (operator Exists, effect NoSchedule); on Kubernetes 1.36+ nodecare's admission policy adds them to every DaemonSet (docs/install.md, \"Extension DaemonSets and nodecare's taints\").",
  );
  return lines;
}

export function renderExplainText(view: ExplainView, now: number): string[] {
  const lines: string[] = [];
  const blocking = view.taints.filter((t) => t.blocksScheduling);
  if (view.schedulable) {
    lines.push(`Node ${view.node} is schedulable: no taint keeps pods off it.`);
  } else {
    const why = [
      ...(view.cordoned ? ['it is cordoned (spec.unschedulable)'] : []),
      ...(blocking.length > 0
        ? [
            `${blocking.length} taint${blocking.length === 1 ? '' : 's'} keep${blocking.length === 1 ? 's' : ''} pods that do not tolerate ${blocking.length === 1 ? 'it' : 'them'} off`,
          ]
        : []),
    ];
    lines.push(`Node ${view.node} is NOT schedulable: ${why.join('; ')}.`);
  }
  const since = view.condition.lastTransitionTime
    ? `, since ${relative(Date.parse(view.condition.lastTransitionTime), now)}`
    : '';
  lines.push(
    `nodecare state: ${view.stateText}; ExtensionsReady=${view.condition.status} (${view.condition.reason}), ${NODE_STATUS_LABEL}=${view.label}${since}`,
  );
  if (view.maintenance) {
    lines.push(
      `Node ${view.node} is ${view.maintenance}: nodecare removes no taint, evicts nothing, and leaves the node out of the breaker and the alerts.`,
    );
  }
  for (const line of view.rollouts ?? []) lines.push(line);
  for (const line of view.labelWaits ?? []) lines.push(line);
  if (view.suspended) {
    const { by, wouldChange } = view.suspended;
    lines.push(
      `Suspended by ${by.join(', ')}: ${wouldChange.length > 0 ? `would ${wouldChange.join('; ')}` : 'no taint change held'} (nodecare writes no taint change here until the suspension is lifted).`,
    );
  }
  if (view.release) lines.push(releaseLine(view.node, view.release));
  if (view.maintenancePlanned) {
    lines.push(`Node ${view.node} has ${view.maintenancePlanned}: nothing changes until it starts.`);
  }
  if (view.condition.message) lines.push(`  ${view.condition.message}`);
  const agentLease = view.agent.lease;
  lines.push(
    `Agent: ${view.agent.status}${
      agentLease
        ? ` (heartbeat ${agentLease.name} renewed ${relative(Date.parse(agentLease.renewTime), now)}, duration ${agentLease.leaseDurationSeconds}s)`
        : ''
    }`,
  );

  lines.push('', view.taints.length === 0 ? 'Taints: none.' : `Taints (${view.taints.length}):`);
  for (const t of view.taints) {
    const effect = t.blocksScheduling ? t.effect : `${t.effect}, does not block`;
    const added = t.timeAdded ? `, added ${relative(Date.parse(t.timeAdded), now)}` : '';
    lines.push(`  ${t.key}${t.value ? `=${t.value}` : ''}:${effect}`);
    lines.push(`      owner: ${t.owner}${added}`);
    lines.push(`      meaning: ${t.meaning}`);
  }

  lines.push(...keptOffLines(view));

  lines.push(
    '',
    view.extensions.length === 0
      ? 'Extensions: none required on this node.'
      : `Extensions (${view.extensions.length} required):`,
  );
  for (const e of view.extensions) {
    const symbol = STATE_SYMBOL[e.state as ExtensionState] ?? '?';
    const sinceText = e.since ? ` since ${relative(Date.parse(e.since), now)}` : '';
    lines.push(`  ${symbol} ${e.name}: ${e.state}${e.reason ? ` (${e.reason})` : ''}${sinceText}`);
    if (e.message) lines.push(`      message:      ${e.message}`);
    lines.push(`      registered:   ${e.registeredBy}`);
    if (e.probe) lines.push(`      probe:        ${e.probe}`);
    for (const p of e.problems ?? []) lines.push(`      problem:      ${p}`);
    lines.push(
      `      critical:     ${e.critical ? 'yes' : 'no'}; enforcement ${e.enforcement}${
        e.enforcement === Enforcement.DryRun ? ' (DryRun: reported, never tainted)' : ''
      }; condition type ${e.conditionType}; taints the node when failing: ${e.blocking ? 'yes' : 'no'}${
        e.breakerTripped ? ' (breaker tripped)' : ''
      }`,
    );
    if (e.lease) {
      lines.push(
        `      lease:        ${e.lease.name}, renewed ${relative(Date.parse(e.lease.renewTime), now)}, ${
          Date.parse(e.lease.expiresAt) > now ? 'expires' : 'expired'
        } ${relative(Date.parse(e.lease.expiresAt), now)}`,
      );
    } else {
      lines.push('      lease:        none written yet');
    }
  }
  if (view.extensions.length > 0) {
    lines.push('  (✓ Healthy  ✗ Unhealthy  … Progressing  ? Unknown)');
  }
  for (const c of view.conflicts) lines.push(`  Conflict: ${c}`);
  for (const l of view.ignoredLeases) lines.push(`  Ignored lease ${l.name}: ${l.problem}`);
  if (view.unregisteredLeases.length > 0) {
    lines.push(
      `  Reported but not required by the controller (the agent's config file, or no longer registered): ${view.unregisteredLeases.join(', ')}`,
    );
  }

  lines.push('');
  if (view.pendingWrites.length > 0) {
    lines.push(
      `Now: the controller should ${view.pendingWrites.join(', ')} — it does on its next reconcile (if this persists, is the nodecare controller running and leading?).`,
    );
  }
  if (view.next) {
    lines.push(`Next: ${relative(Date.parse(view.next.at), now)}, ${view.next.unless}:`);
    lines.push(...actionLines(view.next));
  } else {
    lines.push('Next: nothing scheduled; the controller acts when a Lease or the node changes.');
  }
  if (view.ifAgentStops) {
    lines.push(
      `If the agent stops renewing its Leases now: ${relative(Date.parse(view.ifAgentStops.at), now)}:`,
    );
    lines.push(...actionLines(view.ifAgentStops));
  }
  lines.push(...bootstrapLines(view));

  if (view.events.length > 0) {
    lines.push('', `Recent events (${view.events.length}, oldest first):`);
    for (const e of view.events) {
      const when = e.time ? `${humanDuration(now - Date.parse(e.time))} ago` : '?';
      lines.push(
        `  ${when.padStart(10)}  ${e.type.padEnd(7)}  ${e.reason}${e.count > 1 ? ` (x${e.count})` : ''}: ${cut(e.message, 160)}`,
      );
    }
  }
  return lines;
}

/**
 * What keptOffByTaints needs, read only for a node that carries one of nodecare's taints. An answer the
 * credentials are refused (or any other API error) is reported on the page, never fails explain.
 */
async function readKeptOffInputs(
  client: Parameters<typeof readNodeWorkloads>[0],
  report: NodeReport,
): Promise<NodeWorkloads | { problem: string }> {
  const keys = [report.input.policy.bootstrapTaintKey, report.input.policy.runtimeTaintKey];
  const held = (report.raw.spec?.taints ?? []).some((t) => keys.includes(t.key) && t.effect === 'NoSchedule');
  if (!held) return { daemonSets: [], pods: [] };
  try {
    return await readNodeWorkloads(client, report.name);
  } catch (err) {
    if (!isKubeError(err)) throw err;
    return {
      problem: `listing DaemonSets and pods in all namespaces failed: ${err.message}; it needs list on daemonsets and pods`,
    };
  }
}

export const explainVerb: Verb = {
  summary:
    'Why the node is or is not schedulable (every taint, each required extension, what the controller does next); exit 0 schedulable and healthy, 1 not, 2 error.',
  usage: '<node> [options]',
  options: EXPLAIN_OPTIONS,
  normalizeArgs: (argv) => kubectlArgs(argv, 'node', undefined, EXPLAIN_OPTIONS),
  async run(values: OptionValues, io: CliIo): Promise<number> {
    const name = values.node as string | undefined;
    if (!name) {
      io.err('kubectl nodecare explain: name a node: kubectl nodecare explain <node>');
      return Exit.error;
    }
    return withClient('explain', values, io, async (client) => {
      const now = Date.now();
      const { analysis } = await readAnalysis(client, values, now);
      const report = analysis.nodes.find((r) => r.name === name);
      if (!report) {
        throw new CliError(
          `node "${name}" not found (kubectl nodecare status lists the nodes${
            analysis.nodes.length > 0
              ? `; e.g. ${analysis.nodes
                  .slice(0, 3)
                  .map((r) => r.name)
                  .join(', ')}`
              : ''
          })`,
        );
      }
      const [events, workloads] = await Promise.all([
        readNodeEvents(client, name),
        readKeptOffInputs(client, report),
      ]);
      const view = explainView(report, analysis.tripped, events, values.events as number, now, workloads);
      const format = outputOf(values);
      if (format === 'json' || format === 'yaml') io.out(structured(format, view));
      else for (const line of renderExplainText(view, now)) io.out(line);
      return view.schedulable && view.healthy ? Exit.healthy : Exit.notHealthy;
    });
  },
};

/** The explain line of a release override: in force (and what it lifts), run out, or ignored and why. */
export function releaseLine(node: string, r: NodeRelease): string {
  const what = describeRelease(r);
  if (r.verdict === 'active') {
    return `Node ${node} has a ${what}: the controller lifts its taints until then${r.lifted.length > 0 ? ` (${r.lifted.join('; ')})` : ''}, then decides them again.`;
  }
  if (r.verdict === 'expired')
    return `Node ${node} had a ${what}: run out, nodecare decides its taints again.`;
  return `Node ${node} has ${NodeOverrideAnnotation.releaseUntil}=${JSON.stringify(r.until)}, ignored: ${r.problem ?? 'invalid'}.`;
}
