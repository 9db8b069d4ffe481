// What the roll-up writer writes of one evaluation to ClusterHealth `cluster`, and whether anything changed:
// pure, so that the writer (writer.ts) keeps only the I/O, its retries and its timers.

import { isDeepStrictEqual } from 'node:util';
import { NODE_STATUS_LABEL, samePolicy, type PublishedPolicy } from '../../api/index.ts';
import { capInput } from '../../api/text.ts';
import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import { apiTime } from './condition.ts';
import type { ExtensionCounts, RollupResult } from './evaluate.ts';
import { OWNED_TYPES_ANNOTATION, type ClusterHealthObject, type ClusterHealthStatus } from './store.ts';

/** What an evaluation changes of the object: its label and owned-types annotation, its status, or neither. */
export interface ClusterHealthChange {
  metadataChanged: boolean;
  statusChanged: boolean;
  metadata: { labels: Record<string, string>; annotations: Record<string, string> };
}

/**
 * `policy` and `eviction` are what the controller publishes (status.policy, status.eviction): a status that
 * says otherwise is rewritten. An object that does not exist yet changes in both.
 */
export function clusterHealthChange(
  object: ClusterHealthObject | undefined,
  result: RollupResult,
  policy: PublishedPolicy | undefined,
  eviction: object | undefined,
): ClusterHealthChange {
  const owned = result.owned.join(',');
  const metadataChanged =
    object !== undefined &&
    (object.metadata.labels?.[NODE_STATUS_LABEL] !== result.label ||
      (object.metadata.annotations?.[OWNED_TYPES_ANNOTATION] ?? '') !== owned);
  const statusChanged =
    object === undefined ||
    result.changed ||
    !sameExtensionCounts(object.status?.extensions ?? [], result.extensions) ||
    (object.status?.maintenance?.inProgress ?? 0) !== result.maintenance.inProgress ||
    (object.status?.maintenance?.planned ?? 0) !== result.maintenance.planned ||
    (policy !== undefined && !samePolicy(object.status?.policy, policy)) ||
    !isDeepStrictEqual((object.status as { eviction?: object } | undefined)?.eviction, eviction);
  return {
    metadataChanged,
    statusChanged,
    metadata: {
      labels: { [NODE_STATUS_LABEL]: result.label },
      annotations: { [OWNED_TYPES_ANNOTATION]: owned },
    },
  };
}

/** The status written for `result`, observed at `nowMs`. */
export function clusterHealthStatus(
  result: RollupResult,
  nowMs: number,
  policy: PublishedPolicy | undefined,
  eviction: object | undefined,
): ClusterHealthStatus {
  return {
    observedAt: apiTime(nowMs),
    conditions: result.conditions,
    extensions: result.extensions,
    maintenance: result.maintenance,
    ...(policy ? { policy } : {}),
    ...evictionStatus(eviction),
  };
}

function sameExtensionCounts(a: readonly ExtensionCounts[], b: readonly ExtensionCounts[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (x, i) =>
        x.name === b[i]!.name &&
        x.conditionType === b[i]!.conditionType &&
        x.healthy === b[i]!.healthy &&
        x.progressing === b[i]!.progressing &&
        x.unhealthy === b[i]!.unhealthy &&
        x.unknown === b[i]!.unknown,
    )
  );
}

/** status.eviction as the evictor gives it (ClusterHealthStatus does not type it: the evictor owns its shape). */
function evictionStatus(eviction: object | undefined): object {
  return eviction ? { eviction } : {};
}

export function ownedTypesOf(object: ClusterHealthObject | undefined): string[] {
  const value = object?.metadata.annotations?.[OWNED_TYPES_ANNOTATION] ?? '';
  return value === '' ? [] : value.split(',');
}

/** What a refused write's report says of the error: its message, capped (the API server echoes the input). */
export function errorText(err: unknown): string {
  return capInput(err instanceof Error ? err.message : String(err), 1024);
}

/** The object changed or went away meanwhile: read it again and evaluate on what is there. */
export function isRereadError(err: unknown): boolean {
  return (
    isKubeError(err, KubeErrorCode.Conflict) ||
    isKubeError(err, KubeErrorCode.NotFound) ||
    isKubeError(err, KubeErrorCode.AlreadyExists)
  );
}
