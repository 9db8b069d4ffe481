// What the real-node suite (global-setup.ts, shipped.test.ts) and `npm start -- --real-nodes` (demo/real-nodes.ts)
// both need to put nodecare and the test workloads on real nodes. No vitest here: the demo runs outside it.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { dump } from 'js-yaml';
import { writeOciArchive } from './oci.ts';
import type { NodeParts } from './realnodes.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The test workloads' image as the fixtures name it (test/realnodes/fixtures). */
export const TESTBIN_IMAGE = 'nodecare.test/testbin:1';

/** Writes the test workloads' image (testbin: device plugin, readiness stand-in) as an OCI archive at `path`. */
export async function writeTestbinArchive(path: string, parts: Pick<NodeParts, 'testbin'>): Promise<string> {
  await writeOciArchive(path, {
    ref: TESTBIN_IMAGE,
    files: [{ path: '/testbin', source: parts.testbin, mode: 0o755 }],
    entrypoint: ['/testbin'],
  });
  return path;
}

/**
 * A kustomization over the shipped manifests/ that changes only the image (and adds `components`), as a user's
 * overlay would: `kubectl apply -k <the returned directory>`. It is made in a new directory under `parent`
 * (whoever owns `parent` removes it).
 */
export function kustomizationWithImage(
  ref: string,
  components: string[] = [],
  parent: string = tmpdir(),
): string {
  const dir = mkdtempSync(join(parent, 'nodecare-install-'));
  const at = ref.lastIndexOf(':');
  writeFileSync(
    join(dir, 'kustomization.yaml'),
    dump({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: [relative(dir, join(ROOT, 'manifests'))],
      images: [{ name: 'nodecare', newName: ref.slice(0, at), newTag: ref.slice(at + 1) }],
      ...(components.length ? { components: components.map((c) => relative(dir, c)) } : {}),
    }),
  );
  return dir;
}

/** The namespace the shipped manifests install into. */
const SYSTEM = 'nodecare-system';

/**
 * Installs nodecare from `overlay` as a user would (`kubectl apply --server-side -k`) and waits until the agent
 * DaemonSet has rolled out and the controller Deployment is Available. `kubectl` runs one kubectl command
 * against the cluster and rejects when it fails.
 */
export async function applyShipped(
  kubectl: (args: string[]) => Promise<string>,
  overlay: string,
  timeoutSeconds: number,
): Promise<void> {
  const timeout = `--timeout=${timeoutSeconds}s`;
  await kubectl(['apply', '--server-side', '-k', overlay]);
  await kubectl(['rollout', 'status', '-n', SYSTEM, 'daemonset/nodecare-agent', timeout]);
  await kubectl([
    'wait',
    '-n',
    SYSTEM,
    '--for=condition=Available',
    'deployment/nodecare-controller',
    timeout,
  ]);
}
