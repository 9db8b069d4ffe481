// The text of `kubectl nodecare explain <node>`: an ExplainView (explain-view.ts) drawn as lines, section by
// section (the verdict and state, taints, kept-off workloads, extensions, next, bootstrap, events).

import type { ExtensionState } from '../../api/names.ts';
import { Enforcement } from '../../api/extension.ts';
import { NODE_STATUS_LABEL, NodeOverrideAnnotation } from '../../api/names.ts';
import { describeRelease, type NodeRelease } from '../../controller/decide/index.ts';
import type { BootstrapStep } from '../bootstrap.ts';
import { cut, humanDuration, relative, table } from '../format.ts';
import type { ExplainView } from './explain-view.ts';

/** ✓ Healthy, ✗ Unhealthy, … Progressing, ? Unknown (the legend printed under the list). */
export const STATE_SYMBOL: Record<ExtensionState, string> = {
  Healthy: '✓',
  Unhealthy: '✗',
  Progressing: '…',
  Unknown: '?',
};

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

/** Schedulable or not, and why; the nodecare state; what holds, overrides or plans for the node; the agent. */
function headLines(view: ExplainView, now: number): string[] {
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
  lines.push(...holdLines(view));
  if (view.condition.message) lines.push(`  ${view.condition.message}`);
  const agentLease = view.agent.lease;
  lines.push(
    `Agent: ${view.agent.status}${
      agentLease
        ? ` (heartbeat ${agentLease.name} renewed ${relative(Date.parse(agentLease.renewTime), now)}, duration ${agentLease.leaseDurationSeconds}s)`
        : ''
    }`,
  );
  return lines;
}

/** Maintenance, rollouts, label waits, a suspension, a release override, planned maintenance. */
function holdLines(view: ExplainView): string[] {
  const lines: string[] = [];
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
  return lines;
}

/** Every taint, with its owner and meaning. */
function taintLines(view: ExplainView, now: number): string[] {
  const lines = ['', view.taints.length === 0 ? 'Taints: none.' : `Taints (${view.taints.length}):`];
  for (const t of view.taints) {
    const effect = t.blocksScheduling ? t.effect : `${t.effect}, does not block`;
    const added = t.timeAdded ? `, added ${relative(Date.parse(t.timeAdded), now)}` : '';
    lines.push(`  ${t.key}${t.value ? `=${t.value}` : ''}:${effect}`);
    lines.push(`      owner: ${t.owner}${added}`);
    lines.push(`      meaning: ${t.meaning}`);
  }
  return lines;
}

/** One required extension: its verdict, message, registration, probe, policy and Lease. */
function extensionLines(e: ExplainView['extensions'][number], now: number): string[] {
  const lines: string[] = [];
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
  return lines;
}

/** The required extensions, then conflicts, ignored Leases and Leases nothing requires. */
function extensionsLines(view: ExplainView, now: number): string[] {
  const lines = [
    '',
    view.extensions.length === 0
      ? 'Extensions: none required on this node.'
      : `Extensions (${view.extensions.length} required):`,
  ];
  for (const e of view.extensions) lines.push(...extensionLines(e, now));
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
  return lines;
}

/** What the controller should write now, does next, and would do if the agent stopped. */
function nextLines(view: ExplainView, now: number): string[] {
  const lines = [''];
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
  return lines;
}

/** The most recent events regarding the node, oldest first. */
function eventLines(view: ExplainView, now: number): string[] {
  if (view.events.length === 0) return [];
  const lines = ['', `Recent events (${view.events.length}, oldest first):`];
  for (const e of view.events) {
    const when = e.time ? `${humanDuration(now - Date.parse(e.time))} ago` : '?';
    lines.push(
      `  ${when.padStart(10)}  ${e.type.padEnd(7)}  ${e.reason}${e.count > 1 ? ` (x${e.count})` : ''}: ${cut(e.message, 160)}`,
    );
  }
  return lines;
}

export function renderExplainText(view: ExplainView, now: number): string[] {
  return [
    ...headLines(view, now),
    ...taintLines(view, now),
    ...keptOffLines(view),
    ...extensionsLines(view, now),
    ...nextLines(view, now),
    ...bootstrapLines(view),
    ...eventLines(view, now),
  ];
}

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
