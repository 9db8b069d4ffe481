// The decision input for one node, built once by one pure function from what is known of it: its registrations
// resolved (an annotation's condition type restricted to the allowed ones), each required extension with its
// rollout window, the policy with the breaker's verdict, the suspensions and label waits that apply. The
// controller's node decider calls it with its caches and node book; `kubectl nodecare` can call it with a
// snapshot.

import {
  resolveRegistrations,
  restrictConditionType,
  type NodeView,
  type ParsedSystemExtension,
  type ResolvedRegistrations,
} from '../../api/index.ts';
import { labelWaitsOf } from './label-wait.ts';
import { extensionRollout } from './rollout.ts';
import { CONTROLLER_SUSPEND } from './suspend.ts';
import type { DecisionInput, NodeMemory, ObservedNode, RequiredExtension, SeenLease } from './types.ts';

/** The settings a decision reads (the controller's flags; the policy the leader publishes, for the plugin). */
export interface DecisionSettings {
  bootstrapTaintKey: string;
  runtimeTaintKey: string;
  bootstrapTimeoutSeconds: number;
  missingLeaseGraceSeconds: number;
  annotationConditionTypes: readonly string[];
  /** --suspend: every node's taint changes held. */
  suspend?: boolean | undefined;
}

/** What is known of one node and of the cluster around it. */
export interface NodeInputView {
  node: ObservedNode & NodeView;
  /** Every SystemExtension, by name. */
  systemExtensions: ReadonlyMap<string, ParsedSystemExtension>;
  /** The node's extension leases by extension name, and its heartbeat. */
  leases: ReadonlyMap<string, SeenLease>;
  agent: SeenLease | undefined;
  /**
   * The node's memory; or, where it is reconstructed from the node (kubectl nodecare), made from the
   * registrations resolved here, so that they are resolved once.
   */
  previous: NodeMemory | undefined | ((registrations: ResolvedRegistrations) => NodeMemory | undefined);
  settings: DecisionSettings;
  /** The extensions whose correlated failure holds back runtime taints. */
  tripped: ReadonlySet<string>;
  /** When a SystemExtension's current rollout window started (RolloutWindows.startMs at `now`). */
  rolloutStartMs(sx: ParsedSystemExtension): number;
  now: number;
  monotonicNow: number;
}

/** The decision input, and the registrations it was built from (restricted as the decision judges them). */
export function decisionInput(view: NodeInputView): {
  input: DecisionInput;
  registrations: ResolvedRegistrations;
} {
  const { node, settings } = view;
  const registrations = registrationsOf(
    node,
    view.systemExtensions.values(),
    settings.annotationConditionTypes,
  );
  const input: DecisionInput = {
    node,
    required: requiredOf(registrations, view),
    leases: view.leases,
    agent: view.agent,
    conflicts: registrations.conflicts,
    previous: typeof view.previous === 'function' ? view.previous(registrations) : view.previous,
    policy: {
      bootstrapTaintKey: settings.bootstrapTaintKey,
      runtimeTaintKey: settings.runtimeTaintKey,
      bootstrapTimeoutSeconds: settings.bootstrapTimeoutSeconds,
      missingLeaseGraceSeconds: settings.missingLeaseGraceSeconds,
      trippedExtensions: view.tripped,
    },
    now: view.now,
    monotonicNow: view.monotonicNow,
    suspendedBy: [
      ...(settings.suspend === true ? [CONTROLLER_SUSPEND] : []),
      ...registrations.suspendedBy.map((name) => `SystemExtension ${name}`),
    ],
    labelWaits: labelWaitsOf(node.labels, view.systemExtensions.values()),
  };
  return { input, registrations };
}

/**
 * Every registration in force on the node, by name, as the decision judges them: an annotation's condition
 * type restricted to the allowed ones (api/registration.ts).
 */
export function registrationsOf(
  node: NodeView,
  systemExtensions: Iterable<ParsedSystemExtension>,
  annotationConditionTypes: readonly string[],
): ResolvedRegistrations {
  const resolved = resolveRegistrations(node, systemExtensions);
  const byName = new Map(
    [...resolved.byName].map(([name, r]) => [name, restrictConditionType(r, annotationConditionTypes)]),
  );
  return { ...resolved, byName };
}

/** The required extensions, each with its rollout window (from its SystemExtension). */
function requiredOf(registrations: ResolvedRegistrations, view: NodeInputView): RequiredExtension[] {
  return [...registrations.byName.values()].map((r) => {
    const sx = r.source === 'systemExtension' ? view.systemExtensions.get(r.name) : undefined;
    const rollout = sx && extensionRollout(sx.rollout, view.rolloutStartMs(sx));
    return {
      name: r.name,
      source: r.source,
      policy: r.policy,
      valid: r.valid,
      ...(r.valid ? {} : { problems: r.problems }),
      ...(rollout ? { rollout } : {}),
    };
  });
}
