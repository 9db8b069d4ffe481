// Gardener awareness (docs/rollup.md, "Gardener awareness"): what the roll-up needs from a Gardener
// `extensions.gardener.cloud/v1alpha1` Cluster object. Gardener's extension library reads the Shoot embedded in
// the Cluster (`spec.shoot`): `spec.hibernation.enabled` (the spec flag, not status.isHibernated) pauses health
// checks and reports every condition healthy; a shoot without worker pools (`spec.provider.workers` empty) has
// no EveryNodeReady condition. Pure: the writer reads the object and passes it here.

export interface ShootFacts {
  hibernated: boolean;
  workerless: boolean;
}

/** Not a Gardener cluster, or no Cluster object: nothing changes the evaluation. */
export const NO_SHOOT: ShootFacts = Object.freeze({ hibernated: false, workerless: false });

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

/**
 * The facts of the Shoot embedded in a Cluster object. A missing Cluster (undefined) or one without a Shoot is
 * tolerated as "not hibernated, has workers": the roll-up then behaves as on any cluster. (Gardener's extension
 * library backs off on a missing Cluster; nodecare runs on clusters without Gardener too, so not-found is not an
 * error — docs/rollup.md.)
 */
export function shootFromCluster(cluster: unknown): ShootFacts {
  const shoot = field(field(cluster, 'spec'), 'shoot');
  const spec = field(shoot, 'spec');
  if (spec === undefined) return NO_SHOOT;
  const hibernated = field(field(spec, 'hibernation'), 'enabled') === true;
  const workers = field(field(spec, 'provider'), 'workers');
  const workerless = !Array.isArray(workers) || workers.length === 0;
  return { hibernated, workerless };
}
