// The subset of a CRD's structural OpenAPI v3 schema that nodecare's CRDs use: validation and defaulting as
// the API server does them, minus CEL rules (x-kubernetes-validations), which only the real API server
// evaluates (the integration tests apply the CRDs). `unsupportedKeywords` makes a keyword this file does
// not understand fail a test instead of being ignored.

export interface CelRule {
  rule: string;
  message?: string;
  fieldPath?: string;
}

export interface Schema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  format?: string;
  default?: unknown;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  required?: string[];
  minProperties?: number;
  maxProperties?: number;
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  anyOf?: Schema[];
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-validations'?: CelRule[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
}

const KEYWORDS = new Set<string>([
  'type',
  'description',
  'format',
  'default',
  'properties',
  'additionalProperties',
  'required',
  'minProperties',
  'maxProperties',
  'items',
  'minItems',
  'maxItems',
  'enum',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'anyOf',
  'x-kubernetes-int-or-string',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-validations',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
]);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path ? `${path}.${key}` : key;
}

/** Every schema node with its path, depth first (`[]` marks list items, `*` map values). */
function walk(schema: Schema, path = ''): Array<[path: string, node: Schema]> {
  const nodes: Array<[string, Schema]> = [[path, schema]];
  for (const [key, child] of Object.entries(schema.properties ?? {}))
    nodes.push(...walk(child, join(path, key)));
  if (isObject(schema.additionalProperties))
    nodes.push(...walk(schema.additionalProperties, join(path, '*')));
  if (schema.items) nodes.push(...walk(schema.items, `${path}[]`));
  for (const branch of schema.anyOf ?? []) nodes.push(...walk(branch, path));
  return nodes;
}

/** Keywords in the schema that this validator would silently ignore. */
export function unsupportedKeywords(schema: Schema): string[] {
  return walk(schema).flatMap(([path, node]) =>
    Object.keys(node)
      .filter((keyword) => !KEYWORDS.has(keyword))
      .map((keyword) => `${path || '<root>'}: ${keyword}`),
  );
}

function typeProblem(schema: Schema, value: unknown): string | undefined {
  if (schema['x-kubernetes-int-or-string']) {
    return Number.isInteger(value) || typeof value === 'string'
      ? undefined
      : 'expected an integer or a string';
  }
  switch (schema.type) {
    case undefined:
      return undefined;
    case 'object':
      return isObject(value) ? undefined : 'expected an object';
    case 'array':
      return Array.isArray(value) ? undefined : 'expected an array';
    case 'string':
      return typeof value === 'string' ? undefined : 'expected a string';
    case 'integer':
      return Number.isInteger(value) ? undefined : 'expected an integer';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : 'expected a number';
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'expected a boolean';
    default: {
      const unreachable: never = schema.type;
      return `unknown schema type ${String(unreachable)}`;
    }
  }
}

/** Validates `value` against `schema`; every problem as `path: what`. CEL rules are not evaluated. */
export function validate(schema: Schema, value: unknown, path = ''): string[] {
  const at = path || '<root>';
  const typeError = typeProblem(schema, value);
  if (typeError) return [`${at}: ${typeError}`];
  const problems: string[] = [];
  const fail = (message: string): void => {
    problems.push(`${at}: ${message}`);
  };
  if (schema.enum && !schema.enum.includes(value)) fail(`unsupported value ${JSON.stringify(value)}`);
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) fail(`must be >= ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) fail(`must be <= ${schema.maximum}`);
  }
  if (typeof value === 'string') {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) fail(`shorter than ${schema.minLength}`);
    if (schema.maxLength !== undefined && length > schema.maxLength) fail(`longer than ${schema.maxLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) {
      fail(`does not match ${schema.pattern}`);
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems)
      fail(`fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems)
      fail(`more than ${schema.maxItems} items`);
    const { items } = schema;
    if (items) value.forEach((item, i) => problems.push(...validate(items, item, join(path, i))));
  }
  if (isObject(value)) {
    const keys = Object.keys(value);
    if (schema.minProperties !== undefined && keys.length < schema.minProperties) {
      fail(`fewer than ${schema.minProperties} properties`);
    }
    if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) {
      fail(`more than ${schema.maxProperties} properties`);
    }
    for (const field of schema.required ?? []) {
      if (value[field] === undefined) problems.push(`${join(path, field)}: required`);
    }
    const { properties, additionalProperties } = schema;
    const freeForm =
      schema['x-kubernetes-preserve-unknown-fields'] === true ||
      additionalProperties === true ||
      (properties === undefined && additionalProperties === undefined);
    for (const key of keys) {
      const child = properties?.[key] ?? (isObject(additionalProperties) ? additionalProperties : undefined);
      if (child) problems.push(...validate(child, value[key], join(path, key)));
      else if (!freeForm) problems.push(`${join(path, key)}: unknown field`);
    }
  }
  return problems;
}

/** Returns a copy of `value` with the schema's defaults filled in, as the API server does on write. */
export function applyDefaults(schema: Schema, value: unknown): unknown {
  if (Array.isArray(value)) {
    const { items } = schema;
    return items ? value.map((item) => applyDefaults(items, item)) : structuredClone(value);
  }
  if (!isObject(value)) return value;
  const result: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    const childSchema =
      schema.properties?.[key] ??
      (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined);
    result[key] = childSchema ? applyDefaults(childSchema, child) : structuredClone(child);
  }
  for (const [key, child] of Object.entries(schema.properties ?? {})) {
    if (result[key] === undefined && child.default !== undefined) {
      result[key] = applyDefaults(child, structuredClone(child.default));
    }
  }
  return result;
}
