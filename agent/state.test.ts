import { describe, expect, it } from 'vitest';
import type { ExtensionState } from '../api/names.ts';
import { ProbeReason } from '../api/reasons.ts';
import type { ProbeResult } from './probes/types.ts';
import {
  initialMachine,
  invalidRegistration,
  transition,
  type ExtensionMachine,
  type Thresholds,
  type Transition,
} from './state.ts';

const T0 = Date.UTC(2026, 0, 1);
const at = (seconds: number): number => T0 + seconds * 1000;
const iso = (seconds: number): string => new Date(at(seconds)).toISOString();

const OK: ProbeResult = { outcome: 'Healthy', reason: ProbeReason.ProbeSucceeded, message: '200 OK' };
const REFUSED: ProbeResult = {
  outcome: 'Unhealthy',
  reason: ProbeReason.ConnectionRefused,
  message: 'connect ECONNREFUSED 127.0.0.1:8080',
};
const TIMEOUT: ProbeResult = {
  outcome: 'Unhealthy',
  reason: ProbeReason.ProbeTimeout,
  message: 'no answer within 3s',
};
const DENIED: ProbeResult = {
  outcome: 'Unknown',
  reason: ProbeReason.PermissionDenied,
  message: 'socket: EACCES',
};
const INVALID: ProbeResult = {
  outcome: 'Unknown',
  reason: ProbeReason.InvalidRegistration,
  message: 'probe.tcp.port: required',
};

const DEFAULTS: Thresholds = { failureThreshold: 3, successThreshold: 1, startupGraceSeconds: 300 };
/** A grace start long before T0, so the startup grace is already over. */
const GRACE_OVER = T0 - 3_600_000;

interface Run {
  steps: Transition[];
  machine: ExtensionMachine;
}

/**
 * Feeds results at the given seconds after T0 into a machine created at T0; the wall clock reads `wallStepMs`
 * ahead of the monotonic one (an NTP step before the first result).
 */
function play(
  results: ReadonlyArray<readonly [seconds: number, result: ProbeResult]>,
  options: {
    spec?: Partial<Thresholds>;
    graceStartMs?: number;
    from?: ExtensionMachine;
    wallStepMs?: number;
  } = {},
): Run {
  const spec = { ...DEFAULTS, ...options.spec };
  const graceStartMs = options.graceStartMs ?? GRACE_OVER;
  let machine = options.from ?? initialMachine(T0, graceStartMs);
  const steps: Transition[] = [];
  for (const [seconds, result] of results) {
    const monotonicMs = at(seconds);
    const nowMs = monotonicMs + (options.wallStepMs ?? 0);
    const step = transition(machine, { result, nowMs, monotonicMs, spec, graceStartMs });
    steps.push(step);
    machine = step.machine;
  }
  return { steps, machine };
}

/** `results` one per 10 s, starting at 10 s. */
function every10s(...results: ProbeResult[]): Array<readonly [number, ProbeResult]> {
  return results.map((result, i) => [(i + 1) * 10, result] as const);
}

const states = (run: Run): ExtensionState[] => run.steps.map((s) => s.record.state);

describe('initialMachine', () => {
  it('publishes Progressing / AwaitingFirstProbe since creation', () => {
    expect(initialMachine(at(5), T0).published).toEqual({
      state: 'Progressing',
      reason: 'AwaitingFirstProbe',
      message: 'Waiting for the first probe result',
      since: iso(5),
    });
  });
});

describe('transition: published state after each result', () => {
  it.each<{
    name: string;
    results: ProbeResult[];
    spec?: Partial<Thresholds>;
    graceStartMs?: number;
    expected: ExtensionState[];
  }>([
    { name: 'first success → Healthy', results: [OK], expected: ['Healthy'] },
    {
      name: '3 failures → Unhealthy',
      results: [OK, REFUSED, REFUSED, REFUSED],
      expected: ['Healthy', 'Healthy', 'Healthy', 'Unhealthy'],
    },
    {
      name: '2 failures then success → stays Healthy',
      results: [OK, REFUSED, REFUSED, OK, REFUSED, REFUSED],
      expected: ['Healthy', 'Healthy', 'Healthy', 'Healthy', 'Healthy', 'Healthy'],
    },
    {
      name: 'a success restarts the failure count',
      results: [OK, REFUSED, REFUSED, OK, REFUSED, REFUSED, REFUSED],
      expected: ['Healthy', 'Healthy', 'Healthy', 'Healthy', 'Healthy', 'Healthy', 'Unhealthy'],
    },
    {
      name: 'failures of different reasons count together',
      results: [OK, REFUSED, TIMEOUT, REFUSED],
      expected: ['Healthy', 'Healthy', 'Healthy', 'Unhealthy'],
    },
    {
      name: 'failureThreshold 1 → Unhealthy on the first failure',
      results: [OK, REFUSED],
      spec: { failureThreshold: 1 },
      expected: ['Healthy', 'Unhealthy'],
    },
    {
      name: 'failureThreshold 5 needs five failures',
      results: [OK, REFUSED, REFUSED, REFUSED, REFUSED, REFUSED],
      spec: { failureThreshold: 5 },
      expected: ['Healthy', 'Healthy', 'Healthy', 'Healthy', 'Healthy', 'Unhealthy'],
    },
    {
      name: 'Unhealthy → Healthy after one success (successThreshold 1)',
      results: [REFUSED, REFUSED, REFUSED, OK],
      expected: ['Progressing', 'Progressing', 'Unhealthy', 'Healthy'],
    },
    {
      name: 'successThreshold 2 needs two successes',
      results: [REFUSED, REFUSED, REFUSED, OK, OK],
      spec: { successThreshold: 2 },
      expected: ['Progressing', 'Progressing', 'Unhealthy', 'Unhealthy', 'Healthy'],
    },
    {
      name: 'successThreshold 2: a failure in between restarts the count',
      results: [REFUSED, REFUSED, REFUSED, OK, REFUSED, OK, OK],
      spec: { successThreshold: 2 },
      expected: ['Progressing', 'Progressing', 'Unhealthy', 'Unhealthy', 'Unhealthy', 'Unhealthy', 'Healthy'],
    },
    {
      name: 'successThreshold 2 from the start: one success keeps Progressing',
      results: [OK, OK],
      spec: { successThreshold: 2 },
      expected: ['Progressing', 'Healthy'],
    },
    {
      name: 'no grace (startupGraceSeconds 0) → failures count at once',
      results: [REFUSED, REFUSED, REFUSED],
      spec: { startupGraceSeconds: 0 },
      graceStartMs: T0,
      expected: ['Progressing', 'Progressing', 'Unhealthy'],
    },
    {
      name: 'failure inside startup grace → Progressing',
      results: [REFUSED],
      spec: { failureThreshold: 1 },
      graceStartMs: T0,
      expected: ['Progressing'],
    },
    {
      name: 'many failures inside startup grace → still Progressing',
      results: [REFUSED, REFUSED, REFUSED, REFUSED, REFUSED],
      graceStartMs: T0,
      expected: ['Progressing', 'Progressing', 'Progressing', 'Progressing', 'Progressing'],
    },
    {
      name: 'success inside startup grace → Healthy at once',
      results: [REFUSED, REFUSED, OK],
      graceStartMs: T0,
      expected: ['Progressing', 'Progressing', 'Healthy'],
    },
    {
      name: 'Healthy once ends the grace: later failures count as usual',
      results: [OK, REFUSED, REFUSED, REFUSED],
      graceStartMs: T0,
      expected: ['Healthy', 'Healthy', 'Healthy', 'Unhealthy'],
    },
    {
      name: 'Healthy, then failing inside the grace window → Unhealthy, not Progressing',
      results: [OK, REFUSED, REFUSED, REFUSED, REFUSED],
      spec: { failureThreshold: 2 },
      graceStartMs: T0,
      expected: ['Healthy', 'Healthy', 'Unhealthy', 'Unhealthy', 'Unhealthy'],
    },
    {
      name: 'Unknown results → Unknown after failureThreshold',
      results: [OK, DENIED, DENIED, DENIED],
      expected: ['Healthy', 'Healthy', 'Healthy', 'Unknown'],
    },
    {
      name: 'Unknown from the start (grace over) → Unknown after failureThreshold',
      results: [DENIED, DENIED, DENIED],
      expected: ['Progressing', 'Progressing', 'Unknown'],
    },
    {
      name: 'Unknown inside startup grace → Progressing',
      results: [DENIED, DENIED, DENIED],
      graceStartMs: T0,
      expected: ['Progressing', 'Progressing', 'Progressing'],
    },
    {
      name: 'InvalidRegistration → Unknown at once',
      results: [OK, INVALID],
      expected: ['Healthy', 'Unknown'],
    },
    {
      name: 'InvalidRegistration inside startup grace → Unknown at once',
      results: [INVALID],
      graceStartMs: T0,
      expected: ['Unknown'],
    },
    {
      name: 'Unhealthy and Unknown mixed → failing after failureThreshold, as the latest kind',
      results: [OK, REFUSED, DENIED, REFUSED],
      expected: ['Healthy', 'Healthy', 'Healthy', 'Unhealthy'],
    },
    {
      name: 'alternating Unhealthy and Unknown do not stay Healthy',
      results: [OK, DENIED, REFUSED, DENIED],
      expected: ['Healthy', 'Healthy', 'Healthy', 'Unknown'],
    },
    {
      name: 'Unhealthy → Unknown needs failureThreshold Unknowns in a row',
      results: [OK, REFUSED, REFUSED, REFUSED, DENIED, DENIED, REFUSED, DENIED, DENIED, DENIED],
      expected: [
        'Healthy',
        'Healthy',
        'Healthy',
        'Unhealthy',
        'Unhealthy',
        'Unhealthy',
        'Unhealthy',
        'Unhealthy',
        'Unhealthy',
        'Unknown',
      ],
    },
    {
      name: 'Unknown → Unhealthy needs failureThreshold Unhealthy results in a row',
      results: [DENIED, DENIED, DENIED, REFUSED, REFUSED, REFUSED],
      expected: ['Progressing', 'Progressing', 'Unknown', 'Unknown', 'Unknown', 'Unhealthy'],
    },
    {
      name: 'Unknown → Healthy after one success',
      results: [DENIED, DENIED, DENIED, OK],
      expected: ['Progressing', 'Progressing', 'Unknown', 'Healthy'],
    },
  ])('$name', ({ results, spec, graceStartMs, expected }) => {
    expect(states(play(every10s(...results), { spec, graceStartMs }))).toEqual(expected);
  });
});

describe('transition: startup grace', () => {
  it('publishes StartupGrace with the underlying reason and message', () => {
    const { steps } = play([[10, REFUSED]], { graceStartMs: T0 });
    expect(steps[0]).toMatchObject({
      changed: true,
      record: {
        state: 'Progressing',
        reason: 'StartupGrace',
        message: `ConnectionRefused: connect ECONNREFUSED 127.0.0.1:8080 (startup grace until ${iso(300)})`,
        since: iso(0),
      },
    });
  });

  it.each([
    ['one second before the grace ends → Progressing', 299, 'Progressing'],
    ['when the grace ends → Unhealthy', 300, 'Unhealthy'],
    ['after the grace → Unhealthy', 400, 'Unhealthy'],
  ])('failing through the grace, the third failure %s', (_name, thirdAt, expected) => {
    const run = play(
      [
        [10, REFUSED],
        [100, REFUSED],
        [thirdAt, REFUSED],
      ],
      { graceStartMs: T0 },
    );
    expect(run.machine.published.state).toBe(expected);
  });

  it('grace over → Unhealthy with the underlying reason, since the moment it flipped', () => {
    const run = play(
      [
        [10, REFUSED],
        [200, TIMEOUT],
        [290, REFUSED],
        [310, TIMEOUT],
      ],
      { graceStartMs: T0 },
    );
    expect(states(run)).toEqual(['Progressing', 'Progressing', 'Progressing', 'Unhealthy']);
    expect(run.machine.published).toEqual({
      state: 'Unhealthy',
      reason: 'ProbeTimeout',
      message: 'no answer within 3s',
      since: iso(310),
    });
  });

  it('grace over with fewer than failureThreshold failures → waits for the threshold', () => {
    const run = play(
      [
        [20, REFUSED],
        [40, REFUSED],
        [50, REFUSED],
      ],
      { graceStartMs: T0, spec: { startupGraceSeconds: 30 } },
    );
    expect(states(run)).toEqual(['Progressing', 'Progressing', 'Unhealthy']);
  });

  it('measures the grace from the grace start, not from machine creation', () => {
    const run = play([[10, REFUSED]], { graceStartMs: at(-289), spec: { failureThreshold: 1 } });
    expect(run.machine.published.state).toBe('Progressing');
    const later = play([[10, REFUSED]], { graceStartMs: at(-290), spec: { failureThreshold: 1 } });
    expect(later.machine.published.state).toBe('Unhealthy');
  });

  it.each([
    { name: '150 s forward wall clock step', wallStepMs: 150_000 },
    { name: '1 h backward wall clock step', wallStepMs: -3_600_000 },
  ])('measures the grace on the monotonic clock: a $name neither ends nor stretches it', ({ wallStepMs }) => {
    const spec = { failureThreshold: 1, startupGraceSeconds: 300 };
    const inside = play([[200, REFUSED]], { graceStartMs: T0, spec, wallStepMs });
    expect(inside.machine.published.state).toBe('Progressing');
    expect(inside.machine.published.message).toContain(
      `startup grace until ${new Date(T0 + 300_000 + wallStepMs).toISOString()}`,
    );
    const after = play([[300, REFUSED]], { graceStartMs: T0, spec, wallStepMs });
    expect(after.machine.published.state).toBe('Unhealthy');
  });

  it('re-opens the grace when the caller moves the grace start (not Healthy at the time)', () => {
    const failed = play(every10s(REFUSED, REFUSED, REFUSED)).machine;
    expect(failed.published.state).toBe('Unhealthy');
    const reopened = play([[40, REFUSED]], { from: failed, graceStartMs: at(35) });
    expect(reopened.machine.published).toMatchObject({ state: 'Progressing', reason: 'StartupGrace' });
  });

  it('does not re-open the grace for an extension that is Healthy', () => {
    const healthy = play(every10s(OK)).machine;
    const run = play(every10s(REFUSED, REFUSED, REFUSED), { from: healthy, graceStartMs: at(5) });
    expect(states(run)).toEqual(['Healthy', 'Healthy', 'Unhealthy']);
  });
});

describe('transition: what counts as a change', () => {
  it('since moves only on state change', () => {
    const run = play([
      [10, OK],
      [20, { ...OK, message: '204 No Content' }],
      [30, REFUSED],
      [40, REFUSED],
      [50, REFUSED],
      [60, TIMEOUT],
      [70, OK],
    ]);
    expect(run.steps.map((s) => [s.record.state, s.record.since])).toEqual([
      ['Healthy', iso(10)],
      ['Healthy', iso(10)],
      ['Healthy', iso(10)],
      ['Healthy', iso(10)],
      ['Unhealthy', iso(50)],
      ['Unhealthy', iso(50)],
      ['Healthy', iso(70)],
    ]);
  });

  it('Progressing keeps its since when its reason moves from AwaitingFirstProbe to StartupGrace', () => {
    const run = play([[10, REFUSED]], { graceStartMs: T0 });
    expect(run.steps[0]?.record.since).toBe(iso(0));
  });

  it.each<{
    name: string;
    previous: ProbeResult[];
    next: ProbeResult;
    spec?: Partial<Thresholds>;
    changed: boolean;
  }>([
    { name: 'the first result that flips the state is a change', previous: [], next: OK, changed: true },
    { name: 'the same result again is not a change', previous: [OK], next: OK, changed: false },
    {
      name: 'message change alone is reported as changed',
      previous: [OK],
      next: { ...OK, message: '3 devices healthy' },
      changed: true,
    },
    {
      name: 'reason change alone (Unhealthy → Unhealthy) is reported as changed',
      previous: [REFUSED, REFUSED, REFUSED],
      next: TIMEOUT,
      changed: true,
    },
    {
      name: 'a failure below the threshold is not a change',
      previous: [OK],
      next: REFUSED,
      changed: false,
    },
    {
      name: 'the failure that crosses the threshold is a change',
      previous: [OK, REFUSED, REFUSED],
      next: REFUSED,
      changed: true,
    },
    {
      name: 'a success below successThreshold is not a change',
      previous: [REFUSED, REFUSED, REFUSED],
      next: OK,
      spec: { successThreshold: 2 },
      changed: false,
    },
  ])('$name', ({ previous, next, spec, changed }) => {
    const before = play(every10s(...previous), { spec }).machine;
    const step = transition(before, {
      result: next,
      nowMs: at(100),
      monotonicMs: at(100),
      spec: { ...DEFAULTS, ...spec },
      graceStartMs: GRACE_OVER,
    });
    expect(step.changed).toBe(changed);
    if (!changed) expect(step.record).toBe(before.published);
  });

  it('returns the published record as machine.published', () => {
    const step = play(every10s(OK)).steps[0];
    expect(step?.record).toBe(step?.machine.published);
  });

  it('does not modify the machine it is given', () => {
    const before = Object.freeze(play(every10s(OK, REFUSED)).machine);
    const copy = structuredClone(before);
    const input = {
      result: REFUSED,
      nowMs: at(100),
      monotonicMs: at(100),
      spec: DEFAULTS,
      graceStartMs: GRACE_OVER,
    };
    transition(before, input);
    expect(before).toEqual(copy);
  });
});

describe('invalidRegistration', () => {
  it('is Unknown / InvalidRegistration with every problem in the message, since now', () => {
    expect(
      invalidRegistration(['probe.tcp.port: required', 'periodSeconds: expected an integer'], at(7)),
    ).toEqual({
      state: 'Unknown',
      reason: 'InvalidRegistration',
      message: 'probe.tcp.port: required; periodSeconds: expected an integer',
      since: iso(7),
    });
  });

  it('says so even without a problem list', () => {
    expect(invalidRegistration([], at(0)).message).toBe('invalid registration');
  });

  it('matches what the machine publishes for an InvalidRegistration result', () => {
    const fromMachine = play([[0, INVALID]]).machine.published;
    expect(invalidRegistration([INVALID.message], at(0))).toEqual(fromMachine);
  });
});
