// One (node, extension) pair of the roll-up: what it carries, how it counts (healthy, progressing, failing,
// or not evaluable, and whether that is a configuration problem), and the bounded messages that name pairs.
// Pure, like the evaluation (evaluate.ts) that uses it.

import type { RegistrationSource } from '../../api/index.ts';
import { ExtensionState } from '../../api/names.ts';
import { ControllerReason, ProbeReason } from '../../api/reasons.ts';
import { capInput, cutUtf8, utf8Length } from '../../api/text.ts';
import { describeMaintenance, type NodeMaintenance } from '../decide/index.ts';

/** How many failing items a message names before it says how many more there are. */
export const MAX_MESSAGE_ITEMS = 10;

/**
 * Bounds that keep every status the roll-up computes within the ClusterHealth CRD's schema (a status the API
 * server refuses with 422 would block the whole roll-up): whatever nodes write, one item of a message is at
 * most MAX_ITEM_LENGTH characters (a node name of 253, an extension name of 63, the state and a capped
 * reason fit), a message at most MAX_CONDITION_MESSAGE bytes (the CRD allows 32,768 characters), at most MAX_CONDITIONS
 * conditions (the CRD's maxItems) and MAX_EXTENSION_ROWS per-extension rows (the CRD's maxItems).
 */
export const MAX_ITEM_LENGTH = 512;
export const MAX_CONDITION_MESSAGE = 8_192;
export const MAX_CONDITIONS = 64;
export const MAX_EXTENSION_ROWS = 10_000;

/** What the kubelet says about a NotReady node (capped and inert: controller/ingest.ts kubeletNotReady). */
export interface NodeNotReadyFact {
  /** The kubelet Ready condition's reason, e.g. `NodeStatusUnknown`. */
  reason: string;
  /** Its lastTransitionTime ('' when absent). */
  since: string;
}

/** The node's agent is not reporting (the decision's agentNotReporting). */
export interface AgentNotReportingFact {
  /** Its heartbeat's last renewTime as written ('' when it never reported on this boot). */
  since: string;
}

/** One (node, extension) pair as the controller decided it. */
export interface RollupPair {
  node: string;
  extension: string;
  conditionType: string;
  state: ExtensionState;
  reason: string;
  /** Set when the node is NotReady (the kubelet's Ready is not True): the pair fails, naming the node. */
  nodeNotReady?: NodeNotReadyFact;
  /** Set on the pairs Unknown / AgentNotReporting: the message names the node once for all of them. */
  agentNotReporting?: AgentNotReportingFact;
  /** Set while the node is in maintenance: a pair that is not Healthy counts as progressing, naming the node. */
  maintenance?: NodeMaintenance;
  /** Set while the node's MaintenancePlanned is True (counted, changes nothing). */
  maintenancePlanned?: boolean;
}

export type PairVerdict = 'healthy' | 'progressing' | 'failing' | 'unevaluable';

/**
 * How a pair counts. A pair of a node in maintenance (controller/decide/maintenance.ts) that is not Healthy is
 * progressing, whatever else holds: Gardener's EveryNodeReady reports nodes being rolled as Progressing, not as
 * a failure (docs/rollup.md says where nodecare differs: no time limit, since a maintenance has no known end).
 * A pair of a NotReady node (the kubelet's Ready is not True; the decision made it Unknown /
 * NodeNotReady) is failing: Gardener's own EveryNodeReady check fails a node whose Ready is not True through
 * its threshold machine (`NodeUnhealthy`), it does not report a check error, and what is known is a fact about
 * the node, not an outdated report (docs/rollup.md). An expired lease or an agent that stopped reporting cannot
 * be evaluated (Gardener's outdated report → Unknown). An agent's own Unknown ("could not determine") counts as
 * failing: our one deviation from Gardener, which counts an Unknown check without error as a success — a check
 * that cannot tell whether the GPU plugin works must not report the cluster healthy.
 */
export function classifyPair(
  pair: Pick<RollupPair, 'state' | 'reason' | 'nodeNotReady' | 'maintenance'>,
): PairVerdict {
  if (pair.maintenance !== undefined)
    return pair.state === ExtensionState.Healthy ? 'healthy' : 'progressing';
  if (pair.nodeNotReady !== undefined || pair.reason === ControllerReason.NodeNotReady) return 'failing';
  switch (pair.state) {
    case ExtensionState.Healthy:
      return 'healthy';
    case ExtensionState.Progressing:
      return 'progressing';
    case ExtensionState.Unhealthy:
      return 'failing';
    case ExtensionState.Unknown:
      return pair.reason === ControllerReason.AgentNotReporting ||
        pair.reason === ControllerReason.LeaseExpired ||
        pair.reason === ControllerReason.LeaseMissing
        ? 'unevaluable'
        : 'failing';
    default: {
      const unreachable: never = pair.state;
      return unreachable;
    }
  }
}

export function isConfigurationProblem(pair: RollupPair): boolean {
  return (
    pair.reason === ControllerReason.InvalidRegistration || pair.reason === ProbeReason.InvalidRegistration
  );
}

/**
 * `node-a: gpu-plugin Unhealthy (ProbeTimeout)`; for a NotReady node, whatever the extension,
 * `node-a: kubelet not ready (NodeStatusUnknown) since 2026-11-24T14:00:00Z` (said once per node). Capped and
 * made inert (the reason is a node's word).
 */
function describePair(pair: RollupPair): string {
  const k = pair.nodeNotReady;
  const m = pair.maintenance;
  const item =
    m !== undefined && pair.state !== ExtensionState.Healthy
      ? `${pair.node}: ${describeMaintenance(m)}`
      : k !== undefined
        ? `${pair.node}: kubelet not ready${k.reason ? ` (${k.reason})` : ''}${k.since ? ` since ${k.since}` : ''}`
        : `${pair.node}: ${pair.extension} ${pair.state}${pair.reason ? ` (${pair.reason})` : ''}`;
  return capInput(item, MAX_ITEM_LENGTH);
}

function byNodeThenExtension(a: RollupPair, b: RollupPair): number {
  if (a.node !== b.node) return a.node < b.node ? -1 : 1;
  return a.extension < b.extension ? -1 : a.extension > b.extension ? 1 : 0;
}

/**
 * Gardener's message format: one item is `<x>.`, several are `1) <a>. 2) <b>.`; past `max` items the rest are
 * counted (`… and 3 more.`). Sorted, so equal inputs give an equal message and nothing is written twice.
 */
export function itemsMessage(pairs: readonly RollupPair[], max: number = MAX_MESSAGE_ITEMS): string {
  // Sorted by node, so the pairs of a NotReady node (one item for all of them) are adjacent.
  const items = [...pairs].sort(byNodeThenExtension).map(describePair);
  const unique = items.filter((item, i) => i === 0 || item !== items[i - 1]);
  const shown = unique.slice(0, max);
  const rest = unique.length - shown.length;
  const listed = shown.length === 1 ? `${shown[0]}.` : shown.map((item, i) => `${i + 1}) ${item}.`).join(' ');
  return capMessage(rest > 0 ? `${listed} … and ${rest} more.` : listed);
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** What made a pair unevaluable, in words (the reason stays beside it for a search). */
function whyUnevaluable(pair: RollupPair): string {
  switch (pair.reason) {
    case ControllerReason.AgentNotReporting: {
      const since = pair.agentNotReporting?.since;
      return since ? `agent not reporting since ${since}` : 'agent has not reported on this boot';
    }
    case ControllerReason.LeaseExpired:
      return 'its lease was not renewed in time (LeaseExpired)';
    case ControllerReason.LeaseMissing:
      return 'no lease written (LeaseMissing)';
    default:
      return `${pair.state} (${pair.reason})`;
  }
}

/**
 * The message of ConditionCheckError (the reason stays Gardener's): what happened, not "failed to execute N
 * health checks". The pairs of one node that share a cause are one item: `3 extensions on node node-a: agent
 * not reporting since 2026-11-24T14:00:00Z`; one pair alone is `gpu-plugin on node node-a: …`. Sorted, capped
 * and made inert as itemsMessage.
 */
export function unevaluableMessage(pairs: readonly RollupPair[], max: number = MAX_MESSAGE_ITEMS): string {
  const groups = new Map<string, RollupPair[]>();
  for (const pair of [...pairs].sort(byNodeThenExtension)) {
    const key = JSON.stringify([pair.node, whyUnevaluable(pair)]);
    groups.set(key, [...(groups.get(key) ?? []), pair]);
  }
  const items = [...groups.values()].map((group) => {
    const first = group[0]!;
    const what = group.length === 1 ? first.extension : plural(group.length, 'extension');
    return capInput(`${what} on node ${first.node}: ${whyUnevaluable(first)}`, MAX_ITEM_LENGTH);
  });
  const shown = items.slice(0, max);
  const rest = items.length - shown.length;
  const listed = shown.length === 1 ? `${shown[0]}.` : shown.map((item, i) => `${i + 1}) ${item}.`).join(' ');
  return capMessage(rest > 0 ? `${listed} … and ${rest} more.` : listed);
}

/**
 * A condition message within MAX_CONDITION_MESSAGE bytes of UTF-8, whatever `max` items it lists, cut on a
 * character boundary: bytes, not characters, so non-ASCII text stays within any limit counted either way (the
 * CRD's maxLength counts characters, metav1.Condition's 32 KiB bytes).
 */
export function capMessage(message: string): string {
  const bytes = utf8Length(message);
  if (bytes <= MAX_CONDITION_MESSAGE) return message;
  const tail = ` … (${bytes - MAX_CONDITION_MESSAGE} more bytes)`;
  return `${cutUtf8(message, MAX_CONDITION_MESSAGE - utf8Length(tail))}${tail}`;
}

/** A pair as the reconciler decided it, with where the node's registration of the extension came from. */
export interface SourcedPair extends RollupPair {
  /** undefined when the decision was made without one (the node's registrations are always sourced). */
  source?: RegistrationSource;
}
