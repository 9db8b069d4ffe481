import { describe, expect, it } from 'vitest';
import {
  apiTime,
  failedCondition,
  initCondition,
  INITIALIZED_MESSAGE,
  NO_MESSAGE,
  RollupReason,
  RollupStatus,
  updateCondition,
  type RollupCondition,
  type RollupStatus as Status,
} from './condition.ts';

const T0 = Date.parse('2026-11-23T10:00:00Z');
const MINUTE = 60_000;

function condition(status: Status, reason: string, atMs = T0, codes: string[] = []): RollupCondition {
  return {
    type: 'EveryNodeReady',
    status,
    lastTransitionTime: apiTime(atMs),
    lastUpdateTime: apiTime(atMs),
    reason,
    message: 'before',
    codes,
  };
}

describe('initCondition', () => {
  it('starts Unknown / ConditionInitialized with both times now', () => {
    expect(initCondition('EveryNodeReady', T0 + 1_500)).toEqual({
      type: 'EveryNodeReady',
      status: 'Unknown',
      lastTransitionTime: '2026-11-23T10:00:01Z',
      lastUpdateTime: '2026-11-23T10:00:01Z',
      reason: 'ConditionInitialized',
      message: INITIALIZED_MESSAGE,
      codes: [],
    });
  });
});

describe('updateCondition (Gardener condition builder)', () => {
  const later = T0 + 5 * MINUTE;

  it('a status change moves lastTransitionTime', () => {
    const built = updateCondition(
      condition('True', 'R'),
      { status: 'False', reason: 'R', message: 'before' },
      later,
    );
    expect(built.lastTransitionTime).toBe(apiTime(later));
  });

  it('a status-only change does not move lastUpdateTime', () => {
    const built = updateCondition(
      condition('True', 'R'),
      { status: 'False', reason: 'R', message: 'before' },
      later,
    );
    expect(built.lastUpdateTime).toBe(apiTime(T0));
  });

  it.each([
    ['reason', { status: 'True', reason: 'Other', message: 'before' }],
    ['message', { status: 'True', reason: 'R', message: 'after' }],
    ['codes', { status: 'True', reason: 'R', message: 'before', codes: ['ERR_CONFIGURATION_PROBLEM'] }],
  ] as const)('a change of %s moves lastUpdateTime but not lastTransitionTime', (_, update) => {
    const built = updateCondition(condition('True', 'R'), update, later);
    expect(built.lastUpdateTime).toBe(apiTime(later));
    expect(built.lastTransitionTime).toBe(apiTime(T0));
  });

  it('nothing changed → the very same object (nothing to write)', () => {
    const old = condition('True', 'R');
    expect(updateCondition(old, { status: 'True', reason: 'R', message: 'before' }, later)).toBe(old);
  });

  it('codes are never inherited', () => {
    const old = condition('False', 'R', T0, ['ERR_CONFIGURATION_PROBLEM']);
    expect(updateCondition(old, { status: 'False', reason: 'R', message: 'before' }, later).codes).toEqual(
      [],
    );
  });

  it('empty reason → Unspecified, empty message → No message given.', () => {
    const built = updateCondition(
      condition('True', 'R'),
      { status: 'False', reason: '', message: '' },
      later,
    );
    expect(built.reason).toBe(RollupReason.Unspecified);
    expect(built.message).toBe(NO_MESSAGE);
  });
});

describe('failedCondition (Gardener FailedCondition threshold machine)', () => {
  const failure = { reason: RollupReason.HealthCheckUnsuccessful, message: '1) a. 2) b.' };
  const threshold = 5 * MINUTE;

  it.each<[string, Status, string, number, number | undefined, Status]>([
    ['True → Progressing', 'True', 'HealthCheckSuccessful', T0 + 1_000, threshold, 'Progressing'],
    ['True without threshold → False', 'True', 'HealthCheckSuccessful', T0 + 1_000, undefined, 'False'],
    [
      'Progressing within the threshold stays Progressing',
      'Progressing',
      failure.reason,
      T0 + threshold,
      threshold,
      'Progressing',
    ],
    [
      'Progressing past the threshold → False',
      'Progressing',
      failure.reason,
      T0 + threshold + 1_000,
      threshold,
      'False',
    ],
    ['False with the same reason stays False', 'False', failure.reason, T0 + 1_000, threshold, 'False'],
    [
      'False with a new failure reason → Progressing again',
      'False',
      'SomethingElse',
      T0 + 1_000,
      threshold,
      'Progressing',
    ],
    ['Unknown → False at once', 'Unknown', 'ConditionCheckError', T0 + 1_000, threshold, 'False'],
    [
      'a new (initialized) condition → False at once',
      'Unknown',
      'ConditionInitialized',
      T0 + 1_000,
      threshold,
      'False',
    ],
  ])('%s', (_, from, reason, nowMs, thresholdMs, to) => {
    expect(failedCondition(condition(from, reason), thresholdMs, failure, nowMs).status).toBe(to);
  });

  it('the threshold is measured from lastTransitionTime, not lastUpdateTime', () => {
    const old = { ...condition('Progressing', failure.reason), lastUpdateTime: apiTime(T0 + 4 * MINUTE) };
    expect(failedCondition(old, threshold, failure, T0 + threshold + 1_000).status).toBe('False');
  });

  it('True → Progressing → False keeps the first transition time while Progressing', () => {
    const first = failedCondition(condition('True', 'HealthCheckSuccessful'), threshold, failure, T0 + 1_000);
    const second = failedCondition(first, threshold, failure, T0 + 2 * MINUTE);
    expect(second).toBe(first);
    const third = failedCondition(second, threshold, failure, T0 + 1_000 + threshold + 1_000);
    expect(third.status).toBe(RollupStatus.False);
    expect(third.lastTransitionTime).toBe(apiTime(T0 + 1_000 + threshold + 1_000));
    expect(third.lastUpdateTime).toBe(first.lastUpdateTime);
  });
});
