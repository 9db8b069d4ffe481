// The old generation's ceiling from the controller's memory limit. Node.js sizes V8's heap from the cgroup's
// limit when there is one (uv_get_constrained_memory), and gives the old generation about half of it: 259 MiB
// of heap in a 512 Mi container, 688 MiB in a 1280 Mi one (measured with v8.getHeapStatistics()
// .heap_size_limit: docs/adr/0009, addendum 2026-12-07). The controller's memory is nearly all heap, so the
// other half is more than it needs beside it: the young generation (2 × 16 MiB), code, Node.js's own
// native memory (the empty-process floor, 47 MiB) and buffers. Three quarters of the limit goes to the old
// generation instead; below 256 MiB of limit Node.js's own share is kept. A ceiling set on purpose wins:
// `--max-old-space-size` on the command line or in NODE_OPTIONS.

const MIB = 1024 * 1024;
/** The share of the memory limit the old generation may fill. */
export const OLD_GENERATION_SHARE = 0.75;
/** Under this limit V8's own sizing is kept. */
const SMALLEST_LIMIT_MIB = 256;

export interface MemoryFacts {
  /** process.constrainedMemory(): the cgroup's limit in bytes, 0 or 2^64 - 1 when there is none. */
  constrainedBytes: number;
  /** os.totalmem(). */
  totalBytes: number;
  execArgv: readonly string[];
  nodeOptions: string | undefined;
}

/** `--max-old-space-size=<MiB>` for the limit in `facts`, or nothing (no limit, a small one, or set already). */
export function oldGenerationCeiling(facts: MemoryFacts): string[] {
  const setAlready = [...facts.execArgv, ...(facts.nodeOptions ?? '').split(/\s+/)].some((arg) =>
    /^--max[-_]old[-_]space[-_]size(=|$)/.test(arg),
  );
  const limit = facts.constrainedBytes;
  if (setAlready || !(limit > 0) || limit >= facts.totalBytes) return [];
  const limitMiB = Math.floor(limit / MIB);
  if (limitMiB < SMALLEST_LIMIT_MIB) return [];
  return [`--max-old-space-size=${Math.floor(limitMiB * OLD_GENERATION_SHARE)}`];
}
