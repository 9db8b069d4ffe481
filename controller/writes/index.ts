// The writes room: everything the controller changes in the cluster goes through here. port.ts is the one API
// port (fenced by the leadership term), node-patch.ts computes a node's differences, node-writer.ts writes a
// decision (one attempt: the reconciler retries a 409), events.ts records node and cluster events, and event-lane.ts sends them a
// few at a time.

export * from './event-lane.ts';
export * from './events.ts';
export * from './node-patch.ts';
export * from './node-writer.ts';
export * from './port.ts';
