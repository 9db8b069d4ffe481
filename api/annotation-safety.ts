// Where a probe registered by a node annotation may point (docs/design.md section 3): loopback, the node's own
// addresses, and paths under the directories the agent's configuration allows. Text checks only; the agent
// resolves a path again each time it probes (agent/probes/confine.ts).

import { isIP } from 'node:net';
import { posix } from 'node:path';
import { probeKind } from './probe-kinds.ts';
import type { ProbeSpec } from './probe-spec.ts';
import { quoteInput } from './text.ts';

/** Where an annotation-registered probe may point: loopback, these addresses, and paths under these prefixes. */
export interface AnnotationSafety {
  nodeAddresses: readonly string[];
  allowedPathPrefixes: readonly string[];
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

function hostProblem(field: string, host: string, safety: AnnotationSafety): string[] {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (isLoopback(bare) || safety.nodeAddresses.includes(bare)) return [];
  return [
    `${field}: target ${quoteInput(host)} is not allowed from a node annotation (only loopback, the node's own addresses or a SystemExtension may name other hosts)`,
  ];
}

/**
 * Whether `path` lies in one of `directories`, as text (normalized; no file system access). Also used by the
 * agent on paths it has resolved.
 */
export function isPathWithin(path: string, directories: readonly string[]): boolean {
  const normal = posix.normalize(path);
  return directories.some((directory) => {
    const d = posix.normalize(`${directory}/`);
    return normal === d.slice(0, -1) || normal.startsWith(d);
  });
}

/**
 * The text check at registration: the path as written must lie in an allowed directory. It cannot see
 * symlinks; the agent resolves the path again each time it probes (agent/probes/confine.ts).
 */
function pathProblem(field: string, path: string, safety: AnnotationSafety): string[] {
  if (isPathWithin(path, safety.allowedPathPrefixes)) return [];
  return [
    `${field}: path ${quoteInput(path)} is not under an allowed directory (${safety.allowedPathPrefixes.join(', ') || 'none configured'}) for a node annotation`,
  ];
}

/**
 * The docs/design.md section 3 rules on where an annotation-registered probe may point (the agent's configuration
 * decides): every host and path the probe kinds' table says it reaches (probe-kinds.ts); empty when the probe is
 * acceptable. What it may ask for is annotationFieldProblems' job.
 */
export function annotationSafetyProblems(probe: ProbeSpec, safety: AnnotationSafety): string[] {
  return (probeKind(probe).targets?.(probe) ?? []).flatMap((target) =>
    'path' in target
      ? pathProblem(target.field, target.path, safety)
      : hostProblem(target.field, target.host, safety),
  );
}
