// The chart's values.schema.json against the code it configures: the extraArgs patterns list exactly the flags
// of nodecare-agent and nodecare-controller (a flag added to an option table must be added there, or Helm
// would refuse it), and the schema describes exactly the values values.yaml has. Helm itself applies the
// schema in test/integration/install-chart.test.ts.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { CONTROLLER_OPTIONS } from '../../controller/config.ts';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'nodecare');

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema & { anyOf?: Array<{ pattern?: string }> };
}

const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Schema;
const values = load(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;

/** The flag names a component's extraArgs pattern admits. */
function flagsOf(component: 'agent' | 'controller'): string[] {
  const pattern = schema.properties?.[component]?.properties?.extraArgs?.items?.anyOf?.[0]?.pattern ?? '';
  const alternatives = /^\^--\(no-\)\?\(([^)]*)\)\(=\.\*\)\?\$$/.exec(pattern)?.[1];
  expect(alternatives, `${component}.extraArgs pattern ${pattern}`).toBeDefined();
  return alternatives!.split('|').sort();
}

/** Every key path of an object, objects descended into (arrays and free-form maps are leaves). */
function paths(value: unknown, schemaNode: Schema | undefined, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !schemaNode?.properties)
    return [prefix];
  return Object.entries(value).flatMap(([key, child]) =>
    paths(child, schemaNode.properties?.[key], prefix ? `${prefix}.${key}` : key),
  );
}

describe('charts/nodecare/values.schema.json', () => {
  it.each([
    ['agent', AGENT_OPTIONS],
    ['controller', CONTROLLER_OPTIONS],
  ] as const)('%s.extraArgs admits exactly the flags of its option table', (component, options) => {
    expect(flagsOf(component)).toEqual(Object.keys(options).sort());
  });

  it('describes every value values.yaml has, and nothing values.yaml lacks', () => {
    const described = (path: string): boolean => {
      let node: Schema | undefined = schema;
      for (const key of path.split('.')) node = node?.properties?.[key];
      return node !== undefined;
    };
    for (const path of paths(values, schema)) expect(described(path), path).toBe(true);
    const inValues = (path: string): boolean => {
      let node: unknown = values;
      for (const key of path.split('.')) node = (node as Record<string, unknown> | undefined)?.[key];
      return node !== undefined;
    };
    const schemaPaths = (node: Schema, prefix = ''): string[] =>
      Object.entries(node.properties ?? {}).flatMap(([key, child]) => {
        const path = prefix ? `${prefix}.${key}` : key;
        return child.properties && child.type === 'object' && key !== 'resources'
          ? schemaPaths(child, path)
          : [path];
      });
    for (const path of schemaPaths(schema).filter((p) => p !== 'global'))
      expect(inValues(path), `${path} is in the schema but not in values.yaml`).toBe(true);
  });
});
