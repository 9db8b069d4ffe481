// V8 settings for the controller's memory and CPU (docs/design.md P5: 256 MiB RSS at 5,000 nodes × 5
// extensions; issue 24: CPU per lease renewal), applied by the program itself so that the binary behaves the
// same at default settings however it is started and whatever memory its machine has. Imported by main.ts
// after the Node.js version check and before start.ts, which imports it first too: it runs before any other
// module loads. Measured in docs/adr/0007.
// - `--max-semi-space-size=16`, through a re-exec (lib/reexec.ts; V8 reads it only when it creates the
//   heap): the young generation may grow to 2 × 16 MiB when scavenges find many survivors (the watch
//   streams and in-flight reconciles keep objects alive across them), and no further. V8's own limit
//   depends on the machine's memory (64 MiB semi-spaces on the 24 GiB benchmark machine). Kept at 1 MiB, as
//   until 2026-11-28, scavenges took a third of the event loop at 5,000 nodes.
// - `--v8-pool-size=1`: one V8 background thread instead of four. Their work is the garbage collector's
//   concurrent and parallel parts, and the Deployment gives the controller at most one core, where four of
//   them beside the event loop only take turns. Measured alone against the benchmark's sink, two runs each
//   (docs/adr/0007, fourth addendum): steady RSS 107–108 instead of 114 MiB at 1,000 nodes and 165 instead
//   of 167–170 MiB at 5,000; peak RSS at 5,000 213–218 instead of 195–208 MiB; CPU to converge and to
//   restart within the machine's spread either way.
// - `--optimize-for-size`, set from the program once the caches first synced (optimizeForSize): V8 grows
//   the old generation by a small factor over what survived the last full collection, not by up to four
//   times while the program allocates fast. Without it the convergence after a start left 110–200 MiB of
//   old generation, mostly garbage, for a live heap of about 55 MiB. Not on the command line: there it also
//   caps the semi-spaces at 1 MiB (measured: the young generation stayed at 2 MiB), which is what the first
//   flag avoids. Not before the first sync: while the caches fill, every small growth step ends in a full
//   collection of everything listed so far, and parsing 30,000 leases took twice the CPU with it (0.6 vs
//   1.2 s, 3 vs 20 full collections; docs/adr/0007, second and third addenda), the CPU a controller start
//   waits for.
import { setFlagsFromString } from 'node:v8';
import type * as Vm from 'node:vm';
import { reexecWithFlags } from '../lib/reexec.ts';

const reexec = reexecWithFlags(
  ['--max-semi-space-size=16', '--v8-pool-size=1'],
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
 * one, and the convergence after a start grew into it (peak RSS 239–246 instead of 187–193 MiB at 5,000 × 5,
 * docs/adr/0007, second addendum). Called once the caches first synced; again is harmless.
 */
export function optimizeForSize(): void {
  setFlagsFromString('--optimize-for-size');
  fullCollection?.();
}

/** Why the controller runs without its runtime flags (the re-exec could not be done); undefined when it has them. */
export const runtimeFlagsProblem: string | undefined = reexec.problem;

/** The flags the controller would have added. */
export const missingRuntimeFlags: readonly string[] = reexec.missing;
