import { Writable } from 'node:stream';
import type { DestinationStream } from 'pino';
import { describe, expect, it } from 'vitest';
import { classifyResponse, classifyTransportError } from './kube/errors.ts';
import { createLogger, type LogFormat } from './log.ts';
import { duplicateKeys } from './testing.ts';

/** A logger writing into memory; `lines` are the raw lines as a reader of the stream gets them. */
function capture(format: LogFormat = 'json') {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const log = createLogger({ name: 'nodecare-test', level: 'info', format }, stream as DestinationStream);
  return { log, lines };
}

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

describe('createLogger', () => {
  it.each([
    { behaviour: 'connection refused', err: classifyTransportError(refused, 'GET /api/v1/nodes') },
    { behaviour: 'timeout', err: classifyTransportError({ name: 'TimeoutError' }, 'PUT /x') },
    { behaviour: '503', err: classifyResponse(503, { message: 'unavailable' }, undefined, 'PUT /x') },
    { behaviour: '429', err: classifyResponse(429, {}, '2', 'PUT /x') },
  ])('an expected API error ($behaviour) is one short line: code and message, no stack', ({ err }) => {
    const { log, lines } = capture();
    log.warn({ err, lease: 'x' }, 'Failed to write lease');
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0] as string) as { err: Record<string, unknown> };
    expect(entry.err).toEqual({
      type: 'KubeError',
      code: err.code,
      status: err.status,
      message: err.message,
    });
  });

  it('an unexpected error keeps its stack', () => {
    const { log, lines } = capture();
    log.error({ err: new TypeError('undefined is not a function') }, 'Probe round failed');
    const entry = JSON.parse(lines[0] as string) as { err: { stack?: string; type: string } };
    expect(entry.err.type).toBe('TypeError');
    expect(entry.err.stack).toMatch(/TypeError: undefined is not a function\n\s+at /);
  });

  it('a Client error (a failure in this process, not the network) keeps its cause and its stack', () => {
    const { log, lines } = capture();
    const err = classifyTransportError(new TypeError('undefined is not a function'), 'GET /x');
    log.error({ err }, 'Watch failed; retrying with backoff');
    const entry = JSON.parse(lines[0] as string) as { err: { code: string; stack?: string } };
    expect(entry.err.code).toBe('Client');
    expect(entry.err.stack).toMatch(/caused by: TypeError: undefined is not a function\n\s+at /);
  });

  it('binds the program name once, so a child binding a component does not repeat a key', () => {
    const { log, lines } = capture();
    log.child({ component: 'leader-election' }).child({ node: 'a' }).info({ lease: 'l' }, 'Renewed lease');
    expect(duplicateKeys(lines[0] as string)).toEqual([]);
    expect(JSON.parse(lines[0] as string)).toMatchObject({
      name: 'nodecare-test',
      component: 'leader-election',
      node: 'a',
    });
  });

  it('text format: one readable line per entry, fields as key=value, an expected error without stack', () => {
    const { log, lines } = capture('text');
    const err = classifyTransportError(refused, 'GET /api/v1/nodes');
    log.child({ node: 'node-a' }).warn({ err, source: 'node' }, 'Watch failed; retrying with backoff');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARN {2}Watch failed; retrying with backoff node=node-a err="Network: GET \/api\/v1\/nodes: ECONNREFUSED connect ECONNREFUSED 127\.0\.0\.1:6443" source=node$/,
    );
  });

  it('text format: an unexpected error prints its stack indented under the line', () => {
    const { log, lines } = capture('text');
    log.error({ err: new Error('boom') }, 'Probe round failed');
    expect(lines[0]).toMatch(/ERROR Probe round failed err=boom$/);
    expect(lines[1]).toMatch(/^ {4}Error: boom$/);
    expect(lines[2]).toMatch(/^ {4}\s*at /);
  });
});

describe('text format and control characters (regression: ESC reached the terminal)', () => {
  it.each([
    { name: 'a bare value', fields: { lease: 'x\u001b[2J' } },
    { name: 'a quoted value', fields: { message: 'a b\u009b31m \u202e' } },
    { name: "an error's message and stack", fields: { err: new Error('boom\u001b]0;title\u0007') } },
  ])('$name is escaped', ({ fields }) => {
    const { log, lines } = capture('text');
    log.warn(fields, 'Failed to write lease');
    expect(lines.length).toBeGreaterThan(0);
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    for (const line of lines) expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(lines[0]).toContain('\\u00');
  });
});

describe('duplicateKeys', () => {
  it.each([
    { line: '{"a":1,"b":{"a":2},"c":"\\"a\\":"}', duplicates: [] },
    { line: '{"a":1,"b":2,"a":3}', duplicates: ['a'] },
  ])('$line → $duplicates', ({ line, duplicates }) => {
    expect(duplicateKeys(line)).toEqual(duplicates);
  });
});
