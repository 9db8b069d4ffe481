// An indexed binary min-heap of records by their due time: the work queue's pending deadlines, one record per
// key that moves in place when its time changes. One timer for the earliest record replaces a timer per key
// (docs/adr/0015): at 5,000 nodes a deadline comes about 80 times a second, and each Node.js timer with a delay
// of its own allocated a timer list, sorted it into the runtime's queue of lists and left it as garbage that
// lived long enough to reach the old generation.

/** What the heap orders. `heapIndex` is the heap's own bookkeeping: -1 while the record is not in it. */
export interface DueRecord {
  at: number;
  heapIndex: number;
}

export class DueHeap<T extends DueRecord> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** The record due first, or undefined when the heap is empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** Adds `record`, or moves it to its place after its `at` changed. */
  set(record: T): void {
    if (record.heapIndex < 0) {
      record.heapIndex = this.items.length;
      this.items.push(record);
    }
    this.up(record.heapIndex);
    this.down(record.heapIndex);
  }

  /** Takes `record` out; a no-op for a record that is not in the heap. */
  delete(record: T): void {
    const i = record.heapIndex;
    if (i < 0 || this.items[i] !== record) return;
    record.heapIndex = -1;
    const last = this.items.pop() as T;
    if (i === this.items.length) return;
    this.items[i] = last;
    last.heapIndex = i;
    this.up(i);
    this.down(last.heapIndex);
  }

  /** Takes out and returns the record due first, or undefined when the heap is empty. */
  pop(): T | undefined {
    const first = this.items[0];
    if (first !== undefined) this.delete(first);
    return first;
  }

  /** Empties the heap. */
  clear(): void {
    for (const record of this.items) record.heapIndex = -1;
    this.items.length = 0;
  }

  private up(i: number): void {
    const { items } = this;
    const record = items[i] as T;
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = items[parentIndex] as T;
      if (parent.at <= record.at) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = parentIndex;
    }
    items[i] = record;
    record.heapIndex = i;
  }

  private down(i: number): void {
    const { items } = this;
    const n = items.length;
    const record = items[i] as T;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && (items[right] as T).at < (items[child] as T).at) child = right;
      const smaller = items[child] as T;
      if (smaller.at >= record.at) break;
      items[i] = smaller;
      smaller.heapIndex = i;
      i = child;
    }
    items[i] = record;
    record.heapIndex = i;
  }
}
