import { describe, expect, it } from 'vitest';
import { DueHeap, type DueRecord } from './due-heap.ts';

interface Item extends DueRecord {
  id: number;
}

const item = (id: number, at: number): Item => ({ id, at, heapIndex: -1 });

/** Pops everything: the order the heap gives. */
function drain(heap: DueHeap<Item>): Item[] {
  const out: Item[] = [];
  for (let next = heap.pop(); next !== undefined; next = heap.pop()) out.push(next);
  return out;
}

describe('DueHeap', () => {
  it('gives records earliest first, and nothing once empty', () => {
    const heap = new DueHeap<Item>();
    for (const [id, at] of [
      [1, 50],
      [2, 10],
      [3, 30],
      [4, 10],
      [5, 70],
    ] as const)
      heap.set(item(id, at));
    expect(heap.size).toBe(5);
    expect(heap.peek()?.at).toBe(10);
    expect(drain(heap).map((r) => r.at)).toEqual([10, 10, 30, 50, 70]);
    expect(heap.peek()).toBeUndefined();
    expect(heap.pop()).toBeUndefined();
  });

  it('moves a record in place when its time changes, earlier or later', () => {
    const heap = new DueHeap<Item>();
    const records = [item(1, 10), item(2, 20), item(3, 30), item(4, 40)];
    for (const r of records) heap.set(r);
    (records[3] as Item).at = 5; // later → first
    heap.set(records[3] as Item);
    (records[0] as Item).at = 35; // first → later
    heap.set(records[0] as Item);
    expect(heap.size).toBe(4);
    expect(drain(heap).map((r) => r.id)).toEqual([4, 2, 3, 1]);
  });

  it('deletes a record from anywhere; deleting one that is not in it changes nothing', () => {
    const heap = new DueHeap<Item>();
    const records = [item(1, 10), item(2, 20), item(3, 30), item(4, 40), item(5, 50)];
    for (const r of records) heap.set(r);
    heap.delete(records[1] as Item);
    heap.delete(records[1] as Item);
    heap.delete(item(9, 1));
    expect(records[1]?.heapIndex).toBe(-1);
    expect(drain(heap).map((r) => r.id)).toEqual([1, 3, 4, 5]);
    // Taken out, a record can go back in.
    heap.set(records[1] as Item);
    expect(heap.pop()?.id).toBe(2);
  });

  it('clear empties it and lets every record be added again', () => {
    const heap = new DueHeap<Item>();
    const records = [item(1, 10), item(2, 20)];
    for (const r of records) heap.set(r);
    heap.clear();
    expect(heap.size).toBe(0);
    expect(records.map((r) => r.heapIndex)).toEqual([-1, -1]);
    for (const r of records) heap.set(r);
    expect(drain(heap).map((r) => r.id)).toEqual([1, 2]);
  });

  it('agrees with a sorted list over 3,000 random adds, moves and deletes', () => {
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * n);
    };
    const heap = new DueHeap<Item>();
    const live = new Map<number, Item>();
    for (let step = 0; step < 3000; step++) {
      const id = random(200);
      const known = live.get(id);
      const op = random(10);
      if (known && op < 2) {
        heap.delete(known);
        live.delete(id);
      } else if (known && op < 3) {
        expect(heap.pop()?.at).toBe(Math.min(...[...live.values()].map((r) => r.at)));
        for (const [k, r] of live) if (r.heapIndex === -1) live.delete(k);
      } else {
        const record = known ?? item(id, 0);
        record.at = random(1000);
        heap.set(record);
        live.set(id, record);
      }
      expect(heap.size).toBe(live.size);
    }
    const expected = [...live.values()].map((r) => r.at).sort((a, b) => a - b);
    expect(drain(heap).map((r) => r.at)).toEqual(expected);
  });
});
