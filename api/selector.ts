// Kubernetes LabelSelector (matchLabels + matchExpressions) validation and matching, as apimachinery does it.

import { capInput } from './text.ts';

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

/** An empty (or absent) selector matches everything, as for a SystemExtension's `nodeSelector`. */
export function matchesSelector(
  selector: LabelSelector | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, key);
    const value = labels[key];
    switch (operator) {
      case 'In':
        if (!has || !values.includes(value as string)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(value as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default: {
        const unreachable: never = operator;
        throw new Error(`unknown selector operator ${String(unreachable)}`);
      }
    }
  }
  return true;
}

/** Returns the problems of a raw selector, each prefixed with `path`; empty when it is valid. */
export function validateSelector(raw: unknown, path: string): string[] {
  if (raw === undefined || raw === null) return [];
  if (typeof raw !== 'object' || Array.isArray(raw))
    return [`${path}: expected an object with matchLabels/matchExpressions`];
  const problems: string[] = [];
  const { matchLabels, matchExpressions, ...rest } = raw as Record<string, unknown>;
  for (const key of Object.keys(rest)) problems.push(`${path}.${capInput(key)}: unknown field`);
  if (matchLabels !== undefined) {
    if (typeof matchLabels !== 'object' || matchLabels === null || Array.isArray(matchLabels)) {
      problems.push(`${path}.matchLabels: expected a map of strings`);
    } else {
      for (const [key, value] of Object.entries(matchLabels)) {
        if (typeof value !== 'string')
          problems.push(`${path}.matchLabels.${capInput(key)}: expected a string`);
      }
    }
  }
  if (matchExpressions !== undefined) {
    if (!Array.isArray(matchExpressions)) {
      problems.push(`${path}.matchExpressions: expected a list`);
    } else {
      matchExpressions.forEach((expr: unknown, i) => {
        const at = `${path}.matchExpressions[${i}]`;
        if (typeof expr !== 'object' || expr === null) return problems.push(`${at}: expected an object`);
        const { key, operator, values } = expr as Record<string, unknown>;
        if (typeof key !== 'string' || key === '') problems.push(`${at}.key: expected a non-empty string`);
        if (!OPERATORS.includes(operator as (typeof OPERATORS)[number])) {
          problems.push(`${at}.operator: expected one of ${OPERATORS.join(', ')}`);
        }
        const needsValues = operator === 'In' || operator === 'NotIn';
        const isExistence = operator === 'Exists' || operator === 'DoesNotExist';
        if (values !== undefined && (!Array.isArray(values) || values.some((v) => typeof v !== 'string'))) {
          problems.push(`${at}.values: expected a list of strings`);
        } else if (needsValues && (!Array.isArray(values) || values.length === 0)) {
          problems.push(`${at}.values: required and non-empty for operator ${capInput(String(operator))}`);
        } else if (isExistence && Array.isArray(values) && values.length > 0) {
          problems.push(`${at}.values: must be empty for operator ${capInput(String(operator))}`);
        }
        return undefined;
      });
    }
  }
  return problems;
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && !DNS_SUBDOMAIN.test(prefix))
    return `"${capInput(key)}": the prefix is not a DNS subdomain`;
  if (!LABEL_NAME.test(name)) return `"${capInput(key)}" is not a label key`;
  return undefined;
}

/**
 * A label selector in kubectl's `-l` syntax (what the API server takes as `labelSelector`) as a LabelSelector,
 * or why it is not one: `key`, `!key`, `key=value`, `key==value`, `key!=value`, `key in (a,b)`,
 * `key notin (a,b)`, joined by commas; '' selects everything. Checked before any request, so a typo is a
 * clear start-up error instead of a list that fails with 400 forever. `key!=value` is NotIn, as the API
 * server reads it: it also selects objects without the key.
 */
export function parseLabelSelector(selector: string): { selector: LabelSelector } | { problem: string } {
  const text = selector.trim();
  const parsed: Required<Pick<LabelSelector, 'matchExpressions'>> = { matchExpressions: [] };
  if (text === '') return { selector: parsed };
  // Split on the commas that are not inside a value set.
  const requirements: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) {
      requirements.push(text.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) return { problem: `unbalanced parentheses in "${capInput(text)}"` };
  }
  if (depth !== 0) return { problem: `unbalanced parentheses in "${capInput(text)}"` };
  requirements.push(text.slice(start));
  for (const raw of requirements) {
    const requirement = raw.trim();
    const set = /^(\S+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(requirement);
    const compare = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(requirement);
    const exists = /^(!?)([^=!\s(),]+)$/.exec(requirement);
    let next: LabelSelectorRequirement;
    if (set) {
      const values = set[3]!.split(',').map((v) => v.trim());
      next = { key: set[1]!, operator: set[2] === 'in' ? 'In' : 'NotIn', values };
    } else if (compare) {
      next = { key: compare[1]!, operator: compare[2] === '!=' ? 'NotIn' : 'In', values: [compare[3]!] };
    } else if (exists) {
      next = { key: exists[2]!, operator: exists[1] ? 'DoesNotExist' : 'Exists' };
    } else {
      return {
        problem: `"${capInput(requirement)}" is not a requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))`,
      };
    }
    const keyProblem = labelKeyProblem(next.key);
    if (keyProblem) return { problem: keyProblem };
    for (const value of next.values ?? [])
      if (value !== '' && !LABEL_NAME.test(value))
        return { problem: `"${capInput(value)}" is not a label value` };
    parsed.matchExpressions.push(next);
  }
  return { selector: parsed };
}

/** Why `selector` (kubectl's `-l` syntax) is not a label selector, or undefined when it is one. */
export function labelSelectorProblem(selector: string): string | undefined {
  const parsed = parseLabelSelector(selector);
  return 'problem' in parsed ? parsed.problem : undefined;
}
