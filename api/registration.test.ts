import { describe, expect, it } from 'vitest';
import { parseExtensionSpec, type ProbeSpec } from './extension.ts';
import {
  annotationSafetyProblems,
  parseSystemExtension,
  resolveRegistrations,
  type AnnotationSafety,
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

  it('lets an annotation override a SystemExtension of the same name on that node', () => {
    const { byName } = resolveRegistrations(
      node({}, { 'extensions.nodecare.io/gpu': '{"probe":{"tcp":{"port":9400}},"critical":false}' }),
      [sx('gpu', TCP), sx('csi', { probe: { csi: { socket: '/var/lib/kubelet/plugins/x/csi.sock' } } })],
    );
    expect([...byName.keys()].sort()).toEqual(['csi', 'gpu']);
    expect(byName.get('gpu')).toMatchObject({
      source: 'annotation',
      valid: true,
      policy: { critical: false },
      spec: { probe: { kind: 'tcp', port: 9400 } },
    });
    expect(byName.get('csi')).toMatchObject({ source: 'systemExtension' });
  });

  it('lets an invalid annotation override a valid SystemExtension (the node owner asked for it)', () => {
    const { byName } = resolveRegistrations(node({}, { 'extensions.nodecare.io/gpu': 'nonsense' }), [
      sx('gpu', TCP),
    ]);
    expect(byName.get('gpu')).toMatchObject({ source: 'annotation', valid: false });
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

  it('applies the annotation safety rules only to annotations, and only when given', () => {
    const exec = { probe: { exec: { command: ['/usr/bin/nvidia-smi'] } } };
    const annotations = { 'extensions.nodecare.io/smi': JSON.stringify(exec) };
    const sxs = [sx('smi-cluster', exec)];
    const agentView = resolveRegistrations(node({}, annotations), sxs, SAFETY).byName;
    expect(agentView.get('smi-cluster')).toMatchObject({ valid: true });
    expect(agentView.get('smi')).toMatchObject({
      valid: false,
      problems: [
        'probe.exec: exec probes are accepted only from SystemExtension objects or the agent config file, never from node annotations',
      ],
    });
    const controllerView = resolveRegistrations(node({}, annotations), sxs).byName;
    expect(controllerView.get('smi')).toMatchObject({ valid: true });
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
      { devicePlugin: { socket: '/var/lib/kubelet/device-plugins/nvidia-gpu.sock' } },
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
      'exec',
      { exec: { command: ['/bin/true'] } },
      'probe.exec: exec probes are accepted only from SystemExtension objects or the agent config file, never from node annotations',
    ],
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
      'http with a CA file outside the allowed directories',
      { http: { url: 'https://127.0.0.1/', caFile: '/etc/shadow' } },
      notAllowedPath('probe.http.caFile', '/etc/shadow'),
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
      { devicePlugin: { socket: '/var/run/docker.sock' } },
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

  it('reports both the host and the CA file of one http probe', () => {
    expect(
      annotationSafetyProblems(
        probe({ http: { url: 'https://example.com/', caFile: '/etc/ca.pem' } }),
        SAFETY,
      ),
    ).toEqual([
      notAllowedHost('probe.http.url', 'example.com'),
      notAllowedPath('probe.http.caFile', '/etc/ca.pem'),
    ]);
  });
});
