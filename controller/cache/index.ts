// The cache room: the view the decisions read. cluster-cache.ts lists and watches (source.ts) and decodes on
// ingest (../ingest.ts, re-exported here); lease-index.ts files the leases by node with their observed times;
// written-nodes.ts keeps the controller's own writes until the watch has them.

export * from '../ingest.ts';
export * from './cluster-cache.ts';
export * from './lease-index.ts';
export * from './source.ts';
export * from './written-nodes.ts';
