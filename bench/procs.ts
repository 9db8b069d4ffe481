// The real programs as the benchmark runs them: the built binaries (dist/agent/main.js,
// dist/controller/main.js, what `npm run build` produces and the package ships), one process each, logs to a
// file, memory and CPU read from /proc.

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, openSync, readSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { inCgroup, type MemoryCgroup } from './cgroup.ts';

export const ROOT = join(import.meta.dirname, '..');
/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux Node.js supports). */
const USER_HZ = 100;

export interface Program {
  name: string;
  child: ChildProcess;
  logPath: string;
  exited: Promise<number | null>;
  /** Resolves with the first log line whose msg is `msg` (also one already logged). */
  waitForLog(msg: string, timeoutMs: number): Promise<Record<string, unknown>>;
  signal(sig: NodeJS.Signals): void;
  stop(graceMs?: number): Promise<void>;
}

export function startBinary(
  name: string,
  entry: 'agent' | 'controller',
  args: string[],
  logDir: string,
  env: Record<string, string> = {},
  memory?: MemoryCgroup,
): Program {
  const logPath = join(logDir, `${name}.log`);
  // The program writes its stdout straight into its log file, as a container's runtime takes its output, and
  // never waits for the benchmark: through a pipe, a benchmark process busy observing the fleet left the pipe
  // full, and pino's synchronous stdout write waited (atomic-sleep: about 0.2 s of a restarted controller's
  // main thread at 5,000 nodes). The file is read back here as it grows (LogTail).
  const out = openSync(logPath, 'a');
  const argv = [process.execPath, join(ROOT, 'dist', entry, 'main.js'), ...args];
  const [command, commandArgs] = memory ? inCgroup(memory, argv) : [argv[0]!, argv.slice(1)];
  const child = spawn(command, commandArgs, {
    env: { ...process.env, ...env },
    stdio: ['ignore', out, 'pipe'],
  });
  closeSync(out);
  const stderr = createWriteStream(logPath, { flags: 'a' });
  const seen = new Map<string, Record<string, unknown>>();
  const waiters = new Map<string, Array<(line: Record<string, unknown>) => void>>();
  const tail = new LogTail(logPath, (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    const msg = String(line.msg ?? '');
    if (!seen.has(msg)) seen.set(msg, line);
    for (const resolve of waiters.get(msg) ?? []) resolve(line);
    waiters.delete(msg);
  });
  // Ended when the pipe closes, which may be after the exit: a line written after end() would throw.
  createInterface({ input: child.stderr! })
    .on('line', (text) => stderr.write(`[stderr] ${text}\n`))
    .once('close', () => stderr.end());
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      tail.close();
      memory?.remove();
      resolve(code);
    }),
  );
  return {
    name,
    child,
    logPath,
    exited,
    waitForLog(msg, timeoutMs) {
      const line = seen.get(msg);
      if (line) return Promise.resolve(line);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name}: no log "${msg}" within ${timeoutMs} ms (see ${logPath})`)),
          timeoutMs,
        );
        const list = waiters.get(msg) ?? [];
        list.push((l) => {
          clearTimeout(timer);
          resolve(l);
        });
        waiters.set(msg, list);
        void exited.then((code) =>
          reject(new Error(`${name} exited (${code}) before logging "${msg}" (see ${logPath})`)),
        );
      });
    },
    signal(sig) {
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    },
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** How often a log file is read for new lines (each line carries its own time: this is only a delay). */
const LOG_TAIL_MS = 50;

/** Hands each complete line appended to a file to `onLine`, read every LOG_TAIL_MS and once more on close. */
class LogTail {
  private readonly fd: number;
  private readonly onLine: (text: string) => void;
  private readonly timer: NodeJS.Timeout;
  private readonly buffer = Buffer.alloc(1 << 16);
  private offset = 0;
  /** The start of a line not ended yet (bytes: a read may end inside a multi-byte character). */
  private partial = Buffer.alloc(0);

  constructor(path: string, onLine: (text: string) => void) {
    this.fd = openSync(path, 'r');
    this.onLine = onLine;
    this.timer = setInterval(() => this.read(), LOG_TAIL_MS);
  }

  close(): void {
    clearInterval(this.timer);
    this.read();
    closeSync(this.fd);
  }

  private read(): void {
    for (;;) {
      const n = readSync(this.fd, this.buffer, 0, this.buffer.length, this.offset);
      if (n === 0) return;
      this.offset += n;
      const bytes = Buffer.concat([this.partial, this.buffer.subarray(0, n)]);
      let start = 0;
      for (let end = bytes.indexOf(10); end !== -1; end = bytes.indexOf(10, start)) {
        this.onLine(bytes.toString('utf8', start, end));
        start = end + 1;
      }
      this.partial = Buffer.from(bytes.subarray(start));
    }
  }
}

export interface ProcMemory {
  rssBytes: number;
  /** Peak RSS since the process started (VmHWM). */
  peakRssBytes: number;
}

export async function procMemory(pid: number): Promise<ProcMemory> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') };
}

/** CPU time (user + system, ms) of a `/proc/<pid>/stat` or `/proc/<pid>/task/<tid>/stat` line. */
function statCpuMs(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After the command: state(0) ppid(1) ... utime(11) stime(12).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

/** CPU time (user + system) the process has used, in ms. */
export async function procCpuMs(pid: number): Promise<number> {
  return statCpuMs(await readFile(`/proc/${pid}/stat`, 'utf8'));
}

/**
 * The whole machine's CPU time in ms, summed over its cores since boot: busy (user, nice, system, irq,
 * softirq, steal) and idle (idle, iowait), from the first line of /proc/stat. Two readings bound a window:
 * how much of the cores' time the processes one knows of took, and how much no one used.
 */
export async function machineCpuMs(): Promise<{ busyMs: number; idleMs: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n', 1)[0] ?? '';
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map((v) => (Number(v) * 1000) / USER_HZ);
  const sum = (...vs: Array<number | undefined>): number => vs.reduce<number>((a, v) => a + (v ?? 0), 0);
  return { busyMs: sum(user, nice, system, irq, softirq, steal), idleMs: sum(idle, iowait) };
}

/**
 * CPU time (user + system, ms) of the process's threads by what they do: Node.js's main thread (the event loop),
 * V8's worker threads (concurrent and parallel garbage collection, background compilation) and the rest
 * (libuv's thread pool, signal and inspector threads). Read from /proc/<pid>/task/<tid>: the thread names
 * Node.js gives them.
 */
export async function procThreadCpuMs(pid: number): Promise<{ main: number; v8: number; other: number }> {
  const split = { main: 0, v8: 0, other: 0 };
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const [comm, stat] = await Promise.all([
      readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8').catch(() => ''),
      readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => ''),
    ]);
    if (stat === '') continue;
    const ms = statCpuMs(stat);
    const name = comm.trim();
    if (tid === String(pid)) split.main += ms;
    else if (name.startsWith('V8Worker')) split.v8 += ms;
    else split.other += ms;
  }
  return split;
}

/**
 * How long the process's main thread (Node.js's event loop) ran on a CPU and how long it was runnable but
 * waited for one, in ms since it started: the kernel's run-queue accounting, `/proc/<pid>/task/<pid>/schedstat`
 * (run ns, wait ns, slices). On a saturated machine a program's wall time is its own CPU, the wait for a CPU
 * and the wait for I/O; the wait says how much of a figure the machine's other work took. Undefined where the
 * kernel keeps no such accounting.
 */
export async function procMainThreadSchedMs(
  pid: number,
): Promise<{ runMs: number; waitMs: number } | undefined> {
  const text = await readFile(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').catch(() => '');
  const [run, wait] = text.trim().split(' ').map(Number);
  if (run === undefined || wait === undefined || !Number.isFinite(run) || !Number.isFinite(wait))
    return undefined;
  return { runMs: run / 1e6, waitMs: wait / 1e6 };
}

/** ms from `sinceEpochMs` to the time of `program`'s log line `msg` (waiting up to `timeoutMs`); undefined if none. */
export async function loggedAfterMs(
  program: Program,
  msg: string,
  sinceEpochMs: number,
  timeoutMs = 1_000,
): Promise<number | undefined> {
  const line = await program.waitForLog(msg, timeoutMs).catch(() => undefined);
  return line ? Date.parse(String(line.time)) - sinceEpochMs : undefined;
}

/** `promise`, or an error naming `what` if `program` exits first. */
export function unlessExited<T>(promise: Promise<T>, program: Program, what: string): Promise<T> {
  return Promise.race([
    promise,
    program.exited.then((code): never => {
      throw new Error(`${program.name} exited (${code}) before ${what} (see ${program.logPath})`);
    }),
  ]);
}
