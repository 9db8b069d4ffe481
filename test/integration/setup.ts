// Installs what nodecare's programs need in the test cluster: its namespaces and CRDs (idempotent).

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

export async function kubectl(...args: string[]): Promise<string> {
  const bin = join(inject('binDir'), 'kube-testenv');
  try {
    const { stdout } = await run(bin, ['kubectl', `--kubeconfig=${inject('kubeconfig')}`, ...args], {
      maxBuffer: 16 << 20,
    });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`kubectl ${args.join(' ')} failed: ${e.stderr || e.message}`, { cause: err });
  }
}

let applied: Promise<void> | undefined;

export function applyBaseManifests(): Promise<void> {
  applied ??= (async () => {
    const base = join(ROOT, 'manifests', 'base');
    await kubectl('apply', '--server-side', '-f', join(base, 'namespaces.yaml'), '-f', join(base, 'crds'));
    await kubectl(
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/systemextensions.nodecare.io',
      'crd/clusterhealths.nodecare.io',
    );
  })();
  return applied;
}
