// The images of the upstream extensions from the Kubernetes tree (../build.sh builds their binaries into the
// node parts' k8s/ directory), laid out as their own images are, for `ctr images import` on the real nodes:
// - kube-proxy: the binary at /usr/local/bin/kube-proxy (where kubeadm's DaemonSet runs it) with Debian's
//   iptables (its nf_tables backend, chosen as Debian's alternatives choose it) and nft, and the libraries
//   they need, as the upstream image (distroless-iptables) carries both;
// - sample-device-plugin: test/images/sample-device-plugin's Dockerfile: /sampledeviceplugin, with
//   -alsologtostderr;
// - stub-plugin: Kubernetes' device plugin stub with a control socket (stub-plugin/main.go);
// - csi-mock: the e2e tests' mock CSI driver (csi-mock/main.go) at /csi-mock, for the `mock` container of
//   test/e2e/testing-manifests/storage-csi/mock/csi-mock-driver.yaml (its args as the manifest gives them);
// - csi-registrar: nodecare's own registrar to node-driver-registrar's contract (csi-registrar/main.go: the Go
//   module proxy does not serve node-driver-registrar), for that manifest's `driver-registrar` container.
// The upstream manifests the tests install come from the k8s.io/kubernetes module's source in the Go module
// cache (kubernetesSource()).

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { filesUnder, writeOciArchive, type OciFile } from '../oci.ts';
import type { NodeParts } from '../realnodes.ts';

const execFileAsync = promisify(execFile);
const HERE = import.meta.dirname;

export const KUBERNETES_IMAGES = {
  kubeProxy: 'nodecare.test/upstream/kube-proxy:v1.37.2',
  sampleDevicePlugin: 'nodecare.test/upstream/sample-device-plugin:v1.37.2',
  stubPlugin: 'nodecare.test/upstream/stub-plugin:v1.37.2',
  csiMock: 'nodecare.test/upstream/csi-mock:v1.37.2',
  // Not upstream: node-driver-registrar is not served (csi-registrar/main.go).
  csiRegistrar: 'nodecare.test/csi-registrar:v1.37.2',
} as const;

/**
 * Debian's iptables and nft and what they load (ldd on bookworm), glibc included: the image has nothing else
 * to run them with.
 */
const NETFILTER_PACKAGES = [
  'iptables',
  'libip4tc2',
  'libip6tc2',
  'libnetfilter-conntrack3',
  'libnfnetlink0',
  'nftables',
  'libnftables1',
  'libedit2',
  'libbsd0',
  'libmd0',
  'libtinfo6',
  'libgmp10',
  'libjansson4',
  'libmnl0',
  'libnftnl11',
  'libxtables12',
  'libc6',
];

export interface KubernetesImages {
  kubeProxy: string;
  sampleDevicePlugin: string;
  stubPlugin: string;
  csiMock: string;
  csiRegistrar: string;
}

/** The k8s.io/kubernetes module's source at the version kubernetes/go.mod pins (its upstream manifests). */
export async function kubernetesSource(): Promise<string> {
  const { stdout } = await execFileAsync('go', ['list', '-m', '-f', '{{.Dir}}', 'k8s.io/kubernetes'], {
    cwd: HERE,
    env: { ...process.env, GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
  });
  const dir = stdout.trim();
  if (!dir || !existsSync(join(dir, 'go.mod')))
    throw new Error(`k8s.io/kubernetes is not in the Go module cache (go list said ${JSON.stringify(dir)})`);
  return dir;
}

/** Writes the images' OCI archives into `dir` (once per directory) and says where they are. */
export async function writeKubernetesImages(
  parts: Pick<NodeParts, 'dir'>,
  dir: string,
): Promise<KubernetesImages> {
  const bin = (name: string): string => join(parts.dir, 'k8s', name);
  const archives: KubernetesImages = {
    kubeProxy: join(dir, 'kube-proxy.oci.tar'),
    sampleDevicePlugin: join(dir, 'sample-device-plugin.oci.tar'),
    stubPlugin: join(dir, 'stub-plugin.oci.tar'),
    csiMock: join(dir, 'csi-mock.oci.tar'),
    csiRegistrar: join(dir, 'csi-registrar.oci.tar'),
  };
  if (!existsSync(archives.kubeProxy)) {
    const { stdout } = await execFileAsync('bash', [
      join(HERE, '..', '..', 'image', 'debs.sh'),
      ...NETFILTER_PACKAGES,
    ]);
    const debian: OciFile[] = stdout
      .trim()
      .split('\n')
      .flatMap((pkg) => filesUnder(pkg, '/', ['usr/share', 'etc']));
    await writeOciArchive(archives.kubeProxy, {
      ref: KUBERNETES_IMAGES.kubeProxy,
      files: [
        ...debian,
        // What Debian's update-alternatives would link (iptables' postinst): the nf_tables backend.
        ...['iptables', 'ip6tables'].flatMap((t) =>
          ['', '-save', '-restore'].map((suffix) => ({
            path: `/usr/sbin/${t}${suffix}`,
            symlink: `${t}-nft${suffix}`,
          })),
        ),
        { path: '/usr/local/bin/kube-proxy', source: bin('kube-proxy'), mode: 0o755 },
        { path: '/tmp/.keep', content: '' },
      ],
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    });
  }
  if (!existsSync(archives.sampleDevicePlugin)) {
    await writeOciArchive(archives.sampleDevicePlugin, {
      ref: KUBERNETES_IMAGES.sampleDevicePlugin,
      files: [
        { path: '/sampledeviceplugin', source: bin('sample-device-plugin'), mode: 0o755 },
        // Its Allocate creates a fake device file in /tmp.
        { path: '/tmp/.keep', content: '' },
      ],
      entrypoint: ['/sampledeviceplugin', '-alsologtostderr'],
    });
  }
  if (!existsSync(archives.stubPlugin)) {
    await writeOciArchive(archives.stubPlugin, {
      ref: KUBERNETES_IMAGES.stubPlugin,
      files: [{ path: '/stub-plugin', source: bin('stub-plugin'), mode: 0o755 }],
      entrypoint: ['/stub-plugin'],
    });
  }
  if (!existsSync(archives.csiMock)) {
    await writeOciArchive(archives.csiMock, {
      ref: KUBERNETES_IMAGES.csiMock,
      files: [{ path: '/csi-mock', source: bin('csi-mock'), mode: 0o755 }],
      entrypoint: ['/csi-mock'],
    });
  }
  if (!existsSync(archives.csiRegistrar)) {
    await writeOciArchive(archives.csiRegistrar, {
      ref: KUBERNETES_IMAGES.csiRegistrar,
      files: [{ path: '/csi-registrar', source: bin('csi-registrar'), mode: 0o755 }],
      entrypoint: ['/csi-registrar'],
    });
  }
  return archives;
}
