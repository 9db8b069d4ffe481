// The data of `kubectl nodecare explain <node>` (ExplainView, what -o json|yaml prints and the text is drawn
// from): one node's report (cli/model.ts) turned into its taints, extensions, agent, next action, bootstrap
// breakdown and events, each by its own function below.

import { EXTENSION_ANNOTATION_PREFIX, describeProbe, type Registration } from '../../api/index.ts';
import { keptOffByTaints, type KeptOff } from '../../api/scheduling.ts';
import { Enforcement } from '../../api/extension.ts';
import {
  describeMaintenance,
  describePlanned,
  stateText,
  type NodeDecision,
  type NodeRelease,
} from '../../controller/decide/index.ts';
import {
  bootstrapBreakdown,
  eventTimeMs,
  type BootstrapBreakdown,
  type BootstrapStep,
} from '../bootstrap.ts';
import { isHealthy, pendingWrites, type EventObject, type NodeReport } from '../model.ts';
import { nextAction, type NextAction } from '../next-action.ts';
import type { NodeWorkloads } from '../snapshot.ts';
import { blocksScheduling, describeTaint } from '../taints.ts';
import { agentSummary } from './status.ts';

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

type TaintView = ExplainView['taints'][number];
type ExtensionView = ExplainView['extensions'][number];
type Workloads = NodeWorkloads | { problem: string };

/** Every taint on the node, whoever owns it, with what it means (cli/taints.ts). */
function taintViews(report: NodeReport): TaintView[] {
  const own = {
    bootstrap: report.input.policy.bootstrapTaintKey,
    runtime: report.input.policy.runtimeTaintKey,
  };
  return (report.raw.spec?.taints ?? []).map((t) => {
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
}

/** The extension workloads nodecare's two taints keep off the node (none when they could not be read). */
function keptOffOf(report: NodeReport, workloads: Workloads): KeptOff[] {
  if ('problem' in workloads) return [];
  const { raw, input } = report;
  return keptOffByTaints(
    { name: report.name, labels: raw.metadata?.labels ?? {}, taints: raw.spec?.taints ?? [] },
    [input.policy.bootstrapTaintKey, input.policy.runtimeTaintKey],
    workloads.daemonSets,
    workloads.pods,
  );
}

/** Each required extension: its verdict, where it is registered, its probe and its Lease. */
function extensionViews(report: NodeReport, tripped: ReadonlySet<string>): ExtensionView[] {
  return report.decision.extensions.map((v) => {
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
}

/** The agent's heartbeat as the decision judged it, and its Lease. */
function agentView(report: NodeReport): ExplainView['agent'] {
  return {
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
  };
}

/** The time to schedulable, split by what the node waited for (cli/bootstrap.ts); null while it bootstraps. */
function bootstrapView(
  breakdown: BootstrapBreakdown | undefined,
  createdMs: number,
): ExplainView['bootstrap'] {
  if (!breakdown) return null;
  return {
    startedAt: new Date(breakdown.startedMs).toISOString(),
    completedAt: breakdown.completedMs === undefined ? null : new Date(breakdown.completedMs).toISOString(),
    heldSeconds:
      breakdown.completedMs === undefined ? null : tenths(breakdown.completedMs - breakdown.startedMs),
    steps: breakdown.steps.map(({ atMs, waitedMs, ...step }) => ({
      ...step,
      at: new Date(atMs).toISOString(),
      waitedSeconds: tenths(waitedMs),
    })),
    notCounted: breakdown.unknown,
    source: breakdown.source,
    after: breakdown.startedMs > createdMs ? 'reboot' : 'creation',
  };
}

/** The last `maxEvents` events regarding the node, oldest first by time (undated ones first). */
function eventViews(events: readonly EventObject[], maxEvents: number): ExplainView['events'] {
  // By time, not by the text of differently formatted timestamps.
  const sorted = [...events].sort(
    (a, b) => (eventTimeMs(a) || -Infinity) - (eventTimeMs(b) || -Infinity) || 0,
  );
  return sorted.slice(Math.max(0, sorted.length - maxEvents)).map((e) => ({
    type: e.type ?? '',
    reason: e.reason ?? '',
    message: e.message ?? e.note ?? '',
    time: eventTime(e),
    count: e.series?.count ?? e.count ?? 1,
  }));
}

/** The node's state, its ExtensionsReady condition and label, and what holds or overrides it. */
function stateView(report: NodeReport) {
  const { decision, raw } = report;
  const condition = raw.status?.conditions?.find((c) => c.type === 'ExtensionsReady');
  return {
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
  };
}

/** What the controller will do next if the agent keeps reporting, and if it stops now (the sooner only). */
function nextViews(report: NodeReport): Pick<ExplainView, 'next' | 'ifAgentStops'> {
  const next = nextAction(report, 'renewed');
  const stops = nextAction(report, 'stopped');
  return {
    next: next ? actionView(next) : null,
    ifAgentStops: stops && (!next || stops.atMs < next.atMs) ? actionView(stops) : null,
  };
}

export function explainView(
  report: NodeReport,
  tripped: ReadonlySet<string>,
  events: readonly EventObject[],
  maxEvents: number,
  now: number,
  workloads: Workloads = { daemonSets: [], pods: [] },
): ExplainView {
  const { raw } = report;
  return {
    kind: 'NodecareExplain',
    observedAt: iso(now),
    node: report.name,
    schedulable: !report.unschedulable,
    healthy: isHealthy(report),
    cordoned: raw.spec?.unschedulable === true,
    ...stateView(report),
    agent: agentView(report),
    taints: taintViews(report),
    keptOff: keptOffOf(report, workloads),
    ...('problem' in workloads ? { keptOffProblem: workloads.problem } : {}),
    extensions: extensionViews(report, tripped),
    conflicts: report.conflicts.map((c) => c.message),
    ignoredLeases: report.ignoredLeases.map((l) => ({ name: l.name, problem: l.problem ?? 'OwnerMismatch' })),
    unregisteredLeases: [...report.leases.keys()].filter((name) => !report.registrations.has(name)).sort(),
    ...nextViews(report),
    pendingWrites: pendingWrites(report),
    bootstrap: bootstrapView(bootstrapBreakdown(report, events), report.createdMs),
    events: eventViews(events, maxEvents),
  };
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
