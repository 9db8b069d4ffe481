// The nodes this controller's own writes returned, read before the watch's older copy until the watch catches
// up (client-go's MutationCache, for nodes), ordered by etcd's revisions.

import type { CachedNode } from '../ingest.ts';

/**
 * Whether resourceVersion `a` is newer than `b`, when both are etcd's decimal revisions (as client-go's
 * MutationCache and the scheduler's assume cache compare them); undefined when either is not, and then nothing
 * is assumed about their order.
 */
export function newerResourceVersion(a: string, b: string): boolean | undefined {
  if (!/^\d{1,19}$/.test(a) || !/^\d{1,19}$/.test(b)) return undefined;
  return a.length !== b.length ? a.length > b.length : a > b;
}

/**
 * The nodes this controller's own writes returned, each until the watch delivers that version or a newer one
 * (client-go's MutationCache, for nodes). Without it the next reconcile of a node just written decides on the
 * watch's copy from before the write and patches again against its old resourceVersion: a 409 the API
 * server pays for (a third of the taint patches at 200 nodes, measured with the audit log; issue 24). A write
 * is kept only while it is newer than the watch's copy by etcd's revision order; a node the watch deleted is
 * gone, whatever was written.
 */
export class WrittenNodes {
  private readonly nodes = new Map<string, CachedNode>();

  /** The newer of `watched` (the watch's copy of node `name`) and our own write of it. */
  read(name: string, watched: CachedNode | undefined): CachedNode | undefined {
    const written = this.nodes.get(name);
    if (written === undefined) return watched;
    if (
      watched === undefined ||
      newerResourceVersion(written.resourceVersion, watched.resourceVersion) !== true
    ) {
      this.nodes.delete(name); // the watch caught up (or the node is gone): its copy is the truth again
      return watched;
    }
    return written;
  }

  /**
   * Whether `watched`, a node the watch delivers, is no newer than this controller's own write of it: the echo
   * of that write or of one before it. Both writes carry a resourceVersion precondition, so every version up
   * to the write's is either one of this controller's writes or the node a write was decided on: nothing in
   * it is news to the decision, which already reads the written node (read). A delivered copy equal to the
   * write means the watch caught up, and the write is forgotten. Until 2026-11-29 each echo was reconciled (two
   * for a node whose taint and condition both changed): a decision that found nothing to do (docs/adr/0017).
   */
  covers(watched: CachedNode): boolean {
    const written = this.nodes.get(watched.name);
    if (written === undefined) return false;
    if (watched.resourceVersion === written.resourceVersion) {
      this.nodes.delete(watched.name);
      return true;
    }
    return newerResourceVersion(written.resourceVersion, watched.resourceVersion) === true;
  }

  note(node: CachedNode, watched: CachedNode | undefined): void {
    if (watched !== undefined && newerResourceVersion(node.resourceVersion, watched.resourceVersion) === true)
      this.nodes.set(node.name, node);
  }

  get size(): number {
    return this.nodes.size;
  }
}
