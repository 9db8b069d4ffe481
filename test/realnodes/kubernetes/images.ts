// The images of the upstream extensions from the Kubernetes tree (../build.sh builds their binaries into the
// node parts' k8s/ directory), laid out as their own images are, for `ctr images import` on the real nodes:
// - kube-proxy: the binary at /usr/local/bin/kube-proxy (where kubeadm's DaemonSet runs it) with Debian's
//   nft and the libraries it needs, as the upstream image (distroless-iptables) carries the nftables tools;
// - sample-device-plugin: test/images/sample-device-plugin's Dockerfile: /sampledeviceplugin, with
//   -alsologtostderr;
// - stub-plugin: Kubernetes' device plugin stub with a control socket (stub-plugin/main.go).
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
} as const;

/**
 * Debian's nft and what it loads (ldd of /usr/sbin/nft on bookworm), glibc included: the image has nothing
 * else to run it with.
 */
const NFT_PACKAGES = [
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

/** Writes the three images' OCI archives into `dir` (once per directory) and says where they are. */
export async function writeKubernetesImages(
  parts: Pick<NodeParts, 'dir'>,
  dir: string,
): Promise<KubernetesImages> {
  const bin = (name: string): string => join(parts.dir, 'k8s', name);
  const archives: KubernetesImages = {
    kubeProxy: join(dir, 'kube-proxy.oci.tar'),
    sampleDevicePlugin: join(dir, 'sample-device-plugin.oci.tar'),
    stubPlugin: join(dir, 'stub-plugin.oci.tar'),
  };
  if (!existsSync(archives.kubeProxy)) {
    const { stdout } = await execFileAsync('bash', [
      join(HERE, '..', '..', 'image', 'debs.sh'),
      ...NFT_PACKAGES,
    ]);
    const debian: OciFile[] = stdout
      .trim()
      .split('\n')
      .flatMap((pkg) => filesUnder(pkg, '/', ['usr/share', 'etc']));
    await writeOciArchive(archives.kubeProxy, {
      ref: KUBERNETES_IMAGES.kubeProxy,
      files: [
        ...debian,
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
  return archives;
}
