// V8 settings for the controller's memory and CPU (docs/design.md P5: 256 MiB RSS at 5,000 nodes × 5
// extensions; issue 24: CPU per lease renewal), applied by the program itself so that the binary behaves the
// same at default settings however it is started and whatever memory its machine has. Imported by main.ts
// after the Node.js version check and before start.ts, which imports it first too: it runs before any other
// module loads. Measured in docs/adr/0007.
// - `--max-semi-space-size`, through a re-exec (lib/reexec.ts; V8 reads it only when it creates the heap):
//   the young generation may grow to 2 × 16 MiB, or 2 × 64 MiB under a memory limit of 1 GiB or more
//   (controller/heap-ceiling.ts, semiSpaceSize), when scavenges find many survivors (the watch streams and
//   in-flight reconciles keep objects alive across them), and no further. V8's own limit depends on the
//   machine's memory. At 1 MiB scavenges took much of the event loop at 5,000 nodes (docs/adr/0007, addenda
//   2026-11-28 and 2026-12-07 (afternoon)).
// - `--max-old-space-size` at three quarters of the container's memory limit, where it has one
//   (controller/heap-ceiling.ts): Node.js would give the old generation half of it.
// - `--v8-pool-size=1`: one V8 background thread instead of four. Their work is the garbage collector's
//   concurrent and parallel parts, and the Deployment gives the controller at most one core, where four of
//   them beside the event loop only take turns (measured: docs/adr/0007, addendum 2026-11-29).
// - `--optimize-for-size`, set from the program once the replica first settled (optimizeForSize; when:
//   controller/settled.ts): V8 grows the old generation by a small factor over what survived the last full
//   collection, not by up to four times while the program allocates fast; without it the old generation
//   after a start is mostly garbage. Not on the command line: there it also caps the semi-spaces at 1 MiB,
//   which is what the first flag avoids. Not while the caches fill or the first convergence runs: then
//   every small growth step ends in a full collection of everything held so far, and a controller start
//   waits for that CPU (measured: docs/adr/0007, the Results and the addenda of 2026-11-28; docs/adr/0009,
//   addenda of 2026-12-03).
import { setFlagsFromString } from 'node:v8';
import type * as Os from 'node:os';
import type * as Vm from 'node:vm';
import { reexecWithFlags } from '../lib/reexec.ts';
import { oldGenerationCeiling, semiSpaceSize, type MemoryFacts } from './heap-ceiling.ts';

const memory: MemoryFacts = {
  constrainedBytes: process.constrainedMemory(),
  totalBytes: (process.getBuiltinModule('node:os') as typeof Os).totalmem(),
  execArgv: process.execArgv,
  nodeOptions: process.env.NODE_OPTIONS,
};
const reexec = reexecWithFlags(
  [semiSpaceSize(memory), '--v8-pool-size=1', ...oldGenerationCeiling(memory)],
  'NODECARE_CONTROLLER_REEXECUTED',
);

// A full collection on demand, for optimizeForSize: node:vm's fresh context sees V8's `gc` once the flag is
// set (the flag alone does not expose it to a context that exists already). Taken here, as the program
// starts; undefined if this Node.js does not give it.
setFlagsFromString('--expose-gc');
const collect: unknown = (process.getBuiltinModule('node:vm') as typeof Vm).runInNewContext('gc');
const fullCollection = typeof collect === 'function' ? (collect as () => void) : undefined;

/**
 * Turns on `--optimize-for-size` (above) and runs one full collection right away: the old generation's limit,
 * set by the last collection while the caches filled, would otherwise stay as loose as it was until the next
 * one, and the convergence after a start grew into it (measured: docs/adr/0007, addenda of 2026-11-28).
 * Called once the replica first settled; again is harmless.
 */
export function optimizeForSize(): void {
  setFlagsFromString('--optimize-for-size');
  fullCollection?.();
}

/** Why the controller runs without its runtime flags (the re-exec could not be done); undefined when it has them. */
export const runtimeFlagsProblem: string | undefined = reexec.problem;

/** The flags the controller would have added. */
export const missingRuntimeFlags: readonly string[] = reexec.missing;
