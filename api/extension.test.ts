import { describe, expect, it } from 'vitest';
import {
  BUILTIN_CONDITION_TYPES,
  DEFAULT_POLICY,
  EXTENSION_DEFAULTS,
  PROBE_KINDS,
  MAX_ANNOTATION_VALUE_BYTES,
  parseAnnotationValue,
  parseExtensionSpec,
  validateExtensionName,
  type ProbeKind,
  type ProbeSpec,
  type SpecParse,
} from './index.ts';

const KINDS = PROBE_KINDS.join(', ');
const SPEC_FIELDS =
  'probe, periodSeconds, timeoutSeconds, failureThreshold, successThreshold, startupGraceSeconds, critical, conditionType, enforcement';

function problemsOf(parse: SpecParse): string[] {
  if (parse.result.ok) throw new Error(`expected problems, got a valid spec ${JSON.stringify(parse.result)}`);
  return parse.result.problems;
}

function probeOf(parse: SpecParse): ProbeSpec {
  if (!parse.result.ok) throw new Error(`expected a valid spec, got ${parse.result.problems.join('; ')}`);
  return parse.result.value.probe;
}

/** A table entry's expected problem: the exact text, or a pattern when it embeds an engine's message. */
function problem(expected: string | RegExp): unknown {
  return typeof expected === 'string' ? expected : expect.stringMatching(expected);
}

describe('parseExtensionSpec', () => {
  it('applies every default to a spec that names only a probe', () => {
    expect(parseExtensionSpec({ probe: { tcp: { port: 10256 } } }).result).toEqual({
      ok: true,
      value: { probe: { kind: 'tcp', host: '127.0.0.1', port: 10256 }, ...EXTENSION_DEFAULTS },
    });
  });

  it('keeps every field that is given', () => {
    const spec = {
      probe: { tcp: { host: '::1', port: 80 } },
      periodSeconds: 30,
      timeoutSeconds: 5,
      failureThreshold: 5,
      successThreshold: 2,
      startupGraceSeconds: 0,
      critical: false,
      conditionType: 'ObservabilityComponentsHealthy',
      enforcement: 'DryRun',
    };
    expect(parseExtensionSpec(spec).result).toEqual({
      ok: true,
      value: { ...spec, probe: { kind: 'tcp', host: '::1', port: 80 } },
    });
  });

  /** Per kind: the fewest fields the parser accepts, and the defaults it fills in (a new kind must be added). */
  const MINIMAL_PROBES: Record<ProbeKind, readonly [body: object, defaults: object]> = {
    http: [
      { url: 'http://127.0.0.1:8080/healthz' },
      { expectStatus: [[200, 399]], insecureSkipVerify: false },
    ],
    tcp: [{ port: 9100 }, { host: '127.0.0.1' }],
    grpc: [{ address: '127.0.0.1:50051' }, { service: '' }],
    csi: [{ socket: '/var/lib/kubelet/plugins/csi.example.com/csi.sock' }, {}],
    devicePlugin: [{ resource: 'nvidia.com/gpu' }, { minHealthy: 1 }],
    resourceSlices: [{ driver: 'gpu.example.com' }, { minDevices: 1 }],
    nodeResource: [{ resource: 'nvidia.com/gpu' }, { min: 1 }],
    nodeCondition: [{ type: 'GpuHealthy' }, { status: 'True' }],
    podReady: [{ namespace: 'logging', selector: { matchLabels: { app: 'fluent-bit' } } }, { min: 1 }],
    exec: [{ command: ['/usr/bin/true'] }, {}],
    file: [{ path: '/run/agent/heartbeat' }, {}],
    process: [{ name: 'fluent-bit' }, { min: 1 }],
    host: [{ gpu: {} }, { gpu: { min: 1 } }],
  };

  it.each(PROBE_KINDS.map((kind) => [kind, ...MINIMAL_PROBES[kind]] as const))(
    '%s probe: minimal fields get the probe defaults',
    (kind, body, defaults) => {
      expect(probeOf(parseExtensionSpec({ probe: { [kind]: body } }))).toEqual({
        kind,
        ...body,
        ...defaults,
      });
    },
  );

  it.each([
    [
      'expectStatus list and range',
      { http: { url: 'https://x', expectStatus: '200-299, 304' } },
      {
        expectStatus: [
          [200, 299],
          [304, 304],
        ],
      },
    ],
    [
      'expectStatus as an integer',
      { http: { url: 'https://x', expectStatus: 204 } },
      { expectStatus: [[204, 204]] },
    ],
    [
      'expectStatus as a list (annotation JSON)',
      { http: { url: 'https://x', expectStatus: [200, '500-503'] } },
      {
        expectStatus: [
          [200, 200],
          [500, 503],
        ],
      },
    ],
    [
      'unix:// socket is read as its path',
      { csi: { socket: 'unix:///var/lib/kubelet/plugins/x/csi.sock' } },
      { socket: '/var/lib/kubelet/plugins/x/csi.sock' },
    ],
    [
      'grpc over a unix socket',
      { grpc: { address: 'unix:///run/x.sock', service: 'x.v1' } },
      { address: 'unix:///run/x.sock', service: 'x.v1' },
    ],
    ['grpc to a bracketed IPv6 address', { grpc: { address: '[::1]:50051' } }, { address: '[::1]:50051' }],
    [
      'nodeResource min as a binary quantity',
      { nodeResource: { resource: 'hugepages-2Mi', min: '1Gi' } },
      { min: 2 ** 30 },
    ],
    [
      'nodeResource min as a milli quantity',
      { nodeResource: { resource: 'cpu', min: '500m' } },
      { min: 0.5 },
    ],
    ['nodeResource min 0', { nodeResource: { resource: 'x', min: 0 } }, { min: 0 }],
    [
      'nodeCondition status False',
      { nodeCondition: { type: 'KernelDeadlock', status: 'False' } },
      { status: 'False' },
    ],
    [
      'file age and content',
      { file: { path: '/run/hb', maxAgeSeconds: 60, contentRegex: '^ok$' } },
      { maxAgeSeconds: 60, contentRegex: '^ok$' },
    ],
    [
      'every host check',
      {
        host: {
          diskFreePercent: { mount: '/', min: 10 },
          memoryAvailableMiB: { min: 512 },
          gpu: { vendor: 'NVIDIA', min: 2 },
          interfaceUp: { name: 'eth0' },
        },
      },
      {
        diskFreePercent: { mount: '/', min: 10 },
        memoryAvailableMiB: { min: 512 },
        gpu: { vendor: 'NVIDIA', min: 2 },
        interfaceUp: { name: 'eth0' },
      },
    ],
  ])('accepts %s', (_name, probe, expected) => {
    expect(probeOf(parseExtensionSpec({ probe }))).toMatchObject(expected);
  });

  it.each<[string, Record<string, unknown>, string | RegExp]>([
    // spec fields
    ['periodSeconds 0', { periodSeconds: 0 }, 'periodSeconds: expected an integer from 1 to 3600, got 0'],
    [
      'periodSeconds above 3600',
      { periodSeconds: 3601 },
      'periodSeconds: expected an integer from 1 to 3600, got 3601',
    ],
    [
      'periodSeconds not an integer',
      { periodSeconds: 1.5 },
      'periodSeconds: expected an integer from 1 to 3600, got 1.5',
    ],
    [
      'periodSeconds as a string',
      { periodSeconds: '10' },
      'periodSeconds: expected an integer from 1 to 3600, got "10"',
    ],
    [
      'timeoutSeconds above 300',
      { timeoutSeconds: 301 },
      'timeoutSeconds: expected an integer from 1 to 300, got 301',
    ],
    [
      'failureThreshold 0',
      { failureThreshold: 0 },
      'failureThreshold: expected an integer from 1 to 1000, got 0',
    ],
    [
      'failureThreshold above 1000',
      { failureThreshold: 1001 },
      'failureThreshold: expected an integer from 1 to 1000, got 1001',
    ],
    [
      'successThreshold 0',
      { successThreshold: 0 },
      'successThreshold: expected an integer from 1 to 1000, got 0',
    ],
    [
      'startupGraceSeconds negative',
      { startupGraceSeconds: -1 },
      'startupGraceSeconds: expected an integer from 0 to 86400, got -1',
    ],
    [
      'startupGraceSeconds above a day',
      { startupGraceSeconds: 86_401 },
      'startupGraceSeconds: expected an integer from 0 to 86400, got 86401',
    ],
    ['critical as a string', { critical: 'yes' }, 'critical: expected true or false, got "yes"'],
    [
      'conditionType not PascalCase',
      { conditionType: 'everyNodeReady' },
      'conditionType: expected a PascalCase condition type, got "everyNodeReady"',
    ],
    [
      'conditionType too long',
      { conditionType: `A${'b'.repeat(63)}` },
      `conditionType: expected a PascalCase condition type, got "A${'b'.repeat(63)}"`,
    ],
    ['conditionType empty', { conditionType: '' }, 'conditionType: expected a non-empty string'],
    ['enforcement unknown', { enforcement: 'Audit' }, 'enforcement: expected Enforce or DryRun, got "Audit"'],
    ['unknown spec field', { period: 10 }, `period: unknown field (expected one of ${SPEC_FIELDS})`],
    [
      'nodeSelector outside a SystemExtension',
      { nodeSelector: {} },
      `nodeSelector: unknown field (expected one of ${SPEC_FIELDS})`,
    ],
  ])('%s → problem with its field path', (_name, fields, expected) => {
    expect(problemsOf(parseExtensionSpec({ probe: { tcp: { port: 80 } }, ...fields }))).toEqual([
      problem(expected),
    ]);
  });

  it.each<[string, unknown, string | RegExp]>([
    // probe: exactly one kind
    ['no probe', undefined, 'probe: required'],
    ['probe not an object', 'http://127.0.0.1', 'probe: expected an object'],
    ['probe with no kind', {}, `probe: expected exactly one probe kind (one of ${KINDS}), got none`],
    [
      'probe with two kinds',
      { tcp: { port: 1 }, http: { url: 'http://x' } },
      `probe: expected exactly one probe kind (one of ${KINDS}), got tcp, http`,
    ],
    ['unknown probe kind', { ping: {} }, `probe.ping: unknown probe kind (expected one of ${KINDS})`],
    ['probe kind that is not an object', { tcp: null }, 'probe.tcp: expected an object'],
    // http
    ['http without url', { http: {} }, 'probe.http.url: required'],
    [
      'http url with another scheme',
      { http: { url: 'ftp://x/y' } },
      'probe.http.url: expected an http:// or https:// URL, got "ftp://x/y"',
    ],
    [
      'http url that is no URL',
      { http: { url: 'localhost:8080' } },
      'probe.http.url: expected an http:// or https:// URL, got "localhost:8080"',
    ],
    [
      'http url with credentials',
      { http: { url: 'http://u:p@127.0.0.1/' } },
      'probe.http.url: credentials in the URL are not allowed',
    ],
    ['http url not a string', { http: { url: 8080 } }, 'probe.http.url: expected a string'],
    [
      'expectStatus open range',
      { http: { url: 'http://x', expectStatus: '200-' } },
      'probe.http.expectStatus: expected status codes or ranges such as "200-399" or "200,204", got "200-"',
    ],
    [
      'expectStatus reversed range',
      { http: { url: 'http://x', expectStatus: '399-200' } },
      'probe.http.expectStatus: expected status codes or ranges such as "200-399" or "200,204", got "399-200"',
    ],
    [
      'expectStatus above 599',
      { http: { url: 'http://x', expectStatus: 600 } },
      'probe.http.expectStatus: expected status codes or ranges such as "200-399" or "200,204", got 600',
    ],
    [
      'expectStatus class',
      { http: { url: 'http://x', expectStatus: '2xx' } },
      'probe.http.expectStatus: expected status codes or ranges such as "200-399" or "200,204", got "2xx"',
    ],
    [
      'expectStatus empty list',
      { http: { url: 'http://x', expectStatus: [] } },
      'probe.http.expectStatus: expected at least one status code or range, got []',
    ],
    [
      'bodyRegex invalid',
      { http: { url: 'http://x', bodyRegex: '(' } },
      /^probe\.http\.bodyRegex: invalid regular expression \(.+\)$/,
    ],
    [
      'bodyRegex too long',
      { http: { url: 'http://x', bodyRegex: 'a'.repeat(513) } },
      'probe.http.bodyRegex: regular expression longer than 512',
    ],
    [
      'caFile relative',
      { http: { url: 'https://x', caFile: 'ca.pem' } },
      'probe.http.caFile: expected an absolute path, got "ca.pem"',
    ],
    [
      'insecureSkipVerify as a string',
      { http: { url: 'https://x', insecureSkipVerify: 'true' } },
      'probe.http.insecureSkipVerify: expected true or false, got "true"',
    ],
    [
      'unknown http field',
      { http: { url: 'http://x', headers: {} } },
      'probe.http.headers: unknown field (expected one of url, expectStatus, bodyRegex, caFile, insecureSkipVerify)',
    ],
    // tcp
    ['tcp without port', { tcp: {} }, 'probe.tcp.port: required'],
    ['tcp port 0', { tcp: { port: 0 } }, 'probe.tcp.port: expected an integer from 1 to 65535, got 0'],
    [
      'tcp port above 65535',
      { tcp: { port: 65_536 } },
      'probe.tcp.port: expected an integer from 1 to 65535, got 65536',
    ],
    ['tcp host not a string', { tcp: { host: 127, port: 80 } }, 'probe.tcp.host: expected a string'],
    ['tcp host empty', { tcp: { host: '', port: 80 } }, 'probe.tcp.host: expected a non-empty string'],
    // grpc
    ['grpc without address', { grpc: {} }, 'probe.grpc.address: required'],
    [
      'grpc address without port',
      { grpc: { address: 'localhost' } },
      'probe.grpc.address: expected "host:port" or "unix:///path", got "localhost"',
    ],
    [
      'grpc address with a bad port',
      { grpc: { address: 'localhost:70000' } },
      'probe.grpc.address: expected "host:port" or "unix:///path", got "localhost:70000"',
    ],
    [
      'grpc relative unix socket',
      { grpc: { address: 'unix://run/x.sock' } },
      'probe.grpc.address: expected an absolute path, got "unix://run/x.sock"',
    ],
    [
      'grpc service not a string',
      { grpc: { address: 'localhost:1', service: 1 } },
      'probe.grpc.service: expected a string',
    ],
    // csi and devicePlugin
    ['csi without socket', { csi: {} }, 'probe.csi.socket: required'],
    [
      'csi relative socket',
      { csi: { socket: 'csi.sock' } },
      'probe.csi.socket: expected an absolute path, got "csi.sock"',
    ],
    [
      'csi socket escaping with ..',
      { csi: { socket: '/var/lib/kubelet/plugins/../../../etc/shadow' } },
      'probe.csi.socket: ".." is not allowed in "/var/lib/kubelet/plugins/../../../etc/shadow"',
    ],
    [
      'devicePlugin without resource (the old socket-only form)',
      { devicePlugin: { socket: '/var/lib/kubelet/device-plugins/nvidia-gpu.sock' } },
      'probe.devicePlugin.resource: required',
    ],
    [
      'devicePlugin resource without a domain',
      { devicePlugin: { resource: 'gpu' } },
      'probe.devicePlugin.resource: expected the extended resource the plugin registers with the kubelet, a domain-prefixed name such as "nvidia.com/gpu", got "gpu"',
    ],
    [
      'devicePlugin relative socket',
      { devicePlugin: { resource: 'nvidia.com/gpu', socket: 'nvidia.sock' } },
      'probe.devicePlugin.socket: expected an absolute path, got "nvidia.sock"',
    ],
    [
      'devicePlugin minHealthy 0',
      { devicePlugin: { resource: 'nvidia.com/gpu', minHealthy: 0 } },
      'probe.devicePlugin.minHealthy: expected an integer from 1 to 100000, got 0',
    ],
    // nodeResource, nodeCondition
    ['nodeResource without resource', { nodeResource: {} }, 'probe.nodeResource.resource: required'],
    [
      'nodeResource negative min',
      { nodeResource: { resource: 'x', min: '-1' } },
      'probe.nodeResource.min: expected a non-negative number or quantity such as "2" or "8Gi", got "-1"',
    ],
    [
      'nodeResource min not a quantity',
      { nodeResource: { resource: 'x', min: '8GB' } },
      'probe.nodeResource.min: expected a non-negative number or quantity such as "2" or "8Gi", got "8GB"',
    ],
    ['nodeCondition without type', { nodeCondition: {} }, 'probe.nodeCondition.type: required'],
    [
      'nodeCondition status unknown',
      { nodeCondition: { type: 'Ready', status: 'Maybe' } },
      'probe.nodeCondition.status: expected True, False or Unknown, got "Maybe"',
    ],
    // podReady
    [
      'podReady without namespace',
      { podReady: { selector: { matchLabels: { a: 'b' } } } },
      'probe.podReady.namespace: required',
    ],
    [
      'podReady without selector',
      { podReady: { namespace: 'x' } },
      'probe.podReady.selector: required (a label selector with matchLabels/matchExpressions)',
    ],
    [
      'podReady null selector',
      { podReady: { namespace: 'x', selector: null } },
      'probe.podReady.selector: required (a label selector with matchLabels/matchExpressions)',
    ],
    [
      'podReady empty selector',
      { podReady: { namespace: 'x', selector: {} } },
      'probe.podReady.selector: must not be empty (it would match every pod on the node)',
    ],
    [
      'podReady bad operator',
      { podReady: { namespace: 'x', selector: { matchExpressions: [{ key: 'a', operator: 'Has' }] } } },
      'probe.podReady.selector.matchExpressions[0].operator: expected one of In, NotIn, Exists, DoesNotExist',
    ],
    [
      'podReady selector with matchFields',
      { podReady: { namespace: 'x', selector: { matchLabels: { a: 'b' }, matchFields: [] } } },
      'probe.podReady.selector.matchFields: unknown field',
    ],
    [
      'podReady min above 10000',
      { podReady: { namespace: 'x', selector: { matchLabels: { a: 'b' } }, min: 10_001 } },
      'probe.podReady.min: expected an integer from 1 to 10000, got 10001',
    ],
    // exec
    [
      'exec with an empty command',
      { exec: { command: [] } },
      'probe.exec.command: expected a non-empty list of strings (argv; no shell is used)',
    ],
    [
      'exec with a shell line',
      { exec: { command: 'test -f /x' } },
      'probe.exec.command: expected a non-empty list of strings (argv; no shell is used)',
    ],
    [
      'exec with a relative command',
      { exec: { command: ['test', '-f', '/x'] } },
      'probe.exec.command: command[0] must be an absolute path, got "test"',
    ],
    // file, process
    [
      'file relative path',
      { file: { path: 'run/hb' } },
      'probe.file.path: expected an absolute path, got "run/hb"',
    ],
    [
      'file maxAgeSeconds 0',
      { file: { path: '/run/hb', maxAgeSeconds: 0 } },
      'probe.file.maxAgeSeconds: expected an integer from 1 to 31536000, got 0',
    ],
    [
      'file contentRegex invalid',
      { file: { path: '/run/hb', contentRegex: '[' } },
      /^probe\.file\.contentRegex: invalid regular expression \(.+\)$/,
    ],
    ['process without name', { process: {} }, 'probe.process.name: required'],
    [
      'process min 0',
      { process: { name: 'x', min: 0 } },
      'probe.process.min: expected an integer from 1 to 100000, got 0',
    ],
    // host
    [
      'host with no check',
      { host: {} },
      'probe.host: expected at least one of diskFreePercent, memoryAvailableMiB, gpu, interfaceUp',
    ],
    [
      'host disk without min',
      { host: { diskFreePercent: { mount: '/' } } },
      'probe.host.diskFreePercent.min: required (percent from 0 to 100)',
    ],
    [
      'host disk above 100%',
      { host: { diskFreePercent: { mount: '/', min: 101 } } },
      'probe.host.diskFreePercent.min: expected an integer from 0 to 100, got 101',
    ],
    [
      'host disk without mount',
      { host: { diskFreePercent: { min: 10 } } },
      'probe.host.diskFreePercent.mount: required',
    ],
    [
      'host memory without min',
      { host: { memoryAvailableMiB: {} } },
      'probe.host.memoryAvailableMiB.min: required (MiB)',
    ],
    [
      'host gpu min 0',
      { host: { gpu: { min: 0 } } },
      'probe.host.gpu.min: expected an integer from 1 to 1024, got 0',
    ],
    ['host gpu not an object', { host: { gpu: 'nvidia' } }, 'probe.host.gpu: expected an object'],
    [
      'host gpu unknown field',
      { host: { gpu: { model: 'A100' } } },
      'probe.host.gpu.model: unknown field (expected one of vendor, min)',
    ],
    ['host interface without name', { host: { interfaceUp: {} } }, 'probe.host.interfaceUp.name: required'],
  ])('%s → problem with its field path', (_name, probe, expected) => {
    expect(problemsOf(parseExtensionSpec({ probe }))).toEqual([problem(expected)]);
  });

  it('rejects an exec probe whose timeout exceeds its period', () => {
    const spec = { probe: { exec: { command: ['/bin/true'] } }, periodSeconds: 5, timeoutSeconds: 10 };
    expect(problemsOf(parseExtensionSpec(spec))).toEqual([
      'timeoutSeconds: must not exceed periodSeconds (5) for exec probes',
    ]);
  });

  it('reports every problem at once', () => {
    const parse = parseExtensionSpec({
      probe: { http: { url: 'ftp://x', insecureSkipVerify: 'no' } },
      periodSeconds: 0,
      critical: 'yes',
      enforcement: 'Audit',
      colour: 'blue',
    });
    expect(problemsOf(parse)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^colour: unknown field/),
        'probe.http.url: expected an http:// or https:// URL, got "ftp://x"',
        'probe.http.insecureSkipVerify: expected true or false, got "no"',
        'periodSeconds: expected an integer from 1 to 3600, got 0',
        'critical: expected true or false, got "yes"',
        'enforcement: expected Enforce or DryRun, got "Audit"',
      ]),
    );
    expect(problemsOf(parse)).toHaveLength(6);
  });

  it.each([
    ['null', null],
    ['an array', [{ probe: {} }]],
    ['a string', 'http://127.0.0.1'],
    ['a number', 42],
  ])('rejects %s as a whole', (_name, raw) => {
    expect(parseExtensionSpec(raw)).toEqual({
      policy: DEFAULT_POLICY,
      result: { ok: false, problems: ['expected a JSON object with a "probe" field'] },
    });
  });

  it('tolerates the extra fields it is told about (a SystemExtension nodeSelector)', () => {
    const parse = parseExtensionSpec({ probe: { tcp: { port: 1 } }, nodeSelector: { x: 1 } }, [
      'nodeSelector',
    ]);
    expect(parse.result.ok).toBe(true);
  });

  it('reads the policy best-effort when the probe is invalid', () => {
    const parse = parseExtensionSpec({
      probe: { gpu: {} },
      critical: false,
      conditionType: 'SystemComponentsHealthy',
      enforcement: 'DryRun',
      startupGraceSeconds: 60,
    });
    expect(parse.result.ok).toBe(false);
    expect(parse.policy).toEqual({
      critical: false,
      conditionType: 'SystemComponentsHealthy',
      enforcement: 'DryRun',
      startupGraceSeconds: 60,
    });
  });

  it('falls back to the default for each policy field that is itself invalid', () => {
    const parse = parseExtensionSpec({
      probe: {},
      critical: 'no',
      conditionType: 'lower',
      enforcement: 'Off',
      startupGraceSeconds: -5,
    });
    expect(parse.policy).toEqual(DEFAULT_POLICY);
  });

  it.each(BUILTIN_CONDITION_TYPES)('accepts the built-in condition type %s', (conditionType) => {
    expect(parseExtensionSpec({ probe: { tcp: { port: 1 } }, conditionType }).result.ok).toBe(true);
  });
});

describe('parseAnnotationValue', () => {
  it.each([
    {
      name: 'ESC in an unknown key is escaped and the key quoted (regression: echoed unquoted)',
      key: 'x\u001b[2J',
      problem: '"x\\u001b[2J": unknown field',
    },
    {
      name: 'a key that poses as message text is quoted',
      key: 'ok; probe.tcp.port',
      problem: '"ok; probe.tcp.port": unknown field',
    },
    {
      name: 'C1 and bidi controls in an unknown key are escaped',
      key: '\u009b31m\u202e',
      problem: '"\\u009b31m\\u202e": unknown field',
    },
    { name: 'a plain unknown key stays readable', key: 'period', problem: 'period: unknown field' },
  ])('$name', ({ key, problem }) => {
    const parse = parseAnnotationValue(JSON.stringify({ probe: { tcp: { port: 1 } }, [key]: 1 }));
    expect(parse.result.ok).toBe(false);
    const problems = parse.result.ok ? [] : parse.result.problems;
    expect(problems).toEqual([
      expect.stringMatching(new RegExp(`^${problem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`)),
    ]);
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    expect(problems.join('')).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
  });

  const withDefaults = (probe: ProbeSpec): SpecParse => ({
    policy: DEFAULT_POLICY,
    result: { ok: true, value: { probe, ...EXTENSION_DEFAULTS } },
  });

  it.each<[string, string, ProbeSpec]>([
    [
      'http://',
      'http://127.0.0.1:10256/healthz',
      {
        kind: 'http',
        url: 'http://127.0.0.1:10256/healthz',
        expectStatus: [[200, 399]],
        insecureSkipVerify: false,
      },
    ],
    [
      'https://',
      'https://localhost:9443/readyz',
      {
        kind: 'http',
        url: 'https://localhost:9443/readyz',
        expectStatus: [[200, 399]],
        insecureSkipVerify: false,
      },
    ],
    ['tcp://host:port', 'tcp://127.0.0.1:9100', { kind: 'tcp', host: '127.0.0.1', port: 9100 }],
    ['tcp:// to IPv6 loopback', 'tcp://[::1]:9100', { kind: 'tcp', host: '::1', port: 9100 }],
    ['grpc://host:port', 'grpc://127.0.0.1:50051', { kind: 'grpc', address: '127.0.0.1:50051', service: '' }],
    [
      'unix:///path (gRPC health)',
      'unix:///var/lib/kubelet/plugins/x/csi.sock',
      { kind: 'grpc', address: 'unix:///var/lib/kubelet/plugins/x/csi.sock', service: '' },
    ],
    [
      'shorthand with surrounding whitespace',
      '  tcp://localhost:80\n',
      { kind: 'tcp', host: 'localhost', port: 80 },
    ],
  ])('shorthand %s → that probe with all defaults', (_name, value, probe) => {
    expect(parseAnnotationValue(value)).toEqual(withDefaults(probe));
  });

  it.each<[string, string, string]>([
    ['tcp:// without port', 'tcp://localhost', 'shorthand: expected tcp://host:port, got "tcp://localhost"'],
    [
      'tcp:// with a bad port',
      'tcp://localhost:99999',
      'shorthand: expected tcp://host:port, got "tcp://localhost:99999"',
    ],
    [
      'grpc:// without port',
      'grpc://localhost',
      'probe.grpc.address: expected "host:port" or "unix:///path", got "localhost"',
    ],
    [
      'unix:// relative',
      'unix://run/x.sock',
      'probe.grpc.address: expected an absolute path, got "unix://run/x.sock"',
    ],
    [
      'unix:// escaping with ..',
      'unix:///run/../etc/x.sock',
      'probe.grpc.address: ".." is not allowed in "unix:///run/../etc/x.sock"',
    ],
    [
      'http:// that is no URL',
      'http://',
      'probe.http.url: expected an http:// or https:// URL, got "http://"',
    ],
    [
      'another scheme',
      'ftp://x',
      'value: expected JSON (starting with "{") or a shorthand URL (http://, https://, tcp://host:port, grpc://host:port, unix:///path), got "ftp://x"',
    ],
    [
      'host:port without a scheme',
      'localhost:80',
      'value: expected JSON (starting with "{") or a shorthand URL (http://, https://, tcp://host:port, grpc://host:port, unix:///path), got "localhost:80"',
    ],
    [
      'an empty value',
      '',
      'value: expected JSON (starting with "{") or a shorthand URL (http://, https://, tcp://host:port, grpc://host:port, unix:///path), got ""',
    ],
  ])('shorthand %s → problem', (_name, value, expected) => {
    expect(parseAnnotationValue(value)).toEqual({
      policy: DEFAULT_POLICY,
      result: { ok: false, problems: [expected] },
    });
  });

  it('reads JSON as a spec', () => {
    const value = JSON.stringify({ probe: { process: { name: 'fluent-bit' } }, critical: false });
    expect(parseAnnotationValue(value)).toEqual(
      parseExtensionSpec({ probe: { process: { name: 'fluent-bit' } }, critical: false }),
    );
    expect(parseAnnotationValue(value).policy.critical).toBe(false);
  });

  it('reports JSON problems with their field paths and keeps the best-effort policy', () => {
    const parse = parseAnnotationValue('{"probe":{"tcp":{"port":0}},"critical":false}');
    expect(problemsOf(parse)).toEqual(['probe.tcp.port: expected an integer from 1 to 65535, got 0']);
    expect(parse.policy.critical).toBe(false);
  });

  it.each(['{"probe":', '{probe: {}}', "{'probe':{}}"])('bad JSON %s → one problem naming it', (value) => {
    const parse = parseAnnotationValue(value);
    expect(problemsOf(parse)).toEqual([expect.stringMatching(/^value is not valid JSON \(.+\)$/)]);
    expect(parse.policy).toEqual(DEFAULT_POLICY);
  });

  it('rejects a nodeSelector in an annotation and says why', () => {
    const parse = parseAnnotationValue(
      '{"probe":{"tcp":{"port":80}},"nodeSelector":{"matchLabels":{"a":"b"}}}',
    );
    expect(problemsOf(parse)).toContain(
      'nodeSelector: only valid on a SystemExtension, not in a node annotation',
    );
  });
});

describe('validateExtensionName', () => {
  it.each(['gpu', 'csi-ebs', 'a', '0', 'x'.repeat(63)])('accepts the DNS label %s', (name) => {
    expect(validateExtensionName(name)).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['uppercase', 'GPU'],
    ['a dot', 'gpu.plugin'],
    ['a leading dash', '-gpu'],
    ['a trailing dash', 'gpu-'],
    ['64 characters', 'x'.repeat(64)],
  ])('rejects a name with %s', (_name, name) => {
    expect(validateExtensionName(name)).toBe(
      `name "${name}": expected a DNS label (lowercase letters, digits and '-', at most 63 characters)`,
    );
  });

  it("rejects the agent heartbeat's reserved name", () => {
    expect(validateExtensionName('nodecare-agent')).toBe(
      'name "nodecare-agent": reserved for the agent\'s own heartbeat',
    );
  });
});

// Regressions, issue 7 items 3 and 5: one annotation could stall the controller (a backtracking quantity
// regex, re-parsed on every reconcile) and was repeated whole in messages, logs and events.
describe('parseAnnotationValue on hostile input', () => {
  const problemsOf = (value: string): string[] => {
    const { result } = parseAnnotationValue(value);
    if (result.ok) throw new Error('expected problems');
    return result.problems;
  };

  it('rejects a 256 KiB annotation by its size before parsing, without repeating it', () => {
    const value = `{"probe":{"nodeResource":{"resource":"x","min":"${'1'.repeat(256 * 1024)}x"}}}`;
    expect(problemsOf(value)).toEqual([
      `value: too long to parse (${value.length} characters; an extension annotation is at most 4096 bytes)`,
    ]);
  });

  it('counts bytes, not characters', () => {
    const value = `tcp://127.0.0.1:1#${'é'.repeat(2100)}`;
    expect(value.length).toBeLessThanOrEqual(MAX_ANNOTATION_VALUE_BYTES);
    expect(problemsOf(value)).toEqual([
      `value: too long to parse (${Buffer.byteLength(value)} bytes; an extension annotation is at most 4096 bytes)`,
    ]);
  });

  it('rejects a quantity of thousands of digits by its length, and caps what the message repeats', () => {
    const value = `{"probe":{"nodeResource":{"resource":"x","min":"${'1'.repeat(4000)}x"}}}`;
    const [problem, ...rest] = problemsOf(value);
    expect(rest).toEqual([]);
    expect(problem).toMatch(/^probe\.nodeResource\.min: expected a non-negative number or quantity/);
    expect(problem!.length).toBeLessThan(400);
  });

  it.each([
    ['a URL', `{"probe":{"http":{"url":"ftp://${'a'.repeat(4000)}"}}}`],
    ['a shorthand', `gopher://${'a'.repeat(4000)}`],
    ['an unknown field', `{"probe":{"tcp":{"port":1}},"${'k'.repeat(4000)}":1}`],
    ['a probe kind', `{"probe":{"${'k'.repeat(4000)}":{}}}`],
    ['broken JSON', `{"probe":${'['.repeat(3000)}`],
    ['a path', `{"probe":{"file":{"path":"${'p/'.repeat(2000)}"}}}`],
  ])('caps %s repeated in a problem', (_name, value) => {
    expect(value.length).toBeLessThanOrEqual(MAX_ANNOTATION_VALUE_BYTES);
    expect(problemsOf(value).join('; ').length).toBeLessThan(1024);
  });

  it('returns the identical (frozen) result for a value it parsed before', () => {
    const value = '{"probe":{"nodeResource":{"resource":"nvidia.com/gpu","min":"8"}}}';
    const first = parseAnnotationValue(value);
    expect(parseAnnotationValue(value)).toBe(first);
    expect(Object.isFrozen(first.result)).toBe(true);
    expect(parseAnnotationValue(`${value} `)).not.toBe(first);
  });
});
