// What the node writers ask of the API (NodeApi: the controller's KubePort, controller/port.ts, against the API
// server; FakeNodeApi in unit tests), and the fence that a write asks first whether this replica still leads.

import type { LeaseObject } from '../../api/lease.ts';
import type { NodeObject } from '../cache/index.ts';

/** Thrown by a write attempted after this replica stopped leading: the write did not go out. */
export class NotLeaderError extends Error {
  readonly code = 'NotLeader';
  constructor() {
    super('not the leader: write not sent');
    this.name = 'NotLeaderError';
  }
}

/** Called just before every write; throws NotLeaderError when this replica no longer leads. */
export type Fence = () => void;

/** The API calls the controller makes (docs/conventions.md 5). FakeNodeApi (testing.ts) is the unit-test double. */
export interface NodeApi {
  getNode(name: string): Promise<NodeObject>;
  /** JSON merge patch of the Node (metadata and spec). */
  patchNode(name: string, patch: object): Promise<NodeObject>;
  /** Strategic merge patch of nodes/status. */
  patchNodeStatus(name: string, patch: object): Promise<NodeObject>;
  getLease(namespace: string, name: string): Promise<LeaseObject>;
  createEvent(namespace: string, event: object): Promise<void>;
  /** JSON merge patch of an Event (its series, when the same event repeats). */
  patchEvent(namespace: string, name: string, patch: object): Promise<void>;
}
