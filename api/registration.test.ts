import { describe, expect, it } from 'vitest';
import { parseExtensionSpec, type ProbeSpec } from './index.ts';
import { annotationSafetyProblems, type AnnotationSafety } from './annotation-safety.ts';
import {
  parseSystemExtension,
  resolveRegistrations,
  restrictConditionType,
  withConfigFile,
  CONFIG_OVER_ANNOTATION_NOTE,
  CONFLICT_LEASE_NOTE,
  SYSTEM_EXTENSION_OVER_CONFIG_NOTE,
  type NodeView,
  type ParsedSystemExtension,
  type Registration,
} from './registration.ts';

const SAFETY: AnnotationSafety = {
  nodeAddresses: ['10.0.0.5', 'fd00::5', 'node-a.internal'],
  allowedPathPrefixes: ['/var/lib/kubelet/plugins', '/var/lib/kubelet/device-plugins/', '/run/nodecare'],
};

function node(labels: Record<string, string> = {}, annotations: Record<string, string> = {}): NodeView {
  return { name: 'node-a', labels, annotations };
}

function sx(name: string, spec: Record<string, unknown>): ParsedSystemExtension {
  return parseSystemExtension({ metadata: { name }, spec });
}

const TCP = { probe: { tcp: { port: 10256 } } };

function required(reg: Registration | undefined): Registration {
  if (!reg) throw new Error('expected the extension to be required');
  return reg;
}

describe('parseSystemExtension', () => {
  it('reads name, selector and spec', () => {
    const parsed = sx('gpu', { ...TCP, nodeSelector: { matchLabels: { gpu: 'true' } } });
    expect(parsed).toMatchObject({
      name: 'gpu',
      selector: { matchLabels: { gpu: 'true' } },
      selectorProblems: [],
      parse: { result: { ok: true } },
    });
  });

  it('treats an absent nodeSelector as the empty selector (every node)', () => {
    expect(sx('gpu', TCP).selector).toEqual({});
  });

  it.each([
    [
      'an invalid nodeSelector',
      'gpu',
      { matchExpressions: [{ key: 'a', operator: 'In' }] },
      'nodeSelector.matchExpressions[0].values: required and non-empty for operator In',
    ],
    [
      'a name that is no DNS label',
      'GPU',
      undefined,
      `name "GPU": expected a DNS label (lowercase letters, digits and '-', at most 63 characters)`,
    ],
    [
      'the reserved name',
      'nodecare-agent',
      undefined,
      `name "nodecare-agent": reserved for the agent's own heartbeat`,
    ],
  ])('applies to no node with %s', (_name, name, nodeSelector, problem) => {
    const parsed = sx(name, { ...TCP, nodeSelector });
    expect(parsed.selector).toBeUndefined();
    expect(parsed.selectorProblems).toEqual([problem]);
    expect(resolveRegistrations(node(), [parsed]).byName.size).toBe(0);
  });

  it('reports a missing spec as an invalid registration, not an exception', () => {
    const parsed = parseSystemExtension({ metadata: { name: 'gpu' } });
    expect(parsed.parse.result).toEqual({
      ok: false,
      problems: ['expected a JSON object with a "probe" field'],
    });
    expect(required(resolveRegistrations(node(), [parsed]).byName.get('gpu')).valid).toBe(false);
  });
});

describe('resolveRegistrations', () => {
  it.each([
    ['empty selector → every node', {}, {}, true],
    ['matchLabels match', { matchLabels: { gpu: 'true' } }, { gpu: 'true' }, true],
    ['matchLabels value differs', { matchLabels: { gpu: 'true' } }, { gpu: 'false' }, false],
    ['matchLabels label missing', { matchLabels: { gpu: 'true' } }, {}, false],
    [
      'In matches',
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] },
      { zone: 'b' },
      true,
    ],
    [
      'In mismatch',
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] },
      { zone: 'c' },
      false,
    ],
    [
      'NotIn on a node without the label',
      { matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['cpu'] }] },
      {},
      true,
    ],
    [
      'NotIn mismatch',
      { matchExpressions: [{ key: 'pool', operator: 'NotIn', values: ['cpu'] }] },
      { pool: 'cpu' },
      false,
    ],
    [
      'Exists',
      { matchExpressions: [{ key: 'nvidia.com/gpu.present', operator: 'Exists' }] },
      { 'nvidia.com/gpu.present': '' },
      true,
    ],
    [
      'DoesNotExist mismatch',
      { matchExpressions: [{ key: 'virtual-kubelet', operator: 'DoesNotExist' }] },
      { 'virtual-kubelet': 'x' },
      false,
    ],
  ])('SystemExtension selector: %s', (_name, nodeSelector, labels, expected) => {
    const { byName } = resolveRegistrations(node(labels), [sx('gpu', { ...TCP, nodeSelector })]);
    expect(byName.has('gpu')).toBe(expected);
    if (expected) {
      expect(byName.get('gpu')).toMatchObject({ name: 'gpu', source: 'systemExtension', valid: true });
    }
  });

  it('registers an extension from a node annotation', () => {
    const { byName } = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/kube-proxy': 'http://127.0.0.1:10256/healthz' }),
      [],
    );
    expect(byName.get('kube-proxy')).toMatchObject({
      source: 'annotation',
      valid: true,
      spec: { probe: { kind: 'http', url: 'http://127.0.0.1:10256/healthz' } },
    });
  });

  it('lets an annotation override a SystemExtension of the same name that allows it', () => {
    const { byName, conflicts } = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/gpu': '{"probe":{"tcp":{"port":9400}},"critical":false}' }),
      [
        sx('gpu', { ...TCP, allowAnnotationOverride: true }),
        sx('csi', { probe: { csi: { socket: '/var/lib/kubelet/plugins/x/csi.sock' } } }),
      ],
    );
    expect(conflicts).toEqual([]);
    expect([...byName.keys()].sort()).toEqual(['csi', 'gpu']);
    expect(byName.get('gpu')).toMatchObject({
      source: 'annotation',
      valid: true,
      policy: { critical: false },
      spec: { probe: { kind: 'tcp', port: 9400 } },
    });
    expect(byName.get('csi')).toMatchObject({ source: 'systemExtension' });
  });

  it('lets an invalid annotation override a valid SystemExtension that allows overrides', () => {
    const { byName } = resolveRegistrations(node({}, { 'extensions.nodecare.io/gpu': 'nonsense' }), [
      sx('gpu', { ...TCP, allowAnnotationOverride: true }),
    ]);
    expect(byName.get('gpu')).toMatchObject({ source: 'annotation', valid: false });
  });

  // Regression, issue 7 item 2: whoever could annotate a node swapped a cluster-wide check for a trivially
  // healthy one.
  it.each([
    ['absent', {}],
    ['false', { allowAnnotationOverride: false }],
    ['invalid (not a boolean)', { allowAnnotationOverride: 'yes' }],
  ])(
    'keeps a SystemExtension whose allowAnnotationOverride is %s in force and reports the annotation as a conflict',
    (_name, override) => {
      const annotations = {
        'extensions.nodecare.io/gpu': 'tcp://127.0.0.1:1',
        'extensions.nodecare.io/own': 'tcp://127.0.0.1:2',
      };
      const gpu = sx('gpu', {
        probe: {
          devicePlugin: { resource: 'nvidia.com/gpu', socket: '/var/lib/kubelet/device-plugins/nvidia.sock' },
        },
        ...override,
      });
      for (const safety of [SAFETY, undefined]) {
        const { byName, conflicts } = resolveRegistrations(node({}, annotations), [gpu], safety);
        expect(byName.get('gpu')).toMatchObject({ name: 'gpu', source: 'systemExtension' });
        expect(byName.get('own')).toMatchObject({ source: 'annotation', valid: true });
        expect(conflicts).toEqual([
          {
            name: 'gpu',
            message:
              'annotation "extensions.nodecare.io/gpu" ignored: SystemExtension "gpu" is in force on this node and does not set spec.allowAnnotationOverride',
          },
        ]);
      }
    },
  );

  it('reports an invalid allowAnnotationOverride as a problem of the SystemExtension', () => {
    expect(sx('gpu', { ...TCP, allowAnnotationOverride: 'yes' }).parse.result).toEqual({
      ok: false,
      problems: ['allowAnnotationOverride: expected true or false, got "yes"'],
    });
  });

  it('reports no conflict for a SystemExtension that does not select the node', () => {
    const { byName, conflicts } = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/gpu': 'tcp://127.0.0.1:1' }),
      [sx('gpu', { ...TCP, nodeSelector: { matchLabels: { gpu: 'true' } } })],
    );
    expect(conflicts).toEqual([]);
    expect(byName.get('gpu')).toMatchObject({ source: 'annotation' });
  });

  it.each(['nodeSelector', 'allowAnnotationOverride'])(
    'rejects %s in an annotation: it belongs to a SystemExtension',
    (field) => {
      const value = JSON.stringify({ ...TCP, [field]: field === 'nodeSelector' ? {} : true });
      const reg = resolveRegistrations(node({}, { 'extensions.nodecare.io/x': value }), []).byName.get('x');
      expect(reg).toMatchObject({ valid: false });
      if (reg && !reg.valid)
        expect(reg.problems).toContain(`${field}: only valid on a SystemExtension, not in a node annotation`);
    },
  );

  it('spec.suspend: the nodes a suspended SystemExtension selects name it; a non-boolean is a problem and suspends nothing', () => {
    const gpuNode = node({ gpu: 'true' });
    const suspended = sx('gpu', { ...TCP, nodeSelector: { matchLabels: { gpu: 'true' } }, suspend: true });
    const other = sx('cni', { ...TCP, suspend: true, nodeSelector: { matchLabels: { cni: 'x' } } });
    expect(resolveRegistrations(gpuNode, [suspended, other]).suspendedBy).toEqual(['gpu']);
    const bad = sx('gpu', { ...TCP, suspend: 'yes' });
    expect(bad.suspend).toBe(false);
    expect(bad.parse.result).toEqual({ ok: false, problems: ['suspend: expected true or false, got "yes"'] });
    expect(resolveRegistrations(gpuNode, [bad]).suspendedBy).toEqual([]);
  });

  it('ignores annotations outside the prefix', () => {
    const annotations = {
      'nodecare.io/bootstrapped-boot-id': 'x',
      'node.alpha.kubernetes.io/ttl': '0',
      'extensions.nodecare.io.evil/gpu': 'tcp://127.0.0.1:1',
    };
    expect(resolveRegistrations(node({}, annotations), [])).toEqual({
      byName: new Map(),
      badAnnotationKeys: [],
      conflicts: [],
      suspendedBy: [],
    });
  });

  it.each([
    ['an empty name', 'extensions.nodecare.io/'],
    ['an uppercase name', 'extensions.nodecare.io/GPU'],
    ['a dotted name', 'extensions.nodecare.io/gpu.plugin'],
    ['a 64-character name', `extensions.nodecare.io/${'x'.repeat(64)}`],
    ['the reserved name', 'extensions.nodecare.io/nodecare-agent'],
  ])('reports an annotation key with %s in badAnnotationKeys', (_name, key) => {
    const resolved = resolveRegistrations(
      node({}, { [key]: 'tcp://127.0.0.1:1', 'extensions.nodecare.io/ok': 'tcp://127.0.0.1:2' }),
      [],
    );
    expect(resolved.badAnnotationKeys).toEqual([key]);
    expect([...resolved.byName.keys()]).toEqual(['ok']);
  });

  it.each([
    [
      'annotation JSON with a bad probe',
      {
        'extensions.nodecare.io/logs':
          '{"critical":false,"conditionType":"ObservabilityComponentsHealthy","probe":{}}',
      },
      [],
    ],
    [
      'SystemExtension with a bad probe',
      {},
      [sx('logs', { critical: false, conditionType: 'ObservabilityComponentsHealthy', probe: { tcp: {} } })],
    ],
  ])(
    '%s: invalid, with its problems, keeping critical:false and the condition type',
    (_name, annotations, sxs) => {
      const reg = required(resolveRegistrations(node({}, annotations), sxs).byName.get('logs'));
      expect(reg.valid).toBe(false);
      expect(reg.policy).toMatchObject({ critical: false, conditionType: 'ObservabilityComponentsHealthy' });
      if (!reg.valid) expect(reg.problems).toHaveLength(1);
    },
  );

  it('applies the rules on what an annotation may ask for in agent and controller alike, only to annotations', () => {
    const exec = { probe: { exec: { command: ['/usr/bin/nvidia-smi'] } } };
    const annotations = { 'extensions.nodecare.io/smi': JSON.stringify(exec) };
    const sxs = [sx('smi-cluster', exec)];
    for (const safety of [SAFETY, undefined]) {
      const { byName } = resolveRegistrations(node({}, annotations), sxs, safety);
      expect(byName.get('smi-cluster')).toMatchObject({ valid: true });
      expect(byName.get('smi')).toMatchObject({
        valid: false,
        problems: [
          'probe.exec: exec probes are accepted only from SystemExtension objects or the agent config file, never from node annotations',
        ],
      });
    }
  });

  it('applies the rules on where an annotation may point only when given (the agent)', () => {
    const annotations = { 'extensions.nodecare.io/x': 'tcp://10.9.9.9:1' };
    expect(resolveRegistrations(node({}, annotations), [], SAFETY).byName.get('x')).toMatchObject({
      valid: false,
    });
    expect(resolveRegistrations(node({}, annotations), []).byName.get('x')).toMatchObject({ valid: true });
  });

  // Regression, issue 7 item 1: the agent's token was readable one bit at a time through a file probe.
  it.each([
    [
      'the token oracle from the issue (file contentRegex)',
      {
        probe: {
          file: { path: '/var/run/secrets/kubernetes.io/serviceaccount/token', contentRegex: '^eyJ[A-M]' },
        },
      },
      "probe.file.contentRegex: not allowed from a node annotation (a match / no-match answer on the Lease would reveal the file's content); use a SystemExtension or the agent config file",
    ],
    [
      'a body regex on a loopback service',
      { probe: { http: { url: 'http://127.0.0.1:10255/pods', bodyRegex: 'password' } } },
      "probe.http.bodyRegex: not allowed from a node annotation (a match / no-match answer on the Lease would reveal the service's response body); use a SystemExtension or the agent config file",
    ],
    [
      'a CA file',
      { probe: { http: { url: 'https://127.0.0.1/', caFile: '/var/lib/kubelet/plugins/ca.pem' } } },
      "probe.http.caFile: not allowed from a node annotation (a match / no-match answer on the Lease would reveal a file's content); use a SystemExtension or the agent config file",
    ],
    [
      // Issue 7 item 17: no regex at all is accepted from an annotation, so none with a backreference or a
      // lookaround (which V8's linear engine cannot run) can reach a probe from there.
      'a regex with a backreference',
      { probe: { http: { url: 'http://127.0.0.1/', bodyRegex: '^(a+)\\1$' } } },
      "probe.http.bodyRegex: not allowed from a node annotation (a match / no-match answer on the Lease would reveal the service's response body); use a SystemExtension or the agent config file",
    ],
  ])('rejects %s from an annotation as an invalid registration naming the field', (_name, spec, problem) => {
    for (const safety of [SAFETY, undefined]) {
      const reg = resolveRegistrations(
        node({}, { 'extensions.nodecare.io/leak': JSON.stringify(spec) }),
        [],
        safety,
      ).byName.get('leak');
      expect(reg).toMatchObject({ source: 'annotation', valid: false, problems: [problem] });
    }
  });

  it('keeps content regexes and CA files for SystemExtensions', () => {
    const spec = {
      probe: { http: { url: 'https://10.0.0.9/', bodyRegex: '(?<=x)(a)\\1', caFile: '/etc/ca.pem' } },
    };
    expect(resolveRegistrations(node(), [sx('web', spec)], SAFETY).byName.get('web')).toMatchObject({
      valid: true,
    });
  });

  it('marks path probes from annotations with the directories the agent must resolve them into', () => {
    const annotations = {
      'extensions.nodecare.io/csi': '{"probe":{"csi":{"socket":"/var/lib/kubelet/plugins/x/csi.sock"}}}',
      'extensions.nodecare.io/sock': 'unix:///run/nodecare/x.sock',
      'extensions.nodecare.io/beat': '{"probe":{"file":{"path":"/run/nodecare/beat"}}}',
      'extensions.nodecare.io/net': 'grpc://127.0.0.1:9000',
    };
    const sxs = [
      sx('dp', { probe: { devicePlugin: { resource: 'example.com/dev', socket: '/opt/dp.sock' } } }),
    ];
    const { byName } = resolveRegistrations(node({}, annotations), sxs, SAFETY);
    const confineTo = (name: string): unknown => {
      const reg = byName.get(name);
      return reg?.valid ? (reg.spec.probe as { confineTo?: unknown }).confineTo : 'invalid';
    };
    expect(['csi', 'sock', 'beat'].map(confineTo)).toEqual([
      SAFETY.allowedPathPrefixes,
      SAFETY.allowedPathPrefixes,
      SAFETY.allowedPathPrefixes,
    ]);
    expect(confineTo('net')).toBeUndefined();
    expect(confineTo('dp')).toBeUndefined();
    const controllerView = resolveRegistrations(node({}, annotations), sxs).byName.get('csi');
    expect(controllerView?.valid && 'confineTo' in controllerView.spec.probe).toBe(false);
  });

  it('reports a path escape in an annotation as an invalid registration', () => {
    const value = '{"probe":{"csi":{"socket":"/var/lib/kubelet/plugins/../../../../etc/shadow"}}}';
    const reg = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/csi': value }),
      [],
      SAFETY,
    ).byName.get('csi');
    expect(reg).toMatchObject({
      valid: false,
      problems: [
        'probe.csi.socket: ".." is not allowed in "/var/lib/kubelet/plugins/../../../../etc/shadow"',
      ],
    });
  });
});

describe('annotationSafetyProblems', () => {
  function probe(raw: Record<string, unknown>): ProbeSpec {
    const { result } = parseExtensionSpec({ probe: raw });
    if (!result.ok) throw new Error(result.problems.join('; '));
    return result.value.probe;
  }
  const notAllowedHost = (field: string, host: string): string =>
    `${field}: target "${host}" is not allowed from a node annotation (only loopback, the node's own addresses or a SystemExtension may name other hosts)`;
  const notAllowedPath = (field: string, path: string): string =>
    `${field}: path "${path}" is not under an allowed directory (/var/lib/kubelet/plugins, /var/lib/kubelet/device-plugins/, /run/nodecare) for a node annotation`;

  it.each([
    ['http to 127.0.0.1', { http: { url: 'http://127.0.0.1:10256/healthz' } }],
    ['http to 127.0.0.5 (all of 127/8 is loopback)', { http: { url: 'http://127.0.0.5:8080/' } }],
    ['http to localhost', { http: { url: 'https://localhost:9443/readyz' } }],
    ['http to [::1]', { http: { url: 'http://[::1]:9090/metrics' } }],
    ["http to the node's own IPv4 address", { http: { url: 'http://10.0.0.5:8080/healthz' } }],
    ["http to the node's own IPv6 address", { http: { url: 'http://[fd00::5]:8080/healthz' } }],
    ["http to the node's own host name", { http: { url: 'http://node-a.internal:8080/healthz' } }],
    [
      'http with a CA file under an allowed directory',
      { http: { url: 'https://127.0.0.1/', caFile: '/run/nodecare/ca.pem' } },
    ],
    ['tcp to loopback', { tcp: { port: 9100 } }],
    ['tcp to ::1', { tcp: { host: '::1', port: 9100 } }],
    ["tcp to the node's address", { tcp: { host: '10.0.0.5', port: 9100 } }],
    ['grpc to loopback', { grpc: { address: '127.0.0.1:50051' } }],
    ['grpc to [::1]', { grpc: { address: '[::1]:50051' } }],
    ['grpc over an allowed unix socket', { grpc: { address: 'unix:///run/nodecare/x.sock' } }],
    [
      'csi socket under the plugins directory',
      { csi: { socket: '/var/lib/kubelet/plugins/ebs.csi.aws.com/csi.sock' } },
    ],
    [
      'device plugin socket under a prefix with a trailing slash',
      {
        devicePlugin: {
          resource: 'nvidia.com/gpu',
          socket: '/var/lib/kubelet/device-plugins/nvidia-gpu.sock',
        },
      },
    ],
    ['file under an allowed directory', { file: { path: '/run/nodecare/heartbeat' } }],
    ['nodeResource (reads the Node object only)', { nodeResource: { resource: 'nvidia.com/gpu' } }],
    ['nodeCondition', { nodeCondition: { type: 'GpuHealthy' } }],
    ['podReady', { podReady: { namespace: 'x', selector: { matchLabels: { a: 'b' } } } }],
    ['process', { process: { name: 'fluent-bit' } }],
    ['host', { host: { diskFreePercent: { mount: '/', min: 10 } } }],
  ])('allows %s', (_name, raw) => {
    expect(annotationSafetyProblems(probe(raw), SAFETY)).toEqual([]);
  });

  it.each([
    [
      'http to another node',
      { http: { url: 'http://10.0.0.6:8080/' } },
      notAllowedHost('probe.http.url', '10.0.0.6'),
    ],
    [
      'http to a remote host name',
      { http: { url: 'https://example.com/healthz' } },
      notAllowedHost('probe.http.url', 'example.com'),
    ],
    [
      'http to the cloud metadata service',
      { http: { url: 'http://169.254.169.254/latest/meta-data/' } },
      notAllowedHost('probe.http.url', '169.254.169.254'),
    ],
    [
      'http to an IPv6 address of another host',
      { http: { url: 'http://[fd00::6]/' } },
      notAllowedHost('probe.http.url', '[fd00::6]'),
    ],
    [
      'tcp to a remote host',
      { tcp: { host: 'db.internal', port: 5432 } },
      notAllowedHost('probe.tcp.host', 'db.internal'),
    ],
    [
      'grpc to a remote host',
      { grpc: { address: 'example.com:443' } },
      notAllowedHost('probe.grpc.address', 'example.com'),
    ],
    [
      'grpc to the container runtime socket',
      { grpc: { address: 'unix:///run/containerd/containerd.sock' } },
      notAllowedPath('probe.grpc.address', '/run/containerd/containerd.sock'),
    ],
    [
      'csi socket in a sibling directory sharing the prefix',
      { csi: { socket: '/var/lib/kubelet/plugins_registry/x.sock' } },
      notAllowedPath('probe.csi.socket', '/var/lib/kubelet/plugins_registry/x.sock'),
    ],
    [
      'device plugin socket outside',
      { devicePlugin: { resource: 'nvidia.com/gpu', socket: '/var/run/docker.sock' } },
      notAllowedPath('probe.devicePlugin.socket', '/var/run/docker.sock'),
    ],
    [
      'file outside',
      { file: { path: '/etc/kubernetes/admin.conf' } },
      notAllowedPath('probe.file.path', '/etc/kubernetes/admin.conf'),
    ],
  ])('rejects %s', (_name, raw, problem) => {
    expect(annotationSafetyProblems(probe(raw), SAFETY)).toEqual([problem]);
  });

  it('rejects a ".." escape even when handed a probe the parser did not see', () => {
    const escape: ProbeSpec = {
      kind: 'devicePlugin',
      resource: 'nvidia.com/gpu',
      socket: '/var/lib/kubelet/device-plugins/../../../../etc/shadow',
      minHealthy: 1,
    };
    expect(annotationSafetyProblems(escape, SAFETY)).toEqual([
      notAllowedPath('probe.devicePlugin.socket', '/var/lib/kubelet/device-plugins/../../../../etc/shadow'),
    ]);
  });

  it('rejects every path when no directory is configured', () => {
    expect(
      annotationSafetyProblems(probe({ csi: { socket: '/var/lib/kubelet/plugins/x.sock' } }), {
        nodeAddresses: [],
        allowedPathPrefixes: [],
      }),
    ).toEqual([
      'probe.csi.socket: path "/var/lib/kubelet/plugins/x.sock" is not under an allowed directory (none configured) for a node annotation',
    ]);
  });

  it('leaves exec to the rules on what an annotation may ask for', () => {
    expect(annotationSafetyProblems(probe({ exec: { command: ['/bin/true'] } }), SAFETY)).toEqual([]);
  });
});

describe('restrictConditionType', () => {
  const annotated = (conditionType: string): Registration =>
    required(
      resolveRegistrations(
        node({}, { 'extensions.nodecare.io/gpu': JSON.stringify({ ...TCP, conditionType }) }),
        [],
      ).byName.get('gpu'),
    );

  it.each([
    'EveryNodeReady',
    'SystemComponentsHealthy',
    'ObservabilityComponentsHealthy',
    'ControlPlaneHealthy',
  ])('lets an annotation feed the Gardener type %s', (type) => {
    const registration = annotated(type);
    expect(restrictConditionType(registration, [])).toBe(registration);
  });

  it('makes an annotation naming another type invalid, feeding EveryNodeReady, unless the admin allows it', () => {
    const registration = annotated('Evil42');
    const restricted = restrictConditionType(registration, []);
    expect(restricted).toMatchObject({
      name: 'gpu',
      source: 'annotation',
      valid: false,
      policy: { conditionType: 'EveryNodeReady', critical: true },
    });
    expect(restricted.valid ? [] : restricted.problems).toEqual([
      'conditionType: "Evil42" is not allowed for a node annotation (allowed: EveryNodeReady, SystemComponentsHealthy, ObservabilityComponentsHealthy, ControlPlaneHealthy; a SystemExtension may name any type)',
    ]);
    expect(restrictConditionType(registration, ['Evil42'])).toBe(registration);
  });

  it('keeps the problems of an already invalid annotation', () => {
    const { byName } = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/gpu': JSON.stringify({ probe: {}, conditionType: 'Custom' }) }),
      [],
    );
    const restricted = restrictConditionType(required(byName.get('gpu')), []);
    expect(restricted.valid ? [] : restricted.problems).toHaveLength(2);
  });

  it('lets SystemExtensions and the config file name any type', () => {
    const { byName } = resolveRegistrations(node(), [sx('gpu', { ...TCP, conditionType: 'GpuHealthy' })]);
    const registration = required(byName.get('gpu'));
    expect(restrictConditionType(registration, [])).toBe(registration);
    const fromConfig: Registration = { ...registration, source: 'config' };
    expect(restrictConditionType(fromConfig, [])).toBe(fromConfig);
  });
});

describe('withConfigFile (what the agent probes)', () => {
  const fromFile = (name: string, port: number): Registration => {
    const parse = parseExtensionSpec({ probe: { tcp: { port } } });
    if (!parse.result.ok) throw new Error('bad test spec');
    return { name, source: 'config', valid: true, spec: parse.result.value, policy: parse.policy };
  };
  const file = new Map([
    ['gpu', fromFile('gpu', 1)],
    ['proxy', fromFile('proxy', 2)],
    ['local', fromFile('local', 3)],
  ]);

  it('keeps a config-file extension over a node annotation of the same name, and says so', () => {
    const resolved = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/gpu': JSON.stringify({ probe: { tcp: { port: 9 } } }) }),
      [],
    );
    const { wanted, notes, conflicts } = withConfigFile(resolved, file);
    expect(wanted.get('gpu')).toBe(file.get('gpu'));
    expect(notes.get('gpu')).toBe(CONFIG_OVER_ANNOTATION_NOTE);
    expect(conflicts).toEqual([
      {
        name: 'gpu',
        message:
          'annotation "extensions.nodecare.io/gpu" ignored: the agent\'s config file defines extension "gpu"',
      },
    ]);
    expect(wanted.get('local')).toBe(file.get('local'));
    expect(notes.has('local')).toBe(false);
  });

  it('lets a SystemExtension in force replace a config-file extension of the same name, and says so', () => {
    const resolved = resolveRegistrations(node({ pool: 'a' }), [
      sx('proxy', { ...TCP, nodeSelector: { matchLabels: { pool: 'a' } } }),
    ]);
    const { wanted, notes, conflicts } = withConfigFile(resolved, file);
    expect(wanted.get('proxy')?.source).toBe('systemExtension');
    expect(notes.get('proxy')).toBe(SYSTEM_EXTENSION_OVER_CONFIG_NOTE);
    expect(conflicts.map((c) => c.message)).toEqual([
      'config-file extension "proxy" ignored: SystemExtension "proxy" is in force on this node',
    ]);
    // A SystemExtension that does not select the node leaves the config-file entry alone.
    const elsewhere = withConfigFile(
      resolveRegistrations(node({ pool: 'b' }), [
        sx('proxy', {
          ...TCP,
          nodeSelector: { matchLabels: { pool: 'a' } },
        }),
      ]),
      file,
    );
    expect(elsewhere.wanted.get('proxy')).toBe(file.get('proxy'));
    expect(elsewhere.conflicts).toEqual([]);
  });

  it('carries the annotation-versus-SystemExtension note as before', () => {
    const resolved = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/kube-proxy': JSON.stringify({ probe: { tcp: { port: 9 } } }) }),
      [sx('kube-proxy', TCP)],
    );
    const { wanted, notes } = withConfigFile(resolved, new Map());
    expect(wanted.get('kube-proxy')?.source).toBe('systemExtension');
    expect(notes.get('kube-proxy')).toBe(CONFLICT_LEASE_NOTE);
  });
});
