// V8 settings for the agent's footprint (docs/design.md P6: 64 MiB RSS with 5 extensions), applied by the
// program itself so that the binary meets the goal at default settings however it is started (the DaemonSet,
// `node dist/agent/main.js`, the package's bin). Imported by main.ts after the Node.js version check and
// before start.ts, which imports it first too: it runs before any other module loads and before any I/O.
// Measured in docs/adr/0006.
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
// The re-exec and its safety net (a failing execve is checked for first) are lib/reexec.ts's.

import { reexecWithFlags } from '../lib/reexec.ts';

const reexec = reexecWithFlags(
  ['--max-semi-space-size=1', '--v8-pool-size=1', ...(import.meta.url.endsWith('.js') ? ['--jitless'] : [])],
  'NODECARE_AGENT_REEXECUTED',
);

/**
 * Why the agent runs without its runtime flags (the re-exec could not be done); undefined when it has them.
 * Only ever set in the first process: a successful re-exec replaces it.
 */
export const runtimeFlagsProblem: string | undefined = reexec.problem;

/** The flags the agent would have added. */
export const missingRuntimeFlags: readonly string[] = reexec.missing;
