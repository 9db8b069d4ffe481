// process probe (docs/design.md section 3): at least `min` processes named `name`. the design allows systeminformation or /proc; we
// read /proc directly, because si.processes() gathers CPU, memory and user data for every process (it shells
// out to ps) when all we need is names. A process matches when its comm (the executable's name as the kernel
// keeps it, cut to 15 characters) equals `name`, or, for longer names, when comm is the cut name and the
// basename of argv[0] is the whole name; so most processes cost one small read. Zombies do not count.
// In a pod this needs hostPID.

import { readdir } from '../../lib/fs.ts';
import { basename } from 'node:path';
import { ProbeReason } from '../../api/reasons.ts';
import { readHead } from './read-head.ts';
import { fileError, healthy, timedOut, unhealthy } from './result.ts';
import type { Probe } from './types.ts';
import { capInput } from '../../api/text.ts';

const MAX_CMDLINE_BYTES = 4096;
const COMM_CHARS = 15;
/**
 * /proc/<pid>/comm is at most 15 characters and a newline. /proc/<pid>/stat starts "pid (comm) state", at most
 * 10 + 2 + 15 + 2 + 1 bytes, and no field after comm holds a ')'. Capped reads of both, not readFile: that reads
 * a file of unknown size (as /proc reports them) through a 64 KiB buffer, and the probe reads every process at
 * once (measured: docs/adr/0006, third addendum).
 */
const MAX_COMM_BYTES = 64;
const MAX_STAT_HEAD_BYTES = 128;

export const processProbe: Probe<'process'> = async (spec, ctx) => {
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
  } catch (err) {
    return fileError('/proc', err);
  }
  const matches = await Promise.all(pids.map((pid) => isLiveProcessNamed(pid, spec.name)));
  if (ctx.signal.aborted) return timedOut(ctx);
  const count = matches.filter(Boolean).length;
  const summary = `${count} process${count === 1 ? '' : 'es'} named ${capInput(spec.name)}`;
  return count >= spec.min
    ? healthy(summary)
    : unhealthy(ProbeReason.ProcessMissing, `${summary}, want at least ${spec.min}`);
};

/** False too when the process exits while we look (its /proc files vanish). */
async function isLiveProcessNamed(pid: string, name: string): Promise<boolean> {
  try {
    const comm = (await readHead(`/proc/${pid}/comm`, MAX_COMM_BYTES)).toString('utf8').replace(/\n$/, '');
    if (comm !== name) {
      if (name.length <= COMM_CHARS || comm !== name.slice(0, COMM_CHARS)) return false;
      const cmdline = await readHead(`/proc/${pid}/cmdline`, MAX_CMDLINE_BYTES);
      if (basename(cmdline.toString('utf8').split('\0')[0] ?? '') !== name) return false;
    }
    // /proc/<pid>/stat is "pid (comm) state …"; comm may contain spaces and parentheses, so split at the last ')'.
    const stat = (await readHead(`/proc/${pid}/stat`, MAX_STAT_HEAD_BYTES)).toString('utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
