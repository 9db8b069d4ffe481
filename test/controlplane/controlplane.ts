// A real local Kubernetes control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager) for
// integration tests, the demo and the benchmark. Binaries come from build.sh (built from the Go module
// proxy, cached by version). Every failure says which step failed, with the last lines of that log.

import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile, open } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';

const HERE = import.meta.dirname;
const READY_TIMEOUT_MS = 90_000;
// kube-apiserver's graceful shutdown waits for long-running watches to drain; tests need no such grace.
const STOP_GRACE_MS = 3_000;
const DIR_PREFIX = 'nodecare-cp-';

export class ControlPlaneError extends Error {
  readonly step: string;
  constructor(step: string, message: string) {
    super(`control plane ${step}: ${message}`);
    this.step = step;
  }
}

export interface ControlPlaneOptions {
  /** Run kube-scheduler (default true). */
  scheduler?: boolean;
  /** Run kube-controller-manager with garbage collection, namespaces and service accounts (default true). */
  controllerManager?: boolean;
  /** Extra kube-apiserver flags, e.g. the scale flags of the benchmark. */
  apiserverFlags?: string[];
  /**
   * kube-apiserver audit policy (YAML). Default DEFAULT_AUDIT_POLICY: requests by the ServiceAccounts of
   * nodecare-system at Metadata level and nothing else, so tests can check what the components really call.
   * false: no audit log.
   */
  auditPolicy?: string | false;
  /** Progress lines ("starting etcd …"); default: stderr. */
  log?: (line: string) => void;
  /**
   * The profile for real kubelets (test/realnodes): the admission plugins and controllers a real cluster runs,
   * a client CA that signs the kubelets' certificates, and the API server where pods find it with no
   * kube-proxy. Default: the kubelet-less profile of the integration tests.
   */
  realNodes?: RealNodesProfile;
}

export interface RealNodesProfile {
  /**
   * The API server binds here, port 443, and advertises it: the first address of `serviceCIDR`, so the
   * `kubernetes` Service's ClusterIP:443 that the kubelet injects into every pod (KUBERNETES_SERVICE_HOST/PORT)
   * IS the API server, and in-cluster clients reach it without a service proxy. The caller adds it on `lo`.
   */
  address: string;
  serviceCIDR: string;
  /** kube-controller-manager --node-monitor-grace-period (default 30s, upstream 50s): how soon a silent node is NotReady. */
  nodeMonitorGracePeriod?: string;
}

export interface RealNodesPki {
  /** The client CA the API server trusts (--client-ca-file); kubelets trust it for the API server's client cert. */
  caCertPath: string;
  /** The API server's serving certificate: what kubeconfigs and pods (kube-root-ca.crt) verify it with. */
  serverCaPath: string;
  /** Signs a client certificate (e.g. CN system:node:<name>, groups [system:nodes]) into `<dir>/<file>.{crt,key}`. */
  issueClientCert(
    file: string,
    commonName: string,
    groups: string[],
  ): Promise<{ certPath: string; keyPath: string }>;
}

interface Component {
  name: string;
  args: string[];
  logPath: string;
  process?: ChildProcess;
}

export interface ControlPlane {
  dir: string;
  server: string;
  kubeconfigPath: string;
  adminToken: string;
  binDir: string;
  /** The pinned Kubernetes version the binaries were built at (e.g. v1.37.2). */
  version: string;
  /** The audit log (JSON lines), unless auditPolicy was false. */
  auditLogPath: string | undefined;
  /** Set with the realNodes profile. */
  realNodes?: RealNodesPki;
  /** Runs the bundled kubectl against this control plane. */
  kubectl(args: string[], input?: string): Promise<{ stdout: string; stderr: string; code: number }>;
  /** The process ids of etcd and kube-apiserver as they run now (the benchmark reads their CPU). */
  pids(): { etcd?: number; apiserver?: number };
  /** Stops kube-apiserver (SIGTERM, then SIGKILL) and starts it again on the same port. */
  restartApiServer(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** Builds (or reuses) the binaries; build progress goes to stderr. Returns the directory holding them. */
export async function ensureBinaries(log: (line: string) => void = defaultLog): Promise<string> {
  const script = join(HERE, 'build.sh');
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      for (const line of d.toString().split('\n')) if (line.trim()) log(line);
    });
    child.on('error', (err) => reject(new ControlPlaneError('build', err.message)));
    child.on('close', (code) => {
      const dir = stdout.trim().split('\n').pop() ?? '';
      if (code === 0 && dir && existsSync(join(dir, 'kube-testenv'))) return resolve(dir);
      reject(new ControlPlaneError('build', `build.sh exited ${code}\n${tail(stderr, 30)}`));
    });
  });
}

/** Audits only what nodecare's components do with their own ServiceAccounts: cheap enough to be always on. */
export const DEFAULT_AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: ['system:serviceaccounts:nodecare-system']
  - level: None
`;

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const log = options.log ?? defaultLog;
  await killLeftovers(log);
  const binDir = await ensureBinaries(log);
  const kubeBin = join(binDir, 'kube-testenv');
  const version = /kube-(v[0-9.]+)-/.exec(binDir)?.[1] ?? 'unknown';
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = await mkdtemp(join(base, DIR_PREFIX));
  const pki = join(dir, 'pki');
  await mkdir(pki);

  const [etcdClient, etcdPeer, apiPort] = await freePorts(3);
  const adminToken = randomBytes(24).toString('hex');
  const schedulerToken = randomBytes(24).toString('hex');
  const kcmToken = randomBytes(24).toString('hex');
  await writeFile(
    join(dir, 'tokens.csv'),
    [
      `${adminToken},nodecare-admin,uid-admin,"system:masters"`,
      `${schedulerToken},system:kube-scheduler,uid-scheduler`,
      // Upstream runs each controller with its own ServiceAccount (--use-service-account-credentials); here the
      // controller-manager is test infrastructure with one identity, so it gets full rights (GC touches everything).
      `${kcmToken},system:kube-controller-manager,uid-kcm,"system:masters"`,
    ].join('\n') + '\n',
    { mode: 0o600 },
  );
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(join(pki, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await writeFile(join(pki, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));

  const profile = options.realNodes;
  const server = profile ? `https://${profile.address}:443` : `https://127.0.0.1:${apiPort}`;
  const pkiHandle = profile ? await makeClientCa(pki) : undefined;
  const auditPolicy = options.auditPolicy ?? DEFAULT_AUDIT_POLICY;
  const auditLogPath = auditPolicy === false ? undefined : join(dir, 'audit.log');
  if (auditPolicy !== false) await writeFile(join(dir, 'audit-policy.yaml'), auditPolicy);
  const components: Component[] = [];
  const pidFile = join(dir, 'pids');
  const started: Component[] = [];

  const launch = async (component: Component, bin: string): Promise<void> => {
    const out = await open(component.logPath, 'a');
    const child = spawn(bin, component.args, { stdio: ['ignore', out.fd, out.fd], detached: false });
    await out.close();
    component.process = child;
    started.push(component);
    await writeFile(pidFile, started.map((c) => c.process?.pid).join('\n') + '\n');
  };

  const etcd: Component = {
    name: 'etcd',
    logPath: join(dir, 'etcd.log'),
    args: [
      '--name=default',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdClient}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdClient}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeer}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeer}`,
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
  };
  const apiserver: Component = {
    name: 'kube-apiserver',
    logPath: join(dir, 'kube-apiserver.log'),
    args: [
      'kube-apiserver',
      `--etcd-servers=http://127.0.0.1:${etcdClient}`,
      ...(profile
        ? [`--bind-address=${profile.address}`, `--advertise-address=${profile.address}`, '--secure-port=443']
        : ['--bind-address=127.0.0.1', `--secure-port=${apiPort}`]),
      `--cert-dir=${pki}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=Node,RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      `--service-cluster-ip-range=${profile ? profile.serviceCIDR : '10.0.0.0/24'}`,
      '--allow-privileged=true',
      ...(profile && pkiHandle
        ? [
            // As a real cluster: ServiceAccount and TaintNodesByCondition admission stay on (defaults), and
            // NodeRestriction limits each kubelet to its own Node and pods. Kubelets authenticate with client
            // certificates of this CA; the API server reaches kubelets (logs, exec) by InternalIP with its own.
            '--enable-admission-plugins=NodeRestriction',
            `--client-ca-file=${pkiHandle.caCertPath}`,
            `--kubelet-client-certificate=${join(pki, 'apiserver-kubelet-client.crt')}`,
            `--kubelet-client-key=${join(pki, 'apiserver-kubelet-client.key')}`,
            '--kubelet-preferred-address-types=InternalIP',
          ]
        : [
            // No kubelet mounts tokens here, so ServiceAccount admission would only get in the way; and
            // TaintNodesByCondition would put node.kubernetes.io/not-ready on every new Node, which only the node
            // lifecycle controller removes — not run here, since it would also mark kubelet-less nodes unreachable.
            '--disable-admission-plugins=ServiceAccount,TaintNodesByCondition',
          ]),
      ...(auditLogPath
        ? [`--audit-policy-file=${join(dir, 'audit-policy.yaml')}`, `--audit-log-path=${auditLogPath}`]
        : []),
      ...(options.apiserverFlags ?? []),
    ],
  };
  components.push(etcd, apiserver);
  if (pkiHandle)
    await pkiHandle.issueClientCert('apiserver-kubelet-client', 'kube-apiserver-kubelet-client', [
      'system:masters',
    ]);

  const fail = async (step: string, component: Component, message: string): Promise<never> => {
    const logText = await readFile(component.logPath, 'utf8').catch(() => '');
    await stopAll(started);
    throw new ControlPlaneError(
      step,
      `${message}\n--- last lines of ${component.logPath} ---\n${tail(logText, 25)}`,
    );
  };

  log(`[controlplane] starting etcd on 127.0.0.1:${etcdClient} (dir ${dir})`);
  await launch(etcd, join(binDir, 'etcd'));
  await waitFor(
    etcd,
    async () => (await get(`http://127.0.0.1:${etcdClient}/health`)).status === 200,
    30_000,
  ).catch((err: Error) => fail('start etcd', etcd, err.message));

  const startApiServer = async (): Promise<void> => {
    log(`[controlplane] starting kube-apiserver ${version} on ${server}`);
    await launch(apiserver, kubeBin);
    const ready = async (): Promise<boolean> => (await get(`${server}/readyz`, adminToken)).status === 200;
    await waitFor(apiserver, ready, READY_TIMEOUT_MS).catch((err: Error) =>
      fail('start kube-apiserver', apiserver, err.message),
    );
  };
  await startApiServer();
  const ca = await readFile(join(pki, 'apiserver.crt'), 'utf8');

  const kubeconfig = (user: string, token: string): string =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'local',
          cluster: { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') },
        },
      ],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: 'local', context: { cluster: 'local', user } }],
      'current-context': 'local',
    });
  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  await writeFile(kubeconfigPath, kubeconfig('nodecare-admin', adminToken), { mode: 0o600 });
  await waitFor(
    apiserver,
    async () => (await get(`${server}/api/v1/namespaces/default`, adminToken)).status === 200,
    30_000,
  ).catch((err: Error) => fail('wait for namespace default', apiserver, err.message));

  /** kube-scheduler and kube-controller-manager: own kubeconfig, secure port for /healthz, no election. */
  const startComponent = async (
    name: string,
    user: string,
    token: string,
    extraArgs: string[],
  ): Promise<void> => {
    const path = join(dir, `${name}.kubeconfig`);
    await writeFile(path, kubeconfig(user, token), { mode: 0o600 });
    const [port] = await freePorts(1);
    const component: Component = {
      name,
      logPath: join(dir, `${name}.log`),
      args: [
        name,
        `--kubeconfig=${path}`,
        `--authentication-kubeconfig=${path}`,
        `--authorization-kubeconfig=${path}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        ...extraArgs,
      ],
    };
    components.push(component);
    log(`[controlplane] starting ${name}`);
    await launch(component, kubeBin);
    await waitFor(
      component,
      async () => (await get(`https://127.0.0.1:${port}/healthz`)).status === 200,
      60_000,
    ).catch((err: Error) => fail(`start ${name}`, component, err.message));
  };
  if (options.scheduler !== false) {
    await startComponent('kube-scheduler', 'system:kube-scheduler', schedulerToken, []);
  }
  if (options.controllerManager !== false) {
    await startComponent('kube-controller-manager', 'system:kube-controller-manager', kcmToken, [
      ...(profile
        ? [
            // What real kubelets need: node lifecycle (Ready/NotReady from node status and leases, its taints)
            // and taint eviction, kube-root-ca.crt in every namespace, ServiceAccounts and their tokens, the
            // workload controllers (StatefulSets too: Kubernetes' CSI e2e manifests deploy one), endpoint slices
            // for Services, pod GC (pods of deleted nodes), jobs.
            '--controllers=garbagecollector,namespace,serviceaccount,serviceaccount-token,' +
              'validatingadmissionpolicy-status-controller,nodelifecycle,taint-eviction-controller,' +
              'root-ca-cert-publisher,daemonset,replicaset,deployment,statefulset,endpointslice,podgc,job,' +
              'ttl-after-finished,resourcequota',
            '--node-monitor-period=2s',
            `--node-monitor-grace-period=${profile.nodeMonitorGracePeriod ?? '30s'}`,
          ]
        : [
            // Only what tests rely on: no node lifecycle controller, which would taint our kubelet-less nodes.
            // validatingadmissionpolicy-status-controller: type-checks admission policies (status.typeChecking).
            // resourcequota: the quota admission refuses every create in a namespace whose ResourceQuota
            // has no status yet (manifests/base/lease-quota.yaml). clusterrole-aggregation: fills `view`, `edit`
            // and `admin` from the aggregated ClusterRoles (manifests/base/rbac-aggregated.yaml).
            '--controllers=garbagecollector,namespace,serviceaccount,validatingadmissionpolicy-status-controller,' +
              'resourcequota,clusterrole-aggregation',
          ]),
      `--service-account-private-key-file=${join(pki, 'sa.key')}`,
      `--root-ca-file=${join(pki, 'apiserver.crt')}`,
    ]);
  }
  log(`[controlplane] ready: ${server} (kubeconfig ${kubeconfigPath})`);

  return {
    dir,
    server,
    kubeconfigPath,
    adminToken,
    binDir,
    version,
    auditLogPath,
    realNodes: pkiHandle,
    kubectl: (args, input) => runKubectl(kubeBin, kubeconfigPath, args, input),
    pids: () => ({ etcd: etcd.process?.pid, apiserver: apiserver.process?.pid }),
    async restartApiServer(downMs = 0) {
      await stopComponent(apiserver);
      started.splice(started.indexOf(apiserver), 1);
      if (downMs > 0) await sleep(downMs);
      await startApiServer();
    },
    async stop() {
      await stopAll(started);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A throwaway client CA (openssl; ECDSA P-256, one day) in `pki`, and a signer of client certificates. */
async function makeClientCa(pki: string): Promise<RealNodesPki> {
  const caCertPath = join(pki, 'client-ca.crt');
  const caKeyPath = join(pki, 'client-ca.key');
  const openssl = async (args: string[]): Promise<void> => {
    try {
      await execFileAsync('openssl', args);
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new ControlPlaneError('client CA', `openssl ${args[0]}: ${e.stderr || e.message}`);
    }
  };
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl([
    'req',
    '-x509',
    ...ec,
    '-keyout',
    caKeyPath,
    '-out',
    caCertPath,
    '-days',
    '2',
    '-subj',
    '/CN=nodecare-test-client-ca',
  ]);
  let serial = 1;
  return {
    caCertPath,
    serverCaPath: join(pki, 'apiserver.crt'),
    async issueClientCert(file, commonName, groups) {
      const base = join(pki, file);
      const subject = [...groups.map((g) => `/O=${g}`), `/CN=${commonName}`].join('');
      await openssl([
        'req',
        '-new',
        ...ec,
        '-keyout',
        `${base}.key`,
        '-out',
        `${base}.csr`,
        '-subj',
        subject,
      ]);
      await writeFile(`${base}.ext`, 'extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n');
      await openssl([
        'x509',
        '-req',
        '-in',
        `${base}.csr`,
        '-CA',
        caCertPath,
        '-CAkey',
        caKeyPath,
        '-days',
        '2',
        '-set_serial',
        String(++serial),
        '-extfile',
        `${base}.ext`,
        '-out',
        `${base}.crt`,
      ]);
      return { certPath: `${base}.crt`, keyPath: `${base}.key` };
    },
  };
}

function defaultLog(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** The last `lines` lines of a log, for failure messages. */
export function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Ports free on 127.0.0.1 right now (the kernel's choice; a process must bind them soon). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => {
      const srv = createServer();
      return new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', () => resolve(srv));
      });
    }),
  );
  const ports = servers.map((s) => (s.address() as { port: number }).port);
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}

const insecure = new Agent({ connect: { rejectUnauthorized: false } });

async function get(url: string, token?: string): Promise<{ status: number }> {
  try {
    const res = await request(url, {
      dispatcher: insecure,
      headers: token ? { authorization: `Bearer ${token}` } : {},
      signal: AbortSignal.timeout(5_000),
    });
    await res.body.dump();
    return { status: res.statusCode };
  } catch {
    return { status: 0 };
  }
}

async function waitFor(
  component: Component,
  check: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const child = component.process;
    if (child && child.exitCode !== null)
      throw new Error(`${component.name} exited with code ${child.exitCode}`);
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${component.name} not ready after ${timeoutMs / 1000}s`);
    await sleep(250);
  }
}

async function stopComponent(component: Component): Promise<void> {
  const child = component.process;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(killer);
}

async function stopAll(started: Component[]): Promise<void> {
  for (const component of [...started].reverse()) await stopComponent(component);
}

/**
 * Kills what runs whose owner died left (their components, recorded in `pids`, and any process started but not
 * yet recorded there when the run was killed: one whose command line names the run's directory and whose parent
 * is gone) and removes their directories. Exported for its test.
 */
export async function killLeftovers(log: (line: string) => void = defaultLog): Promise<void> {
  for (const base of ['/dev/shm', tmpdir()]) {
    const entries = await readdir(base).catch(() => [] as string[]);
    for (const entry of entries.filter((e) => e.startsWith(DIR_PREFIX))) {
      const dir = join(base, entry);
      const pids = (await readFile(join(dir, 'pids'), 'utf8').catch(() => ''))
        .split('\n')
        .map(Number)
        .filter(Boolean);
      const owner = pids.find((pid) => isAlive(pid));
      if (owner !== undefined && (await ownerRunning(dir))) continue; // another live run owns it
      try {
        for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
        for (const pid of await orphansNaming(dir)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err; // ESRCH: it ended meanwhile
          }
        }
        await rm(dir, { recursive: true, force: true });
        log(`[controlplane] removed leftovers of an earlier run: ${dir}`);
      } catch (err) {
        // Another user's run (a shared /dev/shm): not ours to remove, and in no one's way (own dir, own ports).
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'EACCES' && code !== 'EPERM') throw err;
        log(`[controlplane] left alone the leftovers of another user's run: ${dir}`);
      }
    }
  }
}

/** The processes whose command line names a path under `dir` and whose parent is gone (they were reparented). */
async function orphansNaming(dir: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.split('\0').some((arg) => arg.includes(`${dir}/`))) continue;
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!(ppid > 1 && isAlive(ppid))) found.push(pid);
  }
  return found;
}

/** A run is live while the process that started it (the parent of its components) is alive. */
async function ownerRunning(dir: string): Promise<boolean> {
  const pids = (await readFile(join(dir, 'pids'), 'utf8').catch(() => ''))
    .split('\n')
    .map(Number)
    .filter(Boolean);
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid > 1 && isAlive(ppid)) return true;
  }
  return false;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const execFileAsync = promisify(execFile);

async function runKubectl(
  kubeBin: string,
  kubeconfigPath: string,
  args: string[],
  input?: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  if (input === undefined) {
    try {
      const { stdout, stderr } = await execFileAsync(
        kubeBin,
        ['kubectl', `--kubeconfig=${kubeconfigPath}`, ...args],
        {
          maxBuffer: 32 * 1024 * 1024,
        },
      );
      return { stdout, stderr, code: 0 };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; code?: number };
      return {
        stdout: e.stdout ?? '',
        stderr: e.stderr ?? '',
        code: typeof e.code === 'number' ? e.code : 1,
      };
    }
  }
  return new Promise((resolve) => {
    const child = spawn(kubeBin, ['kubectl', `--kubeconfig=${kubeconfigPath}`, ...args]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ stdout, stderr, code: code ?? 1 }));
    child.stdin.end(input);
  });
}
