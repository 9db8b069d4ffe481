// A first-in first-out list whose take is O(1): Array.prototype.shift moves every element left once an array
// leaves V8's fast path (past about 32,000 elements it lives in large-object space), so a queue of 50,000 node
// keys drained with shift cost seconds of the event loop (docs/adr/0009, addendum 2026-12-03). The taken
// prefix is dropped once it is half the backing array, which keeps a take amortized O(1) and memory bounded by
// twice what is queued.

/** The prefix kept before it is worth copying the rest down. */
const COMPACT_AFTER = 1024;

export class Fifo<T> {
  private items: Array<T | undefined> = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, removed; undefined when empty. */
  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined; // the key is no longer held
    this.head++;
    if (this.head === this.items.length) this.clear();
    else if (this.head >= COMPACT_AFTER && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
}
