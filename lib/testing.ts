// Test helpers shared by unit and integration tests (not part of the build).

import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sleepWith, type Clock, type Timer } from './clock.ts';

/**
 * A self-signed EC certificate for 127.0.0.1 (key.pem and cert.pem in `dir`, made by the real openssl), for
 * TLS servers on loopback in tests.
 */
export async function selfSignedCert(dir: string): Promise<{ key: Buffer; cert: Buffer }> {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    keyPath,
    '-out',
    certPath,
  ]);
  const [key, cert] = await Promise.all([readFile(keyPath), readFile(certPath)]);
  return { key, cert };
}

/**
 * The top-level keys that occur more than once in one JSON object line. JSON.parse would silently keep the
 * last value; a log pipeline may keep either, so a log line must never repeat a key.
 */
export function duplicateKeys(line: string): string[] {
  const seen = new Set<string>();
  const duplicates: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (ch === '"') {
      let end = i + 1;
      while (end < line.length && line[end] !== '"') end += line[end] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        const key = JSON.parse(line.slice(i, end + 1)) as string;
        if (seen.has(key)) duplicates.push(key);
        seen.add(key);
        expectKey = false;
      }
      i = end;
    } else if (ch === '{' || ch === '[') {
      depth++;
      expectKey = ch === '{' && depth === 1;
    } else if (ch === '}' || ch === ']') {
      depth--;
    } else if (ch === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return duplicates;
}

/**
 * A clock that moves only when a test calls advance(); due timers fire in order. Wall and monotonic time start
 * at the same reading and advance() moves both; stepWall() moves the wall clock alone, as an NTP step does, and
 * fires nothing (timers run on monotonic time).
 */
export class FakeClock implements Clock {
  private current: number;
  private wallOffsetMs = 0;
  private sequence = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = Date.UTC(2026, 0, 1)) {
    this.current = startMs;
  }

  now(): number {
    return this.current + this.wallOffsetMs;
  }

  monotonic(): number {
    return this.current;
  }

  /** Steps the wall clock by `ms` (negative: backward) and leaves monotonic time and the timers alone. */
  stepWall(ms: number): void {
    this.wallOffsetMs += ms;
  }

  setTimer(delayMs: number, fn: () => void): Timer {
    const id = this.sequence++;
    this.timers.set(id, { at: this.current + Math.max(0, delayMs), fn });
    return { cancel: () => this.timers.delete(id) };
  }

  sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, delayMs, signal);
  }

  /** Number of timers not yet fired. */
  get pending(): number {
    return this.timers.size;
  }

  /** Moves both clocks forward, firing every timer that falls due, and lets their promise callbacks run. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      const next = [...this.timers.entries()]
        .filter(([, t]) => t.at <= target)
        .sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next) break;
      this.timers.delete(next[0]);
      this.current = next[1].at;
      next[1].fn();
      await flushMicrotasks();
    }
    this.current = target;
    await flushMicrotasks();
  }
}

/** Lets every promise chain that is ready run to its next real wait (a macrotask drains all microtasks). */
async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
