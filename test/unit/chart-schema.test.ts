// The chart's values.schema.json against the code it configures: the extraArgs patterns list exactly the flags
// of nodecare-agent and nodecare-controller (a flag added to an option table must be added there, or Helm
// would refuse it), and the schema describes exactly the values values.yaml has. Helm itself applies the
// schema in test/integration/install-chart.test.ts.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { taintKeyProblem } from '../../api/index.ts';
import { CONTROLLER_OPTIONS } from '../../controller/config-options.ts';

const CHART = join(import.meta.dirname, '..', '..', 'charts', 'nodecare');

interface Schema {
  type?: string | string[];
  pattern?: string;
  anyOf?: Schema[];
  not?: Schema;
  definitions?: Record<string, Schema>;
  properties?: Record<string, Schema>;
  items?: Schema;
}

/**
 * Whether `value` meets `node`, for the keywords the string definitions use (pattern, anyOf, not). Helm
 * applies the whole schema with Go's regexp (RE2); these patterns mean the same in both engines.
 */
function admits(node: Schema, value: string): boolean {
  if (node.pattern !== undefined && !new RegExp(node.pattern, 'u').test(value)) return false;
  if (node.anyOf && !node.anyOf.some((alternative) => admits(alternative, value))) return false;
  if (node.not && admits(node.not, value)) return false;
  return true;
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

  it.each([
    'startup-taint.cluster-autoscaler.kubernetes.io/meta-readiness',
    'status-taint.cluster-autoscaler.kubernetes.io/meta-readiness',
    'ignore-taint.cluster-autoscaler.kubernetes.io/x',
    'example.com/booting',
    'plain',
    'notkubernetes.io/x',
    'kubernetes.io.example.com/x',
    'node.kubernetes.io/not-ready',
    'node-role.kubernetes.io/control-plane',
    'kubernetes.io/arch',
    'k8s.io/x',
    'node.k8s.io/x',
    'cluster-autoscaler.kubernetes.io/x',
    'not a key',
  ])('taints.*Key admits %s exactly when the controller does (issue 50 item 10)', (key) => {
    const taintKey = schema.definitions?.taintKey;
    expect(taintKey).toBeDefined();
    for (const value of ['bootstrapKey', 'runtimeKey'])
      expect(schema.properties?.taints?.properties?.[value]).toEqual({ $ref: '#/definitions/taintKey' });
    expect(admits(taintKey!, key)).toBe(taintKeyProblem(key) === undefined);
  });

  it.each([
    ['/var/lib/kubelet/plugins/ebs.csi.aws.com', true],
    ['/run/a..b', true],
    ['/run/cilium', true],
    ['run/relative', false],
    ['/var/lib/kubelet/../../etc', false],
    ['/run/..', false],
    ['/..', false],
    ['/run/a,b', false],
    ['/run/a\nb', false],
  ])('agent.hostDirectories admits %s: %s (issue 50 item 13)', (path, admitted) => {
    const items = schema.properties?.agent?.properties?.hostDirectories?.items;
    expect(items).toEqual({ $ref: '#/definitions/hostDirectory' });
    expect(admits(schema.definitions!.hostDirectory!, path)).toBe(admitted);
  });

  it.each([
    ['system-node-critical', true],
    ['nodecare.example.com', true],
    ['', true],
    ['Not_A_Name', false],
    ['-leading', false],
    ['trailing.', false],
  ])('priorityClassName admits %j: %s (issue 51 item 2)', (name, admitted) => {
    expect(admits(schema.definitions!.priorityClassName!, name)).toBe(admitted);
  });

  it.each(['agent', 'controller'])(
    '%s: priorityClassName, affinity, podAnnotations and podLabels share one definition (issue 51 item 2)',
    (component) => {
      const properties = schema.properties?.[component]?.properties;
      for (const value of ['priorityClassName', 'affinity', 'podAnnotations', 'podLabels'])
        expect(properties?.[value], value).toEqual({ $ref: `#/definitions/${value}` });
      expect(schema.properties?.imagePullSecrets?.type).toBe('array');
    },
  );

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
