// A telemetry agent with a health endpoint, probed by nodecare's http probe: the OpenTelemetry Collector,
// generated and compiled by the collector's builder from upstream/otelcol/builder-config.yaml (upstream/build.sh),
// installed as the agent DaemonSet of the collector module's examples/k8s/otel-config.yaml (read from the Go
// module cache: the otel-agent-conf ConfigMap and the otel-agent DaemonSet, not the gateway Deployment it
// sends to), with the changes CHANGES lists (printed, and in docs/extensions.md). Broken: the collector
// process hangs (SIGSTOP), its health_check endpoint stops answering; mended: SIGCONT.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load, loadAll } from 'js-yaml';
import { afterAll, beforeAll, describe, inject, it } from 'vitest';
import { kubectl, type TestNode } from './client.ts';
import {
  JOINING,
  NODECARE_TOLERATIONS,
  NodecareInstall,
  breaksAndRecovers,
  containerPid,
  joinsHeldUntilHealthy,
  readyPodOn,
  storyLog,
} from './upstream/stories.ts';
import { ensureUpstream, type UpstreamBuild } from './upstream/upstream.ts';
import { type K8sObject } from './cluster.ts';

const notRun = inject('realNodesNotRun');
const log = storyLog('otelcol');
const EXTENSION = 'otel-agent';
const SELECTOR = 'component=otel-agent';
const HEALTH = 'http://127.0.0.1:13133/';

const CHANGES = [
  'DaemonSet image: otel/opentelemetry-collector:latest -> the collector built by the builder from upstream/otelcol/builder-config.yaml (the components of this config plus health_check)',
  'ConfigMap otel-agent-conf: the health_check extension added (endpoint 127.0.0.1:13133) and listed in service.extensions',
  "DaemonSet hostNetwork: true (nodecare's http probe needs an address on the node: a pod-network pod has none fixed, and a hostPort needs the CNI portmap plugin these nodes do not have)",
  "DaemonSet tolerations: nodecare's two taints (the example tolerates none, so the agent could never start on a held node: issue 49, taint deadlock)",
];

function upstreamManifests(build: UpstreamBuild): K8sObject[] {
  const all = loadAll(
    readFileSync(join(build.moduleDir, 'examples', 'k8s', 'otel-config.yaml'), 'utf8'),
  ).filter(Boolean) as K8sObject[];
  const config = all.find(
    (o) => o.kind === 'ConfigMap' && o.metadata.name === 'otel-agent-conf',
  ) as K8sObject & {
    data: Record<string, string>;
  };
  const agent = load(config.data['otel-agent-config']!) as {
    extensions: Record<string, unknown>;
    service: { extensions: string[] };
  };
  agent.extensions.health_check = { endpoint: '127.0.0.1:13133' };
  agent.service.extensions.push('health_check');
  config.data['otel-agent-config'] = dump(agent);
  const daemonSet = all.find(
    (o) => o.kind === 'DaemonSet' && o.metadata.name === 'otel-agent',
  ) as K8sObject & {
    spec: {
      template: {
        spec: { hostNetwork?: boolean; tolerations?: unknown[]; containers: { image: string }[] };
      };
    };
  };
  const pod = daemonSet.spec.template.spec;
  pod.containers[0]!.image = build.image;
  pod.hostNetwork = true;
  pod.tolerations = [...(pod.tolerations ?? []), ...NODECARE_TOLERATIONS];
  return [config, daemonSet];
}

describe.skipIf(notRun !== '')(
  `OpenTelemetry Collector (upstream) on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const install = notRun ? undefined : new NodecareInstall(inject('nodecareImage').ref, log);
    let build: UpstreamBuild;
    let manifests: K8sObject[] = [];
    let node: TestNode;
    let frozen: number | undefined;

    beforeAll(async () => {
      build = await ensureUpstream('otelcol', log);
      manifests = upstreamManifests(build);
    }, 1_800_000);

    afterAll(async () => {
      if (frozen) process.kill(frozen, 'SIGCONT');
      await install?.teardown(async () => {
        await kubectl(['delete', 'systemextension', EXTENSION, '--ignore-not-found']);
        await kubectl(
          ['delete', '-n', 'default', '--ignore-not-found', '-f', '-'],
          dump({ apiVersion: 'v1', kind: 'List', items: manifests }),
        );
      });
    });

    it("installed from the collector's examples/k8s/otel-config.yaml (changed only as recorded) beside nodecare as shipped", async () => {
      log(
        `upstream file: ${join(build.moduleDir, 'examples', 'k8s', 'otel-config.yaml')} (otel-agent-conf, otel-agent)`,
      );
      for (const change of CHANGES) log(`changed: ${change}`);
      await install!.install();
      await install!.importEverywhere(build);
      await kubectl(
        ['apply', '-n', 'default', '-f', '-'],
        dump({ apiVersion: 'v1', kind: 'List', items: manifests }),
      );
      await kubectl(
        ['apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'nodecare.io/v1alpha1',
          kind: 'SystemExtension',
          metadata: { name: EXTENSION },
          spec: {
            nodeSelector: { matchLabels: { 'nodecare.test/upstream': 'otelcol' } },
            probe: { http: { url: HEALTH } },
            periodSeconds: 2,
            failureThreshold: 1,
            timeoutSeconds: 1,
            startupGraceSeconds: 10,
          },
        }),
      );
      log(
        `SystemExtension ${EXTENSION}: http GET ${HEALTH} (health_check) on nodes labelled nodecare.test/upstream=otelcol`,
      );
    });

    it('a node joins held by the bootstrap taint until the collector answers on its health endpoint, then is released', async () => {
      node = await joinsHeldUntilHealthy({
        extension: EXTENSION,
        log,
        join: () =>
          install!.join({ 'nodecare.test/upstream': 'otelcol' }, [
            inject('nodecareImage').archive,
            build.archive,
          ]),
        started: async (n) => {
          const pod = await readyPodOn('default', SELECTOR, n.name);
          const health = await n.exec(['curl', '-s', '-m', '2', HEALTH]);
          return `pod ${pod.metadata.name} Ready; GET ${HEALTH} on the node: ${health.stdout.trim()}`;
        },
      });
    });

    it('the collector hangs: health_check stops answering, the runtime taint goes on; it resumes, the taint comes off', async () => {
      await breaksAndRecovers({
        extension: EXTENSION,
        log,
        breakIt: async () => {
          const pid = await containerPid(node, await readyPodOn('default', SELECTOR, JOINING));
          process.kill(pid, 'SIGSTOP');
          frozen = pid;
          return `the collector process (pid ${pid}) on ${JOINING} stopped with SIGSTOP (a hung agent)`;
        },
        mend: async () => {
          process.kill(frozen!, 'SIGCONT');
          const pid = frozen;
          frozen = undefined;
          return `SIGCONT to pid ${pid}`;
        },
      });
    });
  },
);
