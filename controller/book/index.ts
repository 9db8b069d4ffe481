// controller/book/: what the controller remembers of each node, and the cluster-wide views derived from it.

export { bookOf, NodeBook, type NodeBookDeps } from './book.ts';
export type { Contribution } from './contribution.ts';
