// node-problem-detector (k8s.io/node-problem-detector, built from its module by upstream/build.sh) writes a
// node condition, and a nodeCondition extension reads it. Installed from the module's own deployment/ files,
// read from the Go module cache (rbac.yaml, node-problem-detector-config.yaml, node-problem-detector.yaml), with
// the changes CHANGES lists (printed, and in docs/extensions.md): its kernel monitor reads the node's kernel
// log file with the repository's own config/kernel-monitor-filelog.json instead of /dev/kmsg, which is one
// for the whole machine (every test node of both slots) and which a test must not write to. KernelDeadlock is
// False while no hung task is logged. Broken: a hung docker task is logged in the node's /var/log/kern.log
// (NPD's permanent DockerHung rule: KernelDeadlock=True); mended: that log rotated and NPD restarted, which is
// how a permanent NPD condition clears.
//
// Not the health-checker custom plugin (config/health-checker-kubelet.json): at v1.34.0, the only version the
// Go module proxy serves, health-checker fails on Linux before checking anything ("failed to mark deprecated
// flag 'systemd-service': flag "systemd-service" does not exist": options.go marks the flag deprecated
// before defining it), so its condition is always Unknown.

import { appendFileSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { dump, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubectl, realNodes, type TestNode } from './client.ts';
import { getNode, until, type K8sObject } from './cluster.ts';
import {
  JOINING,
  NodecareInstall,
  breaksAndRecovers,
  joinsHeldUntilHealthy,
  readyPodOn,
  storyLog,
} from './upstream/stories.ts';
import { ensureUpstream, type UpstreamBuild } from './upstream/upstream.ts';

const notRun = inject('realNodesNotRun');
const log = storyLog('npd');
const EXTENSION = 'node-problem-detector';
const SELECTOR = 'app=node-problem-detector';
const CONDITION = 'KernelDeadlock';
const KERN_LOG = '/var/log/kern.log';

/** What the test changes in the upstream files, and why; nothing else is changed. */
const CHANGES = [
  'DaemonSet image: registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.19 -> the image built from k8s.io/node-problem-detector v1.34.0',
  "DaemonSet command: --config.system-log-monitor=/config/kernel-monitor-filelog.json,/config/readonly-monitor.json instead of /config/kernel-monitor.json,/config/readonly-monitor.json,/config/docker-monitor.json: the kernel monitor reads the node's /var/log/kern.log (the repository's filelog variant) instead of /dev/kmsg, the one kernel log of this machine that every test node shares; docker-monitor.json needs the journald plugin, which needs cgo and libsystemd (the static build has none, these nodes no journal)",
  "ConfigMap node-problem-detector-config: the key kernel-monitor-filelog.json added, the module's config/kernel-monitor-filelog.json verbatim, and listed in the DaemonSet's config volume items",
];

/** The module's deployment files with CHANGES applied. */
function upstreamManifests(build: UpstreamBuild): K8sObject[] {
  const read = (file: string): K8sObject[] =>
    loadAll(readFileSync(join(build.moduleDir, 'deployment', file), 'utf8')).filter(Boolean) as K8sObject[];
  const config = read('node-problem-detector-config.yaml')[0] as K8sObject & { data: Record<string, string> };
  config.data['kernel-monitor-filelog.json'] = readFileSync(
    join(build.moduleDir, 'config', 'kernel-monitor-filelog.json'),
    'utf8',
  );
  const daemonSet = read('node-problem-detector.yaml')[0] as K8sObject & {
    spec: {
      template: {
        spec: {
          containers: { image: string; command: string[] }[];
          volumes: { name: string; configMap?: { items: { key: string; path: string }[] } }[];
        };
      };
    };
  };
  const pod = daemonSet.spec.template.spec;
  const container = pod.containers[0]!;
  container.image = build.image;
  container.command = container.command.map((arg) =>
    arg.startsWith('--config.system-log-monitor=')
      ? '--config.system-log-monitor=/config/kernel-monitor-filelog.json,/config/readonly-monitor.json'
      : arg,
  );
  pod.volumes
    .find((v) => v.name === 'config')!
    .configMap!.items.push({ key: 'kernel-monitor-filelog.json', path: 'kernel-monitor-filelog.json' });
  return [...read('rbac.yaml'), config, daemonSet];
}

/** A kernel log line as the node's syslog daemon writes it (the filelog monitor's timestamp format, UTC). */
function kernelLine(message: string, node: string): string {
  const now = new Date();
  const month = now.toLocaleString('en-US', { month: 'short', timeZone: 'UTC' });
  const time = now.toISOString().slice(11, 19);
  return `${month} ${String(now.getUTCDate()).padStart(2, ' ')} ${time} ${node} kernel: [${(process.uptime() + 1000).toFixed(6)}] ${message}\n`;
}

describe.skipIf(notRun !== '')(
  `node-problem-detector (upstream) on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const install = notRun ? undefined : new NodecareInstall(inject('nodecareImage').ref, log);
    let build: UpstreamBuild;
    let manifests: K8sObject[] = [];
    let node: TestNode;
    // The node's kernel log as its syslog daemon keeps it; NPD's filelog monitor needs the file to exist.
    const kernLog = (n: { hostPath(path: string): string }): string => n.hostPath(KERN_LOG);
    const touch = (n: { hostPath(path: string): string }): void => {
      mkdirSync(dirname(kernLog(n)), { recursive: true });
      appendFileSync(kernLog(n), '');
    };

    beforeAll(async () => {
      build = await ensureUpstream('npd', log);
      manifests = upstreamManifests(build);
    }, 1_800_000);

    afterAll(async () => {
      await install?.teardown(async () => {
        await kubectl(['delete', 'systemextension', EXTENSION, '--ignore-not-found']);
        await kubectl(
          ['delete', '--ignore-not-found', '-f', '-'],
          dump({ apiVersion: 'v1', kind: 'List', items: manifests }),
        );
        // NPD leaves its conditions on the Nodes when it goes (upstream behaviour): once its pods are gone,
        // they are removed, so that the suite's other files find their nodes as they were.
        await kubectl(['wait', '--for=delete', 'pod', '-n', 'kube-system', '-l', SELECTOR, '--timeout=60s']);
        const npdConditions = ['KernelDeadlock', 'ReadonlyFilesystem'].map((type) => ({
          type,
          $patch: 'delete',
        }));
        for (const n of realNodes())
          await kubectl([
            'patch',
            'node',
            n.name,
            '--subresource=status',
            '--type=strategic',
            '-p',
            JSON.stringify({ status: { conditions: npdConditions } }),
          ]);
        const left = (await Promise.all(realNodes().map((n) => getNode(n.name))))
          .flatMap((n) => n.status.conditions ?? [])
          .filter((c) => npdConditions.some((d) => d.type === c.type));
        log(
          `NPD's conditions removed from ${realNodes()
            .map((n) => n.name)
            .join(', ')}: ${left.length} left`,
        );
      });
    });

    it('installed from its upstream deployment files (changed only as recorded) beside nodecare as shipped', async () => {
      log(
        `upstream files: ${join(build.moduleDir, 'deployment')} (rbac.yaml, node-problem-detector-config.yaml, node-problem-detector.yaml)`,
      );
      for (const change of CHANGES) log(`changed: ${change}`);
      await install!.install();
      await install!.importEverywhere(build);
      for (const n of realNodes()) touch(n);
      await kubectl(['apply', '-f', '-'], dump({ apiVersion: 'v1', kind: 'List', items: manifests }));
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: EXTENSION },
          spec: {
            nodeSelector: { matchLabels: { 'nodecare.test/upstream': 'npd' } },
            probe: { nodeCondition: { type: CONDITION, status: 'False' } },
            periodSeconds: 2,
            failureThreshold: 1,
            startupGraceSeconds: 10,
          },
        }),
      );
      log(
        `SystemExtension ${EXTENSION}: nodeCondition ${CONDITION}=False on nodes labelled nodecare.test/upstream=npd`,
      );
    });

    it('a node joins held by the bootstrap taint until NPD reports no kernel deadlock, then is released', async () => {
      node = await joinsHeldUntilHealthy({
        extension: EXTENSION,
        log,
        join: async () => {
          const joined = await install!.join({ 'nodecare.test/upstream': 'npd' }, [
            inject('nodecareImage').archive,
            build.archive,
          ]);
          touch(joined);
          return joined;
        },
        started: async (n) => {
          const pod = await readyPodOn('kube-system', SELECTOR, n.name);
          const condition = await until(`${CONDITION} on ${n.name}`, () => conditionOn(n.name));
          return `pod ${pod.metadata.name} Ready; ${CONDITION}=${condition.status}/${condition.reason} written by NPD`;
        },
      });
      expect((await conditionOn(JOINING))?.status).toBe('False');
    });

    it("a hung docker task in the node's kernel log: NPD sets KernelDeadlock=True, the runtime taint goes on; the log rotated and NPD restarted, the taint comes off", async () => {
      await breaksAndRecovers({
        extension: EXTENSION,
        log,
        breakIt: async () => {
          const line = kernelLine('task docker:7 blocked for more than 120 seconds.', JOINING);
          appendFileSync(kernLog(node), line);
          const condition = await until(`${CONDITION}=True on ${JOINING}`, async () => {
            const c = await conditionOn(JOINING);
            return c?.status === 'True' ? c : undefined;
          });
          return `appended to ${JOINING}:${KERN_LOG}: ${JSON.stringify(line.trim())}; NPD: ${CONDITION}=${condition.status}/${condition.reason} (${condition.message})`;
        },
        mend: async () => {
          renameSync(kernLog(node), `${kernLog(node)}.1`);
          touch(node);
          const before = await readyPodOn('kube-system', SELECTOR, JOINING);
          await kubectl(['delete', 'pod', '-n', 'kube-system', before.metadata.name, '--wait=true']);
          const after = await until('a new NPD pod Ready', async () => {
            const pod = await readyPodOn('kube-system', SELECTOR, JOINING);
            return pod.metadata.uid !== before.metadata.uid ? pod : undefined;
          });
          return `${KERN_LOG} rotated to kern.log.1 on ${JOINING}; NPD pod ${before.metadata.name} deleted, ${after.metadata.name} Ready`;
        },
      });
      const condition = await conditionOn(JOINING);
      log(`${CONDITION}=${condition?.status}/${condition?.reason} on ${JOINING} after NPD's restart`);
      expect(condition?.status).toBe('False');
    });
  },
);

async function conditionOn(
  node: string,
): Promise<{ status: string; reason?: string; message?: string } | undefined> {
  return (await getNode(node)).status.conditions?.find((c) => c.type === CONDITION);
}
