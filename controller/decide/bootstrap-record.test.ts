import { describe, expect, it } from 'vitest';
import { ExtensionState } from '../../api/names.ts';
import { EventReason, ProbeReason } from '../../api/reasons.ts';
import {
  BOOTSTRAP_RECORD_ANNOTATION,
  decodeBootstrapRecord,
  encodeBootstrapRecord,
  type BootstrapRecord,
} from './bootstrap-record.ts';
import { decideNode } from './decide.ts';
import { agent, BOOT, BOOTSTRAP_TAINT, ext, input, leases, node, SECOND, T0 } from './testing.ts';

const iso = (ms: number) => new Date(ms).toISOString();

describe('the bootstrap record on BootstrapTaintRemoved', () => {
  it('names when the agent first reported and when each critical extension turned Healthy', () => {
    const booting = node({ taints: [BOOTSTRAP_TAINT] });
    const required = [ext('gpu-plugin'), ext('kube-proxy'), ext('log-agent', { critical: false })];
    // t=2s: the agent's first report; kube-proxy Healthy at 3s, gpu-plugin still starting.
    const first = decideNode(
      input({
        node: booting,
        required,
        agent: agent(T0 + 2 * SECOND),
        leases: leases(T0 + 3 * SECOND, {
          'kube-proxy': { since: iso(T0 + 3 * SECOND) },
          'gpu-plugin': { state: ExtensionState.Progressing, reason: ProbeReason.StartupGrace },
          'log-agent': { since: iso(T0 + 3 * SECOND) },
        }),
        now: T0 + 4 * SECOND,
      }),
    );
    expect(first.events.map((e) => e.reason)).not.toContain(EventReason.BootstrapTaintRemoved);
    // t=25s: gpu-plugin Healthy; the controller removes the taint at 25.4s.
    const done = decideNode(
      input({
        node: booting,
        required,
        agent: agent(T0 + 22 * SECOND),
        leases: leases(T0 + 25 * SECOND, {
          'kube-proxy': { since: iso(T0 + 3 * SECOND) },
          'gpu-plugin': { since: iso(T0 + 25 * SECOND) },
          'log-agent': { since: iso(T0 + 3 * SECOND) },
        }),
        previous: first.memory,
        now: T0 + 25_400,
      }),
    );
    const removed = done.events.find((e) => e.reason === EventReason.BootstrapTaintRemoved);
    const record = decodeBootstrapRecord(removed?.annotations?.[BOOTSTRAP_RECORD_ANNOTATION]);
    expect(record).toEqual({
      bootId: BOOT,
      startedMs: T0,
      // The heartbeat as first seen, not as last renewed.
      agentReportedMs: T0 + 2 * SECOND,
      // Only what held the bootstrap (critical, enforced).
      extensions: [
        { name: 'gpu-plugin', healthyMs: T0 + 25 * SECOND },
        { name: 'kube-proxy', healthyMs: T0 + 3 * SECOND },
      ],
      completedMs: T0 + 25_400,
    } satisfies BootstrapRecord);
  });

  it('round-trips', () => {
    const record: BootstrapRecord = {
      bootId: 'b',
      startedMs: T0,
      agentReportedMs: undefined,
      extensions: [{ name: 'a', healthyMs: undefined }],
      completedMs: T0 + 1,
    };
    expect(decodeBootstrapRecord(encodeBootstrapRecord(record))).toEqual(record);
  });

  it.each([
    ['not JSON', '{'],
    ['not an object', '3'],
    ['no start', JSON.stringify({ bootId: 'b', completed: iso(T0), extensions: [] })],
    [
      'an extension name that is not a DNS label (could carry escapes to a terminal)',
      JSON.stringify({
        bootId: 'b',
        started: iso(T0),
        completed: iso(T0),
        extensions: [{ name: 'x\u001b[2J' }],
      }),
    ],
    ['too long', 'x'.repeat(20_000)],
  ])('%s → no record', (_name, text) => {
    expect(decodeBootstrapRecord(text)).toBeUndefined();
  });
});
