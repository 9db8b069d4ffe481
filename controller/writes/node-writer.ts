// Writes one node's decision: the taints, label and annotation first (what the scheduler and the autoscaler act
// on, docs/adr/0008), then the condition on the node that patch returned. When the taints stay as they are, the
// label and annotation ride with the condition in one status patch (the API server keeps metadata sent to
// nodes/status and drops spec there, docs/adr/0008's addendum): one write instead of two. Every write is
// fenced by the leadership term, counted by outcome and noted in the cache. One attempt: a 409 is the
// reconciler's to retry (it reads the node live and decides again, up to MAX_CONFLICT_RETRIES times).

import { isKubeError, KubeErrorCode } from '../../lib/kube/errors.ts';
import type { Logger } from '../../lib/log.ts';
import { toCachedNode, type CachedNode, type NodeObject } from '../cache/index.ts';
import { sameCondition, type NodeDecision, type NodeEvent } from '../decide/index.ts';
import type { ControllerMetrics } from '../metrics.ts';
import {
  conditionPatch,
  nodeChange,
  nodePatch,
  withMetadata,
  writtenTaintEvents,
  type TaintKeys,
} from './node-patch.ts';
import type { Fence, NodeApi } from './port.ts';

/** Writes decided on a node that keeps changing under them are retried this often, then the queue backs off. */
export const MAX_CONFLICT_RETRIES = 5;

export interface NodeWriterDeps {
  api: Pick<NodeApi, 'patchNode' | 'patchNodeStatus'>;
  /** Checked just before every write: throws when this replica no longer leads. */
  fence: Fence;
  clock: { now(): number };
  metrics: Pick<ControllerMetrics, 'nodeWrites'>;
  keys: TaintKeys;
  /** Decides and logs, but writes no taints. */
  dryRun: boolean;
  /** Called with each node a write returned: the next decision reads it, not the watch's older copy. */
  noteWritten(node: CachedNode): void;
}

/** What a write left: the node as last read or written, the decision made on it, the taint events it made. */
export interface Written {
  node: CachedNode;
  decision: NodeDecision;
  taintEvents: NodeEvent[];
}

export class NodeWriter {
  private readonly deps: NodeWriterDeps;

  constructor(deps: NodeWriterDeps) {
    this.deps = deps;
  }

  /** True when `decision` differs from what `node` shows (condition, taints, label or annotation). */
  wouldWrite(node: CachedNode, decision: NodeDecision): boolean {
    return (
      !sameCondition(node.extensionsReadyCondition, decision.condition) ||
      nodeChange(node, decision, this.deps.keys, true) !== undefined
    );
  }

  /**
   * One attempt at writing `decision` against `node`: taints, label and annotation, then the condition, each
   * against the node it was computed on; a single status patch when no taint changes. The taint events it made
   * are pushed to `taintEvents` as each patch returns: a taint patch that went through before the condition
   * patch met a 409 happened.
   */
  async apply(
    node: CachedNode,
    decision: NodeDecision,
    log: Logger,
    taintEvents: NodeEvent[],
  ): Promise<void> {
    const { api, clock, keys, dryRun } = this.deps;
    let current = node;
    const change = nodeChange(current, decision, keys, !dryRun);
    if (change && change.taintSummary.length > 0) {
      log.info(
        { state: decision.state, taints: change.taintSummary, dryRun },
        dryRun ? 'Would change taints (dry run)' : 'Changing taints',
      );
    }
    if (change && !change.taints) {
      // No taint to write: the label and annotation go with the condition, or alone when it already matches.
      const status = conditionPatch(current, decision.condition, clock.now());
      if (status) {
        await this.send('condition', () => api.patchNodeStatus(node.name, withMetadata(status, change)));
        return;
      }
    }
    if (change) {
      const before = current;
      current = await this.send('node', () => api.patchNode(before.name, nodePatch(before, change)));
      taintEvents.push(...writtenTaintEvents(before, current, decision.events, keys));
    }
    // Computed on the node the taint patch returned: its resourceVersion and its condition belong together.
    const status = conditionPatch(current, decision.condition, clock.now());
    if (status) await this.send('condition', () => api.patchNodeStatus(node.name, status));
  }

  /** One write, sent only while this replica leads, counted by outcome. */
  private async send(kind: 'condition' | 'node', write: () => Promise<NodeObject>): Promise<CachedNode> {
    const { fence, metrics } = this.deps;
    fence();
    try {
      const written = toCachedNode(await write());
      metrics.nodeWrites.inc({ kind, result: 'ok' });
      this.deps.noteWritten(written);
      return written;
    } catch (err) {
      const result = isKubeError(err, KubeErrorCode.NotFound)
        ? 'gone'
        : isKubeError(err, KubeErrorCode.Conflict)
          ? 'conflict'
          : 'error';
      metrics.nodeWrites.inc({ kind, result });
      throw err;
    }
  }
}

/** The writer of a controller configured so: its taint keys, dry run or not; each write noted in `cache`. */
export function nodeWriter(
  deps: Omit<NodeWriterDeps, 'keys' | 'dryRun' | 'noteWritten'> & {
    config: { bootstrapTaintKey: string; runtimeTaintKey: string; dryRun: boolean };
    cache: { noteWritten(node: CachedNode): void };
  },
): NodeWriter {
  const { config, cache } = deps;
  const keys = { bootstrap: config.bootstrapTaintKey, runtime: config.runtimeTaintKey };
  return new NodeWriter({ ...deps, keys, dryRun: config.dryRun, noteWritten: (n) => cache.noteWritten(n) });
}
