// V8 flags a program applies to itself (docs/adr/0006, 0007), so that the binary meets its memory goal at
// default settings however it is started (the DaemonSet or Deployment, `node dist/…/main.js`, the package's
// bin). Flags such as `--max-semi-space-size` and `--jitless` are read only when V8 creates its isolate
// (v8.setFlagsFromString is too late for them), so the process replaces itself once with the same arguments
// plus the flags (execve: same pid, same stdio); an environment variable marks the second process so it
// never happens twice. Call it from a module every other module is imported after, before any I/O.
//
// A failing execve cannot be caught: node aborts the process (SIGABRT, and the kubelet restarts it into the
// same failure). So the same executable is first run with the exact arguments and environment of the
// re-exec and `--version` (it exits before loading anything; ~10 ms): if that cannot start (executable gone
// or not executable, a noexec mount, exec denied, arguments too long) or rejects a flag, the program runs on
// without the flags and says why (`problem`, for its log once it has one).

export interface Reexec {
  /** The flags the process was started without (before a re-exec; none after it). */
  missing: readonly string[];
  /** Why the process runs without `missing`: the re-exec could not be done. Undefined when it has them. */
  problem: string | undefined;
}

/** Why the re-exec would fail, by trying it in a child; undefined when it can be done. */
function reexecProblem(missing: readonly string[], args: readonly string[], env: NodeJS.ProcessEnv) {
  if (typeof process.execve !== 'function')
    return `process.execve is not available in node ${process.version}`;
  // Not an ES import: only this start-up path needs it (agent memory, docs/adr/0006).
  const { spawnSync } = process.getBuiltinModule('node:child_process');
  const probe = spawnSync(process.execPath, ['--version', ...args], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (probe.error) return `cannot execute ${process.execPath}: ${probe.error.message}`;
  if (probe.status === 0) return undefined;
  const why = probe.status === null ? `was killed by ${probe.signal}` : `exited ${probe.status}`;
  const said = probe.stderr.trim().split('\n')[0]?.slice(0, 200);
  return `${process.execPath} with ${missing.join(' ')} ${why}${said ? `: ${said}` : ''}`;
}

/**
 * Replaces the process with itself plus the `wanted` flags it was not started with, unless `marker` is in the
 * environment (this is the replacement already). Returns only when no re-exec was needed or it could not be
 * done.
 */
export function reexecWithFlags(wanted: readonly string[], marker: string): Reexec {
  const missing = wanted.filter((flag) => !process.execArgv.includes(flag));
  if (missing.length === 0 || process.env[marker] !== undefined) return { missing, problem: undefined };
  const args = [...missing, ...process.execArgv, ...process.argv.slice(1)];
  const env = { ...process.env, [marker]: missing.join(' ') };
  const problem = reexecProblem(missing, args, env);
  if (problem === undefined) process.execve?.(process.execPath, [process.execPath, ...args], env);
  return { missing, problem };
}
