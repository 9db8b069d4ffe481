// V8 settings for the agent's footprint (docs/design.md P6: 64 MiB RSS with 5 extensions), applied by the
// program itself so that the binary meets the goal at default settings however it is started (the DaemonSet,
// `node dist/agent/main.js`, the package's bin). Imported first by main.ts: modules evaluate in import order,
// so this runs before any other module and before any I/O. Measured in docs/adr/0006.
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

const REEXECUTED = 'NODECARE_AGENT_REEXECUTED';

const wanted = [
  '--max-semi-space-size=1',
  '--v8-pool-size=1',
  ...(import.meta.url.endsWith('.js') ? ['--jitless'] : []),
];
const missing = wanted.filter((flag) => !process.execArgv.includes(flag));

if (missing.length > 0 && process.env[REEXECUTED] === undefined && typeof process.execve === 'function') {
  process.execve(
    process.execPath,
    [process.execPath, ...missing, ...process.execArgv, ...process.argv.slice(1)],
    { ...process.env, [REEXECUTED]: missing.join(' ') },
  );
}
