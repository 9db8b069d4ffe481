import { describe, expect, it } from 'vitest';
import { Fifo } from './fifo.ts';

describe('Fifo', () => {
  it('gives items in the order they came, and undefined once empty', () => {
    const fifo = new Fifo<string>();
    expect(fifo.shift()).toBeUndefined();
    for (const key of ['a', 'b', 'c']) fifo.push(key);
    expect(fifo.length).toBe(3);
    expect([fifo.shift(), fifo.shift()]).toEqual(['a', 'b']);
    fifo.push('d');
    expect(fifo.length).toBe(2);
    expect([fifo.shift(), fifo.shift(), fifo.shift()]).toEqual(['c', 'd', undefined]);
    expect(fifo.length).toBe(0);
  });

  it('keeps the order across the compactions of a long queue taken while it grows', () => {
    const fifo = new Fifo<number>();
    const taken: number[] = [];
    let next = 0;
    // Two in, one out, 30,000 times: the taken prefix is dropped many times over while items remain.
    for (let round = 0; round < 30_000; round++) {
      fifo.push(next++);
      fifo.push(next++);
      taken.push(fifo.shift() as number);
    }
    expect(fifo.length).toBe(30_000);
    for (let item = fifo.shift(); item !== undefined; item = fifo.shift()) taken.push(item);
    expect(taken).toEqual(Array.from({ length: 60_000 }, (_, i) => i));
  });

  it('forgets everything on clear', () => {
    const fifo = new Fifo<string>();
    fifo.push('a');
    fifo.push('b');
    fifo.shift();
    fifo.clear();
    expect(fifo.length).toBe(0);
    expect(fifo.shift()).toBeUndefined();
    fifo.push('c');
    expect(fifo.shift()).toBe('c');
  });
});
