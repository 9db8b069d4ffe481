// The status table of the demo's live view: every node with its Karpenter NodeClaim, its nodecare state,
// taints, ExtensionsReady condition, agent heartbeat and the state of each extension as its Lease says; under
// it the autoscaler's view (NodeClaims) and the workload's pods. Pure functions of what the API server
// returned (nodes, decoded Leases, NodeClaims, pods) and the current time.

import type { V1Node, V1Pod } from '@kubernetes/client-node';
import {
  ConditionReason,
  DEFAULT_BOOTSTRAP_TAINT_KEY,
  DEFAULT_RUNTIME_TAINT_KEY,
  EXTENSION_ANNOTATION_PREFIX,
  ExtensionState,
  LeaseRole,
  NODE_CONDITION_TYPE,
  type ObservedLease,
} from '../api/index.ts';
import { NodeState, maintenanceOf, stateOnNode, stateText } from '../controller/decide/index.ts';
import { nodeClaimStage, type NodeClaim } from '../test/autoscalers/karpenter.ts';

/** The controller's node states: one definition for the controller, the plugin and this view. */
export { NodeState };

export interface ExtensionStatus {
  name: string;
  /** undefined: required by the node's annotation, but no Lease has been written for it yet. */
  state: ExtensionState | undefined;
  reason: string;
  message: string;
}

export interface NodeStatus {
  name: string;
  /** The node's Karpenter NodeClaim and its stage (`gpu-x2v9k Registered (StartupTaintsExist)`), if any. */
  nodeClaim: string | undefined;
  /** As the controller recorded it on the node (controller/decide/node-status.ts); undefined until it decided. */
  state: NodeState | undefined;
  /** The state with the condition's reason beside it (`Degraded (AgentNotReporting)`), or `-`. */
  stateText: string;
  /** Short names: `bootstrap`, `runtime`; any other taint by its key. */
  taints: string[];
  condition: { status: string; reason: string; message: string } | undefined;
  /** Seconds since the agent's heartbeat was renewed; undefined when there is no heartbeat Lease. */
  heartbeatAgeSeconds: number | undefined;
  /** The heartbeat's duration: an older heartbeat has expired. */
  heartbeatDurationSeconds: number | undefined;
  extensions: ExtensionStatus[];
  ageSeconds: number | undefined;
}

/** A ClusterHealth condition as the demo shows it. */
export interface HealthCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

/** What the marks in the table mean (the live view prints it under the table). */
export const LEGEND =
  "Legend: STATE is nodecare's state with the ExtensionsReady reason beside it (- not decided yet). " +
  '✓ Healthy  ✗ Unhealthy  … Progressing (starting, within its grace)  ? Unknown  · no lease yet; ' +
  '? stale: the agent stopped reporting, its last result is not trusted. AGENT: up | silent Ns | lost.';

/** One line with every ClusterHealth condition: `ClusterHealth: EveryNodeReady True (HealthCheckSuccessful) …`. */
export function clusterHealthLine(conditions: readonly HealthCondition[] | undefined, color = false): string {
  if (conditions === undefined)
    return 'ClusterHealth: not written yet (the controller writes it once it leads)';
  if (conditions.length === 0) return 'ClusterHealth: no conditions yet';
  const parts = [...conditions]
    .sort((a, b) => a.type.localeCompare(b.type))
    .map((c) => {
      const tint: Color =
        c.status === 'True'
          ? 'green'
          : c.status === 'False'
            ? 'red'
            : c.status === 'Progressing'
              ? 'yellow'
              : 'magenta';
      return `${c.type} ${paint(c.status, tint, color)}${c.reason ? ` (${c.reason})` : ''}`;
    });
  return `ClusterHealth: ${parts.join(' · ')}`;
}

export interface StatusOptions {
  bootstrapTaintKey?: string;
  runtimeTaintKey?: string;
  /** Karpenter's NodeClaims: each node's is shown beside it. */
  nodeClaims?: readonly NodeClaim[];
  /** The NODECLAIM column (default true); false where no autoscaler makes NodeClaims (--real-nodes). */
  claimsColumn?: boolean;
  /** Colour the state and extension marks with ANSI escapes (for a terminal). */
  color?: boolean;
}

/** EXTENSIONS comes last: it is the one column whose width varies a lot (and that wraps). */
export const STATUS_HEADER = ['NODE', 'NODECLAIM', 'STATE', 'TAINTS', 'AGENT', 'AGE', 'EXTENSIONS'] as const;
/** Between the extensions in the EXTENSIONS cell (each one contains single spaces only). */
const ITEM_SEPARATOR = '  ';

function toMs(value: Date | string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = value instanceof Date ? value.getTime() : Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * A NodeClaim as Karpenter sees it: name and stage (Launched → Registered → Initialized), with the reason it
 * gives while the claim is not initialized yet (e.g. `StartupTaintsExist`).
 */
export function nodeClaimSummary(claim: NodeClaim): string {
  const stage = nodeClaimStage(claim);
  const initialized = claim.status?.conditions?.find((c) => c.type === 'Initialized');
  const why =
    stage !== 'Initialized' && initialized?.status !== 'True' && initialized?.reason
      ? ` (${initialized.reason})`
      : '';
  return `${claim.metadata.name} ${stage}${why}`;
}

/** One status per node, sorted by name. */
export function nodeStatuses(
  nodes: readonly V1Node[],
  leases: readonly ObservedLease[],
  now: Date,
  options: StatusOptions = {},
): NodeStatus[] {
  const bootstrapKey = options.bootstrapTaintKey ?? DEFAULT_BOOTSTRAP_TAINT_KEY;
  const runtimeKey = options.runtimeTaintKey ?? DEFAULT_RUNTIME_TAINT_KEY;
  const nowMs = now.getTime();
  const claims = options.nodeClaims ?? [];
  return [...nodes]
    .filter((node) => node.metadata?.name)
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
    .map((node): NodeStatus => {
      const name = node.metadata?.name ?? '';
      const taints = (node.spec?.taints ?? []).map((t) =>
        t.key === bootstrapKey ? 'bootstrap' : t.key === runtimeKey ? 'runtime' : t.key,
      );
      const found = node.status?.conditions?.find((c) => c.type === NODE_CONDITION_TYPE);
      const condition = found
        ? { status: found.status, reason: found.reason ?? '', message: found.message ?? '' }
        : undefined;

      const mine = leases.filter((l) => l.node === name);
      const heartbeat = mine.find((l) => l.role === LeaseRole.agent);
      const renewedMs = toMs(heartbeat?.renewTime);
      const byName = new Map<string, ExtensionStatus>();
      for (const key of Object.keys(node.metadata?.annotations ?? {})) {
        if (!key.startsWith(EXTENSION_ANNOTATION_PREFIX)) continue;
        const ext = key.slice(EXTENSION_ANNOTATION_PREFIX.length);
        byName.set(ext, { name: ext, state: undefined, reason: '', message: '' });
      }
      for (const lease of mine) {
        if (lease.role !== LeaseRole.extension || !lease.extension) continue;
        byName.set(lease.extension, {
          name: lease.extension,
          state: lease.state,
          reason: lease.reason,
          message: lease.message,
        });
      }
      // A lost agent's leases still say what it last saw: show them as stale, not as its last verdict.
      const heartbeatExpired =
        renewedMs !== undefined &&
        heartbeat !== undefined &&
        nowMs - renewedMs > heartbeat.leaseDurationSeconds * 1000;
      if (condition?.reason === ConditionReason.AgentNotReporting || heartbeatExpired) {
        for (const [ext, status] of byName) {
          if (status.state === undefined) continue;
          byName.set(ext, {
            name: ext,
            state: ExtensionState.Unknown,
            reason: 'stale',
            message: `last reported ${status.state}`,
          });
        }
      }
      const createdMs = toMs(node.metadata?.creationTimestamp);
      const claim = claims.find((c) => c.status?.nodeName === name);
      const state = stateOnNode({
        bootstrapTainted: taints.includes('bootstrap'),
        runtimeTainted: taints.includes('runtime'),
        conditionReason: condition?.reason,
        maintained:
          maintenanceOf({
            deletionTimestamp: node.metadata?.deletionTimestamp,
            unschedulable: node.spec?.unschedulable,
            taints: node.spec?.taints,
            conditions: node.status?.conditions,
          }).maintenance !== undefined,
      });
      return {
        name,
        nodeClaim: claim ? nodeClaimSummary(claim) : undefined,
        state,
        stateText: state === undefined ? '-' : stateText(state, condition?.reason),
        taints,
        condition,
        heartbeatAgeSeconds:
          renewedMs === undefined ? undefined : Math.max(0, Math.floor((nowMs - renewedMs) / 1000)),
        heartbeatDurationSeconds: heartbeat ? heartbeat.leaseDurationSeconds : undefined,
        extensions: [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)),
        ageSeconds: createdMs === undefined ? undefined : Math.max(0, Math.floor((nowMs - createdMs) / 1000)),
      };
    });
}

/** kubectl's age format: 45s, 3m10s, 25m, 4h12m, 3d5h. */
export function formatAge(seconds: number | undefined): string {
  if (seconds === undefined) return '-';
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  if (seconds < 120) return `${seconds}s`;
  if (minutes < 10) return seconds % 60 ? `${minutes}m${seconds % 60}s` : `${minutes}m`;
  if (hours < 3) return `${minutes}m`;
  if (hours < 48) return minutes % 60 ? `${hours}h${minutes % 60}m` : `${hours}h`;
  return hours % 24 ? `${days}d${hours % 24}h` : `${days}d`;
}

const ANSI = { green: 32, yellow: 33, red: 31, magenta: 35, dim: 2 } as const;
type Color = keyof typeof ANSI;

const STATE_COLOR: Record<NodeState, Color> = {
  Bootstrapping: 'yellow',
  BootstrapTimeout: 'red',
  Ready: 'green',
  Degraded: 'red',
  NotReady: 'magenta',
  Maintenance: 'dim',
};

const MARK: Record<ExtensionState, { mark: string; color: Color }> = {
  Healthy: { mark: '✓', color: 'green' },
  Unhealthy: { mark: '✗', color: 'red' },
  Progressing: { mark: '…', color: 'yellow' },
  Unknown: { mark: '?', color: 'magenta' },
};

function paint(text: string, color: Color, enabled: boolean): string {
  return enabled ? `\u001b[${ANSI[color]}m${text}\u001b[0m` : text;
}

// eslint-disable-next-line no-control-regex
const ESCAPES = /\u001b\[[0-9;]*m/g;

/** Width of a string as a terminal shows it (ANSI colour escapes take no room). */
export function visibleLength(text: string): number {
  return [...text.replace(ESCAPES, '')].length;
}

function extensionCell(ext: ExtensionStatus, color: boolean): string {
  if (ext.state === undefined) return `${ext.name} ${paint('· no lease', 'dim', color)}`;
  const { mark, color: c } = MARK[ext.state];
  const reason = ext.state === ExtensionState.Healthy ? '' : ` ${ext.reason}`;
  return `${ext.name} ${paint(`${mark}${reason}`, c, color)}`;
}

function agentCell(status: NodeStatus, color: boolean): string {
  // The controller's verdict first: it may declare the agent gone before this view's clock says so.
  if (status.condition?.reason === ConditionReason.AgentNotReporting) return paint('lost', 'red', color);
  const age = status.heartbeatAgeSeconds;
  if (age === undefined) return paint('-', 'dim', color);
  const expired = status.heartbeatDurationSeconds !== undefined && age > status.heartbeatDurationSeconds;
  return expired ? paint(`silent ${formatAge(age)}`, 'red', color) : 'up';
}

/** The state word coloured, the reason beside it plain: `Degraded (AgentNotReporting)`. */
function stateCell(status: NodeStatus, color: boolean): string {
  if (status.state === undefined) return paint('-', 'dim', color);
  const reason = status.stateText.slice(status.state.length);
  return `${paint(status.state, STATE_COLOR[status.state], color)}${reason}`;
}

/** The header: STATUS_HEADER, without NODECLAIM when `claimsColumn` is false. */
export function statusHeader(options: Pick<StatusOptions, 'claimsColumn'> = {}): string[] {
  return STATUS_HEADER.filter((column) => options.claimsColumn !== false || column !== 'NODECLAIM');
}

/** The cells of one row, in statusHeader's order. */
export function statusCells(status: NodeStatus, options: StatusOptions = {}): string[] {
  const color = options.color ?? false;
  return [
    status.name,
    ...(options.claimsColumn === false ? [] : [status.nodeClaim ?? '-']),
    stateCell(status, color),
    status.taints.length ? status.taints.join(',') : '-',
    agentCell(status, color),
    formatAge(status.ageSeconds),
    status.extensions.length
      ? status.extensions.map((e) => extensionCell(e, color)).join(ITEM_SEPARATOR)
      : '-',
  ];
}

/** How much of a scheduler message the view shows. */
const MESSAGE_CHARS = 160;

/**
 * The autoscaler's view and the workload, one line each: every NodeClaim (with the node it became, or that
 * it has none yet) and every workload pod (its phase, its node, and why the scheduler has not placed it).
 */
export function autoscalerLines(
  claims: readonly NodeClaim[] | undefined,
  pods: readonly V1Pod[] | undefined,
): string[] {
  // undefined: a cluster without Karpenter (npm start -- --real-nodes), so no Karpenter line at all.
  const lines = !claims
    ? []
    : claims.length
      ? [...claims]
          .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
          .map((claim) => {
            const type = claim.metadata.labels?.['node.kubernetes.io/instance-type'];
            const node = claim.status?.nodeName ? `node ${claim.status.nodeName}` : 'no node yet';
            return `Karpenter: NodeClaim ${nodeClaimSummary(claim)}${type ? `, ${type}` : ''}, ${node}`;
          })
      : ['Karpenter: no NodeClaim'];
  // undefined: no workload in this story (npm start -- --kubeconfig), so no workload line.
  if (!pods) return lines;
  if (pods.length === 0) return [...lines, 'Workload: no pod yet'];
  for (const pod of pods) {
    const phase = pod.status?.phase ?? 'Pending';
    const where = pod.spec?.nodeName ? ` on ${pod.spec.nodeName}` : '';
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    const why =
      !pod.spec?.nodeName && scheduled?.status === 'False'
        ? ` — ${scheduled.reason ?? 'Unschedulable'}: ${shortenEnd(scheduled.message ?? '', MESSAGE_CHARS)}`
        : '';
    lines.push(`Workload: pod ${pod.metadata?.name ?? '?'} ${phase}${where}${why}`);
  }
  return lines;
}

/** The narrowest a shrunk column gets, and the least room the last column keeps. */
const MIN_SHRUNK_COLUMN = 10;
const MIN_LAST_COLUMN = 28;
/** Where the stacked last column's lines start. */
const STACK_INDENT = 4;

/** `text` in at most `width` characters: the middle replaced by an ellipsis (names differ at both ends). */
export function shortenMiddle(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  const keep = width - 1;
  const head = Math.ceil(keep / 2);
  return `${chars.slice(0, head).join('')}…${chars.slice(chars.length - (keep - head)).join('')}`;
}

/** `text` in at most `width` characters, cut at a word boundary where one is near, and marked with an ellipsis. */
export function shortenEnd(text: string, width: number): string {
  if (visibleLength(text) <= width) return text;
  const plain = [...text.replace(ESCAPES, '')];
  const cut = plain.slice(0, Math.max(0, width - 1)).join('');
  const space = cut.lastIndexOf(' ');
  return `${space > width / 2 ? cut.slice(0, space) : cut}…`;
}

/**
 * Left-aligned columns separated by three spaces; the last column is not padded. With `width`, a last cell that
 * would overflow it continues on the next lines, broken between its items (separated by two spaces); when the
 * other columns leave the last one too little room, the `shrinkable` columns (plain text) give way, widest
 * first, their cells shortened in the middle (a `lastResort` column gives way too, only once the last column is
 * stacked, cut at its end); an item wider than the room left is cut with an ellipsis. So no
 * line is wider than `width` and the last column (a node's extensions) stays in view.
 */
export function formatTable(
  rows: readonly (readonly string[])[],
  width?: number,
  shrinkable: readonly number[] = [],
  lastResort: readonly number[] = [],
): string[] {
  const natural: number[] = [];
  for (const row of rows)
    row.slice(0, -1).forEach((cell, i) => (natural[i] = Math.max(natural[i] ?? 0, visibleLength(cell))));
  const indentOf = (widths: readonly number[]): number => widths.reduce((sum, w) => sum + w + 3, 0);
  /**
   * The narrowest widths (widest shrinkable column first, with the `lastResort` ones when allowed) whose indent
   * is at most `limit`.
   */
  const shrunkTo = (limit: number, resort = false): number[] => {
    const widths = [...natural];
    let indent = indentOf(widths);
    // Once the extensions are stacked, the `lastResort` columns give way with the others, widest first, so no
    // column (a node's name) is cut to nothing while another keeps its natural width.
    const columns = resort ? [...shrinkable, ...lastResort] : shrinkable;
    while (indent > limit) {
      const widest = columns
        .filter((i) => (widths[i] ?? 0) > MIN_SHRUNK_COLUMN)
        .sort((a, b) => widths[b]! - widths[a]!)[0];
      if (widest === undefined) break;
      widths[widest]!--;
      indent--;
    }
    return widths;
  };
  // Inline: the last column beside the others, with at least MIN_LAST_COLUMN of room. Stacked (a narrow
  // terminal): the last column's items on lines of their own under each row, indented.
  let widths = natural;
  let stacked = false;
  if (width !== undefined && indentOf(natural) + MIN_LAST_COLUMN > width) {
    widths = shrunkTo(width - MIN_LAST_COLUMN);
    if (indentOf(widths) + MIN_LAST_COLUMN > width) {
      widths = shrunkTo(width + 3, true); // the head alone fits (no separator after its last cell)
      stacked = true;
    }
  }
  const indent = stacked ? STACK_INDENT : indentOf(widths);
  const room = width === undefined ? Infinity : Math.max(1, width - indent);
  const fill = (items: string): string[] => {
    const lines: string[] = [];
    let line = '';
    for (const whole of items.split(ITEM_SEPARATOR)) {
      const item = shortenEnd(whole, room);
      if (line && visibleLength(line + ITEM_SEPARATOR + item) > room) {
        lines.push(line);
        line = item;
      } else line = line ? line + ITEM_SEPARATOR + item : item;
    }
    lines.push(line);
    return lines;
  };
  return rows.flatMap((row, r) => {
    const head = row
      .slice(0, -1)
      .map((cell, i) => {
        const shown =
          visibleLength(cell) <= widths[i]!
            ? cell
            : lastResort.includes(i)
              ? shortenEnd(cell, widths[i]!)
              : shortenMiddle(cell, widths[i]!);
        return `${shown}${' '.repeat(widths[i]! - visibleLength(shown))}   `;
      })
      .join('');
    const last = row.at(-1) ?? '';
    if (stacked) {
      const first = head.trimEnd();
      // The header names the stacked column at the end when it fits there.
      if (r === 0)
        return [
          width !== undefined && visibleLength(`${first}   ${last}`) <= width ? `${first}   ${last}` : first,
        ];
      return [first, ...fill(last).map((l) => ' '.repeat(STACK_INDENT) + l)];
    }
    if (width === undefined || visibleLength(last) <= room) return [head + last];
    return fill(last).map((l, i) => (i === 0 ? head : ' '.repeat(indent)) + l);
  });
}

/**
 * The whole table: a header line, then a line per node (more when `width` is given and a node's extensions
 * do not fit: they continue under the EXTENSIONS column).
 */
export function renderStatus(
  nodes: readonly V1Node[],
  leases: readonly ObservedLease[],
  now: Date,
  options: StatusOptions & { width?: number } = {},
): string[] {
  const rows = nodeStatuses(nodes, leases, now, options).map((s) => statusCells(s, options));
  // NODE, NODECLAIM and TAINTS give way on a narrow terminal; STATE (its reason) only when the extensions are
  // already on lines of their own and the rest still does not fit, cut at its end; AGENT and AGE are short.
  const header = statusHeader(options);
  const at = (...columns: string[]): number[] => columns.map((c) => header.indexOf(c)).filter((i) => i >= 0);
  return formatTable([header, ...rows], options.width, at('NODE', 'NODECLAIM', 'TAINTS'), at('STATE'));
}
