// Installs what nodecare's programs need in the test cluster: its namespaces and CRDs (idempotent).

import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Api } from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';
import { inject } from 'vitest';
import { DEFAULT_BOOTSTRAP_TAINT_KEY } from '../../api/index.ts';
import { eventually, uniqueName } from './helpers.ts';

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

const BOOTSTRAP_TAINT_POLICY = join(
  ROOT,
  'manifests',
  'components',
  'bootstrap-taint-at-registration',
  'mutating-admission-policy.yaml',
);

export interface ScopedTaintPolicy {
  /** The policy's and its binding's name. */
  name: string;
  /** Only nodes created with this label (the test's node group or pool) get the taint. */
  label: { key: string; value: string };
  /** The taint key to add instead of the shipped bootstrap key (the contrast runs use a key no autoscaler knows). */
  taintKey?: string;
  /** Where the generated List is written (kept with the test's logs). */
  dir: string;
  core: CoreV1Api;
}

/**
 * Applies the shipped bootstrap-taint MutatingAdmissionPolicy bound to one labelled group of nodes only (the
 * control plane is shared with other test files), and resolves once it is in force: a server-side dry run of
 * a node creation in the group shows the taint.
 */
export async function applyScopedBootstrapTaintPolicy(options: ScopedTaintPolicy): Promise<void> {
  const { name, label, dir, core } = options;
  const key = options.taintKey ?? DEFAULT_BOOTSTRAP_TAINT_KEY;
  const text = (await readFile(BOOTSTRAP_TAINT_POLICY, 'utf8')).replaceAll(DEFAULT_BOOTSTRAP_TAINT_KEY, key);
  const docs = loadAll(text) as Array<Record<string, any> | null>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const policy = docs.find((d) => d?.kind === 'MutatingAdmissionPolicy');
  const binding = docs.find((d) => d?.kind === 'MutatingAdmissionPolicyBinding');
  if (!policy || !binding) throw new Error(`${BOOTSTRAP_TAINT_POLICY}: expected a policy and its binding`);
  policy.metadata.name = name;
  binding.metadata.name = name;
  binding.spec.policyName = name;
  binding.spec.matchResources = { objectSelector: { matchLabels: { [label.key]: label.value } } };
  const path = join(dir, `${name}-policy.json`);
  await writeFile(path, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }));
  await kubectl('apply', '--server-side', '-f', path);
  await eventually(
    async () => {
      const probe = await core.createNode({
        body: { metadata: { name: uniqueName('policy-probe'), labels: { [label.key]: label.value } } },
        dryRun: 'All',
      });
      return (probe.spec?.taints ?? []).some((t) => t.key === key) || undefined;
    },
    { what: 'the bootstrap-taint MutatingAdmissionPolicy in force', timeoutMs: 30_000, intervalMs: 500 },
  );
}
