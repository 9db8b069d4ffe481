// host probe (docs/design.md section 3): every configured host fact holds; the message names the facts that failed.
// Disk, memory and GPUs come from systeminformation. An interface's state is read from
// /sys/class/net/<name>/operstate — the very file systeminformation reads — because si.networkInterfaces()
// runs several execSync calls per interface (blocking the agent's event loop for seconds on a node with a
// veth per pod) and does not list interfaces that have no address.

import { readFile } from '../../lib/fs.ts';
import si from 'systeminformation';
import type { HostProbe } from '../../api/probe-spec.ts';
import { ProbeReason } from '../../api/reasons.ts';
import { errorCode, healthy, unhealthy } from './result.ts';
import type { Probe } from './types.ts';
import { capInput, quoteInput } from '../../api/text.ts';

interface Fact {
  holds: boolean;
  /** What was observed, plus what was wanted when it does not hold. */
  text: string;
}

export const hostProbe: Probe<'host'> = async (spec) => {
  const facts = await Promise.all(checks(spec).map((check) => check()));
  const failed = facts.filter((fact) => !fact.holds);
  if (failed.length > 0) return unhealthy(ProbeReason.HostCheckFailed, failed.map((f) => f.text).join('; '));
  return healthy(facts.map((f) => f.text).join('; '));
};

function checks(spec: HostProbe): Array<() => Promise<Fact>> {
  const { diskFreePercent: disk, memoryAvailableMiB: memory, gpu, interfaceUp } = spec;
  return [
    disk && (() => diskFree(disk.mount, disk.min)),
    memory && (() => memoryAvailable(memory.min)),
    gpu && (() => gpuCount(gpu.vendor, gpu.min)),
    interfaceUp && (() => interfaceState(interfaceUp.name)),
  ].filter((check) => check !== undefined);
}

/** Free space as available to unprivileged users (df's "Avail"), as a percentage of the size. */
async function diskFree(mount: string, min: number): Promise<Fact> {
  const fs = (await si.fsSize()).find((entry) => entry.mount === mount);
  if (!fs || !(fs.size > 0)) return { holds: false, text: `mount ${capInput(mount)} not found` };
  const percent = Math.floor((fs.available / fs.size) * 1000) / 10;
  const holds = percent >= min;
  return { holds, text: `${capInput(mount)} ${percent}% free${holds ? '' : `, want at least ${min}%`}` };
}

async function memoryAvailable(min: number): Promise<Fact> {
  const mib = Math.floor((await si.mem()).available / 2 ** 20);
  const holds = mib >= min;
  return { holds, text: `${mib} MiB memory available${holds ? '' : `, want at least ${min} MiB`}` };
}

async function gpuCount(vendor: string | undefined, min: number): Promise<Fact> {
  const wanted = vendor?.toLowerCase();
  const count = (await si.graphics()).controllers.filter(
    (c) => wanted === undefined || (c.vendor ?? '').toLowerCase().includes(wanted),
  ).length;
  const holds = count >= min;
  const what = `${count} GPU${count === 1 ? '' : 's'}${vendor ? ` from vendor ${quoteInput(vendor)}` : ''}`;
  return { holds, text: `${what}${holds ? '' : `, want at least ${min}`}` };
}

/**
 * Up when operstate is "up", or "unknown": drivers without carrier detection (lo, tun, many virtual
 * devices) report "unknown" while working, and sysfs reports "down" for every interface that is
 * administratively down.
 */
async function interfaceState(name: string): Promise<Fact> {
  if (!/^[^/\s]{1,15}$/.test(name) || name === '.' || name === '..') {
    return { holds: false, text: `${quoteInput(name)} is not an interface name` };
  }
  let state: string;
  try {
    state = (await readFile(`/sys/class/net/${name}/operstate`, 'utf8')).trim();
  } catch (err) {
    const text =
      errorCode(err) === 'ENOENT' ? `interface ${name} not found` : `interface ${name}: ${errorCode(err)}`;
    return { holds: false, text };
  }
  const holds = state === 'up' || state === 'unknown';
  return { holds, text: `interface ${name} ${state}${holds ? '' : ', want up'}` };
}
