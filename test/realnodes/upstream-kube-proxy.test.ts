// kube-proxy as kubeadm installs it, on real kubelets (issue 49; docs/extensions.md, "kube-proxy"): the
// ConfigMap and DaemonSet templates of kubeadm (cmd/kubeadm/app/phases/addons/proxy/manifests.go, read from
// the k8s.io/kubernetes module in the Go module cache) filled in as kubeadm fills them, with the
// ServiceAccount and ClusterRoleBinding kubeadm creates beside them (proxy.go), and the changes CHANGES lists.
// The shipped example SystemExtension (manifests/examples/kube-proxy.yaml) probes its /healthz. A node joins
// held until kube-proxy has synced its rules; kube-proxy hangs (SIGSTOP: its /healthz stops answering), the
// runtime taint goes on; it resumes (SIGCONT), the taint comes off.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { kubectl, realNodes, type TestNode } from './client.ts';
import { ROOT, type K8sObject } from './cluster.ts';
import {
  KUBERNETES_IMAGES,
  kubernetesSource,
  writeKubernetesImages,
  type KubernetesImages,
} from './kubernetes/images.ts';
import { ensureNodeParts } from './realnodes.ts';
import {
  JOINING,
  NodecareInstall,
  breaksAndRecovers,
  containerPid,
  joinsHeldUntilHealthy,
  readyPodOn,
  storyLog,
} from './upstream/stories.ts';

const notRun = inject('realNodesNotRun');
const log = storyLog('kube-proxy');
const EXTENSION = 'kube-proxy';
const SELECTOR = 'k8s-app=kube-proxy';
const TEMPLATES = 'cmd/kubeadm/app/phases/addons/proxy/manifests.go';
const EXAMPLE = join(ROOT, 'manifests', 'examples', 'kube-proxy.yaml');

/** What the test changes in kubeadm's objects, and why; nothing else is changed. */
const CHANGES = [
  "image: kube-proxy v1.37.2 -> the image built from k8s.io/kubernetes v1.37.2 cmd/kube-proxy, with Debian's iptables (nf_tables backend) and nft, as the upstream image carries them",
  "KubeProxyConfiguration: conntrack.maxPerCore 0 (a node here is a network namespace: the conntrack table size is the machine's) and clusterCIDR the nodes' pod range; the mode left as kubeadm leaves it (iptables). Not nftables: that mode rejects traffic to a ClusterIP that, after DNAT, still goes to a ClusterIP, and the harness serves the kubernetes Service's ClusterIP with the API server itself",
  "DaemonSet nodeSelector: nodecare.test/upstream=kube-proxy added beside kubernetes.io/os=linux, so that only the joining node runs it (the suite's other nodes run without a service proxy, as the harness is built, and the joining node leaves with its network namespace)",
];

/** kubeadm's two templates (Go raw strings) from its source, by constant name. */
function kubeadmTemplate(source: string, name: string): string {
  const text = readFileSync(join(source, TEMPLATES), 'utf8');
  const match = new RegExp(`${name} = \`([^\`]*)\``).exec(text);
  if (!match) throw new Error(`no ${name} in ${join(source, TEMPLATES)}`);
  return match[1]!;
}

/** The objects kubeadm's proxy addon creates, filled in as kubeadm does, with CHANGES applied. */
function kubeadmObjects(source: string, server: string, clusterCIDR: string): K8sObject[] {
  const config = [
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
    'kind: KubeProxyConfiguration',
    'bindAddress: 0.0.0.0',
    'clientConnection:',
    '  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf',
    `clusterCIDR: ${clusterCIDR}`,
    'conntrack:',
    '  maxPerCore: 0',
  ]
    .map((line) => `    ${line}`)
    .join('\n');
  const fill = (template: string): string =>
    template
      .replaceAll('{{ .ProxyConfigMap }}', 'kube-proxy')
      .replaceAll('{{ .ProxyConfigMapKey }}', 'config.conf')
      .replaceAll('{{ .ControlPlaneEndpoint }}', server)
      .replaceAll('{{ .ProxyConfig}}', config)
      .replaceAll('{{ .Image }}', KUBERNETES_IMAGES.kubeProxy);
  const configMap = load(fill(kubeadmTemplate(source, 'KubeProxyConfigMap19'))) as K8sObject;
  const daemonSet = load(fill(kubeadmTemplate(source, 'KubeProxyDaemonSet19'))) as K8sObject & {
    spec: { template: { spec: { nodeSelector: Record<string, string> } } };
  };
  daemonSet.spec.template.spec.nodeSelector['nodecare.test/upstream'] = 'kube-proxy';
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'kube-proxy', namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'kubeadm:node-proxier' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-proxier' },
      subjects: [{ kind: 'ServiceAccount', name: 'kube-proxy', namespace: 'kube-system' }],
    },
    configMap,
    daemonSet,
  ];
}

describe.skipIf(notRun !== '')(
  `kube-proxy (upstream, as kubeadm installs it) on real nodes${notRun ? ` (NOT RUN: ${notRun})` : ''}`,
  () => {
    const install = notRun ? undefined : new NodecareInstall(inject('nodecareImage').ref);
    let images: KubernetesImages;
    let objects: K8sObject[] = [];
    let joined: TestNode | undefined;
    const list = (): string => dump({ apiVersion: 'v1', kind: 'List', items: objects });

    beforeAll(async () => {
      const parts = await ensureNodeParts();
      images = await writeKubernetesImages(parts, inject('realNodesSlotDir'));
      const source = await kubernetesSource();
      const podRange = realNodes()[0]!.podCIDR.replace(/\.\d+\/\d+$/, '.0/24');
      objects = kubeadmObjects(source, inject('server'), podRange);
      log(`upstream templates: ${join(source, TEMPLATES)} (KubeProxyConfigMap19, KubeProxyDaemonSet19)`);
      for (const change of CHANGES) log(`changed: ${change}`);
      await install!.install();
    }, 600_000);

    afterAll(async () => {
      await install?.teardown(async () => {
        await kubectl(['delete', 'systemextension', EXTENSION, '--ignore-not-found']);
        await kubectl(['delete', '--ignore-not-found', '-f', '-'], list());
      });
    });

    it('a node joins held until kube-proxy has synced its rules and answers /healthz', async () => {
      await kubectl(['apply', '-f', '-'], list());
      const example = load(readFileSync(EXAMPLE, 'utf8')) as { spec: Record<string, unknown> };
      // The shipped example at test speed, for the joining node.
      example.spec.nodeSelector = { matchLabels: { 'nodecare.test/upstream': 'kube-proxy' } };
      Object.assign(example.spec, {
        periodSeconds: 2,
        timeoutSeconds: 1,
        failureThreshold: 1,
        startupGraceSeconds: 10,
      });
      await kubectl(['apply', '-f', '-'], JSON.stringify(example));
      joined = await joinsHeldUntilHealthy({
        extension: EXTENSION,
        log,
        join: () =>
          install!.join({ 'nodecare.test/upstream': 'kube-proxy' }, [
            inject('nodecareImage').archive,
            images.kubeProxy,
          ]),
        started: async () => {
          const pod = await readyPodOn('kube-system', SELECTOR, JOINING);
          return `pod ${pod.metadata.name} Running`;
        },
      });
      // What nodecare saw, from the node itself: kube-proxy's own account of its last rules sync.
      const healthz = await joined.exec([
        process.execPath,
        '-e',
        "fetch('http://127.0.0.1:10256/healthz').then(async (r) => console.log(r.status, await r.text()))",
      ]);
      log(`${JOINING} kube-proxy /healthz: ${healthz.stdout.trim()}`);
      expect(healthz.stdout).toMatch(/^200 .*"lastUpdated"/);
    });

    it('kube-proxy hangs (SIGSTOP) → /healthz silent, the runtime taint; resumed (SIGCONT) → cleared', async () => {
      const pod = await readyPodOn('kube-system', SELECTOR, JOINING);
      const pid = await containerPid(joined!, pod);
      await breaksAndRecovers({
        extension: EXTENSION,
        log,
        breakIt: async () => {
          process.kill(pid, 'SIGSTOP');
          return `kube-proxy (pid ${pid}) stopped with SIGSTOP: it holds its port and answers nothing`;
        },
        mend: async () => {
          process.kill(pid, 'SIGCONT');
          return `kube-proxy (pid ${pid}) resumed with SIGCONT`;
        },
      });
    });
  },
);
