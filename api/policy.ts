// The policy the controller's leader publishes in ClusterHealth `cluster`, status.policy (docs/rollup.md,
// "The published policy"): the settings a reader needs to judge a node as the controller does. `kubectl
// nodecare` reads it, so that its answers follow the controller's flags (a Helm value that changed a taint key
// changes what the plugin looks for) without repeating them; a flag given to the plugin still wins.

import { taintKeyProblem } from './taint-key.ts';

export interface PublishedPolicy {
  /** --bootstrap-taint-key */
  bootstrapTaintKey: string;
  /** --runtime-taint-key */
  runtimeTaintKey: string;
  /** --bootstrap-timeout-seconds */
  bootstrapTimeoutSeconds: number;
  /** --missing-lease-grace-seconds */
  missingLeaseGraceSeconds: number;
  /** --max-unhealthy-fraction (the correlated-failure breaker) */
  maxUnhealthyFraction: number;
  /** --annotation-condition-type, in the order given */
  annotationConditionTypes: string[];
  /** --suspend: every node's taint changes held */
  suspend: boolean;
  /** --dry-run: nothing written to nodes */
  dryRun: boolean;
  /** --node-selector: the nodes the controller manages ('' = every node) */
  nodeSelector: string;
}

/** The fields in the order the CRD lists them (and the writer compares them). */
const FIELDS = [
  'bootstrapTaintKey',
  'runtimeTaintKey',
  'bootstrapTimeoutSeconds',
  'missingLeaseGraceSeconds',
  'maxUnhealthyFraction',
  'annotationConditionTypes',
  'suspend',
  'dryRun',
  'nodeSelector',
] as const satisfies readonly (keyof PublishedPolicy)[];

/** Whether `a` (as read from the object, maybe absent or partial) says exactly what `b` does. */
export function samePolicy(a: Partial<PublishedPolicy> | undefined, b: PublishedPolicy): boolean {
  if (!a) return false;
  return FIELDS.every((f) =>
    f === 'annotationConditionTypes'
      ? Array.isArray(a[f]) && a[f].length === b[f].length && a[f].every((t, i) => t === b[f][i])
      : a[f] === b[f],
  );
}

export interface PolicyReading {
  /** Each field that was present and valid. */
  policy: Partial<PublishedPolicy>;
  /** One line per field that was present and not usable, naming it (the field is left out of `policy`). */
  problems: string[];
}

/**
 * What a reader can use of a published status.policy: every field checked on its own, so that one bad field
 * (an older or newer controller, a hand edit of the status) costs that field, not the rest.
 */
export function readPublishedPolicy(value: unknown): PolicyReading {
  const policy: Partial<PublishedPolicy> = {};
  const problems: string[] = [];
  if (value === undefined || value === null) return { policy, problems };
  if (typeof value !== 'object' || Array.isArray(value))
    return { policy, problems: ['status.policy: not an object'] };
  const v = value as Record<string, unknown>;
  const bad = (field: string, why: string): void => {
    problems.push(`status.policy.${field}: ${why}`);
  };
  for (const field of ['bootstrapTaintKey', 'runtimeTaintKey'] as const) {
    const key = v[field];
    if (key === undefined) continue;
    const problem = typeof key === 'string' ? taintKeyProblem(key) : 'is not a string';
    if (problem) bad(field, `${JSON.stringify(key)} ${problem}`);
    else policy[field] = key as string;
  }
  for (const [field, max] of [
    ['bootstrapTimeoutSeconds', 86_400],
    ['missingLeaseGraceSeconds', 86_400],
  ] as const) {
    const n = v[field];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > max)
      bad(field, `${JSON.stringify(n)} is not a whole number of seconds from 0 to ${max}`);
    else policy[field] = n;
  }
  const fraction = v.maxUnhealthyFraction;
  if (fraction !== undefined) {
    if (typeof fraction !== 'number' || !(fraction >= 0 && fraction <= 1))
      bad('maxUnhealthyFraction', `${JSON.stringify(fraction)} is not a number from 0 to 1`);
    else policy.maxUnhealthyFraction = fraction;
  }
  const types = v.annotationConditionTypes;
  if (types !== undefined) {
    if (!Array.isArray(types) || !types.every((t) => typeof t === 'string'))
      bad('annotationConditionTypes', 'is not a list of condition types');
    else policy.annotationConditionTypes = types;
  }
  for (const field of ['suspend', 'dryRun'] as const) {
    const b = v[field];
    if (b === undefined) continue;
    if (typeof b !== 'boolean') bad(field, `${JSON.stringify(b)} is not true or false`);
    else policy[field] = b;
  }
  const selector = v.nodeSelector;
  if (selector !== undefined) {
    if (typeof selector !== 'string') bad('nodeSelector', 'is not a string');
    else policy.nodeSelector = selector;
  }
  return { policy, problems };
}
