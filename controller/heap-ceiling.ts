// The controller's V8 heap sizes from its memory limit: the old generation's ceiling, and how far the young
// generation may grow.
//
// The old generation's ceiling. Node.js sizes V8's heap from the cgroup's
// limit when there is one (uv_get_constrained_memory), and gives the old generation about half of it: 259 MiB
// of heap in a 512 Mi container, 688 MiB in a 1280 Mi one (measured with v8.getHeapStatistics()
// .heap_size_limit: docs/adr/0009, addendum 2026-12-07). The controller's memory is nearly all heap, so the
// other half is more than it needs beside it: the young generation (2 × 16 MiB), code, Node.js's own
// native memory (the empty-process floor, 47 MiB) and buffers; at the largest semi-spaces below (2 × 64 MiB,
// under a limit of at least 1 GiB) about 130 MiB still remains for those. Three quarters of the limit goes to
// the old generation instead; below 256 MiB of limit Node.js's own share is kept. A ceiling set on purpose wins:
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

/** The container's memory limit in whole MiB; undefined without one (none reported, or at or above the machine's). */
function limitMiB(facts: MemoryFacts): number | undefined {
  const limit = facts.constrainedBytes;
  return limit > 0 && limit < facts.totalBytes ? Math.floor(limit / MIB) : undefined;
}

/** `--max-old-space-size=<MiB>` for the limit in `facts`, or nothing (no limit, a small one, or set already). */
export function oldGenerationCeiling(facts: MemoryFacts): string[] {
  const setAlready = [...facts.execArgv, ...(facts.nodeOptions ?? '').split(/\s+/)].some((arg) =>
    /^--max[-_]old[-_]space[-_]size(=|$)/.test(arg),
  );
  const limit = limitMiB(facts);
  if (setAlready || limit === undefined || limit < SMALLEST_LIMIT_MIB) return [];
  return [`--max-old-space-size=${Math.floor(limit * OLD_GENERATION_SHARE)}`];
}

/** The semi-space size, in MiB, without a memory limit or under one below LARGE_LIMIT_MIB. */
const SEMI_SPACE_MIB = 16;
/** The semi-space size, in MiB, under a memory limit of at least LARGE_LIMIT_MIB. */
const LARGE_SEMI_SPACE_MIB = 64;
/** From this limit on (the chart's for a fleet of about 40,000 nodes and more) the semi-spaces may grow to 64 MiB. */
const LARGE_LIMIT_MIB = 1024;

/**
 * `--max-semi-space-size=<MiB>` for the limit in `facts`: how far the young generation may grow when scavenges
 * find many survivors. 16 MiB up to a limit of 1 GiB and without one: at 1 MiB scavenges took much of the event
 * loop at 5,000 nodes, and 64 MiB there raised the peak of a start from 218 to 317 MiB (over docs/design.md
 * P5's 256) and at 10,000 nodes to 414 of the 512 Mi limit. 64 MiB under a limit of 1 GiB or more: at 50,000
 * nodes a start at 16 MiB ran a scavenge every 50 ms and promoted what the next one would have freed, and
 * converged in 35.5–36.1 s against 27.7 s at 64 (docs/adr/0007, addendum 2026-12-07 (afternoon)).
 */
export function semiSpaceSize(facts: MemoryFacts): string {
  const large = (limitMiB(facts) ?? 0) >= LARGE_LIMIT_MIB;
  return `--max-semi-space-size=${large ? LARGE_SEMI_SPACE_MIB : SEMI_SPACE_MIB}`;
}
