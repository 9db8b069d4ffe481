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

/** Renders a selector in kubectl's `-l` syntax, for list calls with a labelSelector. */
export function selectorToString(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    if (operator === 'In') parts.push(`${key} in (${values.join(',')})`);
    else if (operator === 'NotIn') parts.push(`${key} notin (${values.join(',')})`);
    else if (operator === 'Exists') parts.push(key);
    else parts.push(`!${key}`);
  }
  return parts.join(',');
}
