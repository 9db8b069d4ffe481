// The probe kinds' table, one entry each (its shape and what each field means: probe-kind-entry.ts): defaults,
// parsing and validation, the docs line, the annotation rules, targets and watches. A new kind is one entry
// here, its type in probe-spec.ts and one probe module in agent/probes/.

import { parseHostPort, parseStatusRanges } from './field-reader.ts';
import type { ProbeKindEntry, ProbeWatch } from './probe-kind-entry.ts';
import { validateSelector, type LabelSelector } from './selector.ts';
import { quoteInput } from './text.ts';
import type { HostProbe, ProbeKind, ProbeSpec } from './probe-spec.ts';

/** A DNS subdomain (RFC 1123), as Kubernetes names DRA drivers. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/**
 * An extended resource a device plugin registers: a DNS subdomain prefix, '/', a name (a qualified name's
 * parts, as the kubelet checks in its device plugin registration). At most 253 + 1 + 63 characters.
 */
const EXTENDED_RESOURCE =
  /^(?=.{1,253}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

const oracle = (field: string, what: string): string =>
  `${field}: not allowed from a node annotation (a match / no-match answer on the Lease would reveal ${what}); use a SystemExtension or the agent config file`;

export const PROBES = {
  http: {
    healthyWhen:
      'GET answers with a status in `expectStatus` (200-399) and, optionally, the body matches a regex; TLS with an optional CA or without verification',
    defaults: { expectStatus: '200-399', insecureSkipVerify: false },
    parse: (r) => {
      r.rejectUnknown(['url', 'expectStatus', 'bodyRegex', 'caFile', 'insecureSkipVerify']);
      const url = r.string('url', { required: true });
      if (url !== undefined) {
        let parsed: URL | undefined;
        try {
          parsed = new URL(url);
        } catch {
          parsed = undefined;
        }
        if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
          r.problem('url', `expected an http:// or https:// URL, got ${quoteInput(url)}`);
        } else if (parsed.username || parsed.password) {
          r.problem('url', 'credentials in the URL are not allowed');
        }
      }
      const expectStatus = parseStatusRanges(r);
      const bodyRegex = r.regex('bodyRegex');
      const caFile = r.absolutePath('caFile');
      const insecureSkipVerify = r.bool('insecureSkipVerify');
      if (url === undefined || expectStatus === undefined || insecureSkipVerify === undefined)
        return undefined;
      return { kind: 'http', url, expectStatus, bodyRegex, caFile, insecureSkipVerify };
    },
    describe: (probe) => `http GET ${probe.url}${probe.bodyRegex ? ' (body must match a regex)' : ''}`,
    annotationForbids: (p) => [
      ...(p.bodyRegex !== undefined ? [oracle('probe.http.bodyRegex', "the service's response body")] : []),
      ...(p.caFile !== undefined ? [oracle('probe.http.caFile', "a file's content")] : []),
    ],
    targets: (p) => [{ field: 'probe.http.url', host: new URL(p.url).hostname }],
  },
  tcp: {
    healthyWhen: 'a connection opens',
    defaults: { host: '127.0.0.1' },
    parse: (r) => {
      r.rejectUnknown(['host', 'port']);
      const host = r.string('host');
      const port =
        r.int('port', 1, 65535) ?? (r.raw.port === undefined ? r.problem('port', 'required') : undefined);
      return port === undefined || host === undefined ? undefined : { kind: 'tcp', host, port };
    },
    describe: (probe) => `tcp connect ${probe.host}:${probe.port}`,
    targets: (p) => [{ field: 'probe.tcp.host', host: p.host }],
  },
  grpc: {
    healthyWhen:
      '`grpc.health.v1.Health/Check` answers SERVING (optionally for a service name), over `host:port` or a unix socket',
    defaults: { service: '' },
    parse: (r) => {
      r.rejectUnknown(['address', 'service']);
      const address = r.string('address', { required: true });
      const service = r.string('service', { nonEmpty: false });
      if (address === undefined || service === undefined) return undefined;
      if (address.startsWith('unix://')) {
        const path = r.absolutePath('address');
        return path === undefined ? undefined : { kind: 'grpc', address: `unix://${path}`, service };
      }
      if (!parseHostPort(address))
        return r.problem('address', `expected "host:port" or "unix:///path", got ${quoteInput(address)}`);
      return { kind: 'grpc', address, service };
    },
    describe: (probe) => `grpc health ${probe.address}${probe.service ? ` service ${probe.service}` : ''}`,
    targets: (p) => {
      if (p.address.startsWith('unix://')) return [{ field: 'probe.grpc.address', path: p.address.slice(7) }];
      const target = parseHostPort(p.address);
      return target ? [{ field: 'probe.grpc.address', host: target.host }] : [];
    },
  },
  csi: {
    healthyWhen:
      "the CSI driver's `Identity/Probe` says ready (an absent field means ready, as the CSI spec says)",
    parse: (r) => {
      r.rejectUnknown(['socket']);
      const socket = r.absolutePath('socket', { required: true });
      return socket === undefined ? undefined : { kind: 'csi', socket };
    },
    describe: (probe) => `csi Identity/Probe on ${probe.socket}`,
    targets: (p) => [{ field: 'probe.csi.socket', path: p.socket }],
  },
  devicePlugin: {
    healthyWhen:
      "at least `minHealthy` (1) of the device plugin's devices of `resource` are Healthy as the kubelet sees them (the node's allocatable against its capacity); with `socket`, the plugin also answers the unary `GetDevicePluginOptions`. Never a `ListAndWatch` stream: the kubelet is the plugin's one client",
    defaults: { minHealthy: 1 },
    parse: (r) => {
      r.rejectUnknown(['resource', 'minHealthy', 'socket']);
      const resource = r.string('resource', { required: true });
      if (resource !== undefined && !EXTENDED_RESOURCE.test(resource))
        r.problem(
          'resource',
          `expected the extended resource the plugin registers with the kubelet, a domain-prefixed name such as "nvidia.com/gpu", got ${quoteInput(resource)}`,
        );
      const minHealthy = r.int('minHealthy', 1, 100_000);
      const socket = r.absolutePath('socket');
      if (resource === undefined || !EXTENDED_RESOURCE.test(resource) || minHealthy === undefined)
        return undefined;
      if (r.raw.socket !== undefined && socket === undefined) return undefined;
      return { kind: 'devicePlugin', resource, minHealthy, ...(socket === undefined ? {} : { socket }) };
    },
    describe: (probe) =>
      `≥ ${probe.minHealthy} Healthy ${probe.resource} device(s) as the kubelet counts them${probe.socket ? `, plugin answering on ${probe.socket}` : ''}`,
    targets: (p) => (p.socket === undefined ? [] : [{ field: 'probe.devicePlugin.socket', path: p.socket }]),
  },
  resourceSlices: {
    healthyWhen:
      'the DRA driver `driver` has published, in complete ResourceSlices for this node, at least `minDevices` (1) devices, optionally of one `pool` and with an `attribute` of a given value',
    defaults: { minDevices: 1 },
    parse: (r) => {
      r.rejectUnknown(['driver', 'pool', 'minDevices', 'attribute']);
      const driver = r.string('driver', { required: true });
      const validDriver = driver !== undefined && driver.length <= 63 && DNS_SUBDOMAIN.test(driver);
      if (driver !== undefined && !validDriver)
        r.problem(
          'driver',
          `expected a DRA driver name (a DNS subdomain of at most 63 characters), got ${quoteInput(driver)}`,
        );
      const pool = r.string('pool');
      if (pool !== undefined && pool.length > 253) r.problem('pool', 'expected at most 253 characters');
      const minDevices = r.int('minDevices', 1, 100_000);
      const match = r.object('attribute');
      let attribute: { name: string; value: string } | undefined;
      if (match) {
        match.rejectUnknown(['name', 'value']);
        const name = match.string('name', { required: true });
        const value = match.string('value', { required: true, nonEmpty: false });
        if (name !== undefined && name.length > 317) match.problem('name', 'expected at most 317 characters');
        if (value !== undefined && value.length > 64)
          match.problem('value', 'expected at most 64 characters');
        if (name !== undefined && value !== undefined) attribute = { name, value };
      }
      if (!validDriver || minDevices === undefined) return undefined;
      return { kind: 'resourceSlices', driver, pool, minDevices, attribute };
    },
    watches: 'resourceSlices',
    describe: (probe) =>
      `≥ ${probe.minDevices} device(s) in ResourceSlices of ${probe.driver}${probe.pool ? ` pool ${probe.pool}` : ''}${probe.attribute ? ` with ${probe.attribute.name}=${probe.attribute.value}` : ''}`,
  },
  nodeResource: {
    healthyWhen: '`status.allocatable[resource]` of the node is at least `min` (1)',
    defaults: { min: 1 },
    parse: (r) => {
      r.rejectUnknown(['resource', 'min']);
      const resource = r.string('resource', { required: true });
      const min = r.quantity('min');
      return resource === undefined || min === undefined
        ? undefined
        : { kind: 'nodeResource', resource, min };
    },
    describe: (probe) => `node allocatable ${probe.resource} ≥ ${probe.min}`,
  },
  nodeCondition: {
    healthyWhen:
      'the node condition `type` has status `status` (True), for example one written by node-problem-detector',
    defaults: { status: 'True' },
    parse: (r) => {
      r.rejectUnknown(['type', 'status']);
      const type = r.string('type', { required: true });
      const status = r.string('status');
      if (status === undefined) return undefined;
      if (status !== 'True' && status !== 'False' && status !== 'Unknown') {
        return r.problem('status', `expected True, False or Unknown, got ${quoteInput(status)}`);
      }
      return type === undefined ? undefined : { kind: 'nodeCondition', type, status };
    },
    describe: (probe) => `node condition ${probe.type}=${probe.status}`,
  },
  podReady: {
    healthyWhen: 'at least `min` (1) pods on this node matching `namespace` and `selector` are Ready',
    defaults: { min: 1 },
    parse: (r) => {
      r.rejectUnknown(['namespace', 'selector', 'min']);
      const namespace = r.string('namespace', { required: true });
      const selector = r.raw.selector ?? undefined;
      if (selector === undefined)
        r.problem('selector', 'required (a label selector with matchLabels/matchExpressions)');
      const selectorProblems = validateSelector(selector, r.at('selector'));
      r.problems.push(...selectorProblems);
      const min = r.int('min', 1, 10_000);
      if (
        namespace === undefined ||
        selector === undefined ||
        selectorProblems.length > 0 ||
        min === undefined
      )
        return undefined;
      const typed = selector as LabelSelector;
      if (Object.keys(typed.matchLabels ?? {}).length === 0 && (typed.matchExpressions ?? []).length === 0) {
        return r.problem('selector', 'must not be empty (it would match every pod on the node)');
      }
      return { kind: 'podReady', namespace, selector: typed, min };
    },
    watches: 'pods',
    describe: (probe) =>
      `≥ ${probe.min} Ready pod(s) in ${probe.namespace} matching ${JSON.stringify(probe.selector)}`,
  },
  exec: {
    healthyWhen:
      'argv (no shell) exits 0 within the deadline; 1 is Unhealthy; other codes and timeouts are Unknown; the first line of stdout (capped) is the message',
    parse: (r) => {
      r.rejectUnknown(['command']);
      const command = r.raw.command;
      if (!Array.isArray(command) || command.length === 0 || command.some((a) => typeof a !== 'string')) {
        return r.problem('command', 'expected a non-empty list of strings (argv; no shell is used)');
      }
      if (!(command[0] as string).startsWith('/')) {
        return r.problem(
          'command',
          `command[0] must be an absolute path, got ${quoteInput(command[0] as string)}`,
        );
      }
      return { kind: 'exec', command: command as string[] };
    },
    describe: (probe) => `exec ${probe.command.join(' ')}`,
    annotationForbids: () => [
      'probe.exec: exec probes are accepted only from SystemExtension objects or the agent config file, never from node annotations',
    ],
  },
  file: {
    healthyWhen:
      'the path exists; optionally its mtime is at most `maxAgeSeconds` old; optionally its content matches a regex',
    parse: (r) => {
      r.rejectUnknown(['path', 'maxAgeSeconds', 'contentRegex']);
      const path = r.absolutePath('path', { required: true });
      const maxAgeSeconds = r.int('maxAgeSeconds', 1, 31_536_000);
      const contentRegex = r.regex('contentRegex');
      return path === undefined ? undefined : { kind: 'file', path, maxAgeSeconds, contentRegex };
    },
    describe: (probe) =>
      `file ${probe.path}${probe.maxAgeSeconds !== undefined ? ` (modified within ${probe.maxAgeSeconds}s)` : ''}`,
    annotationForbids: (p) =>
      p.contentRegex !== undefined ? [oracle('probe.file.contentRegex', "the file's content")] : [],
    targets: (p) => [{ field: 'probe.file.path', path: p.path }],
  },
  process: {
    healthyWhen: 'at least `min` (1) processes are named `name`',
    defaults: { min: 1 },
    parse: (r) => {
      r.rejectUnknown(['name', 'min']);
      const name = r.string('name', { required: true });
      const min = r.int('min', 1, 100_000);
      return name === undefined || min === undefined ? undefined : { kind: 'process', name, min };
    },
    describe: (probe) => `≥ ${probe.min} process(es) named ${probe.name}`,
  },
  host: {
    healthyWhen:
      'host facts hold: free disk on a mount, available memory, GPU controllers by vendor, a network interface up',
    defaults: { gpu: { min: 1 } },
    parse: (r) => {
      r.rejectUnknown(['diskFreePercent', 'memoryAvailableMiB', 'gpu', 'interfaceUp']);
      const probe: HostProbe = { kind: 'host' };
      const disk = r.object('diskFreePercent');
      if (disk) {
        disk.rejectUnknown(['mount', 'min']);
        const mount = disk.absolutePath('mount', { required: true });
        const min =
          disk.int('min', 0, 100) ??
          (disk.raw.min === undefined ? disk.problem('min', 'required (percent from 0 to 100)') : undefined);
        if (mount !== undefined && min !== undefined) probe.diskFreePercent = { mount, min };
      }
      const memory = r.object('memoryAvailableMiB');
      if (memory) {
        memory.rejectUnknown(['min']);
        const min =
          memory.int('min', 0, 1 << 30) ??
          (memory.raw.min === undefined ? memory.problem('min', 'required (MiB)') : undefined);
        if (min !== undefined) probe.memoryAvailableMiB = { min };
      }
      const gpu = r.object('gpu');
      if (gpu) {
        gpu.rejectUnknown(['vendor', 'min']);
        const vendor = gpu.string('vendor');
        const min = gpu.int('min', 1, 1024);
        if (min !== undefined) probe.gpu = { vendor, min };
      }
      const iface = r.object('interfaceUp');
      if (iface) {
        iface.rejectUnknown(['name']);
        const name = iface.string('name', { required: true });
        if (name !== undefined) probe.interfaceUp = { name };
      }
      const checks = ['diskFreePercent', 'memoryAvailableMiB', 'gpu', 'interfaceUp'];
      if (!checks.some((check) => r.raw[check] !== undefined)) {
        return r.problem(
          '',
          'expected at least one of diskFreePercent, memoryAvailableMiB, gpu, interfaceUp',
        );
      }
      return probe;
    },
    describe: (probe) => {
      const parts = [
        probe.diskFreePercent &&
          `free disk on ${probe.diskFreePercent.mount} ≥ ${probe.diskFreePercent.min}%`,
        probe.memoryAvailableMiB && `available memory ≥ ${probe.memoryAvailableMiB.min} MiB`,
        probe.gpu && `≥ ${probe.gpu.min} GPU(s)${probe.gpu.vendor ? ` by ${probe.gpu.vendor}` : ''}`,
      ].filter(Boolean);
      return `host facts: ${parts.join(', ') || 'none'}`;
    },
  },
} satisfies { [K in ProbeKind]: ProbeKindEntry<K> };

/** Every probe kind, in the table's order (as messages list them). */
export const PROBE_KINDS = Object.keys(PROBES) as readonly ProbeKind[];

export function isProbeKind(kind: string): kind is ProbeKind {
  return Object.hasOwn(PROBES, kind);
}

/** The table's entry for `probe`'s kind. */
export function probeKind(probe: ProbeSpec): ProbeKindEntry<ProbeKind> {
  return kindEntry(probe.kind);
}

/** The table's entry for `kind`. */
export function kindEntry(kind: ProbeKind): ProbeKindEntry<ProbeKind> {
  // The table pairs each kind with its entry; TS cannot correlate a kind variable with its entry's type.
  return PROBES[kind] as unknown as ProbeKindEntry<ProbeKind>;
}

/** Which of the on-demand watches the probes of `kinds` need. */
export function watchesFor(kinds: Iterable<ProbeKind>): Record<ProbeWatch, boolean> {
  const needed = new Set([...kinds].map((kind) => kindEntry(kind).watches));
  return { pods: needed.has('pods'), resourceSlices: needed.has('resourceSlices') };
}

/** One line for people describing what `probe` checks. */
export function describeProbe(probe: ProbeSpec): string {
  return probeKind(probe).describe(probe);
}
