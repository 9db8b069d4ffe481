// The manifests against the contract in api/: the SystemExtension CRD's schema must accept and default
// exactly what parseExtensionSpec accepts and defaults, and every example must pass both. (Applying the
// CRDs to a real API server, CEL rules included, is the integration tests' job.)

import { readFileSync, readdirSync } from 'node:fs';
import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import {
  BUILTIN_CONDITION_TYPES,
  EXTENSION_DEFAULTS,
  Enforcement,
  PROBE_KINDS,
  SYSTEM_EXTENSION_FIELDS,
  parseExtensionSpec,
  type ProbeKind,
} from '../../api/index.ts';
import {
  API_GROUP,
  API_VERSION,
  CLUSTER_HEALTH,
  COMPONENT_NAMESPACE,
  DEFAULT_NODE_SELECTOR,
  GROUP_VERSION,
  LEASE_NAMESPACE,
  SYSTEM_EXTENSION,
} from '../../api/names.ts';
import { parseSystemExtension, type SystemExtensionObject } from '../../api/registration.ts';
import { MAX_LEASE_DURATION_SECONDS } from '../../api/lease.ts';
import { AGENT_OPTIONS } from '../../agent/config.ts';
import { matchesSelector, parseLabelSelector, validateSelector } from '../../api/selector.ts';
import { applyDefaults, unsupportedKeywords, validate, type Schema } from './openapi.ts';

const MANIFESTS = new URL('../../manifests/', import.meta.url);
const BASE = new URL('base/', MANIFESTS);
const EXAMPLES = new URL('examples/', MANIFESTS);

function loadYaml(url: URL): unknown[] {
  return loadAll(readFileSync(url, 'utf8')).filter((doc) => doc !== null && doc !== undefined);
}

interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; singular: string; shortNames?: string[] };
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: object };
      additionalPrinterColumns?: Array<{ name: string; type: string; jsonPath: string }>;
      schema: { openAPIV3Schema: Schema };
    }>;
  };
}

function loadCrd(file: string): Crd {
  const [doc] = loadYaml(new URL(`crds/${file}`, BASE));
  return doc as Crd;
}

function child(schema: Schema, ...path: string[]): Schema {
  let node = schema;
  for (const key of path) {
    const next = node.properties?.[key];
    if (!next) throw new Error(`schema has no ${path.join('.')}`);
    node = next;
  }
  return node;
}

const systemExtensionCrd = loadCrd('systemextensions.nodecare.io.yaml');
const clusterHealthCrd = loadCrd('clusterhealths.nodecare.io.yaml');
const ROOT = systemExtensionCrd.spec.versions[0]!.schema.openAPIV3Schema;
const SX_SPEC_SCHEMA = child(ROOT, 'spec');
const PROBE = child(SX_SPEC_SCHEMA, 'probe');

/** A valid probe of each kind with every field set. */
const FULL_PROBES: Record<ProbeKind, Record<string, unknown>> = {
  http: {
    url: 'https://127.0.0.1:9443/healthz',
    expectStatus: '200-299,304',
    bodyRegex: '^ok',
    caFile: '/etc/ssl/certs/ca.pem',
    insecureSkipVerify: false,
  },
  tcp: { host: '127.0.0.1', port: 9100 },
  grpc: { address: '127.0.0.1:50051', service: 'example.v1.Health' },
  csi: { socket: '/var/lib/kubelet/plugins/ebs.csi.aws.com/csi.sock' },
  devicePlugin: { resource: 'nvidia.com/gpu', minHealthy: 2 },
  resourceSlices: {
    driver: 'gpu.nvidia.com',
    pool: 'node-1',
    minDevices: 8,
    attribute: { name: 'productName', value: 'NVIDIA A100' },
  },
  nodeResource: { resource: 'nvidia.com/gpu', min: '4' },
  nodeCondition: { type: 'KernelDeadlock', status: 'False' },
  podReady: {
    namespace: 'logging',
    selector: { matchLabels: { app: 'fluent-bit' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] },
    min: 1,
  },
  exec: { command: ['/usr/bin/nvidia-smi', '-L'] },
  file: { path: '/run/agent/heartbeat', maxAgeSeconds: 60, contentRegex: '^ok$' },
  process: { name: 'fluent-bit', min: 1 },
  host: {
    diskFreePercent: { mount: '/', min: 10 },
    memoryAvailableMiB: { min: 512 },
    gpu: { vendor: 'NVIDIA', min: 1 },
    interfaceUp: { name: 'eth0' },
  },
};

/** Schema nodes of a probe kind that the parser reads field by field (label selectors are atomic). */
function objectNodes(schema: Schema): Array<[string[], Schema]> {
  const nodes: Array<[string[], Schema]> = [];
  const visit = (node: Schema, path: string[]): void => {
    if (node.type !== 'object' || node['x-kubernetes-map-type'] === 'atomic') return;
    nodes.push([path, node]);
    for (const [key, next] of Object.entries(node.properties ?? {})) visit(next, [...path, key]);
  };
  visit(schema, []);
  return nodes;
}

/** Every field of those objects, with its path from the probe body. */
function fieldNodes(schema: Schema): Array<[string[], Schema]> {
  return objectNodes(schema).flatMap(([path, node]) =>
    Object.entries(node.properties ?? {}).map(([key, field]): [string[], Schema] => [[...path, key], field]),
  );
}

function setAt(body: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const copy = structuredClone(body);
  let node: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  const last = path.at(-1) as string;
  if (value === undefined) delete node[last];
  else node[last] = value;
  return copy;
}

/** The fields the schema requires (at every level), and for a minProperties object its first field. */
function minimal(schema: Schema, full: unknown): unknown {
  if (schema.type !== 'object' || schema['x-kubernetes-map-type'] === 'atomic') return full;
  const body = full as Record<string, unknown>;
  const keys = new Set(schema.required ?? []);
  if (keys.size === 0 && schema.minProperties) keys.add(Object.keys(body)[0] as string);
  return Object.fromEntries([...keys].map((key) => [key, minimal(child(schema, key), body[key])]));
}

function parseProbe(kind: ProbeKind, body: unknown) {
  return parseExtensionSpec({ probe: { [kind]: body } });
}

function problemsOf(parse: ReturnType<typeof parseExtensionSpec>): string[] {
  return parse.result.ok ? [] : parse.result.problems;
}

/** The field list of the parser's "unknown field (expected one of …)" problem at `path`. */
function parserFields(raw: unknown, path: string, extraFields: readonly string[] = []): string[] {
  const problems = problemsOf(parseExtensionSpec(raw, extraFields));
  const prefix = `${path ? `${path}.` : ''}zzUnknown: unknown field (expected one of `;
  const problem = problems.find((p) => p.startsWith(prefix));
  if (!problem) throw new Error(`no unknown-field problem at ${path}: ${problems.join('; ')}`);
  return problem.slice(prefix.length, -1).split(', ').sort();
}

describe('CRD names', () => {
  it.each([
    ['SystemExtension', systemExtensionCrd, SYSTEM_EXTENSION.kind, SYSTEM_EXTENSION.plural],
    ['ClusterHealth', clusterHealthCrd, CLUSTER_HEALTH.kind, CLUSTER_HEALTH.plural],
  ] as const)('%s: group, scope, names and version follow api/names.ts', (_name, crd, kind, plural) => {
    expect(crd.metadata.name).toBe(`${plural}.${API_GROUP}`);
    expect(crd.spec).toMatchObject({ group: API_GROUP, scope: 'Cluster', names: { kind, plural } });
    expect(crd.spec.versions).toHaveLength(1);
    expect(crd.spec.versions[0]).toMatchObject({
      name: API_VERSION,
      served: true,
      storage: true,
      subresources: { status: {} },
    });
  });

  it('SystemExtension has the short name sx', () => {
    expect(systemExtensionCrd.spec.names.shortNames).toEqual([SYSTEM_EXTENSION.shortName]);
  });

  it.each([
    ['SystemExtension', systemExtensionCrd],
    ['ClusterHealth', clusterHealthCrd],
  ])('%s schema uses only keywords the unit validator understands', (_name, crd) => {
    expect(unsupportedKeywords(crd.spec.versions[0]!.schema.openAPIV3Schema)).toEqual([]);
  });
});

describe('SystemExtension schema agrees with api/extension.ts', () => {
  it('probe: exactly one of the probe kinds', () => {
    expect(Object.keys(PROBE.properties ?? {}).sort()).toEqual([...PROBE_KINDS].sort());
    expect(PROBE).toMatchObject({ minProperties: 1, maxProperties: 1 });
    expect(SX_SPEC_SCHEMA.required).toEqual(['probe']);
  });

  it.each(Object.entries(EXTENSION_DEFAULTS))('default of %s is %j', (field, value) => {
    expect(child(SX_SPEC_SCHEMA, field).default).toEqual(value);
  });

  it('enforcement enum is Enforce | DryRun', () => {
    expect(child(SX_SPEC_SCHEMA, 'enforcement').enum).toEqual(Object.values(Enforcement));
  });

  it.each([
    'EveryNodeReady',
    'A',
    `A${'b'.repeat(62)}`,
    `A${'b'.repeat(63)}`,
    'everyNodeReady',
    'Every-Node',
    '1Ready',
  ])('conditionType pattern and parser agree on %s', (conditionType) => {
    const pattern = new RegExp(child(SX_SPEC_SCHEMA, 'conditionType').pattern ?? '');
    const parsed = parseExtensionSpec({ probe: { tcp: { port: 1 } }, conditionType }).result.ok;
    expect(pattern.test(conditionType)).toBe(parsed);
  });

  it.each(BUILTIN_CONDITION_TYPES)('built-in condition type %s matches the pattern', (conditionType) => {
    expect(conditionType).toMatch(new RegExp(child(SX_SPEC_SCHEMA, 'conditionType').pattern ?? ''));
  });

  it('spec fields are the ones the parser knows (plus the SystemExtension-only fields)', () => {
    const fields = parserFields({ probe: { tcp: { port: 1 } }, zzUnknown: 1 }, '', SYSTEM_EXTENSION_FIELDS);
    expect(Object.keys(SX_SPEC_SCHEMA.properties ?? {}).sort()).toEqual(fields);
  });

  it('allowAnnotationOverride is a boolean, false unless set, in the schema as in the parser', () => {
    expect(child(SX_SPEC_SCHEMA, 'allowAnnotationOverride')).toMatchObject({
      type: 'boolean',
      default: false,
    });
    const parse = (spec: Record<string, unknown>): boolean =>
      parseSystemExtension({ metadata: { name: 'x' }, spec: { probe: { tcp: { port: 1 } }, ...spec } })
        .allowAnnotationOverride;
    expect([parse({}), parse({ allowAnnotationOverride: true })]).toEqual([false, true]);
  });

  it.each(
    fieldNodes(SX_SPEC_SCHEMA).filter(([path, field]) => path.length === 1 && field.type === 'integer'),
  )('spec.%s: the parser accepts the schema range and rejects just outside it', (path, leaf) => {
    const raw = (value: number) => setAt({ probe: { tcp: { port: 1 } } }, path, value);
    const ok = (value: number) => parseExtensionSpec(raw(value)).result.ok;
    expect([ok(leaf.minimum!), ok(leaf.maximum!), ok(leaf.minimum! - 1), ok(leaf.maximum! + 1)]).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });

  describe.each(PROBE_KINDS)('probe kind %s', (kind) => {
    const schema = child(PROBE, kind);
    const full = FULL_PROBES[kind];

    it('a probe with every field is valid for both', () => {
      expect(validate(schema, full)).toEqual([]);
      expect(problemsOf(parseProbe(kind, full))).toEqual([]);
    });

    it('a probe with only the required fields is valid for both, and the CRD defaults mean what the parser defaults mean', () => {
      const body = minimal(schema, full);
      expect(validate(schema, body)).toEqual([]);
      const defaulted = applyDefaults(schema, body);
      expect(problemsOf(parseProbe(kind, body))).toEqual([]);
      expect(parseProbe(kind, defaulted)).toEqual(parseProbe(kind, body));
    });

    it.each(objectNodes(schema).map(([path]) => [path.join('.') || '(probe body)', path] as const))(
      'field names at %s are the ones the parser knows',
      (_name, path) => {
        const body = path.length === 0 ? { ...full, zzUnknown: 1 } : setAt(full, [...path, 'zzUnknown'], 1);
        const fields = parserFields({ probe: { [kind]: body } }, ['probe', kind, ...path].join('.'));
        const node = objectNodes(schema).find(([p]) => p.join('.') === path.join('.'))![1];
        expect(Object.keys(node.properties ?? {}).sort()).toEqual(fields);
      },
    );

    const leaves = fieldNodes(schema).map(([path, leaf]) => [path.join('.'), path, leaf] as const);

    it.each(leaves)('%s: required in the schema ⇔ required by the parser', (name, path) => {
      const parent = path.length === 1 ? schema : child(schema, ...path.slice(0, -1));
      const required = (parent.required ?? []).includes(path.at(-1) as string);
      const problems = problemsOf(parseProbe(kind, setAt(full, path, undefined)));
      if (required)
        expect(problems).toEqual([expect.stringMatching(new RegExp(`^probe\\.${kind}\\.${name}: `))]);
      else expect(problems).toEqual([]);
    });

    it.each(leaves.filter(([, , leaf]) => leaf.type === 'integer'))(
      '%s: the parser accepts the schema range and rejects just outside it',
      (_name, path, leaf) => {
        const ok = (value: number) => parseProbe(kind, setAt(full, path, value)).result.ok;
        expect([ok(leaf.minimum!), ok(leaf.maximum!), ok(leaf.minimum! - 1), ok(leaf.maximum! + 1)]).toEqual([
          true,
          true,
          false,
          false,
        ]);
      },
    );

    it.each(leaves.filter(([, , leaf]) => leaf.enum !== undefined))(
      '%s: the parser accepts every enum value and nothing else',
      (_name, path, leaf) => {
        for (const value of leaf.enum ?? [])
          expect(parseProbe(kind, setAt(full, path, value)).result.ok).toBe(true);
        expect(parseProbe(kind, setAt(full, path, 'NotInTheEnum')).result.ok).toBe(false);
      },
    );
  });

  it('both label selectors offer exactly the operators the selector validator accepts', () => {
    const operators = (selector: Schema) =>
      child(selector, 'matchExpressions').items?.properties?.operator?.enum;
    const selectors = [child(SX_SPEC_SCHEMA, 'nodeSelector'), child(PROBE, 'podReady', 'selector')];
    for (const selector of selectors) {
      expect(operators(selector)).toEqual(['In', 'NotIn', 'Exists', 'DoesNotExist']);
      for (const operator of operators(selector) ?? []) {
        const values = operator === 'In' || operator === 'NotIn' ? ['x'] : undefined;
        expect(validateSelector({ matchExpressions: [{ key: 'k', operator, values }] }, 's')).toEqual([]);
      }
    }
    expect(child(selectors[0]!, 'matchExpressions')).toEqual(child(selectors[1]!, 'matchExpressions'));
  });

  it('rejects what the parser rejects, where the schema alone can tell', () => {
    const object = (spec: Record<string, unknown>) => ({
      apiVersion: GROUP_VERSION,
      kind: 'SystemExtension',
      metadata: { name: 'x' },
      spec,
    });
    expect(validate(ROOT, object({ probe: {} }))).toEqual(['spec.probe: fewer than 1 properties']);
    expect(validate(ROOT, object({ probe: { tcp: { port: 1 }, http: { url: 'http://x' } } }))).toEqual([
      'spec.probe: more than 1 properties',
    ]);
    expect(validate(ROOT, object({ probe: { tcp: { port: 1 } }, period: 1 }))).toEqual([
      'spec.period: unknown field',
    ]);
    expect(validate(ROOT, object({ probe: { http: { url: 'ftp://x' } } }))).toEqual([
      'spec.probe.http.url: does not match ^https?://',
    ]);
  });
});

describe('ClusterHealth', () => {
  const version = clusterHealthCrd.spec.versions[0]!;
  const root = version.schema.openAPIV3Schema;

  it('is a singleton named cluster, enforced by a CEL rule on metadata.name', () => {
    expect(root['x-kubernetes-validations']).toContainEqual(
      expect.objectContaining({ rule: `self.metadata.name == '${CLUSTER_HEALTH.name}'` }),
    );
  });

  it('conditions carry Gardener status values, keyed by type', () => {
    const conditions = child(root, 'status', 'conditions');
    expect(conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    expect(child(conditions.items!, 'status').enum).toEqual(['True', 'False', 'Unknown', 'Progressing']);
    expect(Object.keys(conditions.items?.properties ?? {}).sort()).toEqual(
      ['codes', 'lastTransitionTime', 'lastUpdateTime', 'message', 'reason', 'status', 'type'].sort(),
    );
  });

  // Headed short (NodesReady for EveryNodeReady, ...) so that the default columns fit 120 (crd-explain.test.ts).
  it.each(BUILTIN_CONDITION_TYPES)('shows the %s condition status in a printer column', (type) => {
    expect(version.additionalPrinterColumns).toContainEqual(
      expect.objectContaining({
        type: 'string',
        jsonPath: `.status.conditions[?(@.type=="${type}")].status`,
      }),
    );
  });

  it('accepts a status as the controller writes it', () => {
    const object = {
      apiVersion: GROUP_VERSION,
      kind: CLUSTER_HEALTH.kind,
      metadata: { name: CLUSTER_HEALTH.name },
      status: {
        observedAt: '2026-01-01T00:00:00Z',
        conditions: [
          {
            type: 'EveryNodeReady',
            status: 'Progressing',
            lastTransitionTime: '2026-01-01T00:00:00Z',
            lastUpdateTime: '2026-01-01T00:00:00Z',
            reason: 'HealthCheckUnsuccessful',
            message: '1) node-a: gpu Unhealthy (ProbeTimeout).',
            codes: ['ERR_CONFIGURATION_PROBLEM'],
          },
        ],
        extensions: [
          {
            name: 'gpu',
            conditionType: 'EveryNodeReady',
            healthy: 9,
            progressing: 0,
            unhealthy: 1,
            unknown: 0,
          },
        ],
      },
    };
    expect(validate(root, object)).toEqual([]);
  });
});

describe('base kustomization', () => {
  const [kustomization] = loadYaml(new URL('kustomization.yaml', BASE)) as Array<{ resources: string[] }>;

  it('lists the namespaces and every CRD', () => {
    const crds = readdirSync(new URL('crds/', BASE)).map((file) => `crds/${file}`);
    expect(kustomization?.resources).toEqual(expect.arrayContaining(['namespaces.yaml', ...crds]));
  });

  it('creates the component and lease namespaces', () => {
    const names = loadYaml(new URL('namespaces.yaml', BASE)).map((doc) => (doc as Crd).metadata.name);
    expect(names).toEqual([COMPONENT_NAMESPACE, LEASE_NAMESPACE]);
  });
});

describe('examples', () => {
  const examples = readdirSync(EXAMPLES)
    .filter((file) => file.endsWith('.yaml'))
    .flatMap((file) =>
      loadYaml(new URL(file, EXAMPLES)).map((doc) => [file, doc as SystemExtensionObject] as const),
    );

  it('cover the device plugin, CSI, HTTP and podReady probe kinds', () => {
    const kinds = examples.map(([, doc]) => Object.keys((doc.spec as { probe: object }).probe)[0]);
    expect(kinds).toEqual(expect.arrayContaining(['devicePlugin', 'csi', 'http', 'podReady']));
  });

  it.each(examples)('%s is valid against the CRD schema', (_file, doc) => {
    expect(doc).toMatchObject({ apiVersion: GROUP_VERSION, kind: SYSTEM_EXTENSION.kind });
    expect(validate(ROOT, doc)).toEqual([]);
  });

  it.each(examples)(
    '%s is accepted by parseSystemExtension, before and after CRD defaulting',
    (_file, doc) => {
      const parsed = parseSystemExtension(doc);
      expect(parsed.selectorProblems).toEqual([]);
      expect(problemsOf(parsed.parse)).toEqual([]);
      const defaulted = parseSystemExtension(applyDefaults(ROOT, doc) as SystemExtensionObject);
      expect(defaulted).toEqual(parsed);
    },
  );
});

describe('which nodes nodecare manages', () => {
  interface Term {
    matchExpressions: Array<{
      key: string;
      operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
      values?: string[];
    }>;
  }
  const [daemonSet] = loadYaml(new URL('agent-daemonset.yaml', BASE)) as Array<{
    spec: {
      template: {
        spec: {
          nodeSelector?: object;
          affinity: { nodeAffinity: Record<string, { nodeSelectorTerms: Term[] }> };
        };
      };
    };
  }>;
  const [deployment] = loadYaml(new URL('controller-deployment.yaml', BASE)) as Array<{
    spec: { template: { spec: { nodeSelector?: Record<string, string> } } };
  }>;
  const terms =
    daemonSet!.spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution!
      .nodeSelectorTerms;
  const agentRuns = (labels: Record<string, string>): boolean =>
    terms.some((term) => matchesSelector({ matchExpressions: term.matchExpressions }, labels));
  const parsed = parseLabelSelector(DEFAULT_NODE_SELECTOR);
  if (!('selector' in parsed)) throw new Error(parsed.problem);
  const managed = (labels: Record<string, string>): boolean => matchesSelector(parsed.selector, labels);

  // What kubelets register with: kubernetes.io/os always; virtual-kubelet providers add type=virtual-kubelet.
  it.each([
    ['a Linux node', { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' }, true],
    ['a Linux GPU node', { 'kubernetes.io/os': 'linux', 'nvidia.com/gpu.present': 'true' }, true],
    ['a Windows node', { 'kubernetes.io/os': 'windows' }, false],
    ['a virtual-kubelet node', { 'kubernetes.io/os': 'linux', type: 'virtual-kubelet' }, false],
  ])('%s: the agent runs there exactly when the controller manages it (%s)', (_what, labels, expected) => {
    expect(agentRuns(labels)).toBe(expected);
    expect(managed(labels)).toBe(expected);
  });

  it('the controller runs on Linux nodes', () => {
    expect(deployment!.spec.template.spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
  });

  it('the bootstrap-taint admission policy skips the nodes the controller does not manage', () => {
    const text = readFileSync(
      new URL('components/bootstrap-taint-at-registration/mutating-admission-policy.yaml', MANIFESTS),
      'utf8',
    );
    expect(text).toMatch(/labels\['kubernetes\.io\/os'\] == 'windows'/);
    expect(text).toMatch(/labels\['type'\] == 'virtual-kubelet'/);
  });
});

describe('the lease admission policy and the controller agree on lease durations (issue 20 item 4)', () => {
  it('admits leaseDurationSeconds up to exactly the longest duration the controller believes', () => {
    const text = readFileSync(new URL('admission-agent-leases.yaml', BASE), 'utf8');
    const bound = /leaseDurationSeconds <= (\d+)/.exec(text)?.[1];
    expect(Number(bound)).toBe(MAX_LEASE_DURATION_SECONDS);
  });
});

describe("the agent's host mounts (issue 20 item 7)", () => {
  const [daemonSet] = loadYaml(new URL('agent-daemonset.yaml', BASE)) as Array<{
    spec: {
      template: {
        spec: {
          volumes: Array<{ name: string; hostPath?: { path: string; type: string } }>;
          containers: Array<{
            volumeMounts: Array<{
              name: string;
              mountPath: string;
              readOnly?: boolean;
              recursiveReadOnly?: string;
            }>;
          }>;
        };
      };
    };
  }>;
  const pod = daemonSet!.spec.template.spec;
  const hostVolumes = pod.volumes.filter((v) => v.hostPath);
  /** The kubelet's Pods API: the agent's own source of pods (issue 23 item 6), never a probe target. */
  const PODS_API = '/var/lib/kubelet/pods-api';

  it("are exactly the agent's default allowed paths, so what annotations may reach is what is mounted for probes; the kubelet Pods API is not mounted by default (issue 50 item 11)", () => {
    expect(hostVolumes.map((v) => v.hostPath!.path).sort()).toEqual(
      [...(AGENT_OPTIONS['allowed-path'].default as string[])].sort(),
    );
    expect(AGENT_OPTIONS['allowed-path'].default as string[]).not.toContain(PODS_API);
    expect(AGENT_OPTIONS['kubelet-pods-api-socket'].default).toBe(`${PODS_API}/pods-api.sock`);
  });

  it("never mount /var/lib/kubelet/plugins (CSI staging: other pods' volume data), /run or /var/lib/kubelet as a whole", () => {
    for (const path of ['/var/lib/kubelet/plugins', '/var/lib/kubelet', '/run', '/var/run'])
      expect(hostVolumes.map((v) => v.hostPath!.path)).not.toContain(path);
  });

  it('are read-only, recursively where the runtime can', () => {
    const mounts = pod.containers[0]!.volumeMounts.filter((m) => hostVolumes.some((v) => v.name === m.name));
    expect(mounts).toHaveLength(hostVolumes.length);
    for (const mount of mounts) {
      expect(mount.readOnly, mount.mountPath).toBe(true);
      expect(mount.recursiveReadOnly, mount.mountPath).toBe('IfPossible');
    }
  });

  it("create no directory on the node but nodecare's own (issue 50 item 11: the kubelet's pods-api once was)", () => {
    for (const volume of hostVolumes)
      expect(volume.hostPath!.type, volume.hostPath!.path).toBe(
        volume.hostPath!.path === '/run/nodecare' ? 'DirectoryOrCreate' : 'Directory',
      );
  });

  it("the component agent-kubelet-pods-api mounts the kubelet's Pods API read-only, type Directory: never created", () => {
    const [component] = loadYaml(
      new URL('../components/agent-kubelet-pods-api/kustomization.yaml', BASE),
    ) as Array<{ patches: Array<{ patch: string }> }>;
    const ops = loadAll(component!.patches[0]!.patch)[0] as Array<{ value: Record<string, unknown> }>;
    expect(ops.map((op) => op.value)).toEqual([
      { name: 'kubelet-pods-api', hostPath: { path: PODS_API, type: 'Directory' } },
      { name: 'kubelet-pods-api', mountPath: PODS_API, readOnly: true, recursiveReadOnly: 'IfPossible' },
    ]);
  });
});
