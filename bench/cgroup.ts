// A memory limit for one program the benchmark starts, as its container would have it: a cgroup of its own
// with the limit the chart gives the Deployment. Node.js sizes V8's heap from the cgroup's limit
// (uv_get_constrained_memory: the old generation may hold about half of it), so a controller measured on a
// machine with many GiB and no limit collects garbage on another schedule than the one it runs with in the
// cluster. cgroup v1 (a `memory` hierarchy) or v2 (the unified one, with the memory controller on for the
// children of this process's cgroup); a machine without either, or a user who may not write there, gets the
// reason instead, and the run says that its programs ran without a limit.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  /** The file a process writes its pid to, to enter the cgroup. */
  procsFile: string;
  limitBytes: number;
  /** Removes the cgroup once its processes have exited (a cgroup with a process in it stays). */
  remove(): void;
}

interface Hierarchy {
  version: 1 | 2;
  /** Where this process's own cgroup is mounted. */
  dir: string;
}

/** This process's cgroup in the hierarchy that has the memory controller, from /proc/self/{mountinfo,cgroup}. */
function memoryHierarchy(): Hierarchy | string {
  let mountinfo: string;
  let own: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    own = readFileSync('/proc/self/cgroup', 'utf8');
  } catch (err) {
    return `no /proc/self cgroup files (${(err as Error).message})`;
  }
  for (const line of mountinfo.split('\n')) {
    // id parent major:minor root mountpoint options ... - fstype source superoptions
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const [fstype, , superOptions = ''] = right.split(' ');
    const mountPoint = left.split(' ')[4];
    if (!mountPoint) continue;
    if (fstype === 'cgroup' && superOptions.split(',').includes('memory')) {
      const path = /^\d+:(?:[^:]*,)?memory(?:,[^:]*)?:(.*)$/m.exec(own)?.[1];
      if (path !== undefined) return { version: 1, dir: join(mountPoint, path) };
    }
    if (fstype === 'cgroup2') {
      const controllers = readOrEmpty(join(mountPoint, 'cgroup.controllers'));
      const path = /^0::(.*)$/m.exec(own)?.[1];
      if (controllers.split(/\s+/).includes('memory') && path !== undefined)
        return { version: 2, dir: join(mountPoint, path) };
    }
  }
  return 'no cgroup hierarchy with the memory controller is mounted';
}

/** A file's text, or '' when it cannot be read. */
function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** A new cgroup with `limitBytes` of memory (and no swap beyond it), or why there is none. */
export function memoryCgroup(name: string, limitBytes: number): MemoryCgroup | string {
  const hierarchy = memoryHierarchy();
  if (typeof hierarchy === 'string') return hierarchy;
  const dir = join(hierarchy.dir, `${name}-${process.pid}`);
  try {
    if (hierarchy.version === 2) writeFileSync(join(hierarchy.dir, 'cgroup.subtree_control'), '+memory');
    mkdirSync(dir, { recursive: true });
    if (hierarchy.version === 1) writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitBytes));
    else {
      writeFileSync(join(dir, 'memory.max'), String(limitBytes));
      try {
        writeFileSync(join(dir, 'memory.swap.max'), '0');
      } catch {
        // No swap accounting: no swap to limit.
      }
    }
  } catch (err) {
    return `cannot make a memory cgroup under ${hierarchy.dir} (${(err as Error).message})`;
  }
  const cgroup: MemoryCgroup = {
    procsFile: join(dir, 'cgroup.procs'),
    limitBytes,
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // Still in use or gone: the machine's own cleanup, or the next run's name differs by pid.
      }
    },
  };
  // A process may be refused entry where the directory could be made (delegation rules): tried once, the way
  // a program enters (inCgroup), with `true`, so that no program is started into a cgroup it cannot enter.
  const trial = spawnSync(...inCgroup(cgroup, ['true']), { encoding: 'utf8' });
  if (trial.status !== 0) {
    cgroup.remove();
    return `cannot enter the memory cgroup ${dir} (${(trial.stderr || trial.error?.message || `exit ${trial.status}`).trim()})`;
  }
  return cgroup;
}

/** The command that enters `cgroup` and then runs `argv` in the same process (its pid is the program's). */
export function inCgroup(cgroup: MemoryCgroup, argv: readonly string[]): [string, string[]] {
  return ['/bin/sh', ['-c', 'echo $$ > "$0" && exec "$@"', cgroup.procsFile, ...argv]];
}
