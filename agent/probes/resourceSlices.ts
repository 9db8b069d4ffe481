// resourceSlices probe (docs/design.md section 3): Dynamic Resource Allocation's proof that a node's devices
// are usable, the ResourceSlices (resource.k8s.io/v1) its DRA driver published for it. Only a pool's newest
// generation counts, and only once all its slices are in (a republish under way is Unknown, not a failure).

import type { ResourceSlicesProbe } from '../../api/probe-spec.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { healthy, unhealthy, unknown } from './result.ts';
import type { Probe, ProbeResult, SliceFacts } from './types.ts';

/** Whether `device` has the attribute: by its name as written, or qualified with the driver's domain. */
function hasAttribute(
  device: SliceFacts['devices'][number],
  driver: string,
  attribute: NonNullable<ResourceSlicesProbe['attribute']>,
): boolean {
  const { name, value } = attribute;
  const bare = name.startsWith(`${driver}/`) ? name.slice(driver.length + 1) : name;
  return [name, bare, `${driver}/${bare}`].some((key) => device.attributes[key] === value);
}

/** The verdict on the slices the node's cache holds (pure: the probe's whole logic). */
export function judgeSlices(spec: ResourceSlicesProbe, slices: readonly SliceFacts[]): ProbeResult {
  const { driver, pool, minDevices, attribute } = spec;
  const where = `${driver}${pool ? ` pool ${pool}` : ''}`;
  const mine = slices.filter((s) => s.driver === driver && (pool === undefined || s.pool === pool));
  if (mine.length === 0)
    return unhealthy(ProbeReason.ResourceMissing, `no ResourceSlice of ${where} published for this node`);
  const pools = new Map<string, SliceFacts[]>();
  for (const slice of mine) pools.set(slice.pool, [...(pools.get(slice.pool) ?? []), slice]);
  let devices = 0;
  for (const [name, poolSlices] of [...pools].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const generation = Math.max(...poolSlices.map((s) => s.generation));
    const current = poolSlices.filter((s) => s.generation === generation);
    const expected = Math.max(...current.map((s) => s.sliceCount));
    if (current.length < expected)
      return unknown(
        ProbeReason.ProbeError,
        `pool ${name} of ${driver}: ${current.length} of ${expected} ResourceSlices of generation ${generation} published (a republish under way)`,
      );
    for (const slice of current)
      devices += attribute
        ? slice.devices.filter((d) => hasAttribute(d, driver, attribute)).length
        : slice.devices.length;
  }
  const which = attribute ? ` with ${attribute.name}=${attribute.value}` : '';
  const summary = `${devices} device(s)${which} published by ${where}`;
  return devices >= minDevices
    ? healthy(summary)
    : unhealthy(ProbeReason.TooFewDevices, `${summary}, want at least ${minDevices}`);
}

export const resourceSlicesProbe: Probe<'resourceSlices'> = async (spec, ctx) =>
  judgeSlices(spec, await ctx.env.resourceSlices());
