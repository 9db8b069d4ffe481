// The upstream node extensions of the real-node tests (build.sh builds them; docs/extensions.md says what each
// is): their image as the tests name it, what goes into it, and ensureUpstream(), which builds (or reuses) a
// component and says where its binaries, its image archive and its module's source (with the upstream
// manifests the tests install) are.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { filesUnder, type OciImage } from '../oci.ts';

export const UPSTREAM_COMPONENTS = ['npd', 'dra', 'otelcol', 'nfd'] as const;
export type UpstreamComponent = (typeof UPSTREAM_COMPONENTS)[number];

/** The image each component is imported as (`imagePullPolicy: IfNotPresent` finds it on the node). */
export const UPSTREAM_IMAGES = {
  npd: 'nodecare.test/upstream/node-problem-detector:v1.34.0',
  dra: 'nodecare.test/upstream/dra-example-driver:v0.2.1',
  otelcol: 'nodecare.test/upstream/otelcol:0.165.0',
  nfd: 'nodecare.test/upstream/node-feature-discovery:v0.18.3',
} as const satisfies Record<UpstreamComponent, string>;

export interface UpstreamBuild {
  component: UpstreamComponent;
  /** The component's cache directory (bin/, image.oci.tar). */
  dir: string;
  archive: string;
  image: string;
  /** The module's source in the Go module cache: the upstream manifests are read from here. */
  moduleDir: string;
}

/** What goes into each image, as the component's own Dockerfile lays it out (paths, entrypoint). */
export function upstreamImage(component: UpstreamComponent, dir: string, moduleDir: string): OciImage {
  const bin = (name: string): string => join(dir, 'bin', name);
  switch (component) {
    case 'npd':
      // node-problem-detector's Dockerfile: the binary at /, the repository's config/ at /config (not
      // health-checker: at this version it fails on Linux before checking anything).
      return {
        ref: UPSTREAM_IMAGES.npd,
        files: [
          { path: '/node-problem-detector', source: bin('node-problem-detector'), mode: 0o755 },
          ...filesUnder(join(moduleDir, 'config'), '/config'),
        ],
        entrypoint: [
          '/node-problem-detector',
          '--config.system-log-monitor=/config/kernel-monitor.json,/config/readonly-monitor.json',
        ],
      };
    case 'dra':
      // deployments/container/Dockerfile: the kubelet plugin in /usr/bin (the chart runs it by name).
      return {
        ref: UPSTREAM_IMAGES.dra,
        files: [
          {
            path: '/usr/bin/dra-example-kubeletplugin',
            source: bin('dra-example-kubeletplugin'),
            mode: 0o755,
          },
        ],
      };
    case 'otelcol':
      // The collector's release images: the binary at /otelcol, its entrypoint.
      return {
        ref: UPSTREAM_IMAGES.otelcol,
        files: [{ path: '/otelcol', source: bin('otelcol'), mode: 0o755 }],
        entrypoint: ['/otelcol'],
      };
    case 'nfd':
      // node-feature-discovery's Dockerfile (its minimal variant): the binaries in /usr/bin, the example worker
      // config as /etc/kubernetes/node-feature-discovery/nfd-worker.conf, user 65534.
      return {
        ref: UPSTREAM_IMAGES.nfd,
        files: [
          ...['nfd-master', 'nfd-worker', 'nfd-gc'].map((name) => ({
            path: `/usr/bin/${name}`,
            source: bin(name),
            mode: 0o755,
          })),
          {
            path: '/etc/kubernetes/node-feature-discovery/nfd-worker.conf',
            source: join(moduleDir, 'deployment', 'components', 'worker-config', 'nfd-worker.conf.example'),
          },
        ],
        env: ['GRPC_GO_LOG_SEVERITY_LEVEL=INFO'],
        user: '65534:65534',
      };
  }
}

/** Builds (or reuses) `component` with build.sh; its progress lines go to `log`. */
export async function ensureUpstream(
  component: UpstreamComponent,
  log: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<UpstreamBuild> {
  const dir = await new Promise<string>((resolve, reject) => {
    const child = spawn('bash', [join(import.meta.dirname, 'build.sh'), component], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // image.ts runs on this Node.js (>= 24), whatever `node` is on PATH.
      env: { ...process.env, NODE: process.execPath },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      for (const line of d.toString().split('\n')) if (line.trim()) log(line);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = stdout
        .trim()
        .split('\n')
        .find((l) => l.startsWith(`${component} `));
      if (code === 0 && line) return resolve(line.slice(component.length + 1));
      reject(
        new Error(`test/realnodes/upstream/build.sh ${component} exited ${code}\n${stderr.slice(-4000)}`),
      );
    });
  });
  return {
    component,
    dir,
    archive: join(dir, 'image.oci.tar'),
    image: UPSTREAM_IMAGES[component],
    moduleDir: readFileSync(join(dir, 'module-dir'), 'utf8').trim(),
  };
}

/** Builds (or reuses) every component, one after the other (each build uses both cores). */
export async function ensureUpstreamBuilds(log?: (line: string) => void): Promise<UpstreamBuild[]> {
  const builds: UpstreamBuild[] = [];
  for (const component of UPSTREAM_COMPONENTS) builds.push(await ensureUpstream(component, log));
  return builds;
}
