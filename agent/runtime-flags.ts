// V8 settings for the agent's footprint (docs/design.md P6: 64 MiB RSS with 5 extensions), applied by the
// program itself so that the binary meets the goal at default settings however it is started (the DaemonSet,
// `node dist/agent/main.js`, the package's bin). Imported first by start.ts (which main.ts loads after the
// Node.js version check): modules evaluate in import order, so this runs before any other module and before
// any I/O. Measured in docs/adr/0006.
//
// These flags are read only when V8 creates its isolate (v8.setFlagsFromString is too late for them), so the
// process replaces itself once with the same arguments plus the flags (execve: same pid, same stdio):
// - `--max-semi-space-size=1`: the young generation stays at 2 MiB instead of growing to 32 MiB or more;
//   the agent allocates little and briefly.
// - `--jitless` (the built binary only): V8 interprets and never compiles machine code: no baseline or
//   optimizing tiers, their code and compiler memory (~4 MiB; less CPU measured, not more: the agent's code
//   is not hot). It also turns WebAssembly off, which node's TypeScript support needs: run from its .ts
//   sources (the integration tests), the agent keeps its JIT.
// - `--v8-pool-size=1`: one V8 background thread instead of four (each thread's stack and malloc arena cost
//   resident memory; with no JIT, what is left for them is concurrent marking of a heap of about 10 MiB).

//
// A failing execve cannot be caught: node aborts the process (SIGABRT, and the DaemonSet restarts it into the
// same failure). So the same executable is first run with the exact arguments and environment of the
// re-exec and `--version` (it exits before loading anything; ~10 ms): if that cannot start (executable gone
// or not executable, a noexec mount, exec denied, arguments too long) or rejects a flag, the agent runs on
// without the flags and start.ts logs why (runtimeFlagsProblem).

const REEXECUTED = 'NODECARE_AGENT_REEXECUTED';

const wanted = [
  '--max-semi-space-size=1',
  '--v8-pool-size=1',
  ...(import.meta.url.endsWith('.js') ? ['--jitless'] : []),
];
const missing = wanted.filter((flag) => !process.execArgv.includes(flag));

/** Why the re-exec would fail, by trying it in a child; undefined when it can be done. */
function reexecProblem(args: readonly string[], env: NodeJS.ProcessEnv): string | undefined {
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

function reexecute(): string | undefined {
  if (missing.length === 0 || process.env[REEXECUTED] !== undefined) return undefined;
  const args = [...missing, ...process.execArgv, ...process.argv.slice(1)];
  const env = { ...process.env, [REEXECUTED]: missing.join(' ') };
  const problem = reexecProblem(args, env);
  if (problem === undefined) process.execve?.(process.execPath, [process.execPath, ...args], env);
  return problem;
}

/**
 * Why the agent runs without its runtime flags (the re-exec could not be done); undefined when it has them.
 * Only ever set in the first process: a successful re-exec replaces it.
 */
export const runtimeFlagsProblem: string | undefined = reexecute();

/** The flags the agent would have added. */
export const missingRuntimeFlags: readonly string[] = missing;
